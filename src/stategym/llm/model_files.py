"""A saved model folder, checked before anything loads it, and its loading made quiet.

``check_model_dir`` refuses in one line what ``transformers`` would load wrongly or fail on
deep inside (no tokenizer files: it quietly builds a tokenizer of a couple of tokens; cut
weights; no chat template; a ``config.json`` that ``transformers`` refuses, or whose model
cannot be built); ``quiet_loading``, ``loader_errors`` and ``load_failed`` turn a loader's
failure into one line naming the model. Shared by the local agent, ``serve`` and the trainer
(:mod:`stategym.train.policy`, :mod:`stategym.train.checkpoint`).

A training run directory (``stategym train``'s ``RUN``: its ``config.json`` holds the
trainer's settings, its model is ``RUN/model``) is refused as one, naming the folder to give
instead (``RUN/model``, or a checkpoint while the run has no ``model/`` yet); only
``train --init`` takes ``RUN`` for ``RUN/model``.

A model folder says which rendering its policy was trained to read in stategym's record,
:data:`RECORD_FILE` (``stategym model init`` writes its recipe there, the trainer the
run's settings, :func:`stategym.train.checkpoint.save`): :func:`recorded_rendering`
reads it. A folder without one (any Hugging Face model from elsewhere) reads ``messages``,
which is what its chat template was trained on. ``hf:`` agents play a folder in its recorded
rendering; ``serve`` speaks OpenAI messages through the chat template and refuses a folder
recorded as ``compact`` (:func:`check_servable`).

Every JSON file of a folder is parsed by one rule (:func:`stategym.kernel.files.json_value`):
a file nested too deeply or holding a huge integer is refused as damaged, in one line, like
broken JSON. Every file is read only as a regular file
(:func:`stategym.kernel.files.read_regular`), and a folder holding a FIFO, a device or a
socket (``config.json``, a tokenizer file, the weights...) is refused, naming it, before
anything reads or loads it (:func:`stategym.kernel.files.refuse_special_entries`): a loader
would wait on a FIFO forever.

Not checked here: that the weights' values are usable (a diverged checkpoint whose logits
are not finite is refused when it loads, by :meth:`stategym.llm.engine.Engine.probe`), and a
hub id's config and weights beyond what their loaders raise (its tokenizer and chat
template are: :func:`check_hub_tokenizer`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from stategym.kernel.errors import UsageError
from stategym.kernel.files import (
    NotAFile,
    NotJSON,
    descriptor_path,
    exists_as_file,
    json_value,
    not_a_file,
    read_regular,
    refuse_special_entries,
)

RECORD_FILE = "stategym_model.json"
"""stategym's record in a model folder: the recipe of ``stategym model init``, or the
trainer's settings of the run that saved it; either way its ``rendering``."""
UNRECORDED = "messages"
"""The rendering of a folder whose record names none: a Hugging Face model from elsewhere was
trained on its chat template's messages, and so was ``model init``'s warm-up before it
recorded its rendering."""


def check_model_dir(path: str | Path) -> None:
    """Refuse a path that is not a saved model folder, before anything loads or plays.

    Besides ``config.json`` a model folder needs tokenizer files (``tokenizer.json``, a
    sentencepiece ``tokenizer.model``, or ``vocab.json`` with ``merges.txt``: without them
    ``transformers`` quietly builds a tokenizer of a couple of tokens), weights whose
    safetensors headers open, and a chat template (``chat_template.jinja``, or
    ``tokenizer_config.json``'s ``chat_template``), which every agent and server here renders
    the conversation with. Last (it imports ``transformers``, seconds where a wrong path
    takes milliseconds), ``config.json`` must pass ``transformers``' own checks
    (:func:`_check_config`).

    Raises:
        UsageError: ``path`` is missing, is not a folder, holds a FIFO, a device or a socket
            (:class:`~stategym.kernel.files.NotAFile`, naming it), holds no ``config.json``,
            one of its JSON files (config, tokenizer, generation settings, stategym's record) is not
            a JSON object, it is a training run directory (named as one, with the folder to
            give), its record names no known rendering, it lacks tokenizer files, readable
            weights or a chat template, or ``transformers`` refuses its config.
    """
    folder = Path(path)
    hint = "give a folder written by save_pretrained, e.g. by `stategym model init --out DIR`"
    if not folder.exists():
        raise UsageError(f"no model folder at {folder}; {hint}")
    if not folder.is_dir():
        raise UsageError(
            f"{folder} is {not_a_file(folder) or 'a file'}, not a model folder; {hint}"
        )
    refuse_special_entries(folder)  # a FIFO would hang this check or the loader
    if not exists_as_file(folder / "config.json"):
        raise UsageError(f"{folder} holds no model (no config.json); {hint}")
    # A cut or damaged file would otherwise fail only when the model loads, after the
    # command has prepared (and maybe played) everything else. Parsing them is cheap next
    # to loading the weights (a tokenizer.json of a few MB: tens of ms).
    for file in sorted(folder.glob("*.json")):
        try:
            data = json_value(read_regular(file))
        except NotJSON as error:
            raise UsageError(
                f"{file} cannot be read ({_located(error)}); the model folder is damaged"
            ) from None
        if not isinstance(data, dict):
            raise UsageError(f"{file} is not a JSON object; the model folder is damaged")
    _refuse_run_directory(folder)
    recorded_rendering(folder)  # a record naming no known rendering is refused here
    damaged = "the model folder is damaged"
    if not any(exists_as_file(folder / name) for name in TOKENIZER_FILES) and not all(
        exists_as_file(folder / name) for name in BPE_FILES
    ):
        raise UsageError(
            f"{folder} has no tokenizer.json (nor tokenizer.model, nor vocab.json and "
            f"merges.txt); {damaged}"
        )
    _check_weights(folder, damaged)
    if not _has_chat_template(folder):
        raise UsageError(
            f"{folder} has no chat template (no chat_template.jinja, and none in "
            "tokenizer_config.json): the conversation and tools cannot be rendered; "
            f"{damaged}, or give a chat model's folder"
        )
    _check_config(folder)


