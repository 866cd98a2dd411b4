"""Which logged episodes a resumed run may reuse: those its LLM agents played as they play now.

An episode of an LLM agent is reused only when it was played as the command's agent plays
now (:func:`refuse_other_settings`): the settings an agent logs in every trajectory's
``meta`` (:meth:`stategym.llm.agent.ChatAgent.settings`: sampling, run seed, the endpoint,
an ``hf:`` model's weight and tokenizer digests, the rendering...) must all be logged there,
equal. A file holding one played otherwise is refused in one line naming what differs, since
its episodes would be summarised under the new settings. A log written before a setting was
logged (no weights digest) is refused the same way: how it was played cannot be told.
Scripted agents log no settings; their runs resume as before. ``run``, ``eval`` and
:func:`stategym.llm.batch.run_many` share this rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from stategym.kernel.errors import UsageError
from stategym.kernel.trajectory import Trajectory

if TYPE_CHECKING:
    from stategym.rollout.agents import AgentSource
    from stategym.rollout.spec import EpisodeSpec


def refuse_other_settings(
    path: Path, finished: Iterable[Trajectory], specs: Sequence[EpisodeSpec], agents: AgentSource
) -> None:
    """Refuse a log holding an episode of one of the specs' LLM agents played otherwise
    than that agent plays now.

    Each (domain, LLM agent) of ``specs`` is made once, for its first spec's task, and asked
    for its :meth:`~stategym.llm.agent.ChatAgent.settings`; every episode of that domain and
    agent in ``finished`` must log each of them equal in its ``meta``. Scripted agents are
    not made (nothing of theirs is compared).

    Raises:
        UsageError: one line naming the agent, the episode and what differs, and saying to
            use ``--overwrite`` or another ``--out``.
    """
    firsts: dict[tuple[str, str], EpisodeSpec] = {}
    for spec in specs:
        if spec.llm:
            firsts.setdefault((spec.domain, spec.agent), spec)
    now: dict[tuple[str, str], dict[str, Any]] = {}
    for trajectory in finished:
        pair = (trajectory.domain, trajectory.agent)
        if pair not in firsts:
            continue
        if pair not in now:
            now[pair] = agent_settings(agents, firsts[pair])
        differences = settings_differences(trajectory.meta, now[pair])
        if differences:
            raise UsageError(
                f"{path} holds episodes of {trajectory.agent} on {trajectory.domain} played "
                f"otherwise than this command plays them (seed {trajectory.seed} sample "
                f"{trajectory.run.sample}: {'; '.join(differences)}); use --overwrite or "
                "another --out"
            )


def agent_settings(agents: AgentSource, spec: EpisodeSpec) -> dict[str, Any]:
    """What the spec's agent logs of how it plays (an LLM agent's ``settings()``, as JSON
    reads them back); empty for an agent that logs none."""
    from stategym.rollout.play import spec_task

    settings = getattr(agents.agent(spec, spec_task(spec)), "settings", None)
    if settings is None:
        return {}
    logged: dict[str, Any] = orjson.loads(orjson.dumps(settings()))
    return logged


def settings_differences(meta: Mapping[str, Any], settings: Mapping[str, Any]) -> list[str]:
    """Each of ``settings`` that ``meta`` (a logged trajectory's) does not hold equal, in
    words, a setting that is an object (``sampling``, ``model_digest``) key by key:
    ``"sampling.temperature 0.0 there, 1.0 now"``, ``"model_digest.weights 043c5a79 there,
    498cee66 now"``, ``"sampling.seed unset there, 0 now"`` (a key of an object one side
    does not hold), ``"model_digest not logged there (an older log)"`` (a setting a log of an
    older stategym does not hold at all)."""
    differences = []
    for name, value in settings.items():
        logged = meta.get(name, _UNLOGGED)
        if isinstance(value, dict) and isinstance(logged, dict):
            for key in sorted({*value, *logged}, key=str):
                pair = logged.get(key, _UNLOGGED), value.get(key, _UNLOGGED)
                if pair[0] != pair[1]:
                    differences.append(_difference(f"{name}.{key}", *pair, inner=True))
        elif logged != value:
            differences.append(_difference(name, logged, value))
    return differences


_UNLOGGED: Any = object()
"""A setting a log does not hold (written before it was logged, or by another agent)."""


def _difference(name: str, there: Any, now: Any, *, inner: bool = False) -> str:
    """``"NAME THERE there, NOW now"``; a digest by its first 8 hex digits, a key of an
    object (``inner``) that one side does not hold as ``unset``, and a setting that is an
    object and was not logged by its name alone."""

    def shown(value: Any) -> str:
        if value is _UNLOGGED:
            return "unset" if inner else "not logged"
        if name.startswith("model_digest.") and isinstance(value, str):
            return value[:8]
        return orjson.dumps(value).decode()

    if there is _UNLOGGED and not inner:
        now_words = "" if isinstance(now, dict) else f", {shown(now)} now"
        return f"{name} not logged there (an older log){now_words}"
    return f"{name} {shown(there)} there, {shown(now)} now"
