"""What the model reads is true of the world its knobs make (the rule of
``stategym.kernel.knob_text``, for every knob, where audit 14e F5 found it held for
``irreversible`` alone).

* With ``dynamics`` off nothing moves, yet the protocol said "Prices and availability may
  change and holds may expire" and the tools "Prices shown can change", "when it expires",
  "Rates move": a model told the world moves wastes rounds re-reading what cannot change.
* With ``stateful`` off only look-up tools are offered, yet the instructions said to hold a
  fare, pay, check out or send, and descriptions named ``checkout`` or told the model to lock
  a rate: steps the model cannot take.
* ``lookup``'s ``finish`` and ending asked for "the id of the option you recommend" where its
  instructions and the question ask for an entity id or a number.
* Articles: the synthetic domains wrote "a option", "a offer", "a account id", and the
  stateless travel and synthetic requests "Find the best a flight".
"""

from __future__ import annotations

import re

import gymnasium
import orjson
import pytest

import stategym  # noqa: F401  (registers the Gymnasium ids)
from stategym.agents import scripted
from stategym.kernel.env import Env
from stategym.kernel.knob_text import knob_sentences, text_for
from stategym.kernel.knobs import Knobs
from stategym.registry import all_domains, get_domain
from stategym.rendering import make_renderer
from stategym.rendering.messages import STILL
from stategym.rollout import run_episode

SPEC = "synth:chain2+fanout3+askgate+verifycommit+conflict+precond"
SURFACES = [SPEC, *(f"{SPEC}@{surface}" for surface in range(1, 9))]
DOMAINS = [*sorted(all_domains()), SPEC, f"{SPEC}@3"]
KINDS = ["messages", "compact"]
SETTINGS = [
    "default",
    "stateful=off",
    "irreversible=off",
    "hidden_info=off",
    "priorities=off",
    "dynamics=off",
    "all_off",
]


def _read(domain: str, knobs: Knobs, kind: str) -> str:
    """Everything the model reads before the first round but the request: the system prompt
    and every offered schema (descriptions and argument texts)."""
    renderer = make_renderer(get_domain(domain), knobs, kind)
    return renderer.system_prompt() + "\n" + orjson.dumps(renderer.tools).decode()


# -- dynamics off ---------------------------------------------------------------------------

MOVING = (
    "can change",
    "may change",
    "may expire",
    "expires",
    "sells out first",
    "sell out first",
    "rates move",
    "books the room first",
)


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("kind", KINDS)
def test_nothing_said_to_move_where_nothing_moves(domain: str, kind: str) -> None:
    for setting in ("dynamics=off", "all_off"):
        text = _read(domain, Knobs.parse(setting), kind).lower()
        assert [phrase for phrase in MOVING if phrase in text] == [], setting


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_clock_rule_follows_the_knob(domain: str) -> None:
    still = make_renderer(get_domain(domain), Knobs(dynamics=False), "messages")
    moving = make_renderer(get_domain(domain), Knobs(), "messages")
    assert STILL in still.system_prompt()
    if get_domain(domain).read_only:
        assert STILL in moving.system_prompt()  # nothing moves in a read-only corpus
    else:
        assert STILL not in moving.system_prompt()
        assert get_domain(domain).moves in moving.system_prompt()


def test_a_hold_said_not_to_expire_does_not() -> None:
    env = Env("travel", knobs=Knobs(dynamics=False))
    trajectory = run_episode(env, scripted(env.domain, "expert"), 0)
    holds = [
        call.content
        for record in trajectory.rounds
        for call in record.calls
        if call.name == "hold_fare" and isinstance(call.content, dict)
    ]
    assert holds and all(hold["expires_at"] is None for hold in holds)
    described = {s["function"]["name"]: s["function"]["description"] for s in env.tool_schemas}
    assert "holds do not expire" in described["hold_fare"]


# -- stateful off ---------------------------------------------------------------------------


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("kind", KINDS)
def test_no_tool_the_model_lacks_is_named(domain: str, kind: str) -> None:
    every = {t.name for t in get_domain(domain).tools}
    for setting in ("stateful=off", "all_off"):
        knobs = Knobs.parse(setting)
        offered = {t.name for t in get_domain(domain).available_tools(knobs)}
        text = _read(domain, knobs, kind)
        named = {name for name in every - offered if re.search(rf"\b{name}\b", text)}
        assert named == set(), setting


