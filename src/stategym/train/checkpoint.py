"""Checkpoints of a run: Hugging Face folders with the optimiser's state, and resuming.

``RUN/checkpoints/iter-NNNNNN/`` holds the model and tokenizer as ``save_pretrained``
writes them (so ``hf:RUN/checkpoints/iter-NNNNNN`` plays it in ``eval``, ``run`` and
``protocol``; ``serve`` serves it if it was trained on ``messages``), ``optimizer.pt`` and
``trainer_state.json`` (the iteration it ends). A
checkpoint is written to a temporary folder (``.partial``, never resumed from) and renamed,
so an interrupted save leaves no half checkpoint behind; :func:`latest` is the last one.
``RUN/model`` is the final policy (a copy of the last checkpoint).

Every checkpoint, and so ``RUN/model``, holds stategym's record of the model
(:data:`~stategym.llm.model_files.RECORD_FILE`,
:func:`~stategym.train.config.model_record`): the rendering the policy was trained in, which
``hf:`` plays it in and ``serve`` checks, and the command and iteration that saved it.

``RUN/start.json`` records what the run started from (:func:`start_model`), written once at
a fresh start, before anything trains: the start model's config, a digest of its tokenizer
(vocabulary and chat template) and of its weights, and (SFT from ``run:DIR``) which logged
episodes it learns from. A resume is checked against it (:func:`resume_point`):

- the last checkpoint must be whole (every file present and readable), its
  ``trainer_state.json`` must state its folder's own iteration, its model must be the run's
  own (its config, less what saving sets (:data:`VOLATILE`), and its tokenizer equal to the
  start model's) and its ``optimizer.pt`` must fit that model's parameters; otherwise
  :class:`CheckpointError` names the folder or file: deleting that folder resumes from the
  checkpoint before it (nothing is skipped or mixed silently). A checkpoint of another run
  of the same model (same config and tokenizer, other weights) cannot be told apart;
- a run directory holding training output (``model/``, or metric lines past the first
  checkpoint's iteration) but no checkpoint is refused, never trained again over it; what a
  run stopped before its first checkpoint leaves starts afresh;
- a run with checkpoints but no ``start.json`` (made before it was recorded, or the file
  deleted) is refused: its resume cannot be checked;
- a run whose ``metrics.jsonl`` lacks lines the last checkpoint covers (the file deleted,
  emptied or cut short since) is refused, naming them: the resume would go on with the
  run's history lost (:func:`~stategym.train.runlog.resumed_metrics`).

Every JSON file of a checkpoint and of the run is parsed by one rule
(:func:`stategym.kernel.files.json_value`): deep nesting or a huge integer is refused as
damage in one line, like broken JSON.

The sources of a run are checked against the record on every resume: SFT's ``run:DIR``
log (:func:`stategym.train.sft.same_demonstrations`) and the ``--init`` model
(:func:`load_start`), which must still be the start model even when the run does not read
it again (a GRPO run without KL): a resume continues the run it started, never one under the
name of a model retrained since.

Resuming is exact because nothing random carries over between iterations: every iteration
seeds its own generator from ``(seed, iteration)`` (:func:`iteration_generator`), so the
model and the optimiser's state are all the state there is.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stategym.kernel.errors import UsageError
from stategym.kernel.files import NotJSON, json_value
from stategym.llm.model_files import (
    RECORD_FILE,
    check_model_dir,
    first_line,
    strict_errors,
    unreadable_weights,
)
from stategym.train import runlog
from stategym.train.config import Config, model_record
from stategym.train.policy import Policy

CHECKPOINTS = "checkpoints"
FINAL = "model"
STATE = "trainer_state.json"
OPTIMISER = "optimizer.pt"
START = "start.json"
"""The record of what the run started from (module docstring)."""
FOLDER = re.compile(r"iter-(\d+)")
"""A checkpoint folder's name: ``iter-`` and the iteration it ends."""
VOLATILE = frozenset(
    ("dtype", "torch_dtype", "transformers_version", "architectures", "_name_or_path",
     "transformers_weights")
)  # fmt: skip
"""Keys of a model's config that saving sets or drops (the weights' dtype, the writer's
version, the class that saved it, where it was loaded from): not compared with the start
model's."""


