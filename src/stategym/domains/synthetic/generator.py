"""Synthetic task generator: a pure function of ``(spec, seed, knobs)``.

Every draw depends on the spec's motifs and the seed only (never on the surface), and is made
whatever the knobs say; the knobs are applied afterwards, as in the travel generator. Whether a
slot must be asked is fixed by the spec (an ``askgate`` slot is always hidden when hidden
information is on), so every task of a spec has the same kind of plan; what varies from seed
to seed is the content, which options fit, and whether doing nothing is right.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping
from dataclasses import dataclass, replace

from stategym.generation import (
    apply_sets,
    order_matters,
    priorities_kind,
    priorities_sentences,
    with_user_tables,
)
from stategym.kernel.draws import randint, randrange
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import (
    Constraint,
    ConstraintKind,
    Event,
    EventKind,
    GroundTruth,
    Request,
    Slot,
    SlotKind,
    Task,
    Value,
    best_options,
    priority_weights,
)
from stategym.topology.motifs import Spec

from .gold import gold_plan
from .surface import Surface, with_article
from .world import Option, SynthBase, SynthWorld

GATES = ("limit", "category", "level")
"""Must-ask slots, in the order ``askgateM`` adds them."""
NEEDS = {"limit": "within_limit", "category": "right_category", "level": "grade_ok"}
CATEGORIES = ("amber", "cobalt", "jade")
PREFS = ("pref_a", "pref_b")
DONE = "done"
MAX_ROUNDS = 40
NOTHING_RATE = 0.12
"""Share of tasks with a gate where no option meets the needs (the right plan abstains)."""


@dataclass(frozen=True, slots=True)
class Draw:
    """Everything random about one synthetic task, before the knobs are applied."""

    ref: str
    links: tuple[str, ...]
    left: str
    right: str
    merged: str
    route: int
    route_key: str
    options: tuple[Option, ...]
    limit: int
    category: str
    level: int
    order: tuple[str, str]
    nothing: bool
    limit_drop: int
    event_times: tuple[int, int, int]
    extra: str


def draw(spec: Spec, seed: int) -> Draw:
    """The random content of task ``seed`` (options carry digits only; ids are formatted later)."""
    rng = random.Random(f"synth:{spec.key}:{seed}")
    codes = rng.sample(range(1000, 10000), 12)
    options: list[Option] = []
    numbers = rng.sample(range(100, 1000), 5 * spec.fanout)
    for source in range(1, spec.fanout + 1):
        for _ in range(randint(rng, 3, 5)):
            options.append(
                Option(
                    str(numbers[len(options)]),
                    source,
                    randrange(rng, 150, 900, 10),
                    rng.choice(CATEGORIES),
                    randint(rng, 1, 5),
                    rng.random() < 0.4,
                    rng.random() < 0.4,
                    randint(rng, 1, 5),
                )
            )
    return Draw(
        ref=f"R-{codes[0]}",
        links=tuple(f"K{i}-{codes[i]}" for i in range(1, spec.chain + 1)),
        left=f"L-{codes[7]}",
        right=f"G-{codes[8]}",
        merged=f"M-{codes[9]}",
        route=randint(rng, 0, 1),
        route_key=f"V-{codes[10]}",
        options=tuple(options),
        limit=randrange(rng, 350, 751, 50),
        category=rng.choice(CATEGORIES),
        level=randint(rng, 2, 4),
        order=tuple(rng.sample(PREFS, 2)),  # type: ignore[arg-type]
        nothing=rng.random() < NOTHING_RATE,
        limit_drop=rng.choice((0, 0, 50, 100)),
        event_times=(randint(rng, 1, 2), randint(rng, 1, 2), randint(rng, 1, 2)),
        extra=rng.choice(("in the morning", "after lunch", "in the evening")),
    )


@dataclass(frozen=True, slots=True)
class Needs:
    """The user's final requirements, after any change of mind."""

    gates: tuple[str, ...]
    limit: int
    category: str
    level: int

    def met(self, option: Option) -> frozenset[str]:
        hits = set()
        if "limit" in self.gates and option.price <= self.limit:
            hits.add(NEEDS["limit"])
        if "category" in self.gates and option.category == self.category:
            hits.add(NEEDS["category"])
        if "level" in self.gates and option.level >= self.level:
            hits.add(NEEDS["level"])
        return frozenset(hits)

    def feasible(self, option: Option) -> bool:
        return len(self.met(option)) == len(self.gates)

    def fit(self, option: Option) -> Option:
        """The option changed just enough to meet every need."""
        price = min(option.price, self.limit - 20) if "limit" in self.gates else option.price
        return replace(
            option,
            price=max(price, 100),
            category=self.category if "category" in self.gates else option.category,
            level=max(option.level, self.level) if "level" in self.gates else option.level,
            stock=max(option.stock, 1),
        )

    def break_first(self, option: Option, salt: int) -> Option:
        """The option changed to miss the first need."""
        gate = self.gates[0]
        if gate == "limit":
            return replace(option, price=self.limit + 10 * (1 + salt % 7))
        if gate == "category":
            other = CATEGORIES[(CATEGORIES.index(self.category) + 1) % len(CATEGORIES)]
            return replace(option, category=other)
        return replace(option, level=self.level - 1)


