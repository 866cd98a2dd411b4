"""The generic synthetic-domain expert and its styled variants.

The expert is not privileged: it knows the domain's tools (its spec and surface) but not the
task's hidden facts. It asks exactly the gate facts the request leaves out, walks the lookups
in dependency order (one round per stage; the calls inside a stage in parallel), lists every
source in one round, asks for the priority order only when it decides, and then follows the
commit protocol the spec has: hold and confirm (``verifycommit``), prepare (``precond``), buy.
Every habit of :class:`~stategym.agents.style.Style` changes exactly what its name says.
"""

from __future__ import annotations

from collections.abc import Callable, Generator

from stategym.agents.base import Script, ScriptedAgent
from stategym.agents.style import Style
from stategym.protocol import Action, CallBatch, Observation, Say, ToolCall, call
from stategym.task import Task, final_values
from stategym.topology.motifs import Spec

from .beliefs import Beliefs, View
from .generator import GATES, PREFS
from .surface import Surface
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
    beliefs = Beliefs(spec, surface, values=dict(task.request.given))
    if "priorities" in task.request.given:
        beliefs.order = tuple(str(task.request.given["priorities"]).split(">"))
    if style.privileged:
        beliefs.values.update(final_values(task))
        beliefs.order = tuple(c for c in task.priority_order() if c in PREFS)
    asks = _questions(spec, beliefs, style)
    if asks:
        beliefs.see((yield Say(" ".join(QUESTIONS[a] for a in asks))))
    yield from _look_up(spec, surface, task, beliefs, style)
    yield from _choose_and_commit(spec, surface, task, beliefs, style)


def _questions(spec: Spec, beliefs: Beliefs, style: Style) -> list[str]:
    if style.privileged or style.ask == "nothing":
        return []
    gates = list(GATES[: spec.askgate])
    if style.ask == "everything":
        return ["ref", *gates, *(["tail"] if spec.chain else []), "extra", "priorities"]
    return [g for g in gates if g not in beliefs.values]


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
    extra = [call(surface.tool("purchases"))] if task.knobs.stateful else []
    key = surface.values[input_key(spec, "sources")]
    extra += [
        call(surface.tool(f"source{i}"), **{key: BOGUS_KEY}) for i in range(1, spec.fanout + 1)
    ]
    return extra[: style.spray]


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
        for action in _rounds(batch, style):
            beliefs.see((yield action))
            if style.first_fit and index == len(stages) - 1 and _pick(beliefs, style):
                return


def _rounds(batch: list[ToolCall], style: Style) -> list[CallBatch]:
    """One parallel round, or one round per call for a serial agent."""
    if style.batching == "serial":
        return [CallBatch((c,)) for c in batch]
    return [CallBatch(tuple(batch))]


def _pick(beliefs: Beliefs, style: Style) -> View | None:
    """The best option the agent knows of, or ``None`` if none meets the known needs."""
    feasible = beliefs.candidates()
    if not feasible:
        return None
    if style.first_fit:
        return feasible[0]
    order = beliefs.order or beliefs.prefs()
    weights = {p: 2 ** (len(order) - i) for i, p in enumerate(order)}
    return min(
        feasible, key=lambda v: (-sum(weights.get(p, 0) for p in beliefs.meets(v)), v.price, v.id)
    )


def _finish(answer: str) -> Action:
    return CallBatch((call("finish", answer=answer),))