class CheckpointError(UsageError):
    """A checkpoint that cannot be resumed from (a file cut, missing or edited, or another
    model's); the message names it and says what to do."""


def unusable(path: Path, what: str) -> CheckpointError:
    """The error for a checkpoint's file that cannot be resumed from, with what to do
    about it: resume from the checkpoint before it."""
    return CheckpointError(
        f"{path}: {what}; the checkpoint is damaged: delete {path.parent} "
        "to resume from the checkpoint before it"
    )


def damaged(path: Path, why: object) -> CheckpointError:
    """The error for an unreadable file of a checkpoint, with what to do about it."""
    return unusable(path, f"unreadable ({why})")


def folder_of(run: Path, iteration: int) -> Path:
    """Where the checkpoint after ``iteration`` iterations lives."""
    return run / CHECKPOINTS / f"iter-{iteration:06d}"


def save(run: Path, iteration: int, policy: Policy, optimiser: Any, config: Config) -> Path:
    """Write the checkpoint after ``iteration`` iterations (atomically) and return it, with
    the model's record (:func:`model_record`) beside the weights."""
    import torch

    folder = folder_of(run, iteration)
    partial = folder.with_name(folder.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    policy.save(partial)
    record = json.dumps(model_record(config, iteration), indent=2, sort_keys=True)
    (partial / RECORD_FILE).write_text(record + "\n")
    torch.save(optimiser.state_dict(), partial / OPTIMISER)
    (partial / STATE).write_text(json.dumps({"iteration": iteration}) + "\n")
    if folder.exists():
        shutil.rmtree(folder)
    partial.rename(folder)
    return folder


def latest(run: Path) -> Path | None:
    """The run's last checkpoint (the highest ``iter-NNNNNN`` folder), or ``None``.

    Whole or not: a save is renamed into place whole, so a folder missing its files was
    damaged afterwards, and :func:`check` refuses it, naming it, rather than this falling
    back to the one before without a word. A ``.partial`` folder is an interrupted save,
    never a checkpoint.
    """
    root = run / CHECKPOINTS
    if not root.is_dir():
        return None
    found = [
        (int(named.group(1)), path)
        for path in root.iterdir()
        if path.is_dir() and (named := FOLDER.fullmatch(path.name))
    ]
    return max(found)[1] if found else None


def iteration_of(folder: Path) -> int:
    """The iterations a checkpoint ends: its ``trainer_state.json``'s, which must be its
    folder's (``iter-000006`` ends 6; a state edited to say otherwise would end the run
    early or train iteration 6's weights again as another iteration).

    Raises:
        CheckpointError: ``trainer_state.json`` is missing, is not an object with an
            iteration number, or states another iteration than its folder's name.
    """
    path = folder / STATE
    if not path.is_file():
        raise unusable(path, "missing")
    try:
        state = json_value(path.read_bytes())
    except NotJSON as error:
        raise damaged(path, error) from None
    iteration = state.get("iteration") if isinstance(state, dict) else None
    if not isinstance(iteration, int) or isinstance(iteration, bool) or iteration < 0:
        raise damaged(path, f"no iteration number in {state!r:.80}")
    named = FOLDER.fullmatch(folder.name)
    if named is None or int(named.group(1)) != iteration:
        raise unusable(path, f"states iteration {iteration}, not its folder's ({folder.name})")
    return iteration


def check(folder: Path, start_config: Mapping[str, Any] | None = None) -> int:
    """The iterations a checkpoint ends, once its state, its optimiser's file, its JSON
    files (the model's config, the tokenizer) and its weights are known to be there and
    readable (a cut file fails here, not deep inside a model loader), and, given the start
    model's config (:func:`start_model`), its model is of that config.

    Raises:
        CheckpointError: naming the damaged file, or the folder of another model.
    """
    iteration = iteration_of(folder)
    for name in (OPTIMISER, "config.json"):
        if not (folder / name).is_file():
            raise unusable(folder / name, "missing")
    files: dict[str, dict[str, Any]] = {}
    for file in sorted(folder.glob("*.json")):
        try:
            data = json_value(file.read_bytes())
        except NotJSON as error:
            raise damaged(file, error) from None
        if not isinstance(data, dict):
            raise damaged(file, f"a JSON {type(data).__name__}, not an object")
        files[file.name] = data
    unreadable = unreadable_weights(folder)
    if unreadable is not None:
        raise damaged(*unreadable)
    if start_config is not None:
        saved = model_config(files["config.json"])
        differences = differing(saved, start_config)
        if differences:
            raise CheckpointError(
                f"{folder}: not this run's model (its config.json has {differences}); "
                f"delete {folder} to resume from the checkpoint before it"
            )
    try:
        check_model_dir(folder)  # tokenizer files, a chat template, a config transformers takes
    except UsageError as error:
        raise CheckpointError(
            f"{error}; delete {folder} to resume from the checkpoint before it"
        ) from None
    return iteration


def restore_optimiser(folder: Path, optimiser: Any) -> None:
    """Load a checkpoint's optimiser state into ``optimiser``, once every saved moment is
    known to have its parameter's shape (``load_state_dict`` does not compare shapes: a
    state of another model size would fail only inside the first step).

    Raises:
        CheckpointError: ``optimizer.pt`` is missing, cannot be read or does not fit the
            model.
    """
    import pickle

    import torch

    path = folder / OPTIMISER
    try:
        state = torch.load(path, weights_only=True)
        misfit = _misfit(state, optimiser)
        if misfit is None:
            optimiser.load_state_dict(state)
    except FileNotFoundError:
        raise unusable(path, "missing") from None
    # torch reports a cut archive as RuntimeError, a cut pickle as EOFError/UnpicklingError,
    # and a state of another layout as ValueError/KeyError
    except (RuntimeError, EOFError, pickle.UnpicklingError, ValueError, KeyError) as error:
        raise damaged(path, str(error).splitlines()[0] if str(error) else error) from None
    if misfit is not None:
        raise unusable(path, f"does not fit the model ({misfit})")


def _misfit(state: Any, optimiser: Any) -> str | None:
    """How a saved optimiser state does not fit ``optimiser``'s parameters (``None``: it
    fits): another number of parameters, or a moment of another shape than its parameter."""
    if not isinstance(state, dict) or not isinstance(state.get("state"), dict):
        return "not an optimiser's state"
    params = [p for group in optimiser.param_groups for p in group["params"]]
    try:
        ids = [i for group in state["param_groups"] for i in group["params"]]
    except (KeyError, TypeError):
        return "no parameter groups"
    if len(ids) != len(params):
        return f"{len(ids)} parameters, the model has {len(params)}"
    for index, param in zip(ids, params, strict=True):
        moments = state["state"].get(index, {})
        for name, value in moments.items() if isinstance(moments, dict) else ():
            shape = tuple(getattr(value, "shape", ()))
            if shape and shape != tuple(param.shape):
                return f"{name} of shape {shape} for a parameter of shape {tuple(param.shape)}"
    return None


@dataclass(frozen=True, slots=True)
class Resume:
    """Where a re-run continues: the checkpoint, the iterations it ends, the run's start
    record (:func:`start_model`, plus what the trainer adds)."""

    folder: Path
    iteration: int
    start: dict[str, Any]


def resume_point(run: Path, config: Config) -> Resume | None:
    """The checkpoint a re-run of ``run`` continues from, checked (module docstring), or
    ``None`` for a fresh start.

    Raises:
        CheckpointError: the last checkpoint is damaged or another model's.
        UsageError: the run holds training output but no checkpoint, checkpoints but no
            record of its start, or a ``metrics.jsonl`` that lacks lines the checkpoint
            covers (:func:`~stategym.train.runlog.resumed_metrics`).
    """
    folder = latest(run)
    if folder is None:
        runlog.refuse_restart(run, config)
        return None
    start = read_start(run)
    iteration = check(folder, start["model"]["config"])
    runlog.resumed_metrics(run, iteration, config.eval_every)  # its history is all there
    return Resume(folder, iteration, start)


def start_model(policy: Policy) -> dict[str, Any]:
    """The record of a start model: its config (less :data:`VOLATILE`), a digest of its
    tokenizer (:func:`tokenizer_digest`) and one of its weights (:func:`weights_digest`)."""
    return {
        "config": model_config(json.loads(policy.model.config.to_json_string(use_diff=True))),
        "tokenizer": tokenizer_digest(policy.tokenizer),
        "weights": weights_digest(policy.model),
    }


def write_start(run: Path, record: Mapping[str, Any]) -> None:
    """Write ``RUN/start.json`` (atomically)."""
    runlog.replace_text(run / START, json.dumps(record, indent=2, sort_keys=True) + "\n")


def read_start(run: Path) -> dict[str, Any]:
    """The run's start record, with a model's config and its digests.

    Raises:
        UsageError: the record is missing or is not one.
    """
    path = run / START
    if not path.is_file():
        raise UsageError(
            f"{run} has checkpoints but no {START}, the record of the model (and data) it "
            "started from (a run made by an older stategym, or the file deleted): its resume "
            "cannot be checked; start the run again in another --out"
        )
    record = runlog.read_object(path, "the record of the run's start")
    model = record.get("model")
    if not (
        isinstance(model, dict)
        and isinstance(model.get("config"), dict)
        and all(isinstance(model.get(key), str) for key in ("tokenizer", "weights"))
    ):
        raise UsageError(f"{path}: no start model's config and digests in it; restore it")
    shown = record.get("demonstrations", {"episodes": 0, "digest": ""})
    count = shown.get("episodes") if isinstance(shown, dict) else None
    if not (isinstance(count, int) and count >= 0 and isinstance(shown.get("digest"), str)):
        raise UsageError(f"{path}: its demonstrations have no count and digest; restore it")
    return record


def check_tokenizer(resume: Resume, policy: Policy) -> None:
    """The resumed checkpoint's tokenizer (``policy``'s, loaded from it) is the start
    model's: its vocabulary and chat template are never trained.

    Raises:
        CheckpointError: naming the folder.
    """
    if tokenizer_digest(policy.tokenizer) != resume.start["model"]["tokenizer"]:
        raise CheckpointError(
            f"{resume.folder}: not this run's model (its tokenizer's vocabulary or chat "
            f"template is not the start model's); delete {resume.folder} to resume from the "
            "checkpoint before it"
        )


def same_start(policy: Policy, start: Mapping[str, Any], source: str) -> None:
    """``policy``, loaded again from the run's start model, is the model the run started
    from (config and weights).

    Raises:
        UsageError: naming ``source`` (changed since the run started).
    """
    if weights_digest(policy.model) != start["model"]["weights"]:
        raise UsageError(
            f"{source}: not the model this run started from (changed since, by a resumed or "
            "retrained run?); the resumed run would go on from one model under the name of "
            "another (and anchor its KL term to it); restore it, or start the run again in "
            "another --out"
        )


def load_start(config: Config, resume: Resume) -> Policy | None:
    """On a resume, ``--init``'s model loaded again and checked to be the run's start model
    (:func:`same_start`), whatever path now spells it; ``None`` for ``init=tiny``, which is
    built, not loaded.

    ``init`` is not compared as text (:func:`stategym.train.runlog.open_run`): the same
    model given by another spelling, or inside a moved folder, resumes; a model retrained
    since is refused, whether or not the run reads it again (GRPO's KL reference).
    """
    if config.init == "tiny":
        return None
    policy = Policy.load(model_source(config.init), device=config.device, dtype=config.dtype)
    same_start(policy, resume.start, f"--init {config.init}")
    return policy


def model_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A model's config as compared with the start model's (less :data:`VOLATILE`)."""
    return {key: value for key, value in config.items() if key not in VOLATILE}


def differing(saved: Mapping[str, Any], start: Mapping[str, Any]) -> str:
    """The keys in which a checkpoint's model config differs from the start model's, as
    ``key VALUE (the run started with VALUE)``, at most three; empty when equal."""

    def shown(config: Mapping[str, Any], key: str) -> str:
        return json.dumps(config[key]) if key in config else "absent"

    keys = sorted(
        k
        for k in set(saved) | set(start)
        if k not in saved or k not in start or saved[k] != start[k]
    )
    parts = [f"{k} {shown(saved, k)} (the run started with {shown(start, k)})" for k in keys[:3]]
    more = f" and {len(keys) - 3} more" if len(keys) > 3 else ""
    return ", ".join(parts) + more


def tokenizer_digest(tokenizer: Any) -> str:
    """A digest of a tokenizer's vocabulary (added tokens included) and chat template."""
    vocabulary = sorted(tokenizer.get_vocab().items())
    text = json.dumps([vocabulary, tokenizer.chat_template], ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def weights_digest(model: Any) -> str:
    """A digest of a model's config (less :data:`VOLATILE`) and of every tensor of its state
    (name, dtype, shape and bytes): equal for the same model loaded the same way."""
    import torch

    config = model_config(json.loads(model.config.to_json_string(use_diff=True)))
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode())
    for name, tensor in sorted(model.state_dict().items()):
        data = tensor.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8)
        digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}\n".encode())
        digest.update(data.numpy())  # the tensor's own buffer, not a copy of it
    return digest.hexdigest()