def satisfied(option: Option, needs: Needs, prefs: tuple[str, ...]) -> frozenset[str]:
    """The constraint ids an option satisfies."""
    hits = set(needs.met(option)) | {DONE}
    if "pref_a" in prefs and option.flag_a:
        hits.add("pref_a")
    if "pref_b" in prefs and option.flag_b:
        hits.add("pref_b")
    return frozenset(hits)


def _shape(d: Draw, needs: Needs, shape: str) -> list[Option]:
    """Adjust the drawn options so the task has its intended shape."""
    options = list(d.options)
    if shape == "nothing":
        return [needs.break_first(o, i) if needs.feasible(o) else o for i, o in enumerate(options)]
    if shape == "conflict":
        for i, o in enumerate(options):  # no feasible option may have both features
            if needs.feasible(o) and o.flag_a and o.flag_b:
                options[i] = replace(o, flag_a=i % 2 == 1, flag_b=i % 2 == 0)
        options[0] = replace(needs.fit(options[0]), flag_a=True, flag_b=False)
        options[-1] = replace(needs.fit(options[-1]), flag_a=False, flag_b=True)
        return options
    middle = len(options) // 2
    options[middle] = replace(needs.fit(options[middle]), flag_a=True, flag_b=True)
    return options


def _events(
    d: Draw,
    knobs: Knobs,
    needs: Needs,
    options: dict[str, Option],
    table: dict[str, frozenset[str]],
    weights: dict[str, int],
    planted: set[str],
) -> tuple[Event, ...]:
    """A price jump and a sell-out on options strictly worse than the best, and a lower
    limit (dynamics on). Only strictly worse options move, so the best choice seen before an
    event is still the best after it; the planted options never move, so a conflict the
    agent saw is still there when it decides."""
    if not knobs.dynamics:
        return ()
    top = max(sum(weights[c] for c in s) for s in table.values())
    decoys = [
        oid
        for oid in sorted(options)
        if sum(weights[c] for c in table[oid]) < top
        and options[oid].stock > 0
        and oid not in planted
    ]
    events: list[Event] = []
    if decoys and "limit" in needs.gates:
        target = options[decoys.pop(0)]
        events.append(
            Event(
                d.event_times[0],
                EventKind.SET,
                "options",
                target.id,
                "price",
                needs.limit + 40 + target.price % 50,
            )
        )
    if decoys:
        events.append(Event(d.event_times[1], EventKind.SET, "options", decoys[0], "stock", 0))
    if d.limit_drop and "limit" in needs.gates:
        events.append(
            Event(d.event_times[2], EventKind.USER_UPDATE, slot="limit", value=needs.limit)
        )
    return SynthWorld.check_events(sorted(events, key=lambda e: e.at))


