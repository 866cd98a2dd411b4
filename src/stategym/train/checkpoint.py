"""Checkpoints of a run: Hugging Face folders with the optimiser's state, and resuming.

``RUN/checkpoints/iter-NNNNNN/`` holds the model and tokenizer as ``save_pretrained``
writes them (so ``hf:RUN/checkpoints/iter-NNNNNN`` plays it in ``eval``, ``serve`` and
``protocol``), ``optimizer.pt`` and ``trainer_state.json`` (the iteration it ends). A
checkpoint is written to a temporary folder and renamed, so an interrupted save leaves no
half checkpoint behind; :func:`latest` is the last complete one. ``RUN/model`` is the final
policy (a copy of the last checkpoint). A checkpoint damaged afterwards (a file cut by a full
disk or a crash before the data reached it) is refused by :func:`check` and
:func:`restore_optimiser` with :class:`CheckpointError`, naming the file; deleting that
folder resumes from the checkpoint before it (nothing is skipped silently).

Resuming is exact because nothing random carries over between iterations: every iteration
seeds its own generator from ``(seed, iteration)`` (:func:`iteration_generator`), so the
model and the optimiser's state are all the state there is.
"""

from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path
from typing import Any

from stategym.kernel.errors import UsageError
from stategym.llm.model_files import check_model_dir, first_line, unreadable_weights
from stategym.train.policy import Policy

CHECKPOINTS = "checkpoints"
FINAL = "model"
STATE = "trainer_state.json"
OPTIMISER = "optimizer.pt"


class CheckpointError(UsageError):
    """A checkpoint's file cannot be read (cut or damaged); the message names it."""


def damaged(path: Path, why: object) -> CheckpointError:
    """The error for an unreadable file of a checkpoint, with what to do about it."""
    return CheckpointError(
        f"{path}: unreadable ({why}); the checkpoint is damaged: delete {path.parent} "
        "to resume from the checkpoint before it"
    )


def folder_of(run: Path, iteration: int) -> Path:
    """Where the checkpoint after ``iteration`` iterations lives."""
    return run / CHECKPOINTS / f"iter-{iteration:06d}"


def save(run: Path, iteration: int, policy: Policy, optimiser: Any) -> Path:
    """Write the checkpoint after ``iteration`` iterations (atomically) and return it."""
    import torch

    folder = folder_of(run, iteration)
    partial = folder.with_name(folder.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    policy.save(partial)
    torch.save(optimiser.state_dict(), partial / OPTIMISER)
    (partial / STATE).write_text(json.dumps({"iteration": iteration}) + "\n")
    if folder.exists():
        shutil.rmtree(folder)
    partial.rename(folder)
    return folder


def latest(run: Path) -> Path | None:
    """The last complete checkpoint of a run, or ``None``."""
    root = run / CHECKPOINTS
    if not root.is_dir():
        return None
    done = sorted(p for p in root.glob("iter-*") if p.is_dir() and (p / STATE).is_file())
    return done[-1] if done else None


def iteration_of(folder: Path) -> int:
    """The iterations a checkpoint ends.

    Raises:
        CheckpointError: ``trainer_state.json`` is not an object with an iteration number.
    """
    path = folder / STATE
    try:
        state = json.loads(path.read_bytes().decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise damaged(path, error) from None
    iteration = state.get("iteration") if isinstance(state, dict) else None
    if not isinstance(iteration, int) or isinstance(iteration, bool) or iteration < 0:
        raise damaged(path, f"no iteration number in {state!r:.80}")
    return iteration


def check(folder: Path) -> int:
    """The iterations a checkpoint ends, once its state, its JSON files (the model's config,
    the tokenizer) and its weights are known to be readable (a cut file fails here, not deep
    inside a model loader).

    Raises:
        CheckpointError: naming the damaged file.
    """
    iteration = iteration_of(folder)
    for file in sorted(folder.glob("*.json")):
        try:
            data = json.loads(file.read_bytes())
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise damaged(file, error) from None
        if not isinstance(data, dict):
            raise damaged(file, f"a JSON {type(data).__name__}, not an object")
    unreadable = unreadable_weights(folder)
    if unreadable is not None:
        raise damaged(*unreadable)
    return iteration


def restore_optimiser(folder: Path, optimiser: Any) -> None:
    """Load a checkpoint's optimiser state into ``optimiser``.

    Raises:
        CheckpointError: ``optimizer.pt`` cannot be read or does not fit the model.
    """
    import pickle

    import torch

    path = folder / OPTIMISER
    try:
        optimiser.load_state_dict(torch.load(path, weights_only=True))
    # torch reports a cut archive as RuntimeError, a cut pickle as EOFError/UnpicklingError,
    # and a state of another shape as ValueError/KeyError
    except (RuntimeError, EOFError, pickle.UnpicklingError, ValueError, KeyError) as error:
        raise damaged(path, str(error).splitlines()[0] if str(error) else error) from None


def publish(run: Path, folder: Path) -> Path:
    """Copy a checkpoint's model to ``RUN/model`` (the run's final policy)."""
    final = run / FINAL
    if final.exists():
        shutil.rmtree(final)
    shutil.copytree(folder, final, ignore=shutil.ignore_patterns(OPTIMISER, STATE))
    return final


def model_source(init: str) -> str:
    """A run directory's final model for ``--init RUN`` (else ``init`` as given)."""
    path = Path(init)
    if (path / FINAL / "config.json").is_file():
        return str(path / FINAL)
    return init


def check_start(init: str, *, trained: bool) -> None:
    """Refuse a start model that cannot load, before the run directory is written (a run
    directory holding a bad ``--init`` would refuse the corrected command as other settings).

    ``tiny`` is the model SFT builds here (``trained``: the trainer needs one that has
    learned, as GRPO does); an existing path must hold a saved model, or be a run directory
    with its final model; any other name is a Hugging Face id whose config must load, from
    the hub or from its local cache.

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
                f"--init {init}: holds no saved model (a run directory without its "
                f"{FINAL}/ folder, or not a model folder); finish the run or give a model folder"
            )
        check_model_dir(source)  # tokenizer, readable weights and a chat template too
        return
    from transformers import AutoConfig

    try:
        AutoConfig.from_pretrained(init)
    except (OSError, ValueError) as error:
        raise UsageError(
            f"--init {init}: no such folder, and no Hugging Face model of that id could be "
            f"loaded ({first_line(error)})"
        ) from None


def _holds_model_type(source: Path) -> bool:
    """Whether ``source/config.json`` may be a model's config: false only for a JSON object
    without ``model_type`` (a run directory's settings), so such a folder is told apart from
    a damaged model folder; a missing or damaged file is left to :func:`check_model_dir`,
    which names it."""
    try:
        config = json.loads((source / "config.json").read_bytes())
    except (OSError, ValueError):
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
    "CheckpointError",
    "check",
    "folder_of",
    "iteration_generator",
    "iteration_of",
    "latest",
    "model_source",
    "publish",
    "restore_optimiser",
    "save",
]