COMMITTING = (
    "pay once",
    "check out once",
    "send once",
    "delete once",
    "buy exactly one",
    "in the cart",
    "lock the rate",
    "send the invitation",
    "hold a ",
)


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_instructions_ask_for_an_answer_where_nothing_can_be_changed(domain: str) -> None:
    text = get_domain(domain).instructions_for(Knobs(stateful=False)).lower()
    assert [phrase for phrase in COMMITTING if phrase in text] == []


def test_the_gym_reset_info_gives_the_answer_instructions() -> None:
    _, info = gymnasium.make("stategym/Travel-v0", stateful=False).reset(seed=0)
    assert info["instructions"] == get_domain("travel").answer_instructions


# -- what the answer names ------------------------------------------------------------------


@pytest.mark.parametrize("domain", DOMAINS)
def test_finish_and_the_ending_name_the_domains_answer(domain: str) -> None:
    found = get_domain(domain)
    for setting in ("stateful=off", "default"):
        knobs = Knobs.parse(setting)
        if not found.judges_answer(knobs):
            continue
        finish = Env(domain, knobs=knobs).tool_schemas[-1]["function"]["description"]
        assert finish == f"End the episode with your answer: {found.answer_form}."
        for kind in KINDS:
            assert found.answer_form in make_renderer(found, knobs, kind).system_prompt()


def test_lookup_is_asked_for_an_entity_or_a_number_not_an_option() -> None:
    for kind in KINDS:
        assert "option" not in _read("lookup", Knobs(), kind)


# -- articles -------------------------------------------------------------------------------

WRONG_ARTICLE = re.compile(
    r"\b[Aa] [aeioAEIO]\w*|\b[Aa]n [b-df-hj-np-tv-zB-DF-HJ-NP-TV-Z]\w*|\bthe \w+ an? \w+"
)
""""a option", "an package", and an article after "the best" ("the best a flight")."""


def _episode_texts(domain: str, knobs: Knobs, seed: int) -> list[str]:
    env = Env(domain, knobs=knobs)
    trajectory = run_episode(env, scripted(env.domain, "expert"), seed)
    texts = [env.task.request.text]
    for record in trajectory.rounds:
        texts += [record.say or "", record.notice or ""]
        texts.append(record.user.reply if record.user is not None else "")
    return texts


@pytest.mark.parametrize("domain", [*sorted(all_domains()), *SURFACES])
def test_every_article_fits_its_noun(domain: str) -> None:
    wrong: set[str] = set()
    for setting in SETTINGS:
        knobs = Knobs.parse(setting)
        texts = [_read(domain, knobs, kind) for kind in KINDS]
        for seed in range(3):
            texts += _episode_texts(domain, knobs, seed)
        wrong |= {match for text in texts for match in WRONG_ARTICLE.findall(text)}
    assert wrong == set()


# -- the rule itself --------------------------------------------------------------------------


def test_an_unknown_knob_is_refused() -> None:
    with pytest.raises(ValueError, match="'dynamic' is not a knob"):
        knob_sentences("tool t", "Prices move.", {"dynamic": {"Prices move.": ""}})


def test_a_sentence_the_text_does_not_hold_is_refused() -> None:
    with pytest.raises(ValueError, match="is not in its text"):
        knob_sentences("tool t", "Prices move.", {"dynamics": {"Rates move.": ""}})


def test_two_knobs_may_not_claim_overlapping_words() -> None:
    # With both knobs off, whichever ran second would find its sentence gone and leave the
    # text it meant to replace: some setting would keep a false sentence.
    text = "Prices can change until a fare is held."
    overlapping = {
        "dynamics": {"Prices can change until a fare is held.": "Prices stay."},
        "stateful": {" until a fare is held": ""},
    }
    with pytest.raises(ValueError, match=r"once (dynamics|stateful) is off"):
        knob_sentences("tool t", text, overlapping)


def test_an_empty_replacement_leaves_no_double_space_and_the_default_is_untouched() -> None:
    text = "Check stock. Stock can change. Ask first."
    sentences = knob_sentences("tool t", text, {"dynamics": {"Stock can change.": ""}})
    assert text_for(text, sentences, Knobs(dynamics=False)) == "Check stock. Ask first."
    assert text_for(text, sentences, Knobs()) is text
