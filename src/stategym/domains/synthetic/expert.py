"""The generic synthetic-domain expert and its styled variants.

The expert is not privileged: it knows the domain's tools (its spec and surface) but not the
task's hidden facts. It asks exactly the gate facts the request leaves out, walks the lookups
in dependency order (one round per stage; the calls inside a stage in parallel), lists every
source in one round, asks for the priority order only when it decides, and then follows the
commit protocol the spec has: hold and confirm (``verifycommit``), prepare (``precond``), buy.
Every habit of :class:`~stategym.agents.style.Style` changes exactly what its name says.
"""

from __future__ import annotations

from collections.abc import Callable

from stategym.agents.base import Script, ScriptedAgent
from stategym.agents.playbook import (
    Agreement,
    Decision,
    Steps,
    agreed,
    blind_commit,
    choose,
    decide_and_commit,
    known_at_start,
    offered_only,
    propose,
    questions,
    rounds,
    worth,
)
from stategym.agents.style import Style
from stategym.kernel.protocol import CallBatch, Observation, ToolCall, call
from stategym.kernel.task import Task
from stategym.topology.motifs import Spec

from .beliefs import Beliefs, View
from .generator import GATES
from .surface import Surface, with_article
from .tools import input_key, option_field

QUESTIONS = {
    "ref": "What is your reference number?",
    "limit": "What is your budget for this?",
    "category": "Which category do you need?",
    "level": "What minimum grade do you need?",
    "tail": "What is your routing code?",
    "extra": "When can we contact you?",
    "priorities": "If you can't have everything you asked for, which preference should I "
    "prioritize?",
}
BOGUS_KEY = "X-0000"
"""The value a speculative (sprayed) call passes: one nothing returned."""


def synth_expert(spec: Spec, surface: Surface) -> Callable[[Task, Style], ScriptedAgent]:
    """The expert factory of one synthetic domain."""

    def make(task: Task, style: Style) -> ScriptedAgent:
        return ScriptedAgent("expert", lambda first: _script(spec, surface, task, style, first))

    return make


def _script(spec: Spec, surface: Surface, task: Task, style: Style, first: Observation) -> Script:
    del first  # the request is read from the task's visible part
    values, order = known_at_start(task, style)
    beliefs = Beliefs(spec, surface, values=values, order=order)
    gates = GATES[: spec.askgate]
    opening = questions(style, beliefs.values, _askable(spec), gates)
    if opening is not None:
        beliefs.see((yield opening))
    yield from _look_up(spec, surface, task, beliefs, style)
    decision = Decision(
        question=QUESTIONS["priorities"],
        order_matters=beliefs.order_matters,
        pick=lambda: _pick(beliefs, style),
        attempt=lambda choice, agreement: _attempt(
            spec, surface, beliefs, style, choice, agreement
        ),
        nothing=f"No {surface.noun} meets your needs, so I bought nothing.",
        give_up=f"I could not complete the purchase of {with_article(surface.noun)}.",
    )
    yield from decide_and_commit(beliefs, style, task.knobs.stateful, decision)


def _askable(spec: Spec) -> dict[str, str]:
    """The questions this spec's user can answer, in the order an ask-everything agent asks."""
    names = {"ref", *GATES[: spec.askgate], "extra", "priorities"}
    if spec.chain:
        names.add("tail")
    return {name: text for name, text in QUESTIONS.items() if name in names}


def _stages(spec: Spec, surface: Surface) -> list[list[tuple[str, tuple[str, ...]]]]:
    """The lookups as rounds of ``(tool key, input value keys)``; a round needs only values
    returned by earlier rounds."""
    stages: list[list[tuple[str, tuple[str, ...]]]] = []
    previous = "ref"
    for i in range(1, spec.chain + 1):
        stages.append([(f"link{i}", (previous,))])
        previous = f"k{i}"
    if spec.diamond:
        key = input_key(spec, "diamond")
        stages += [[("left", (key,)), ("right", (key,))], [("merge", ("left", "right"))]]
    if spec.branch:
        stages += [
            [("route", (input_key(spec, "branch"),))],
            [("via", (input_key(spec, "branch"),))],
        ]
    key = input_key(spec, "sources")
    stages.append([(f"source{i}", (key,)) for i in range(1, spec.fanout + 1)])
    return stages


def _calls(
    surface: Surface,
    beliefs: Beliefs,
    stage: list[tuple[str, tuple[str, ...]]],
    guess: str | None = None,
) -> list[ToolCall]:
    """The calls of one stage; with ``guess``, unknown inputs are replaced by that value."""
    out: list[ToolCall] = []
    for tool_key, inputs in stage:
        if tool_key == "via":
            tool_key = f"via{beliefs.route if beliefs.route is not None else 0}"
        args = {surface.values[k]: beliefs.keys.get(k, guess or "") for k in inputs}
        out.append(ToolCall(surface.tool(tool_key), args))
    return out


def _spray(spec: Spec, surface: Surface, task: Task, style: Style) -> list[ToolCall]:
    extra = [call(surface.tool("purchases"))]
    key = surface.values[input_key(spec, "sources")]
    extra += [
        call(surface.tool(f"source{i}"), **{key: BOGUS_KEY}) for i in range(1, spec.fanout + 1)
    ]
    return offered_only(extra[: style.spray], task)