def _choose_and_commit(
    spec: Spec, surface: Surface, task: Task, beliefs: Beliefs, style: Style
) -> Script:
    confirmed: str | None = None
    for _ in range(12):  # re-decisions after price moves, sell-outs and changes of mind
        if (
            beliefs.order is None
            and style.ask != "nothing"
            and not style.first_fit
            and beliefs.order_matters()
        ):
            beliefs.see((yield Say(QUESTIONS["priorities"])))
            continue
        choice = _pick(beliefs, style)
        if choice is None:
            yield _finish(
                "none"
                if not task.knobs.stateful
                else f"No {surface.noun} meets your needs, so I bought nothing."
            )
            return
        if not task.knobs.stateful:
            yield _finish(choice.id)
            return
        beliefs.changed = False
        if style.verify == "same_round" or style.commit == "shotgun":
            yield from _blind_commit(spec, surface, beliefs, style, choice)
            return
        done, confirmed = yield from _commit(spec, surface, beliefs, style, choice, confirmed)
        if done:
            return
    yield _finish(f"I could not complete the purchase of a {surface.noun}.")


Attempt = Generator[Action, Observation, tuple[bool, str | None]]
"""One attempt at the commit protocol; returns (finished, the option the user agreed to)."""


def _commit(
    spec: Spec,
    surface: Surface,
    beliefs: Beliefs,
    style: Style,
    choice: View,
    confirmed: str | None,
) -> Attempt:
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
            return False, confirmed
        held = found.get("hold")
        if style.verify == "before" and (_pick(beliefs, style) is not choice or beliefs.changed):
            return False, confirmed  # a fresh price or a change of mind moved the best choice
    # A proposal is part of the plan only behind a verify-then-commit gate; spam proposes
    # anyway, which is the habit it stands for.
    wanted = (spec.verifycommit and style.confirm == "once") or style.confirm == "spam"
    if wanted and confirmed != choice.id:
        price = held["price"] if held else choice.price
        obs = None
        for _ in range(3 if style.confirm == "spam" else 1):
            obs = yield Say(f"I found {choice.id} at ${price}. Shall I go ahead with it?")
            beliefs.see(obs)
        if obs is not None and obs.user and f"Yes, {choice.id}" not in obs.user:
            beliefs.excluded.add(choice.id)
            return False, confirmed
        if beliefs.changed:
            return False, confirmed
        confirmed = choice.id
    if style.commit == "never":
        yield _finish(f"{choice.id} is the best {surface.noun}; I did not buy it.")
        return True, confirmed
    target = {"hold_id": held["hold_id"]} if held else {field: choice.id}
    paid = beliefs.see((yield CallBatch((call(surface.tool("buy"), **target),))))
    if "buy" in paid:
        yield _finish(f"Bought {choice.id}.")
        return True, confirmed
    if not spec.verifycommit:
        beliefs.excluded.add(choice.id)
    return False, confirmed


def _blind_commit(
    spec: Spec, surface: Surface, beliefs: Beliefs, style: Style, choice: View
) -> Script:
    """Commit without looking at the check first (guessing hold ids), or buy several."""
    field = option_field(surface)
    picks = [choice]
    if style.commit == "shotgun":
        others = sorted(
            (v for v in beliefs.options.values() if v.id != choice.id),
            key=lambda v: (v.price, v.id),
        )
        picks += others[:2]
    writes = (
        [call(surface.tool("hold"), **{field: p.id}) for p in picks] if spec.verifycommit else []
    )
    writes += (
        [call(surface.tool("prepare"), **{field: p.id}) for p in picks] if spec.precond else []
    )
    if style.verify == "same_round" or not writes:
        commits = (
            [call(surface.tool("buy"), hold_id=f"H{i + 1}") for i in range(len(picks))]
            if spec.verifycommit
            else [call(surface.tool("buy"), **{field: p.id}) for p in picks]
        )
        beliefs.see((yield CallBatch(tuple(writes + commits))))
    else:
        obs = yield CallBatch(tuple(writes))
        beliefs.see(obs)
        if spec.verifycommit:
            ids = [r.content["hold_id"] for r in obs.results if r.ok and "hold_id" in r.content]
            commits = [call(surface.tool("buy"), hold_id=h) for h in ids]
        else:
            commits = [call(surface.tool("buy"), **{field: p.id}) for p in picks]
        beliefs.see((yield CallBatch(tuple(commits))))
    yield _finish(f"Bought {', '.join(p.id for p in picks)}.")
