"""Multi-hop questions over a lookup corpus: what is asked, how it is worded, and its answer."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from .world import KINDS, Company, Corpus, Entity, Person, Product

Form = Literal["chain", "extreme", "compare"]

CHAINS: tuple[tuple[type, tuple[str, ...], str], ...] = (
    (Product, ("maker", "hq"), "In which city is the company that makes the {s} headquartered?"),
    (Product, ("maker", "founder"), "Who founded the company that makes the {s}?"),
    (Product, ("maker", "founded"), "In what year was the company that makes the {s} founded?"),
    (Company, ("founder", "born_in"), "In which city was the founder of {s} born?"),
    (
        Company,
        ("hq", "population"),
        "What is the population of the city where {s} has its headquarters?",
    ),
    (Person, ("born_in", "population"), "What is the population of the city where {s} was born?"),
    (
        Product,
        ("maker", "founder", "born_in"),
        "In which city was the founder of the company that makes the {s} born?",
    ),
    (
        Product,
        ("maker", "founder", "born"),
        "In what year was the founder of the company that makes the {s} born?",
    ),
    (
        Product,
        ("maker", "hq", "population"),
        "What is the population of the city where the "
        "company that makes the {s} has its headquarters?",
    ),
    (
        Company,
        ("founder", "born_in", "population"),
        "What is the population of the city where the founder of {s} was born?",
    ),
)
EXTREMES: dict[tuple[str, str], str] = {
    ("price", "lowest"): "Which product made by {s} is the cheapest?",
    ("price", "highest"): "Which product made by {s} is the most expensive?",
    ("launched", "lowest"): "Which product made by {s} was launched first?",
    ("launched", "highest"): "Which product made by {s} was launched most recently?",
}
COMPARES: dict[tuple[type, str], str] = {
    (Product, "lowest"): "Which company was founded earlier: the maker of the {a} or the maker "
    "of the {b}?",
    (Product, "highest"): "Which company was founded later: the maker of the {a} or the maker "
    "of the {b}?",
    (Company, "lowest"): "Who was born earlier: the founder of {a} or the founder of {b}?",
    (Company, "highest"): "Who was born later: the founder of {a} or the founder of {b}?",
}
COMPARE_PATHS: dict[type, tuple[tuple[str, ...], str]] = {
    Product: (("maker",), "founded"),
    Company: (("founder",), "born"),
}


@dataclass(frozen=True, slots=True)
class Question:
    """One question and its answer.

    Attributes:
        form: chain (follow ``path`` from the subject), extreme (the subject's ``products`` with
            the lowest or highest ``measure``), or compare (follow ``path`` from each of two
            subjects and take the end with the lowest or highest ``measure``).
        text: the question in words.
        subjects: the names the question mentions.
        path: relations to follow from each subject.
        measure: the attribute compared (extreme and compare forms).
        pick: ``lowest`` or ``highest`` (extreme and compare forms).
        answer: the right answer: an entity id, or a number as text.
        answer_field: the entity type (``city``...) or the attribute (``population``...) the
            answer is drawn from.
        hops: every entity whose facts the answer needs, per subject, in hop order.
    """

    form: Form
    text: str
    subjects: tuple[str, ...]
    path: tuple[str, ...]
    measure: str
    pick: str
    answer: str
    answer_field: str
    hops: tuple[tuple[str, ...], ...]

    def candidates(self, corpus: Corpus) -> tuple[str, ...]:
        """Every answer of the right type the corpus could give, the right one among them."""
        found: set[str] = {self.answer}
        for entity in corpus.entities.values():
            if KINDS[type(entity)] == self.answer_field:
                found.add(entity.id)
            elif hasattr(entity, self.answer_field):
                found.add(str(getattr(entity, self.answer_field)))
        return tuple(sorted(found))


def follow(corpus: Corpus, start: str, path: tuple[str, ...]) -> tuple[tuple[str, ...], object]:
    """The entities visited from ``start`` along ``path`` (``start`` included, the end not),
    and the value at the end (an entity id or a number)."""
    visited: list[str] = []
    current: object = start
    for relation in path:
        visited.append(str(current))
        current = getattr(corpus.entities[str(current)], relation)
    return tuple(visited), current


def _field(corpus: Corpus, value: object, relation: str) -> str:
    if isinstance(value, str) and value in corpus.entities:
        return KINDS[type(corpus.entities[value])]
    return relation


def _of_type(corpus: Corpus, kind: type) -> list[Entity]:
    return [e for e in corpus.entities.values() if isinstance(e, kind)]


def _chain(rng: random.Random, corpus: Corpus) -> Question:
    kind, path, template = rng.choice(CHAINS)
    subject = rng.choice(_of_type(corpus, kind))
    visited, end = follow(corpus, subject.id, path)
    return Question(
        "chain",
        template.format(s=subject.name),
        (subject.name,),
        path,
        "",
        "",
        str(end),
        _field(corpus, end, path[-1]),
        (visited,),
    )


def _extreme(rng: random.Random, corpus: Corpus) -> Question | None:
    (measure, pick), template = rng.choice(list(EXTREMES.items()))
    companies = [
        c for c in _of_type(corpus, Company) if isinstance(c, Company) and len(c.products) >= 2
    ]
    if not companies:
        return None
    company = rng.choice(companies)
    values = {p: getattr(corpus.entities[p], measure) for p in company.products}
    top = (min if pick == "lowest" else max)(values.values())
    winners = [p for p, v in values.items() if v == top]
    if len(winners) != 1:
        return None
    return Question(
        "extreme",
        template.format(s=company.name),
        (company.name,),
        ("products",),
        measure,
        pick,
        winners[0],
        "product",
        ((company.id, *company.products),),
    )


def _compare(rng: random.Random, corpus: Corpus) -> Question | None:
    kind = rng.choice((Product, Company))
    pick = rng.choice(("lowest", "highest"))
    path, measure = COMPARE_PATHS[kind]
    a, b = rng.sample(_of_type(corpus, kind), 2)
    (hops_a, end_a), (hops_b, end_b) = follow(corpus, a.id, path), follow(corpus, b.id, path)
    value_a = getattr(corpus.entities[str(end_a)], measure)
    value_b = getattr(corpus.entities[str(end_b)], measure)
    if end_a == end_b or value_a == value_b:
        return None
    first = (value_a < value_b) == (pick == "lowest")
    answer = str(end_a if first else end_b)
    text = COMPARES[(kind, pick)].format(a=a.name, b=b.name)
    return Question(
        "compare",
        text,
        (a.name, b.name),
        path,
        measure,
        pick,
        answer,
        _field(corpus, answer, path[-1]),
        ((*hops_a, str(end_a)), (*hops_b, str(end_b))),
    )


def draw_question(rng: random.Random, corpus: Corpus) -> Question:
    """Draw a question: chains half the time, fan-outs and diamonds a quarter each."""
    while True:
        form = rng.choice(("chain", "chain", "extreme", "compare"))
        question = (
            _chain(rng, corpus)
            if form == "chain"
            else (_extreme(rng, corpus) if form == "extreme" else _compare(rng, corpus))
        )
        if question is not None:
            return question
