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

import itertools
import re

import gymnasium
import orjson
import pytest

import stategym  # noqa: F401  (registers the Gymnasium ids)
from stategym.agents import scripted
from stategym.kernel.env import Env
from stategym.kernel.knob_text import knob_sentences, text_for
from stategym.kernel.knobs import Knobs
from stategym.kernel.protocol import call, calls
from stategym.registry import all_domains, get_domain
from stategym.rendering import make_renderer
from stategym.rollout import run_episode

SPEC = "synth:chain2+fanout3+askgate+verifycommit+conflict+precond"
BRANCHED = "synth:chain1+fanout2+branch+diamond+askgate+verifycommit+precond+conflict"
SURFACES = [
    SPEC,
    *(f"{SPEC}@{surface}" for surface in range(1, 9)),
    *(f"{BRANCHED}@{surface}" for surface in range(0, 21)),
]
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
    "expired",
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
    assert "Nothing changes on its own" in still.system_prompt()
    if get_domain(domain).read_only:  # nothing moves in a read-only corpus
        assert "Nothing changes on its own" in moving.system_prompt()
    else:
        assert "Nothing changes on its own" not in moving.system_prompt()
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


OWN_WRITES = {
    "bank": {"list_transfers"},
    "cloud": {"list_snapshots"},  # an account starts with none
    "lookup": set(),
    "meetings": {"list_invitations"},
    "shop": {"list_orders", "review_cart"},
    "travel": {"list_bookings"},
}
"""The READ tools that list only what the episode's own writes made: nothing can fill them
with ``stateful`` off."""


@pytest.mark.parametrize("name", sorted(OWN_WRITES))
def test_a_stateless_episode_is_offered_no_tool_that_lists_its_own_writes(name: str) -> None:
    """Once offered: the order list (always empty) and shop's ``review_cart``, whose
    argument is a cart id nothing can make."""
    domain = get_domain(name)
    for setting in ("stateful=off", "all_off"):
        knobs = Knobs.parse(setting)
        reads = {t.name for t in domain.tools if t.effect.name == "READ"}
        offered = {t.name for t in domain.available_tools(knobs)}
        assert offered == reads - OWN_WRITES[name], setting
        env = Env(name, knobs=knobs)
        env.reset(seed=1)
        assert {s["function"]["name"] for s in env.tool_schemas} == offered | {"finish"}
        for tool in OWN_WRITES[name]:
            arguments = {"cart_id": "C1"} if tool == "review_cart" else {}
            step = env.step(calls(call(tool, **arguments)))
            assert step.info["format_errors"] == ("unknown_tool",), tool
    stateful = {t.name for t in domain.available_tools(Knobs())}
    assert OWN_WRITES[name] <= stateful


@pytest.mark.parametrize("domain", DOMAINS[:-1])
def test_no_scripted_agent_calls_a_tool_the_episode_does_not_offer(domain: str) -> None:
    """Audit 17C F1: ``spray``'s speculative reads named the own-writes lists under
    ``stateful`` off, the whole round was refused, and the agent answered "none". The
    ``random`` agent calls unknown tools on purpose."""
    from stategym.agents import agent_names, resolve

    for setting in ("default", "stateful=off", "all_off"):
        env = Env(domain, knobs=Knobs.parse(setting))
        for agent in agent_names():
            if agent == "random":
                continue
            for seed in range(2):
                played = run_episode(env, resolve(env.domain, agent), seed)
                unknown = [r.index for r in played.rounds if "unknown_tool" in r.format_errors]
                assert unknown == [], (setting, agent, seed)


def test_a_stateless_spray_spends_no_first_round_slot_on_a_guess() -> None:
    """Audit 17D J1: in bank the spray's first-round slot holds the transfer list; with it
    hidden, the next sprayed read (a rate of a currency nothing has shown yet) took its place
    and was scored a guess (R 0.867 -> 0.514 over seeds 0-15)."""
    for knobs in (Knobs(), Knobs(stateful=False)):
        env = Env("bank", knobs=knobs)
        for seed in range(4):
            played = run_episode(env, resolve_agent(env, "spray"), seed)
            first = [c.name for c in next(r for r in played.rounds if r.calls).calls]
            assert "get_fx_rates" not in first, (knobs, seed, first)
            assert ("list_transfers" in first) is knobs.stateful


