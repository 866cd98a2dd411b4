"""Checkpoints of a run: Hugging Face folders with the optimiser's state, and resuming.

``RUN/checkpoints/iter-NNNNNN/`` holds the model and tokenizer as ``save_pretrained``
writes them (so ``hf:RUN/checkpoints/iter-NNNNNN`` plays it in ``eval``, ``run`` and
``protocol``; ``serve`` serves it if it was trained on ``messages``), ``optimizer.pt`` and
``trainer_state.json`` (the iteration it ends). A
checkpoint is written to a temporary folder (``.partial``, never resumed from) and renamed,
so an interrupted save leaves no half checkpoint behind, and a failed one no ``.partial``
either (its error names the checkpoint folder, never the ``.partial``); :func:`latest` is
the last one (a last ``iter-NNNNNN`` that is no folder is refused, naming it, never
skipped). ``RUN/model`` is the final policy (a copy of the last checkpoint). What a save or
a publish replaces (``iter-N``, ``iter-N.partial``, ``RUN/model``) is removed without being
opened or followed (:func:`stategym.kernel.files.remove_entry`): a FIFO there is no hang, a
link no traceback, and what a link names is never touched.

Every checkpoint, and so ``RUN/model``, holds stategym's record of the model
(:data:`~stategym.llm.model_files.RECORD_FILE`,
:func:`~stategym.train.config.model_record`): the rendering the policy was trained in, which
``hf:`` plays it in and ``serve`` checks, and the command and iteration that saved it.

``RUN/start.json`` records what the run started from (:mod:`stategym.train.start`). A resume
is checked against it (:func:`resume_point`):

- the last checkpoint must be whole (every file present and readable), its
  ``trainer_state.json`` must state its folder's own iteration, its model must be the run's
  own (its config, less what saving sets (:data:`~stategym.train.start.VOLATILE`), and its
  tokenizer equal to the
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
damage in one line, like broken JSON. Every file is read only as a regular file
(:func:`stategym.kernel.files.open_regular`), and a checkpoint folder holding a FIFO, a
device or a socket is refused before any loader opens it
(:func:`stategym.kernel.files.refuse_special_entries`): damage named in one line, never a
hang.

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

import json
import re
import shutil
import zlib
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stategym.kernel.errors import UsageError
from stategym.kernel.files import (
    NotAFile,
    NotJSON,
    exists_as_file,
    json_value,
    naming_in,
    not_a_file,
    open_regular,
    read_regular,
    refuse_special_entries,
    remove_entry,
)
from stategym.llm.model_files import (
    RECORD_FILE,
    check_model_dir,
    unreadable_weights,
)
from stategym.train import runlog
from stategym.train.config import Config, model_record
from stategym.train.policy import Policy
from stategym.train.start import (
    FINAL,
    differing,
    model_config,
    model_source,
    read_start,
    same_start,
    tokenizer_digest,
)

CHECKPOINTS = "checkpoints"
STATE = "trainer_state.json"
OPTIMISER = "optimizer.pt"
FOLDER = re.compile(r"iter-(\d+)")
"""A checkpoint folder's name: ``iter-`` and the iteration it ends."""


class CheckpointError(UsageError):
    """A checkpoint that cannot be resumed from (a file cut, missing or edited, or another
    model's); the message names it and says what to do."""