def check_hub_tokenizer(model_id: str, name: str) -> None:
    """Refuse a Hugging Face id whose tokenizer does not load, or has no chat template:
    what :func:`check_model_dir` checks of a folder's tokenizer, for a model ``transformers``
    fetches by id (from the hub, or from its local cache) and that no folder check sees. A
    base model from the hub (no template) was a traceback at its first rendering, where the
    same files as a folder were one line (audit 15b F3).

    Args:
        model_id: the id, e.g. ``Qwen/Qwen2.5-0.5B-Instruct``.
        name: how the refusal names it (``--init ID``).

    Raises:
        UsageError: the tokenizer cannot be loaded, or has no chat template.
    """
    from transformers import AutoTokenizer

    refused: tuple[type[BaseException], ...] = (*loader_errors(), TypeError, AttributeError)
    try:
        with quiet_loading():
            tokenizer = AutoTokenizer.from_pretrained(model_id)
    except refused as error:
        raise UsageError(
            f"{name}: its tokenizer cannot be loaded ({short_reason(error)})"
        ) from None
    if not tokenizer.chat_template:
        raise UsageError(
            f"{name} has no chat template (none in its tokenizer's files): the conversation "
            "and tools cannot be rendered; give a chat model"
        )


def _refuse_run_directory(folder: Path) -> None:
    """Refuse a training run directory given as a model folder, naming the folder to give.

    A run directory's ``config.json`` is the trainer's settings (no ``model_type``; its
    ``kind`` is the command), beside ``model/`` and ``checkpoints/``: it would otherwise be
    called a damaged model folder for lacking a tokenizer.

    Raises:
        UsageError: ``folder`` is a training run directory.
    """
    config = json_value(read_regular(folder / "config.json"))  # an object: checked before
    subfolders = (folder / "model").is_dir() or (folder / "checkpoints").is_dir()
    if "model_type" in config or not ("kind" in config or subfolders):
        return
    what = f"{folder} is a training run directory (its config.json is the trainer's settings)"
    if (folder / "model" / "config.json").is_file():
        raise UsageError(f"{what}, not a model folder: give {folder / 'model'}, its final model")
    checkpoints = sorted(folder.glob("checkpoints/iter-*[0-9]"))
    if checkpoints:
        raise UsageError(
            f"{what} without its final model/ yet: give one of its checkpoints, e.g. "
            f"{checkpoints[-1]}, or finish the run"
        )
    raise UsageError(f"{what} that holds no model yet (no model/, no checkpoint)")


def recorded_rendering(path: str | Path) -> str:
    """The rendering a model folder's policy was trained to read: its record's
    ``rendering`` (:data:`RECORD_FILE`), else :data:`UNRECORDED` (``messages``).

    Raises:
        UsageError: the record cannot be read (a FIFO or a folder in its place included:
            :class:`~stategym.kernel.files.NotAFile`), is not a JSON object, or names a
            rendering stategym does not know.
    """
    from stategym.rendering import RENDERINGS

    record = Path(path) / RECORD_FILE
    if not exists_as_file(record):
        return UNRECORDED
    try:
        data = json_value(read_regular(record))
    except (OSError, NotJSON) as error:
        reason = _located(error) if isinstance(error, NotJSON) else first_line(error)
        raise UsageError(f"{record} cannot be read ({reason}); restore it") from None
    if not isinstance(data, dict):
        raise UsageError(f"{record} is not a JSON object; restore it")
    rendering = data.get("rendering", UNRECORDED)
    if rendering not in RENDERINGS:
        raise UsageError(
            f"{record} records the rendering {rendering!r}, not one of {', '.join(RENDERINGS)}"
            "; restore it"
        )
    return str(rendering)