def resolve_agent(env: Env, name: str) -> object:
    from stategym.agents import resolve

    return resolve(env.domain, name)


def test_a_stateless_synthetic_episode_is_offered_no_purchase_list() -> None:
    domain = get_domain(SPEC)
    purchases = {t.name for t in domain.tools if t.reads_own_writes}
    assert purchases == {"list_purchases"}
    assert purchases <= {t.name for t in domain.available_tools(Knobs())}
    assert not purchases & {t.name for t in domain.available_tools(Knobs(stateful=False))}


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
    r"(?<!\()\b[Aa] [aeioAEIO]\w*|\b[Aa]n [b-df-hj-np-tv-zB-DF-HJ-NP-TV-Z]\w*|\bthe \w+ an? \w+"
)
""""a option", "an package", and an article after "the best" ("the best a flight"); not
the plain surface's route named "a" ("(a or b)")."""


def _episode_texts(domain: str, knobs: Knobs, seed: int, agent: str) -> list[str]:
    env = Env(domain, knobs=knobs)
    trajectory = run_episode(env, scripted(env.domain, agent), seed)
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
        for seed, agent in itertools.product(range(3), ("expert", "ask-everything")):
            texts += _episode_texts(domain, knobs, seed, agent)
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


def test_a_sentence_two_of_one_knobs_sentences_share_is_refused() -> None:
    text = "Prices move and holds expire."
    overlapping = {"dynamics": {"holds expire": "holds stay", text: "Nothing moves."}}
    with pytest.raises(ValueError, match="once dynamics is off"):
        knob_sentences("tool t", text, overlapping)


def test_a_replacement_holding_a_declared_sentence_is_refused() -> None:
    text = "Prices move. Payment is final."
    when_off = {
        "irreversible": {"Payment is final.": "Payment can be undone."},
        "dynamics": {"Prices move.": "Payment is final."},
    }
    with pytest.raises(ValueError, match=re.escape("holds 'Payment is final.'")):
        knob_sentences("tool t", text, when_off)


@pytest.mark.parametrize("said", ["", " ", "It expires.\nthe"])
def test_an_empty_sentence_or_one_across_two_texts_is_refused(said: str) -> None:
    with pytest.raises(ValueError, match="is empty or spans two texts"):
        knob_sentences("tool t", "Hold it. It expires.\nthe thing.", {"dynamics": {said: "!"}})


# -- the world is what the text says (audit 15a) --------------------------------------------


def test_no_prompt_claims_every_change_can_be_undone_and_cloud_says_detach_is_final() -> None:
    for domain in DOMAINS:
        for kind in KINDS:
            text = _read(domain, Knobs(irreversible=False), kind)
            assert "every change can be undone" not in text
    assert "No tool attaches it back." in _read("cloud", Knobs(irreversible=False), "messages")


def _left_after_undo(domain: str, book: str, undo: str, table: str, count: str) -> list[tuple]:
    """On the first seeds where the expert commits, with nothing moving and refunds in full:
    replay the expert up to its commit and undo it (``undo`` of the id ``book`` returned);
    for each, what the option's row held (``table``'s ``count``: seats, stock) before the
    commit and after the undo."""
    knobs = Knobs(irreversible=False, dynamics=False)
    found = []
    for seed in range(20):
        env = Env(domain, knobs=knobs)
        played = run_episode(env, scripted(env.domain, "expert"), seed)
        again = Env(domain, knobs=knobs)
        again.reset(seed=seed)
        for record in played.rounds:
            done = [c for c in record.calls if c.name == book and c.error is None]
            if done:
                option = done[0].content["option"]
                rows = getattr(again.world, table)
                before = getattr(rows[option], count)
                again.step(record.action())
                key = next(k for k in done[0].content if k.endswith("_id") and k != "hold_id")
                again.step(calls(call(undo, **{key: done[0].content[key]})))
                found.append((before, getattr(rows[option], count)))
                break
            again.step(record.action())
        if len(found) == 3:
            break
    assert found, f"the expert commits on none of 20 seeds of {domain}"
    return found