def unusable(path: Path, what: str, folder: Path | None = None) -> CheckpointError:
    """The error for a checkpoint's file that cannot be resumed from, with what to do
    about it: resume from the checkpoint before it (delete ``folder``, the checkpoint's,
    by default the file's own folder)."""
    return CheckpointError(
        f"{path}: {what}; the checkpoint is damaged: delete {folder or path.parent} "
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
    the model's record (:func:`model_record`) beside the weights.

    A save that fails in any way (a full disk, the rename refused, an interruption) removes
    its ``.partial``, and its :class:`OSError` names the checkpoint's folder (or its file),
    the path the user knows, never the ``.partial``. What is at ``iter-N`` or
    ``iter-N.partial`` before the save is removed without being opened or followed
    (:func:`~stategym.kernel.files.remove_entry`: a FIFO there hung the save, a link to a
    folder was a traceback).
    """
    import torch

    folder = folder_of(run, iteration)
    partial = folder.with_name(folder.name + ".partial")
    try:
        remove_entry(partial)  # an interrupted save's, or anything else there: never opened
        policy.save(partial)
        record = json.dumps(model_record(config, iteration), indent=2, sort_keys=True)
        (partial / RECORD_FILE).write_text(record + "\n")
        torch.save(optimiser.state_dict(), partial / OPTIMISER)
        (partial / STATE).write_text(json.dumps({"iteration": iteration}) + "\n")
        remove_entry(folder)
        partial.rename(folder)
    except BaseException as error:  # Ctrl-C or a library's error too: no half checkpoint left
        with suppress(OSError):
            remove_entry(partial)
        if isinstance(error, OSError):
            raise naming_in(error, partial, folder) from None
        raise
    return folder


def latest(run: Path) -> Path | None:
    """The run's last checkpoint (the highest ``iter-NNNNNN`` entry), or ``None``.

    Whole or not: a save is renamed into place whole, so a folder missing its files was
    damaged afterwards, and :func:`check` refuses it, naming it, rather than this falling
    back to the one before without a word; so is the last ``iter-NNNNNN`` entry where it is
    no folder (a file, a FIFO, a dangling link; a link to a folder is read as one), and
    ``checkpoints`` itself where it is no folder (refused before anything trains). A
    ``.partial`` entry is an interrupted save, never a checkpoint.

    Raises:
        CheckpointError: ``checkpoints`` or the last ``iter-NNNNNN`` in it is not a folder.
    """
    root = run / CHECKPOINTS
    if root.is_symlink() or root.exists():
        if not root.is_dir():
            raise CheckpointError(
                f"{root} is {_what(root)}, not the folder of the run's checkpoints: move it "
                "away to train the run afresh"
            )
    else:
        return None
    found = [
        (int(named.group(1)), path)
        for path in root.iterdir()
        if (named := FOLDER.fullmatch(path.name))
    ]
    if not found:
        return None
    last = max(found)[1]
    if not last.is_dir():
        raise CheckpointError(
            f"{last} is {_what(last)}, not a checkpoint folder; the checkpoint is damaged: "
            f"delete {last} to resume from the checkpoint before it"
        )
    return last


def _what(path: Path) -> str:
    """What an entry that is not a folder is: as :func:`~stategym.kernel.files.not_a_file`
    names it, ``a file``, or ``a dangling link`` (a loop included)."""
    if not path.exists():
        return "a dangling link"
    return not_a_file(path) or "a file"


def iteration_of(folder: Path) -> int:
    """The iterations a checkpoint ends: its ``trainer_state.json``'s, which must be its
    folder's (``iter-000006`` ends 6; a state edited to say otherwise would end the run
    early or train iteration 6's weights again as another iteration).

    Raises:
        CheckpointError: ``trainer_state.json`` is missing, is not an object with an
            iteration number, or states another iteration than its folder's name.
    """
    path = folder / STATE
    try:
        state = json_value(_read(path))
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
    try:
        refuse_special_entries(folder)  # a loader would hang on a FIFO
    except NotAFile as error:
        raise unusable(error.path, f"unreadable ({error.why})", folder) from None
    iteration = iteration_of(folder)
    for name in (OPTIMISER, "config.json"):
        _present(folder / name)
    files: dict[str, dict[str, Any]] = {}
    for file in sorted(folder.glob("*.json")):
        try:
            data = json_value(_read(file))
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


def _present(path: Path) -> None:
    """Refuse a checkpoint's file that is missing or is not a regular file.

    Raises:
        CheckpointError: naming the file (a FIFO or a folder as what it is, never missing).
    """
    try:
        there = exists_as_file(path)
    except NotAFile as error:
        raise damaged(path, error.why) from None
    if not there:
        raise unusable(path, "missing")


def _read(path: Path) -> bytes:
    """The bytes of a checkpoint's file.

    Raises:
        CheckpointError: the file is missing, or is not a regular file (a FIFO, a folder).
    """
    try:
        return read_regular(path)
    except FileNotFoundError:
        raise unusable(path, "missing") from None
    except NotAFile as error:
        raise damaged(path, error.why) from None


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
        with open_regular(path) as handle:  # a FIFO put there since check(): no hang
            state = torch.load(handle, weights_only=True)
        misfit = _misfit(state, optimiser)
        if misfit is None:
            optimiser.load_state_dict(state)
    except FileNotFoundError:
        raise unusable(path, "missing") from None
    except NotAFile as error:
        raise damaged(path, error.why) from None
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


def publish(run: Path, folder: Path) -> Path:
    """Copy a checkpoint's model to ``RUN/model`` (the run's final policy).

    What is at ``RUN/model`` is removed without being opened or followed
    (:func:`~stategym.kernel.files.remove_entry`): what a link points to is the user's, and
    ``rmtree`` refuses a link (a traceback, audit 14e F4) and waits on a FIFO (15b F2)."""
    final = run / FINAL
    remove_entry(final)
    shutil.copytree(folder, final, ignore=shutil.ignore_patterns(OPTIMISER, STATE))
    return final


def iteration_generator(seed: int, iteration: int, stream: str = "") -> Any:
    """A torch generator seeded from ``(seed, iteration, stream)`` only."""
    import torch

    key = f"{seed}:{iteration}:{stream}".encode()
    return torch.Generator().manual_seed(zlib.crc32(key))


__all__ = [
    "CHECKPOINTS",
    "CheckpointError",
    "Resume",
    "check",
    "check_tokenizer",
    "folder_of",
    "iteration_generator",
    "iteration_of",
    "latest",
    "load_start",
    "publish",
    "restore_optimiser",
    "resume_point",
    "save",
]