def _look_up(spec: Spec, surface: Surface, task: Task, beliefs: Beliefs, style: Style) -> Script:
    beliefs.keys["ref"] = str(task.request.given["ref"])
    stages = _stages(spec, surface)
    start = 0
    if style.batching == "guess" and len(stages) > 1:
        guessed = [c for stage in stages[1:] for c in _calls(surface, beliefs, stage, BOGUS_KEY)]
        first = _calls(surface, beliefs, stages[0]) + guessed
        beliefs.see((yield CallBatch(tuple(first + _spray(spec, surface, task, style)))))
        start = 1
    for index, stage in enumerate(stages[start:], start=start):
        batch = _calls(surface, beliefs, stage)
        if index == 0:
            batch += _spray(spec, surface, task, style)
        for action in rounds(batch, style):
            beliefs.see((yield action))
            if style.first_fit and index == len(stages) - 1 and _pick(beliefs, style):
                return


def _pick(beliefs: Beliefs, style: Style) -> View | None:
    """The best option the agent knows of, or ``None`` if none meets the known needs."""
    order = beliefs.order or beliefs.prefs()
    return choose(
        beliefs.candidates(),
        style,
        lambda v: (-worth(beliefs.meets(v), order), v.price, v.id),
    )


def _attempt(
    spec: Spec,
    surface: Surface,
    beliefs: Beliefs,
    style: Style,
    choice: View,
    agreement: Agreement,
) -> Steps[str | None]:
    """One attempt at the spec's commit protocol: hold and prepare, propose, buy.

    Returns the final answer, or ``None`` to decide again.
    """
    if style.verify == "same_round" or style.commit == "shotgun":
        return (yield from _blind(spec, surface, beliefs, style, choice))
    field = option_field(surface)
    writes = [call(surface.tool("hold"), **{field: choice.id})] if spec.verifycommit else []
    if spec.precond and choice.id not in beliefs.prepared:
        writes.append(call(surface.tool("prepare"), **{field: choice.id}))
    held = None
    if writes:
        found = beliefs.see((yield CallBatch(tuple(writes))))
        if (spec.verifycommit and "hold" not in found) or (
            spec.precond and choice.id not in beliefs.prepared
        ):
            beliefs.excluded.add(choice.id)
            return None
        held = found.get("hold")
        if style.verify == "before" and (_pick(beliefs, style) is not choice or beliefs.changed):
            return None  # a fresh price or a change of mind moved the best choice
    # A proposal is part of the plan only behind a verify-then-commit gate; spam proposes
    # anyway, which is the habit it stands for.
    wanted = (spec.verifycommit and style.confirm == "once") or style.confirm == "spam"
    if wanted and agreement.option != choice.id:
        price = held["price"] if held else choice.price
        text = f"I found {choice.id} at ${price}. Shall I go ahead with it?"
        reply = (yield from propose(text, style, beliefs.see))[-1]
        if reply.user and not agreed(reply, choice.id):
            beliefs.excluded.add(choice.id)
            return None
        if beliefs.changed:
            return None
        agreement.option = choice.id
    if style.commit == "never":
        return f"{choice.id} is the best {surface.noun}; I did not buy it."
    target = {"hold_id": held["hold_id"]} if held else {field: choice.id}
    paid = beliefs.see((yield CallBatch((call(surface.tool("buy"), **target),))))
    if "buy" in paid:
        return f"Bought {choice.id}."
    if not spec.verifycommit:
        beliefs.excluded.add(choice.id)
    return None


def _blind(
    spec: Spec, surface: Surface, beliefs: Beliefs, style: Style, choice: View
) -> Steps[str]:
    """Commit without looking at the check first (guessing hold ids), or buy several."""
    field = option_field(surface)
    picks = [choice]
    if style.commit == "shotgun":
        others = sorted(
            (v for v in beliefs.options.values() if v.id != choice.id),
            key=lambda v: (v.price, v.id),
        )
        picks += others[:2]
    holds = (
        [call(surface.tool("hold"), **{field: p.id}) for p in picks] if spec.verifycommit else []
    )
    prepares = (
        [call(surface.tool("prepare"), **{field: p.id}) for p in picks] if spec.precond else []
    )
    if holds and not prepares:
        buy = surface.tool("buy")
        yield from blind_commit(holds, lambda h: call(buy, hold_id=h), style, beliefs.see)
    else:
        yield from _blind_with_prepare(spec, surface, beliefs, style, picks, holds + prepares)
    return f"Bought {', '.join(p.id for p in picks)}."


def _blind_with_prepare(
    spec: Spec,
    surface: Surface,
    beliefs: Beliefs,
    style: Style,
    picks: list[View],
    writes: list[ToolCall],
) -> Steps[None]:
    """:func:`_blind` when the writes before the buys include prepares (or there are none):
    the buys go beside the writes (same round, or nothing to write) or after them."""
    field = option_field(surface)
    if style.verify == "same_round" or not writes:
        commits = (
            [call(surface.tool("buy"), hold_id=f"H{i + 1}") for i in range(len(picks))]
            if spec.verifycommit
            else [call(surface.tool("buy"), **{field: p.id}) for p in picks]
        )
        beliefs.see((yield CallBatch(tuple(writes + commits))))
        return
    obs = yield CallBatch(tuple(writes))
    beliefs.see(obs)
    if spec.verifycommit:
        ids = [r.content["hold_id"] for r in obs.results if r.ok and "hold_id" in r.content]
        commits = [call(surface.tool("buy"), hold_id=h) for h in ids]
    else:
        commits = [call(surface.tool("buy"), **{field: p.id}) for p in picks]
    beliefs.see((yield CallBatch(tuple(commits))))