def test_a_cancelled_booking_frees_its_seat() -> None:
    for before, after in _left_after_undo(
        "travel", "book_and_pay", "cancel_booking", "flights", "seats"
    ):
        assert after == before


def test_a_cancelled_purchase_is_back_in_stock() -> None:
    for before, after in _left_after_undo(
        SPEC, "buy_option", "cancel_purchase", "options", "stock"
    ):
        assert after == before


def test_the_compact_rendering_can_write_a_stateless_bank_answer() -> None:
    """Compact shows every id as a handle and no tool returns a route id: an answer naming
    the route by its own id would be a handle the model never saw. The expert answers with
    the account and the rail ("CA93 EXP", compact "D EXP": handles it has seen), which
    names the route CA93EXP."""
    knobs = Knobs(stateful=False)
    reached = 0
    for seed in range(6):
        env = Env("bank", knobs=knobs)
        played = run_episode(env, scripted(env.domain, "expert"), seed)
        renderer = make_renderer(env.domain, knobs, "compact")
        again = Env("bank", knobs=knobs)
        again.reset(seed=seed)
        renderer.first_messages(again.task)
        for index, record in enumerate(played.rounds):
            seen = len(renderer.handles)
            text = renderer.action_message(record.action(), index)["content"]
            if record.calls and record.calls[0].name == "finish":
                assert len(renderer.handles) == seen, text  # no handle it has not seen
            result = again.step(renderer.parse(text))
            renderer.observation_messages(result.observation)
        assert again.outcome().goal_reached == played.outcome.goal_reached
        reached += played.outcome.goal_reached
    assert reached >= 3


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_clock_rule_names_nothing_the_model_cannot_have(domain: str) -> None:
    found = get_domain(domain)
    for knobs in (Knobs(stateful=False), Knobs.all_off()):
        assert "expire" not in make_renderer(found, knobs, "messages").system_prompt()
    if not any(t.name.startswith(("hold", "lock", "freeze", "pin")) for t in found.tools):
        assert "Holds may expire" not in make_renderer(found, Knobs(), "messages").system_prompt()


def test_each_domain_names_what_moves_in_it() -> None:
    lines = {
        name: next(
            line
            for line in make_renderer(get_domain(name), Knobs(), "messages")
            .system_prompt()
            .splitlines()
            if "clock" in line or "on its own" in line
        )
        for name in ("travel", "meetings", "shop", "bank", "cloud")
    }
    assert "Calendars" in lines["meetings"] and "Prices" not in lines["meetings"]
    assert "Exchange rates" in lines["bank"] and "Rate quotes may expire" in lines["bank"]
    assert "Cart lines may expire" in lines["shop"]
    assert "snapshot completes" in lines["cloud"]
    still = make_renderer(get_domain("cloud"), Knobs(dynamics=False), "messages")
    assert "snapshot completes a moment after it is taken" in still.system_prompt()


def test_the_irreversible_terms_are_stated_not_hedged() -> None:
    for domain in DOMAINS:
        text = _read(domain, Knobs(), "messages")
        assert "usually" not in text and "may not be refunded" not in text
        assert "still holds it" not in text


def test_a_schema_edited_by_its_caller_is_its_own_copy() -> None:
    env = Env("travel")
    env.tool_schemas[0]["function"]["description"] = "edited"
    _, info = gymnasium.make("stategym/Travel-v0").reset(seed=0)
    info["tools"][1]["function"]["description"] = "edited too"
    fresh = Env("travel").tool_schemas
    assert "edited" not in orjson.dumps(fresh).decode()
