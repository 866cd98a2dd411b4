"""Lookup task generator: a multi-hop question over a generated corpus.

A task is a pure function of the seed: the knobs are recorded on the task but change nothing,
because the lookup domain has none of the properties they switch off. It is read-only
(``stateful`` and ``irreversible`` have nothing to act on), the question states everything
(``hidden_info``: no slot is missing), there is one constraint, the right answer
(``priorities``), and the corpus never changes (``dynamics``: no events).

Three question forms span the read-only motifs: a chain of two or three hops, a fan-out over a
company's products with an arg-min or arg-max, and a diamond comparing the ends of two chains.
Names share words on purpose, so a search returns near misses beside the entity asked about.
"""

from __future__ import annotations

import functools
import random

from stategym.kernel.draws import randint, randrange
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import (
    Constraint,
    ConstraintKind,
    GroundTruth,
    Request,
    Slot,
    SlotKind,
    Task,
    Value,
    best_options,
)

from .gold import gold_graph
from .questions import Question, draw_question
from .tools import name_words
from .world import City, Company, Corpus, Entity, Person, Product

BRANDS = ("Orbix", "Zentro", "Kallo", "Vantic", "Lumo", "Brisa", "Talon", "Nimbo", "Quill", "Peral")
SUFFIXES = ("Foods", "Labs", "Motors", "Works", "Systems", "Goods", "Tools")
ITEMS = (
    "Blender",
    "Kettle",
    "Drone",
    "Lamp",
    "Scooter",
    "Speaker",
    "Camera",
    "Toaster",
    "Router",
    "Heater",
    "Juicer",
    "Watch",
    "Printer",
    "Fan",
    "Mixer",
    "Clock",
)
FIRST_NAMES = ("Ana", "Bo", "Dee", "Eli", "Farah", "Gus", "Ines", "Jon", "Kai", "Lea", "Mo", "Nia")
LAST_NAMES = ("Lima", "Chen", "Park", "Novak", "Aziz", "Moreau", "Silva", "Okafor")
FULL_NAMES = tuple(f"{f} {last}" for f in FIRST_NAMES for last in LAST_NAMES)
"""Every person's name a corpus can hold, in the order the draw samples from."""
CITIES = (
    ("Lisbon", "Portugal"),
    ("Porto", "Portugal"),
    ("Osaka", "Japan"),
    ("Kyoto", "Japan"),
    ("Lyon", "France"),
    ("Nice", "France"),
    ("Accra", "Ghana"),
    ("Leeds", "UK"),
    ("Perth", "Australia"),
    ("Quito", "Ecuador"),
    ("Graz", "Austria"),
    ("Turin", "Italy"),
)
MAX_ROUNDS = 20


def generate(seed: int, knobs: Knobs) -> Task:
    """Generate the lookup task for ``seed`` (``knobs`` are recorded, and change nothing)."""
    rng = random.Random(f"lookup:{seed}")
    corpus = _corpus(rng)
    question = draw_question(rng, corpus)
    return _build(seed, knobs, corpus, question)


def _corpus(rng: random.Random) -> Corpus:
    numbers = rng.sample(range(100, 1000), 40)
    ids = iter(numbers)
    cities = [
        City(f"T{next(ids)}", name, country, randrange(rng, 50_000, 5_000_000, 1000))
        for name, country in rng.sample(CITIES, 8)
    ]
    people_names = rng.sample(FULL_NAMES, 8)
    people = [
        Person(f"P{next(ids)}", name, rng.choice(cities).id, randint(rng, 1940, 1990))
        for name in people_names
    ]
    brands = rng.sample(BRANDS, 6)
    company_names = rng.sample([f"{b} {s}" for b in brands for s in SUFFIXES], 6)
    product_names = rng.sample([f"{b} {i}" for b in brands for i in ITEMS], 14)
    company_ids = [f"C{next(ids)}" for _ in company_names]
    makers = company_ids + [rng.choice(company_ids) for _ in product_names[len(company_ids) :]]
    products = [
        Product(f"R{next(ids)}", name, maker, randrange(rng, 10, 900, 5), randint(rng, 1995, 2023))
        for name, maker in zip(product_names, makers, strict=True)
    ]
    companies = [
        Company(
            cid,
            name,
            rng.choice(people).id,
            rng.choice(cities).id,
            randint(rng, 1950, 2015),
            tuple(p.id for p in products if p.maker == cid),
        )
        for cid, name in zip(company_ids, company_names, strict=True)
    ]
    entities: list[Entity] = [*cities, *people, *companies, *products]
    rng.shuffle(entities)
    return Corpus({e.id: e for e in entities}, {e.id: _name_words(e.name) for e in entities})


# every corpus draws its names from the same few hundred, so their words are split once
_name_words = functools.lru_cache(maxsize=4096)(name_words)


def _build(seed: int, knobs: Knobs, corpus: Corpus, question: Question) -> Task:
    satisfaction = {
        c: frozenset({"correct"} if c == question.answer else ())
        for c in question.candidates(corpus)
    }
    weights = {"correct": 1}
    best = best_options(satisfaction, frozenset(), weights)
    calls, edges = gold_graph(question)
    truth = GroundTruth(calls, edges, (), satisfaction, frozenset(), best, weights)
    slots = _slots(question)
    given: dict[str, Value] = {s.name: s.value for s in slots}
    text = (
        f"{question.text} Look it up and finish with the answer alone: the id of the entity "
        "(like T123), or the number."
    )
    constraint = Constraint("correct", ConstraintKind.NEED, "the right answer", "answer")
    return Task(
        "lookup",
        seed,
        knobs,
        Request(text, given),
        slots,
        (constraint,),
        (),
        False,
        (),
        corpus,
        truth,
        MAX_ROUNDS,
        read_only=True,
    )


def _slots(question: Question) -> tuple[Slot, ...]:
    slots = [
        Slot("subject", SlotKind.GIVEN, question.subjects[0], "I mean the {value}."),
        Slot(
            "path",
            SlotKind.GIVEN,
            ">".join(question.path),
            "I am asking about this chain of facts: {value}.",
        ),
    ]
    if len(question.subjects) > 1:
        slots.append(
            Slot("other", SlotKind.GIVEN, question.subjects[1], "The other one is the {value}.")
        )
    if question.measure:
        slots.append(Slot("measure", SlotKind.GIVEN, question.measure, "Compare them by {value}."))
        slots.append(Slot("pick", SlotKind.GIVEN, question.pick, "I want the {value} one."))
    return tuple(slots)