def agent_rendering(spec: str) -> str:
    """The rendering the agent ``spec`` plays in: an ``hf:PATH`` folder's recorded one
    (:func:`recorded_rendering`), ``messages`` for any other (an
    ``openai:`` endpoint, a scripted agent, which reads none). What demonstrations made
    outside the agent (the protocol's k-shot block) must be rendered in."""
    kind, _, target = spec.partition(":")
    return recorded_rendering(target) if kind == "hf" else "messages"


def check_servable(path: str | Path) -> None:
    """Refuse a model folder that ``stategym serve`` would play in a rendering it was not
    trained on: serve speaks OpenAI messages through the chat template (tool calls as the
    template writes them), so a folder recorded as ``compact`` would read a conversation it
    never saw and write calls the server reads as text to the user.

    Raises:
        UsageError: the folder's record says another rendering than ``messages``, or is
            damaged (:func:`recorded_rendering`).
    """
    rendering = recorded_rendering(path)
    if rendering != "messages":
        raise UsageError(
            f"{path} was trained on the {rendering} rendering ({Path(path) / RECORD_FILE}), "
            "but serve speaks OpenAI messages through the chat template: play it with "
            f"hf:{path} (run --agent, eval --agents), or train it with --rendering messages "
            "to serve it"
        )


TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model")
"""Either is a whole tokenizer (fast, or sentencepiece)."""
BPE_FILES = ("vocab.json", "merges.txt")
"""A byte-level BPE tokenizer saved in its slow form: both are needed."""
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
"""The names ``transformers`` loads weights from (a single file or a shard index)."""


def _check_weights(folder: Path, damaged: str) -> None:
    """Weights are there: a single file or an index whose shards all exist, and every
    safetensors file's header opens (a cut file fails here, not deep in the loader)."""
    present = [name for name in WEIGHT_FILES if exists_as_file(folder / name)]
    if not present:
        raise UsageError(
            f"{folder} has no weights (no {', '.join(WEIGHT_FILES[:1] + WEIGHT_FILES[2:3])} "
            f"or shard index); {damaged}"
        )
    for index in (name for name in present if name.endswith(".index.json")):
        weight_map = json_value(read_regular(folder / index)).get("weight_map")  # an object
        if not isinstance(weight_map, dict):
            raise UsageError(f"{folder / index} has no weight_map; {damaged}")
        for shard in sorted({str(name) for name in weight_map.values()}):
            if not exists_as_file(folder / shard):
                raise UsageError(f"{folder / index} names {shard}, which is missing; {damaged}")
    unreadable = unreadable_weights(folder)
    if unreadable is not None:
        weights, error = unreadable
        raise UsageError(f"{weights} cannot be read ({first_line(error)}); {damaged}")


def unreadable_weights(folder: Path) -> tuple[Path, BaseException] | None:
    """The first ``*.safetensors`` file of ``folder`` whose header does not open, with the
    error (a cut file fails here, not deep inside a model loader); ``None`` when all open."""
    from safetensors import SafetensorError, safe_open

    for weights in sorted(folder.glob("*.safetensors")):
        try:
            # opened here, checked on the descriptor and handed over as it: a FIFO renamed
            # in after a check of the path would make safe_open wait for a writer (15b F4)
            with descriptor_path(weights) as opened, safe_open(opened, framework="pt"):
                pass
        except NotAFile as error:
            return weights, ValueError(error.why)
        except (SafetensorError, OSError) as error:
            return weights, error
    return None


def _check_config(folder: Path) -> None:
    """``config.json`` loads as ``transformers`` loads it, and its model can be built.

    ``transformers`` validates a config as it loads it (5.x: strict dataclasses, whose
    :class:`~huggingface_hub.errors.StrictDataclassError` is no ``ValueError``: an edited
    ``num_hidden_layers`` that no longer matches ``layer_types``); some values it accepts fail
    only when the model is built (0 heads divide by zero, an unknown activation or rope type
    is a ``KeyError``). So the model is built here too, on the meta device: no memory and
    no weights (20 ms for 7 B parameters), so whatever fails is the config's. Both calls are
    ``transformers``' alone, which is why the errors caught are broad.
    """
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    file = folder / "config.json"
    try:
        with quiet_loading():
            config = AutoConfig.from_pretrained(folder, local_files_only=True)
            with torch.device("meta"):
                AutoModelForCausalLM.from_config(config)
    except config_errors() as error:
        raise UsageError(
            f"{file} is refused by transformers {transformers.__version__} "
            f"({short_reason(error)}); restore the file, or give another model folder"
        ) from None


