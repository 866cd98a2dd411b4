"""Surfaces: the names and words a synthetic domain shows, drawn independently of its graph.

Surface 0 is the plain abstract one (``get_key_1``, ``list_options_1``...). Every other
surface seed draws tool names, value (argument and result field) names, descriptions, the
option id prefix, route words and preference words from small vocabularies. Only what the
model reads changes; the graph, the tasks' content and the user's words do not.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass

VALUE_NOUNS = (
    "account",
    "tenant",
    "region",
    "ledger",
    "vendor",
    "depot",
    "catalog",
    "cluster",
    "zone",
    "market",
    "channel",
    "profile",
    "warehouse",
    "district",
    "carrier",
    "portfolio",
    "registry",
    "station",
    "circuit",
    "parcel",
)
VALUE_SUFFIXES = ("id", "code", "ref", "key", "token")
READ_VERBS = ("get", "fetch", "lookup", "resolve", "find", "load", "query", "read")
LIST_VERBS = ("list", "search", "browse", "scan")
PLACES = (
    "harbor",
    "summit",
    "meadow",
    "canyon",
    "delta",
    "prairie",
    "lagoon",
    "ridge",
    "valley",
    "island",
)
OPTION_NOUNS = ("offer", "listing", "package", "lot", "plan", "bundle", "unit", "quote")
HOLD_VERBS = ("hold", "lock", "freeze", "pin")
PREPARE_VERBS = ("prepare", "stage", "register", "queue")
BUY_VERBS = ("buy", "purchase", "order", "checkout")
CANCEL_VERBS = ("cancel", "void", "revoke", "withdraw")
ROUTES = (("north", "south"), ("east", "west"), ("inner", "outer"), ("upper", "lower"))
FLAGS = (
    (("fast_delivery", "fast delivery"), ("long_warranty", "a long warranty")),
    (("free_returns", "free returns"), ("eco_packaging", "eco packaging")),
    (("express", "express handling"), ("insured", "insurance included")),
    (("flexible", "flexible terms"), ("certified", "a certified seller")),
)
PREFIXES = ("P", "Q", "X", "Z", "K", "M", "V", "W")
VALUE_KEYS = ("ref", *(f"k{i}" for i in range(1, 7)), "left", "right", "merged", "route_key")


@dataclass(frozen=True, slots=True)
class Surface:
    """Every name a synthetic domain shows.

    Attributes:
        seed: the surface seed (0: plain).
        tools: tool name by canonical key (``link1``, ``source2``, ``hold``...).
        values: argument/field name by canonical value key (``ref``, ``k1``, ``left``...).
        nouns: the noun each value key stands for, for descriptions.
        noun: what an option is called ("option", "offer"...).
        prefix: option id prefix (one capital letter).
        routes: the two route words of a conditional branch.
        flags: result field names of the two preference features.
        flag_texts: the user's words for the two preferences.
        route_field: result field of the branch lookup.
    """

    seed: int
    tools: Mapping[str, str]
    values: Mapping[str, str]
    nouns: Mapping[str, str]
    noun: str
    prefix: str
    routes: tuple[str, str]
    flags: tuple[str, str]
    flag_texts: tuple[str, str]
    route_field: str

    def tool(self, key: str) -> str:
        return self.tools[key]


def with_article(noun: str) -> str:
    """``noun`` after its indefinite article, as the words of these surfaces take it: "an
    option", "an account id", "a listing", "a unit" (every noun drawn here that starts with a
    vowel letter other than u starts with a vowel sound)."""
    return f"{'an' if noun[:1] in 'aeio' else 'a'} {noun}"


def plain() -> Surface:
    """Surface 0: abstract names that say what each piece is."""
    values = {
        "ref": "ref",
        "left": "left_key",
        "right": "right_key",
        "merged": "merged_key",
        "route_key": "route_key",
    }
    values |= {f"k{i}": f"key_{i}" for i in range(1, 7)}
    nouns = {k: v.replace("_", " ") for k, v in values.items()}
    tools = {f"link{i}": f"get_key_{i}" for i in range(1, 7)}
    tools |= {f"source{i}": f"list_options_{i}" for i in range(1, 7)}
    tools |= {
        "left": "get_left_key",
        "right": "get_right_key",
        "merge": "merge_keys",
        "route": "check_route",
        "via0": "get_route_key_a",
        "via1": "get_route_key_b",
        "hold": "hold_option",
        "prepare": "prepare_option",
        "buy": "buy_option",
        "cancel": "cancel_purchase",
        "purchases": "list_purchases",
    }
    (flag_a, text_a), (flag_b, text_b) = FLAGS[0]
    return Surface(
        0,
        tools,
        values,
        nouns,
        "option",
        "P",
        ("a", "b"),
        (flag_a, flag_b),
        (text_a, text_b),
        "route",
    )


def make_surface(seed: int) -> Surface:
    """The surface for ``seed``: plain for 0, drawn from the vocabularies otherwise."""
    if seed == 0:
        return plain()
    rng = random.Random(f"surface:{seed}")
    picked = rng.sample(VALUE_NOUNS, len(VALUE_KEYS))
    nouns = dict(zip(VALUE_KEYS, picked, strict=True))
    values = {key: f"{noun}_{rng.choice(VALUE_SUFFIXES)}" for key, noun in nouns.items()}
    tools: dict[str, str] = {}
    for i in range(1, 7):
        tools[f"link{i}"] = f"{rng.choice(READ_VERBS)}_{nouns[f'k{i}']}"
    tools["left"] = f"{rng.choice(READ_VERBS)}_{nouns['left']}"
    tools["right"] = f"{rng.choice(READ_VERBS)}_{nouns['right']}"
    tools["merge"] = f"combine_{nouns['merged']}"
    routes = rng.choice(ROUTES)
    tools["route"] = f"check_{nouns['route_key']}_route"
    tools["via0"] = f"{rng.choice(READ_VERBS)}_{routes[0]}_{nouns['route_key']}"
    tools["via1"] = f"{rng.choice(READ_VERBS)}_{routes[1]}_{nouns['route_key']}"
    noun = rng.choice(OPTION_NOUNS)
    verb = rng.choice(LIST_VERBS)
    for i, place in enumerate(rng.sample(PLACES, 6), start=1):
        tools[f"source{i}"] = f"{verb}_{place}_{noun}s"
    tools["hold"] = f"{rng.choice(HOLD_VERBS)}_{noun}"
    tools["prepare"] = f"{rng.choice(PREPARE_VERBS)}_{noun}"
    tools["buy"] = f"{rng.choice(BUY_VERBS)}_{noun}"
    tools["cancel"] = f"{rng.choice(CANCEL_VERBS)}_{noun}_order"
    tools["purchases"] = f"list_{noun}_orders"
    (flag_a, text_a), (flag_b, text_b) = rng.choice(FLAGS)
    return Surface(
        seed,
        tools,
        values,
        nouns,
        noun,
        rng.choice(PREFIXES),
        routes,
        (flag_a, flag_b),
        (text_a, text_b),
        "route",
    )