def generate(spec: Spec, surface: Surface, seed: int, knobs: Knobs) -> Task:
    """Generate task ``seed`` of a synthetic spec under ``knobs``."""
    d = draw(spec, seed)
    gates = GATES[: spec.askgate]
    drop = d.limit_drop if knobs.dynamics and "limit" in gates else 0
    needs = Needs(gates, d.limit - drop, d.category, d.level)
    prefs = tuple(p for p in d.order if p == "pref_a" or spec.conflict)
    shape = (
        "nothing"
        if d.nothing and gates
        else ("conflict" if spec.conflict and knobs.priorities else "fits")
    )
    shaped = [replace(o, id=f"{surface.prefix}{o.id}") for o in _shape(d, needs, shape)]
    options = {o.id: o for o in shaped}
    constraint_ids = (*(NEEDS[g] for g in gates), DONE, *prefs)
    priority = tuple(itertools.pairwise(constraint_ids))
    weights = priority_weights(constraint_ids, priority)

    def table(opts: dict[str, Option], needs: Needs = needs) -> dict[str, frozenset[str]]:
        return {o.id: satisfied(o, needs, prefs) for o in opts.values() if o.stock > 0}

    planted = {shaped[0].id, shaped[-1].id, shaped[len(shaped) // 2].id}
    events = _events(d, knobs, needs, options, table(options), weights, planted)
    final = apply_sets("options", options, events)
    satisfaction = table(final)
    nothing = frozenset(constraint_ids) - {DONE}
    best = best_options(satisfaction, nothing, weights)
    feasible = [s for oid, s in satisfaction.items() if needs.feasible(final[oid])]
    conflict = shape == "conflict" and order_matters(feasible, prefs)
    slots = _slots(spec, d, knobs, conflict, prefs)
    given = {s.name: s.value for s in slots if s.kind is SlotKind.GIVEN}
    base = SynthBase(options, d.ref, d.links, d.left, d.right, d.merged, d.route, d.route_key, 5000)
    must_ask = tuple(s.name for s in slots if s.kind is SlotKind.MISSING)
    calls, edges, decisions = gold_plan(spec, surface, knobs, base, final, best, must_ask)
    truth = GroundTruth(calls, edges, decisions, satisfaction, nothing, best, weights)
    drawn = replace(needs, limit=d.limit)
    changes = any(e.kind is EventKind.USER_UPDATE for e in events)
    before = (table(options, drawn), table(final, drawn)) if changes else None
    truth = with_user_tables(truth, table(options), before)
    references = {"tail": surface.tool(f"link{spec.chain}")} if spec.chain else {}
    constraints = _constraints(gates, prefs, surface)
    text = _request_text(spec, surface, d, given, knobs, constraints)
    request = Request(text, given, references)
    return Task(
        spec.name,
        seed,
        knobs,
        request,
        slots,
        constraints,
        priority,
        "priorities" in must_ask,
        events,
        base,
        truth,
        MAX_ROUNDS,
    )


def _slots(
    spec: Spec, d: Draw, knobs: Knobs, conflict: bool, prefs: tuple[str, ...]
) -> tuple[Slot, ...]:
    gate_kind = SlotKind.MISSING if knobs.hidden_info else SlotKind.GIVEN
    # Without the conflict motif there is a single preference, so no order to learn.
    priorities = priorities_kind(knobs, True, conflict) if spec.conflict else SlotKind.IRRELEVANT
    slots = [Slot("ref", SlotKind.GIVEN, d.ref, "My reference is {value}.")]
    answers: dict[str, tuple[Value, str]] = {
        "limit": (d.limit, "My budget is ${value}."),
        "category": (d.category, "It has to be in the {value} category."),
        "level": (d.level, "The grade must be at least {value}."),
    }
    for gate in GATES[: spec.askgate]:
        value, answer = answers[gate]
        slots.append(Slot(gate, gate_kind, value, answer))
    if spec.chain:
        slots.append(Slot("tail", SlotKind.DERIVABLE, d.links[-1], "My routing code is {value}."))
    slots.append(Slot("extra", SlotKind.IRRELEVANT, d.extra, "You can reach me {value}."))
    slots.append(Slot("priorities", priorities, ">".join(prefs), "{value}"))
    return tuple(slots)


def constraint_texts(surface: Surface) -> dict[str, str]:
    """The user's words for every constraint id."""
    return {
        "within_limit": "to stay within my budget",
        "right_category": "the right category",
        "grade_ok": "a high enough grade",
        DONE: f"to get {with_article(surface.noun)} at all",
        "pref_a": surface.flag_texts[0],
        "pref_b": surface.flag_texts[1],
    }


def _constraints(
    gates: tuple[str, ...], prefs: tuple[str, ...], surface: Surface
) -> tuple[Constraint, ...]:
    texts = constraint_texts(surface)
    out = [Constraint(NEEDS[g], ConstraintKind.NEED, texts[NEEDS[g]], g) for g in gates]
    out.append(Constraint(DONE, ConstraintKind.NEED, texts[DONE], surface.noun))
    out += [Constraint(p, ConstraintKind.PREFERENCE, texts[p], p) for p in prefs]
    return tuple(out)


def _request_text(
    spec: Spec,
    surface: Surface,
    d: Draw,
    given: Mapping[str, Value],
    knobs: Knobs,
    constraints: tuple[Constraint, ...],
) -> str:
    noun = surface.noun
    wanted = f"buy me {with_article(noun)}" if knobs.stateful else f"find me the best {noun}"
    parts = [f"Hi! Please {wanted}; my reference is {d.ref}."]
    if spec.askgate >= 1:
        parts.append(
            f"My budget is ${given['limit']}." if "limit" in given else "Keep it within my budget."
        )
    if spec.askgate >= 2:
        parts.append(
            f"It has to be in the {given['category']} category."
            if "category" in given
            else "It has to be in the right category."
        )
    if spec.askgate >= 3:
        parts.append(
            f"The grade must be at least {given['level']}."
            if "level" in given
            else "The grade must be high enough."
        )
    texts = surface.flag_texts
    parts.append(f"I'd like {texts[0]}" + (f" and {texts[1]}." if spec.conflict else "."))
    parts += priorities_sentences(given, constraints)
    if not knobs.stateful:
        parts.append(
            f"Don't buy anything: finish with the id of the {noun} you recommend, or 'none'."
        )
    return " ".join(parts)
