"""The trainer's settings: one frozen dataclass per command, saved with every run.

Each field carries a one-line docstring; :func:`field_help` reads them from this module's
source, so ``stategym train sft --help`` and ``stategym train grpo --help`` are derived from
the dataclasses (CleanRL's habit) and the config cannot drift from its CLI. A run directory's
``config.json`` is :func:`to_json` of the config; :func:`from_json` reads it back.

The rendering a run trains in is recorded in every model folder it saves
(:func:`model_record`), so that whatever plays the model plays it as trained. The command
line leaves ``--rendering`` unset to mean the start model's (:func:`start_rendering`: the
folder's record, ``messages`` for a model from elsewhere, ``compact`` for ``tiny``); a run
trained in another rendering than its start model's says so in one line
(:func:`note_rendering`). A config built in code has ``compact`` by default, as before.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import itertools
import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Literal, TypeVar

Credit = Literal["outcome", "composite", "dense", "gigpo", "mc"]
CREDITS: tuple[Credit, ...] = ("outcome", "composite", "dense", "gigpo", "mc")
"""The credit flags the loop implements."""
Rendering = Literal["messages", "compact"]


@dataclass(frozen=True, slots=True)
class Common:
    """Settings every training command shares."""

    out: str = "runs/train"
    """Run directory (config.json, metrics.jsonl, checkpoints/); re-running resumes it."""
    domain: str = "travel"
    """Domain (or synth:SPEC) the tasks come from."""
    knobs: str = "default"
    """Knobs of the training and evaluation tasks (Knobs.parse syntax)."""
    family: str = ""
    """Task family (ask-or-act, ...): its domain and per-seed knobs replace domain/knobs."""
    rendering: Rendering = "compact"
    """What the model reads: compact lines with handles, or OpenAI messages."""
    init: str = "tiny"
    """Start model: tiny (built here from scratch), a model folder, or a Hugging Face id."""
    seed: int = 0
    """Seed of everything random (sampling, batch order, a tiny model's weights)."""
    first_seed: int = 1_000_000
    """First training task seed (evaluation uses eval_seed upwards, far below)."""
    iterations: int = 20
    """Optimiser iterations (SFT: steps; GRPO: generate, score, update)."""
    lr: float = 1e-3
    """AdamW learning rate (constant)."""
    max_tokens: int = 48
    """Most tokens the policy may write per round."""
    max_length: int = 1536
    """Episodes are cut to this many tokens (a longer one stops, truncated)."""
    device: str = "cpu"
    """torch device (cpu, cuda)."""
    dtype: Literal["float32", "bfloat16"] = "float32"
    """Weights' dtype (bfloat16 on a GPU)."""
    threads: int = 1
    """Torch CPU threads (one thread is the deterministic setting)."""
    share_prefix: bool = False
    """Run the tokens every row of a training batch begins with once (the system prompt)."""
    eval_every: int = 0
    """Held-out evaluation every this many iterations (0: only at the end)."""
    eval_episodes: int = 8
    """Held-out tasks per evaluation (seeds eval_seed upwards)."""
    eval_seed: int = 0
    """First held-out task seed."""
    save_every: int = 5
    """Checkpoint every this many iterations (and at the end)."""
    progress: bool = True
    """Draw a progress bar on stderr."""

    def __post_init__(self) -> None:
        # Knobs given as an object or a mapping (the forms kernel.knobs.as_knobs reads) are
        # kept as their text: the settings are saved as JSON and compared on every resume.
        # A mapping as_knobs refuses is kept as given, for check() to refuse in words.
        from stategym.kernel.knobs import Knobs, as_knobs

        if isinstance(self.knobs, Knobs | Mapping):
            with contextlib.suppress(TypeError, ValueError):
                object.__setattr__(self, "knobs", as_knobs(self.knobs).describe())


@dataclass(frozen=True, slots=True)
class SFTConfig(Common):
    """Supervised fine-tuning on scripted agents' (or a run directory's) episodes."""

    agents: str = "expert"
    """Demonstrators with weights, NAME[:W],... (scripted agents), or run:DIR for a run's log."""
    episodes: int = 64
    """Demonstration episodes (shared among the agents by weight)."""
    batch_size: int = 8
    """Episodes per optimiser step."""
    tiny_width: int = 128
    """init=tiny: the model's width (its MLP is 3x as wide)."""
    tiny_vocab: int = 1024
    """init=tiny: the tokenizer's vocabulary."""


@dataclass(frozen=True, slots=True)
class GRPOConfig(Common):
    """GRPO-family RL: lock-step groups, per-round credit, PPO-clipped updates."""

    init: str = "runs/sft"
    """Start model: a model folder (an SFT run's checkpoint), tiny, or a Hugging Face id."""
    credit: Credit = "outcome"
    """Credit assignment: outcome, composite, dense, gigpo or mc."""
    norm: Literal["std", "none", "rloo"] = "std"
    """Group baseline: std (GRPO), none (Dr.GRPO) or rloo (leave-one-out)."""
    group: int = 8
    """Episodes per task (G)."""
    tasks: int = 8
    """Tasks per iteration."""
    updates: int = 1
    """Optimiser passes over each iteration's batch (PPO epochs)."""
    minibatch: int = 16
    """Episodes per optimiser step within a pass."""
    clip: float = 0.2
    """PPO ratio clip."""
    kl: float = 0.0
    """Coefficient of the k3 KL to the initial policy (0: no reference kept)."""
    entropy: float = 0.0
    """Coefficient of the entropy bonus."""
    temperature: float = 1.0
    """Sampling temperature of the rollouts."""
    gigpo_weight: float = 1.0
    """Weight of GiGPO's step-level term."""
    mc_samples: int = 4
    """mc: continuations sampled from each decision state (K)."""
    coarse_key: bool = False
    """GiGPO: group steps by the world digest alone (not the round index)."""
    guard_teacher: str = ""
    """Exploration guard: a scripted agent whose episodes join each group ("" off)."""
    guard_fraction: float = 0.0
    """Share of each group the guard teacher plays (rounded, at least one when > 0)."""
    guard_clip: bool = False
    """Clip the teacher's tokens' ratio like the policy's (off: advantage-weighted likelihood)."""


Config = SFTConfig | GRPOConfig
C = TypeVar("C", SFTConfig, GRPOConfig)


@functools.cache
def field_help(cls: type) -> dict[str, str]:
    """Each field's one-line docstring, from the source of ``cls`` and its bases."""
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object:
            continue
        try:
            tree = ast.parse(inspect.getsource(klass))
        except (OSError, TypeError):  # a class without source (a builtin base)
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in itertools.pairwise(body):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                out[node.target.id] = after.value.value.strip()
    return out


def check(config: Config) -> None:
    """Refuse a setting the trainer cannot run, before anything is written (a run directory
    holding bad settings would refuse the corrected command as "other settings").

    Every numeric range, the start of the seeds, the domain, ``family`` and ``knobs``, and
    the agents' names (SFT's ``agents``, GRPO's ``guard_teacher``) are checked here.

    Raises:
        UsageError: the first bad setting, as ``--option VALUE: why``.
    """
    from stategym.kernel.errors import UsageError

    if not config.out.strip():
        raise UsageError("--out is empty; name the run directory")
    _at_least(config, 1, "iterations", "max_tokens", "max_length", "save_every")
    _at_least(config, 0, "first_seed", "eval_every", "eval_episodes", "eval_seed", "threads")
    _real(config, "lr", above=0.0)
    _task_setting(config)
    if isinstance(config, SFTConfig):
        _at_least(config, 1, "batch_size", "tiny_width", "tiny_vocab")
        if config.tiny_width % 8:
            raise UsageError(
                f"--tiny-width {config.tiny_width}: must be a multiple of 8 (4 attention "
                "heads of an even width)"
            )
        if config.agents.startswith("run:"):
            if not config.agents[4:].strip():
                raise UsageError("--agents run: names no run directory; use run:DIR")
        else:
            _at_least(config, 1, "episodes")
            from stategym.train.data import parse_mixture

            try:
                mixture = parse_mixture(config.agents)
            except ValueError as error:
                raise UsageError(f"--agents {config.agents!r}: {error}") from None
            for name, _ in mixture:
                _scripted(name, "--agents")
        return
    _at_least(config, 2, "group")
    _at_least(config, 1, "tasks", "updates", "minibatch", "mc_samples")
    _real(config, "clip", above=0.0)
    for name in ("kl", "entropy", "temperature", "gigpo_weight"):
        _real(config, name, least=0.0)
    fraction = config.guard_fraction
    if not (math.isfinite(fraction) and 0.0 <= fraction < 1.0):
        raise UsageError(f"--guard-fraction {fraction}: must be at least 0 and below 1")
    if config.guard_teacher:
        _scripted(config.guard_teacher, "--guard-teacher")
    elif fraction > 0:
        raise UsageError(f"--guard-fraction {fraction} needs a --guard-teacher to play that share")
    if guard_size(config) >= config.group:
        raise UsageError(
            f"--guard-fraction {fraction} gives the teacher all {config.group} episodes of "
            "each group: the policy plays none; give a smaller fraction or a larger --group"
        )


def guard_size(config: GRPOConfig) -> int:
    """Episodes of each group the guard teacher plays (``round(fraction * group)``, at
    least one when the guard is on)."""
    if config.guard_teacher and config.guard_fraction > 0:
        return min(config.group, max(1, round(config.guard_fraction * config.group)))
    return 0


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def _at_least(config: Config, least: int, *names: str) -> None:
    from stategym.kernel.errors import UsageError

    for name in names:
        value = getattr(config, name)
        if value < least:
            raise UsageError(f"{_option(name)} {value}: must be at least {least}")


FLOAT32_MAX = 3.4028234663852886e38
"""The largest finite float32: every real setting ends up in float32 arithmetic (the
learning rate in the optimiser's step, the clip in ``clamp``, the coefficients and the
temperature in the loss and the sampler), where a larger value cannot be converted."""


def _real(config: Config, name: str, *, above: float | None = None, least: float = 0.0) -> None:
    """``name`` is a number within float32's finite range (:data:`FLOAT32_MAX`), above
    ``above`` (when given) or at least ``least``."""
    from stategym.kernel.errors import UsageError

    value = getattr(config, name)
    bound = f"at most {FLOAT32_MAX:.4g} (float32's largest)"
    if above is not None:
        if not (math.isfinite(value) and above < value <= FLOAT32_MAX):
            raise UsageError(
                f"{_option(name)} {value}: must be a finite number above {above:g} and {bound}"
            )
    elif not (math.isfinite(value) and least <= value <= FLOAT32_MAX):
        raise UsageError(
            f"{_option(name)} {value}: must be a finite number at least {least:g} and {bound}"
        )


def _task_setting(config: Config) -> None:
    """The family, or the domain and the knobs, name tasks that exist."""
    from stategym.kernel.errors import UsageError
    from stategym.kernel.knobs import Knobs, as_knobs
    from stategym.registry import get_domain
    from stategym.train.tasks import task_family

    if config.family:
        try:
            task_family(config.family)
        except KeyError as error:
            raise UsageError(f"--family {config.family}: {error.args[0]}") from None
        return
    if not isinstance(config.knobs, str):  # not text, Knobs or a good mapping (__post_init__)
        try:
            as_knobs(config.knobs, "--knobs")
        except (TypeError, ValueError) as error:
            raise UsageError(str(error)) from None
    try:
        Knobs.parse(config.knobs)
    except ValueError as error:
        raise UsageError(f"--knobs {config.knobs!r}: {error}") from None
    get_domain(config.domain)  # UnknownDomainError: a one-line error of its own


def _scripted(name: str, option: str) -> None:
    """``name`` is a scripted agent's (a style, random, or a guard teacher ``ask-pP``)."""
    from stategym.agents import agent_names
    from stategym.agents.guard import guard_probability
    from stategym.kernel.errors import UsageError

    if name not in agent_names() and guard_probability(name) is None:
        raise UsageError(
            f"{option}: unknown scripted agent {name!r}; known: {', '.join(agent_names())}, "
            "ask-pP (the expert asking each must-ask fact with probability P)"
        )


def model_record(config: Config, iteration: int) -> dict[str, Any]:
    """stategym's record of a model the trainer saves: the rendering it was trained in (what
    ``hf:`` plays it in; ``serve`` refuses one that is not ``messages``), the command, its
    start model and the iterations the weights have had, and the prompt version."""
    from stategym.rendering import PROMPT_VERSION

    return {
        "rendering": config.rendering,
        "prompt_version": PROMPT_VERSION,
        "trained": {
            "command": "train sft" if isinstance(config, SFTConfig) else "train grpo",
            "init": config.init,
            "iteration": iteration,
        },
    }


def start_rendering(init: str) -> str | None:
    """The rendering the start model ``init`` was trained to read: its folder's record
    (``RUN/model``'s for a run directory), ``messages`` for a folder without one or a hub id
    (a model from elsewhere), ``None`` for ``tiny`` (built here, for either).

    Raises:
        UsageError: the folder's record is damaged or names no known rendering.
    """
    from stategym.llm.model_files import recorded_rendering
    from stategym.train import start

    if init == "tiny":
        return None
    source = Path(start.model_source(init))
    return recorded_rendering(source) if source.is_dir() else "messages"


def note_rendering(config: Config) -> None:
    """Say in one line (stderr) when the run trains in another rendering than its start
    model was trained in: allowed (the tiny model's tokenizer knows both), but the model the
    run saves then reads, and is played in, the run's rendering, not its start's."""
    import sys

    started = start_rendering(config.init)
    if started is not None and started != config.rendering:
        print(
            f"note: --rendering {config.rendering}: the start model {config.init} was trained "
            f"on the {started} rendering; this run trains it on {config.rendering}, which its "
            "saved models record",
            file=sys.stderr,
        )


def to_json(config: Config) -> str:
    """The config as the run directory's ``config.json`` (kind first, fields sorted)."""
    kind = "sft" if isinstance(config, SFTConfig) else "grpo"
    return json.dumps({"kind": kind, **asdict(config)}, indent=2, sort_keys=True) + "\n"


def from_json(path: Path, cls: type[C]) -> C:
    """A config read back from ``config.json`` (unknown keys are an error).

    Raises:
        ValueError: the file is not a JSON object (:class:`~stategym.kernel.files.NotJSON`,
            whatever the parse failed on, named ``FILE:LINE``), or holds unknown settings.
    """
    from stategym.kernel.files import NotJSON, json_value, read_regular

    try:
        data = json_value(read_regular(path))
    except NotJSON as error:
        raise ValueError(error.where(path)) from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a JSON object")
    data.pop("kind", None)
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"{path}: unknown settings {unknown}")
    return cls(**data)


__all__ = [
    "CREDITS",
    "Common",
    "Config",
    "Credit",
    "GRPOConfig",
    "Rendering",
    "SFTConfig",
    "check",
    "field_help",
    "from_json",
    "guard_size",
    "model_record",
    "note_rendering",
    "start_rendering",
    "to_json",
]