def publish(run: Path, folder: Path) -> Path:
    """Copy a checkpoint's model to ``RUN/model`` (the run's final policy).

    A link or a file at ``RUN/model`` is removed as a name, never followed: what a link
    points to is the user's, and ``rmtree`` refuses links (a traceback, audit 14e F4)."""
    final = run / FINAL
    if final.is_symlink() or final.is_file():
        final.unlink()
    elif final.exists():
        shutil.rmtree(final)
    shutil.copytree(folder, final, ignore=shutil.ignore_patterns(OPTIMISER, STATE))
    return final


def model_source(init: str) -> str:
    """A run directory's final model for ``--init RUN`` (else ``init`` as given)."""
    path = Path(init)
    if (path / FINAL / "config.json").is_file():
        return str(path / FINAL)
    return init


def check_start(init: str, *, trained: bool, option: str = "--init") -> None:
    """Refuse a start model that cannot load, before the run directory is written (a run
    directory holding a bad ``--init`` would refuse the corrected command as other settings).

    ``tiny`` is the model SFT builds here (``trained``: the trainer needs one that has
    learned, as GRPO does); an existing path must hold a saved model, or be a run directory
    with its final model; any other name is a Hugging Face id whose config must load, from
    the hub or from its local cache. ``option`` is the flag that gave ``init`` (the
    experiments take it as ``--model``), named in the refusal.

    Raises:
        UsageError: what is wrong with ``init``, in one line.
    """
    if init == "tiny":
        if trained:
            raise UsageError(
                "GRPO starts from a trained model: give --init an SFT run directory, a model "
                "folder or a Hugging Face id (`stategym train sft` makes one)"
            )
        return
    source = Path(model_source(init))
    if source.exists():
        if not _holds_model_type(source):
            raise UsageError(
                f"{option} {init}: holds no saved model (a run directory without its "
                f"{FINAL}/ folder, or not a model folder); finish the run or give a model folder"
            )
        check_model_dir(source)  # tokenizer, readable weights and a chat template too
        return
    from transformers import AutoConfig

    refused: tuple[type[BaseException], ...] = (OSError, ValueError, *strict_errors())
    try:
        AutoConfig.from_pretrained(init)
    except refused as error:
        raise UsageError(
            f"{option} {init}: no such folder, and no Hugging Face model of that id could be "
            f"loaded ({first_line(error)})"
        ) from None


def _holds_model_type(source: Path) -> bool:
    """Whether ``source/config.json`` may be a model's config: false only for a JSON object
    without ``model_type`` (a run directory's settings), so such a folder is told apart from
    a damaged model folder; a missing or damaged file is left to :func:`check_model_dir`,
    which names it."""
    try:
        config = json_value((source / "config.json").read_bytes())
    except (OSError, NotJSON):
        return True  # missing or damaged: check_model_dir says which, in one line
    return not isinstance(config, dict) or "model_type" in config


def iteration_generator(seed: int, iteration: int, stream: str = "") -> Any:
    """A torch generator seeded from ``(seed, iteration, stream)`` only."""
    import torch

    key = f"{seed}:{iteration}:{stream}".encode()
    return torch.Generator().manual_seed(zlib.crc32(key))


__all__ = [
    "CHECKPOINTS",
    "FINAL",
    "START",
    "CheckpointError",
    "Resume",
    "check",
    "check_tokenizer",
    "folder_of",
    "iteration_generator",
    "iteration_of",
    "latest",
    "load_start",
    "model_source",
    "publish",
    "read_start",
    "restore_optimiser",
    "resume_point",
    "same_start",
    "save",
    "start_model",
    "write_start",
]
