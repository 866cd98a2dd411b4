"""Teacher-forced probe: does a model speak the protocol at the expert's decision points?

For each held-out task the expert's episode is replayed as a chat; at every assistant turn
the model replies to the expert's conversation so far (greedy), and the reply is compared with
what the expert did. Because each prefix is the expert's, one early mistake does not spoil the
rest, so this isolates format and protocol skill (when to ask, which tools to call together,
well-formed calls) from content skill (copying ids, comparing prices), which free-running
episodes (:func:`stategym.llm.calls.call_stats`) mix together.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from stategym.kernel.knobs import Knobs
from stategym.llm.local import LocalModel, Sampling
from stategym.llm.parse import Parsed, parse
from stategym.rendering import MessageRenderer, transcript

PROBE_SEED = 0
"""Held-out seeds start here; the tiny recipe trains on seeds from 1,000,000."""


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """Counts over every expert decision point probed.

    Attributes:
        turns: decision points probed.
        same_kind: replies of the expert's kind (a message to the user vs tool calls).
        call_turns: decision points where the expert called tools.
        calls: tool calls the model emitted at those points.
        parsed: emitted calls with a readable name and JSON-object arguments.
        same_tools: call turns where the model called exactly the expert's tools (as a
            multiset, arguments not compared).
    """

    turns: int
    same_kind: int
    call_turns: int
    calls: int
    parsed: int
    same_tools: int

    @property
    def parsed_share(self) -> float:
        return self.parsed / self.calls if self.calls else 0.0


def probe(
    model: LocalModel,
    domain: str,
    seeds: Iterable[int],
    *,
    knobs: Knobs | None = None,
    max_tokens: int = 160,
) -> ProbeResult:
    """Probe ``model`` on the expert's episodes of ``seeds`` (see the module docstring)."""
    from stategym.agents import scripted
    from stategym.kernel.env import Env
    from stategym.rollout import run_episode

    env = Env(domain, knobs=knobs or Knobs())
    expert = scripted(env.domain, "expert")
    counts = [0] * 6
    for seed in seeds:
        trajectory = run_episode(env, expert, seed)
        renderer = MessageRenderer(env.domain, env.task.knobs)
        messages = renderer.first_messages(env.task)[:1] + transcript(
            MessageRenderer(env.domain, env.task.knobs), trajectory, env.task
        )
        for index, gold in enumerate(messages):
            if gold["role"] != "assistant":
                continue
            reply = model.generate(
                messages[:index], renderer.tools, Sampling(max_tokens=max_tokens)
            )
            _count(counts, gold, parse(reply.text))
    return ProbeResult(*counts)


def _count(counts: list[int], gold: dict[str, Any], reply: Parsed) -> None:
    gold_calls = gold.get("tool_calls") or []
    counts[0] += 1
    counts[1] += bool(gold_calls) == bool(reply.calls)
    if not gold_calls:
        return
    counts[2] += 1
    counts[3] += len(reply.calls)
    counts[4] += sum(1 for c in reply.calls if c.name and _is_object(c.arguments))
    wanted = sorted(str(c["function"]["name"]) for c in gold_calls)
    counts[5] += sorted(c.name for c in reply.calls) == wanted


def _is_object(arguments: str) -> bool:
    import orjson

    try:
        return isinstance(orjson.loads(arguments), dict)
    except orjson.JSONDecodeError:
        return False
