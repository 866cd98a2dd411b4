"""The model a training run starts from: its record (``RUN/start.json``) and the check of
``--init`` before a run directory is written.

``RUN/start.json`` records what the run started from (:func:`start_model`), written once at
a fresh start, before anything trains: the start model's config (less what saving sets,
:data:`VOLATILE`), a digest of its tokenizer (vocabulary and chat template) and of its
weights, and (SFT from ``run:DIR``) which logged episodes it learns from. Every resume is
checked against it (:mod:`stategym.train.checkpoint`): the last checkpoint's model must be
the run's own, and ``--init`` must still be the start model (:func:`same_start`).

:func:`check_start` refuses a start model that cannot load before anything is written, and
:func:`model_source` reads ``--init RUN`` as that run's final model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stategym.kernel.errors import UsageError
from stategym.kernel.files import NotJSON, exists_as_file, json_value, read_regular
from stategym.llm.model_files import (
    check_hub_tokenizer,
    check_model_dir,
    first_line,
    strict_errors,
)
from stategym.train import runlog
from stategym.train.policy import Policy

FINAL = "model"
"""``RUN/model``: a run's final policy (a copy of its last checkpoint)."""
START = "start.json"
"""The record of what the run started from (module docstring)."""
VOLATILE = frozenset(
    ("dtype", "torch_dtype", "transformers_version", "architectures", "_name_or_path",
     "transformers_weights")
)  # fmt: skip
"""Keys of a model's config that saving sets or drops (the weights' dtype, the writer's
version, the class that saved it, where it was loaded from): not compared with the start
model's."""


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
    if not exists_as_file(path):  # a FIFO or a folder is refused, never called missing
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


def model_source(init: str) -> str:
    """A run directory's final model for ``--init RUN`` (else ``init`` as given): ``RUN/model``
    where it holds a ``config.json``, or where it is there in any form (a FIFO, a file, a
    folder whose ``config.json`` is a FIFO) and ``init`` is not itself a model folder, so the
    check of it names what is wrong there rather than calling the run's model missing."""
    path = Path(init)
    final = path / FINAL
    if (final / "config.json").is_file():
        return str(final)
    if final.exists() and not _holds_model_type(path):
        return str(final)
    return init


def check_start(init: str, *, trained: bool, option: str = "--init") -> None:
    """Refuse a start model that cannot load, before the run directory is written (a run
    directory holding a bad ``--init`` would refuse the corrected command as other settings).

    ``tiny`` is the model SFT builds here (``trained``: the trainer needs one that has
    learned, as GRPO does); an existing path must hold a saved model, or be a run directory
    with its final model; any other name is a Hugging Face id whose config must load, from
    the hub or from its local cache, and whose tokenizer must load with a chat template
    (:func:`~stategym.llm.model_files.check_hub_tokenizer`), as a folder's must. ``option``
    is the flag that gave ``init`` (the experiments take it as ``--model``), named in the
    refusal.

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
    check_hub_tokenizer(init, f"{option} {init}")  # a chat template, as a folder must have


def _holds_model_type(source: Path) -> bool:
    """Whether ``source/config.json`` may be a model's config: false only for a JSON object
    without ``model_type`` (a run directory's settings), so such a folder is told apart from
    a damaged model folder; a missing or damaged file is left to :func:`check_model_dir`,
    which names it."""
    try:
        config = json_value(read_regular(source / "config.json"))  # a FIFO: refused, no hang
    except (OSError, NotJSON):
        return True  # missing or damaged: check_model_dir says which, in one line
    return not isinstance(config, dict) or "model_type" in config