def config_errors() -> tuple[type[BaseException], ...]:
    """What ``transformers`` raises for a config it refuses, or whose model it cannot build:
    its validation errors (:func:`strict_errors`), a value of the wrong type or range, an
    unknown key (activation, rope type), a size that divides by zero or is negative, an
    unreadable file (``OSError``; broken JSON is a ``ValueError``)."""
    return (
        *strict_errors(),
        ValueError,
        TypeError,
        AttributeError,
        LookupError,
        ArithmeticError,
        RuntimeError,
        OSError,
    )


def strict_errors() -> tuple[type[BaseException], ...]:
    """``huggingface_hub``'s validation errors of a config (none before the strict
    dataclasses of ``transformers`` 5.x, whose configs raised ``ValueError``)."""
    try:
        from huggingface_hub.errors import StrictDataclassError
    except ImportError:
        return ()
    return (StrictDataclassError,)


def short_reason(error: BaseException) -> str:
    """Why a model or its config was refused, in a few words: a validation error's cause
    (its own first line only names the validator), and the type of an error whose message
    is just a key or a number (``KeyError: 'nosuch'``)."""
    cause = error.__cause__ if isinstance(error, strict_errors()) else None
    root = cause if cause is not None else error
    reason = first_line(root)
    if isinstance(root, LookupError | ArithmeticError):
        reason = f"{type(root).__name__}: {reason}"
    return reason


def _has_chat_template(folder: Path) -> bool:
    """A chat template in any of the places ``transformers`` reads one from."""
    if exists_as_file(folder / "chat_template.jinja") or exists_as_file(
        folder / "chat_template.json"
    ):
        return True
    if (folder / "additional_chat_templates").is_dir() and any(
        (folder / "additional_chat_templates").glob("*.jinja")
    ):
        return True
    config = folder / "tokenizer_config.json"
    return exists_as_file(config) and bool(json_value(read_regular(config)).get("chat_template"))


def _located(error: NotJSON) -> str:
    """A parse failure's reason with its line, ``line 3: not JSON (...)``."""
    return f"line {error.line}: {error}" if error.line is not None else str(error)


def first_line(error: BaseException) -> str:
    """The first line of an error's message (its type's name when it has none)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def loader_errors() -> tuple[type[BaseException], ...]:
    """What ``transformers`` and ``safetensors`` raise for a model they cannot load (a cut
    or missing file, a config of other sizes than the weights, a config it refuses: a hub
    id's is checked only by its loader)."""
    from safetensors import SafetensorError

    return (OSError, ValueError, RuntimeError, KeyError, SafetensorError, *strict_errors())


def load_failed(source: str | Path, error: BaseException) -> UsageError:
    """A loader's error as one line naming the model that would not load."""
    reason = short_reason(error)
    if "ignore_mismatched_sizes" in reason:  # its details went to a report we keep quiet
        reason = "the sizes in config.json are not those of the weights"
    return UsageError(f"cannot load the model at {source}: {reason}")


@contextmanager
def quiet_loading() -> Iterator[None]:
    """While a model loads: no per-file progress bars and no load report from
    ``transformers`` (a report of mismatched sizes would bury the one-line error that
    :func:`load_failed` makes of it); its settings are restored afterwards."""
    from transformers.utils import logging

    verbosity, bars = logging.get_verbosity(), logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)
        if bars:
            logging.enable_progress_bar()


def check_out(out: Path, *, overwrite: bool = False) -> None:
    """Refuse to write the model where it would replace something: a non-empty ``out``
    (a run directory, another model) unless ``overwrite``, or a file.

    Raises:
        UsageError: ``out`` is a file, or a folder that is not empty (and not ``overwrite``).
    """
    if not out.exists():
        return
    if not out.is_dir():
        raise UsageError(f"--out {out} is a file, not a folder")
    if overwrite:
        _refuse_unsafe_entries(out)
        return
    held = sorted(entry.name for entry in out.iterdir())
    if held:
        shown = ", ".join(held[:3]) + (", ..." if len(held) > 3 else "")
        raise UsageError(
            f"--out {out} is not empty ({shown}): the model would overwrite what is there; "
            "give a new or empty folder, or --overwrite to write over it"
        )


def _refuse_unsafe_entries(out: Path) -> None:
    """Refuse ``--overwrite`` into a folder holding a link or a file that is not a regular
    one (a FIFO, a device): the model's files are written in place, so a link there would
    write through it to another file and a FIFO would hang the write (audit 14e F3)."""
    for entry in sorted(out.iterdir()):
        kind = "a link" if entry.is_symlink() else not_a_file(entry)
        if kind is not None and kind != "a folder":
            raise UsageError(
                f"--out {out} holds {entry.name}, {kind}: the model's files are written in "
                "place and would go through it; remove it or give another folder"
            )
