"""The LLM-backed reading of the simulated user (``stategym.llm.reading``).

The endpoint is scripted (a mock transport under a real ``openai.OpenAI`` client), and once a
real HTTP server on a local port: what is tested is what the reader sends, how it reads the
answers, and that every answer comes back from the cache file, bit for bit, without the
endpoint.
"""

from __future__ import annotations

import asyncio
import copy
import json
import pickle
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gymnasium
import pytest
from llm_fixtures import completion, http, openai

import loopback
from stategym import Env
from stategym.kernel.errors import TrajectoryError, UsageError
from stategym.kernel.protocol import CallBatch, Say, ToolCall
from stategym.kernel.trajectory import dumps, loads, replay
from stategym.kernel.understanding import CHOICE, PRIORITIES, RulesBreakTies
from stategym.llm.reading import LLMReading, parse_between, parse_labels, reading_prompt
from stategym.registry import get_domain
from stategym.rollout.play import Episode, adrive

Answer = Callable[[str], Any]
"""``agent message -> answer``: a dict (200, a completion), ``(status, dict)`` or content."""


class SyncEndpoint:
    """A chat-completions endpoint for the reader's synchronous client."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[dict[str, Any]] = []

    def handle(self, request: Any) -> Any:
        body = json.loads(request.content)
        self.requests.append(body)
        answer = self.answer(body["messages"][-1]["content"])
        status, payload = answer if isinstance(answer, tuple) else (200, answer)
        if isinstance(payload, str):
            payload = completion(payload)
        return http.Response(status, json=payload)

    def client(self) -> Any:
        return openai.OpenAI(
            base_url="http://endpoint.test/v1",
            api_key="test",
            max_retries=0,
            http_client=http.Client(transport=http.MockTransport(self.handle)),
        )


def keyword_reader(message: str) -> str:
    """Answers like a model that reads a few travel words (and nothing else)."""
    text = message.lower()
    asks = [label for word, label in _WORDS.items() if word in text]
    return json.dumps({"asks": asks})


_WORDS = {"spend": "budget", "fly out of": "origin", "matters": "priorities", "pick": "choice"}


@pytest.fixture
def endpoint() -> SyncEndpoint:
    return SyncEndpoint(keyword_reader)


def reading(endpoint: SyncEndpoint, cache: Path, **settings: Any) -> LLMReading:
    return LLMReading("reader-model", cache, client=endpoint.client(), **settings)


def travel(endpoint: SyncEndpoint, tmp_path: Path) -> Env:
    """A travel episode at seed 0 whose user reads through ``endpoint``."""
    env = Env("travel", reader=reading(endpoint, tmp_path / "r.sqlite"))
    env.reset(seed=0)
    return env


def test_the_model_decides_which_slot_is_asked(tmp_path: Path) -> None:
    # A model that reads every message as asking for the origin: the rules would read this
    # one as the budget; the model's answer is what the user goes by.
    endpoint = SyncEndpoint(lambda _: '{"asks": ["origin"]}')
    env = travel(endpoint, tmp_path)
    env.step(Say("How much would you spend?"))
    turn = env.rounds[-1].user
    assert turn is not None and turn.asked == ("origin",)
    assert env.task.slot("origin").say(env.user.values["origin"]) in turn.reply
    assert len(endpoint.requests) == 1
    request = endpoint.requests[0]
    assert request["model"] == "reader-model"
    assert request["temperature"] == 0
    assert request["messages"][1]["content"] == "How much would you spend?"
    plain = Env("travel")
    plain.reset(seed=0)
    plain.step(Say("How much would you spend?"))
    assert plain.rounds[-1].user is not None and plain.rounds[-1].user.asked == ("budget",)


def test_shared_labels_reach_the_priority_order_and_the_choice(
    endpoint: SyncEndpoint, tmp_path: Path
) -> None:
    env = travel(endpoint, tmp_path)
    env.step(Say("What matters to you?"))
    turn = env.rounds[-1].user
    assert turn is not None and turn.priority_asked and turn.understood
    env.step(Say("Could you pick one for me?"))
    turn = env.rounds[-1].user
    assert turn is not None and turn.open and turn.asked == ()


def test_an_answer_that_is_not_the_json_asked_for_is_not_understood(tmp_path: Path) -> None:
    endpoint = SyncEndpoint(lambda _: "Sure! The user wants to know about flights.")
    env = travel(endpoint, tmp_path)
    result = env.step(Say("How much would you spend?"))
    assert result.observation.user is not None
    assert "don't understand" in result.observation.user
    turn = env.rounds[-1].user
    assert turn is not None and not turn.understood


def test_a_message_between_two_facts_is_asked_back_and_cached_so(tmp_path: Path) -> None:
    # "When?" could be the departure time or the travel dates: the model says so, and the
    # user asks which was meant, as it does at a tie of its own reading.
    endpoint = SyncEndpoint(lambda _: '{"asks": [], "between": ["departure", "window"]}')
    cache = tmp_path / "r.sqlite"
    env = Env("travel", reader=reading(endpoint, cache))
    env.reset(seed=0)
    result = env.step(Say("When?"))
    turn = env.rounds[-1].user
    assert turn is not None and not turn.understood and turn.asked == ()
    assert result.observation.user is not None
    assert result.observation.user.startswith(
        "Sorry, I don't understand what you need from me: do you mean "
    )
    offline = Env("travel", reader=LLMReading("reader-model", cache, offline=True))
    offline.reset(seed=0)
    assert offline.step(Say("When?")).observation.user == result.observation.user


def test_the_rules_break_a_tie_the_model_leaves_open(tmp_path: Path) -> None:
    # The model finds each of these between the departure time and the travel dates; the
    # rules read "Leaving when?" as the dates alone, and "When?" as neither of the two.
    endpoint = SyncEndpoint(lambda _: '{"asks": [], "between": ["departure", "window"]}')
    tied = RulesBreakTies(reading(endpoint, tmp_path / "r.sqlite"))
    assert tied.name == "openai:reader-model+rules"
    env = Env("travel", reader=tied)
    env.reset(seed=0)
    env.step(Say("Leaving when?"))
    turn = env.rounds[-1].user
    assert turn is not None and turn.understood and turn.asked == ("window",)
    assert env.trajectory.meta["reader"] == "openai:reader-model+rules"
    result = env.step(Say("When?"))
    assert result.observation.user is not None and "do you mean" in result.observation.user
    again = pickle.loads(pickle.dumps(env))  # a worker's copy breaks ties the same way
    again.step(Say("Leaving when?"))
    assert again.rounds[-1].user == env.rounds[0].user
    assert len(endpoint.requests) == 2  # each message asked once; the rules need no endpoint


def test_the_rules_touch_no_reading_but_a_tie(tmp_path: Path) -> None:
    # The model reads the origin where the rules would read the budget: no tie, so the
    # model's reading stands.
    endpoint = SyncEndpoint(lambda _: '{"asks": ["origin"]}')
    env = Env("travel", reader=RulesBreakTies(reading(endpoint, tmp_path / "r.sqlite")))
    env.reset(seed=0)
    env.step(Say("How much would you spend?"))
    turn = env.rounds[-1].user
    assert turn is not None and turn.asked == ("origin",)


def test_every_answer_is_read_back_from_the_cache(endpoint: SyncEndpoint, tmp_path: Path) -> None:
    cache = tmp_path / "r.sqlite"
    first = Env("travel", reader=reading(endpoint, cache))
    first.reset(seed=0)
    first.step(Say("How much would you spend?"))
    first.step(Say("How much would you spend?"))  # the same message: read once
    assert len(endpoint.requests) == 1
    # A new environment, process or run reads the file; offline, it sends nothing at all.
    offline = LLMReading("reader-model", cache, offline=True)
    again = Env("travel", reader=offline)
    again.reset(seed=0)
    again.step(Say("How much would you spend?"))
    assert again.rounds[-1].user == first.rounds[0].user
    assert len(endpoint.requests) == 1
    with pytest.raises(UsageError, match="has no answer"):
        again.step(Say("Where do you fly out of?"))


def test_the_cache_key_is_the_whole_request(endpoint: SyncEndpoint, tmp_path: Path) -> None:
    cache = tmp_path / "r.sqlite"
    for domain in ("travel", "shop"):  # another prompt
        env = Env(domain, reader=reading(endpoint, cache))
        env.reset(seed=0)
        env.step(Say("How much would you spend?"))
    other = LLMReading("another-model", cache, client=endpoint.client())
    env = Env("travel", reader=other)
    env.reset(seed=0)
    env.step(Say("How much would you spend?"))
    assert [r["model"] for r in endpoint.requests] == ["reader-model"] * 2 + ["another-model"]


def test_a_trajectory_names_its_reader_and_replays_only_with_it(
    endpoint: SyncEndpoint, tmp_path: Path
) -> None:
    cache = tmp_path / "r.sqlite"
    env = Env("travel", reader=reading(endpoint, cache))
    env.reset(seed=3)
    for text in ("Where do you fly out of?", "How much would you spend?", "What matters?"):
        env.step(Say(text))
    trajectory = loads(dumps(env.trajectory))
    assert trajectory.meta["reader"] == "openai:reader-model"
    with pytest.raises(TrajectoryError, match="openai:reader-model"):
        replay(trajectory)
    again = Env(
        "travel", knobs=trajectory.knobs, reader=LLMReading("reader-model", cache, offline=True)
    )
    assert replay(trajectory, again).state_key() == trajectory.digest
    assert again.trajectory.rounds == trajectory.rounds
    plain = Env("travel")
    plain.reset(seed=0)
    assert "reader" not in plain.trajectory.meta


def test_an_environment_with_a_reader_pickles_mid_episode(
    endpoint: SyncEndpoint, tmp_path: Path
) -> None:
    env = travel(endpoint, tmp_path)
    env.step(Say("How much would you spend?"))
    for copied in (pickle.loads(pickle.dumps(env)), copy.deepcopy(env)):
        assert copied.user._reader.settings.client is None  # the test seam stays behind
        copied.step(Say("How much would you spend?"))  # read from the file: no client needed
        assert copied.rounds[-1].user == env.rounds[-1].user
        assert copied.state_key() != env.state_key()
    assert len(endpoint.requests) == 1


def test_a_failing_endpoint_stops_the_run_with_a_clear_error(tmp_path: Path) -> None:
    endpoint = SyncEndpoint(lambda _: (500, {"error": {"message": "overloaded"}}))
    env = travel(endpoint, tmp_path)
    with pytest.raises(UsageError, match=r"reader at .* failed"):
        env.step(Say("How much would you spend?"))


def test_a_broken_cache_file_is_a_clear_error(endpoint: SyncEndpoint, tmp_path: Path) -> None:
    broken = tmp_path / "r.sqlite"
    broken.write_bytes(b"not a database" * 100)
    env = Env("travel", reader=reading(endpoint, broken))
    env.reset(seed=0)
    with pytest.raises(UsageError, match="reading cache"):
        env.step(Say("How much would you spend?"))


def test_gymnasium_make_takes_a_reader(endpoint: SyncEndpoint, tmp_path: Path) -> None:
    env = gymnasium.make("stategym/Travel-v0", reader=reading(endpoint, tmp_path / "r.sqlite"))
    env.reset(seed=0)
    env.step(json.dumps({"role": "assistant", "content": "How much would you spend?"}))
    core = env.unwrapped.core  # type: ignore[attr-defined]
    assert core.rounds[-1].user.asked == ("budget",)


@pytest.mark.parametrize(
    ("content", "labels"),
    [
        ('{"asks": ["budget"]}', ("budget",)),
        ('```json\n{"asks": ["Budget", "origin", "budget"]}\n```', ("budget", "origin")),
        ('The answer: {"asks": ["priorities", "choice"]}', (PRIORITIES, CHOICE)),
        ('["origin"]', ("origin",)),
        ('{"asks": ["the budget", 3, null]}', ()),
        ('{"asks": "budget"}', ()),
        ("{not json", ()),
        ("", ()),
        (None, ()),
    ],
)
def test_parse_labels(content: str | None, labels: tuple[str, ...]) -> None:
    known = {"budget": "budget", "origin": "origin", "priorities": PRIORITIES, "choice": CHOICE}
    assert parse_labels(content, known) == labels


@pytest.mark.parametrize(
    ("content", "between"),
    [
        ('{"asks": [], "between": ["budget", "Origin"]}', ("budget", "origin")),
        ('{"asks": ["budget"], "between": ["budget", "origin"]}', ()),  # it asked: no doubt
        ('{"asks": [], "between": ["budget"]}', ()),
        ('{"asks": [], "between": ["budget", "budget"]}', ()),
        ('{"asks": [], "between": ["budget", "origin", "seat"]}', ()),
        ('{"asks": [], "between": ["budget", "priorities"]}', ()),  # slots only
        ('{"asks": ["choice"], "between": ["budget", "origin"]}', ()),
        ('{"between": ["budget", "origin"]}', ("budget", "origin")),
        ('{"asks": [], "between": "budget, origin"}', ()),
        ('["budget", "origin"]', ()),
        (None, ()),
    ],
)
def test_parse_between(content: str | None, between: tuple[str, ...]) -> None:
    slots = {"budget": "budget", "origin": "origin", "seat": "seat"}
    assert parse_between(content, slots) == between


def test_the_prompt_names_every_slot_and_shared_label() -> None:
    phrases = get_domain("meetings").slot_phrases
    prompt = reading_prompt(phrases)
    for slot, names in phrases.items():
        assert f"- {slot}: {names[0]}" in prompt
    for label in ("priorities", "choice", "overview"):
        assert f"- {label}: " in prompt


@pytest.fixture
def server() -> Iterator[str]:
    with loopback.serving(
        lambda body: completion(keyword_reader(body["messages"][-1]["content"]))
    ) as url:
        yield url


def test_a_real_endpoint_over_http(server: str, tmp_path: Path) -> None:
    env = Env("travel", reader=LLMReading("m", tmp_path / "r.sqlite", base_url=server))
    env.reset(seed=0)
    env.step(Say("Which airport do you fly out of?"))
    turn = env.rounds[-1].user
    assert turn is not None and turn.asked == ("origin",)


class _AskOnce:
    """Asks the budget, then ends the episode (a scripted agent)."""

    name = "ask-once"

    def __init__(self) -> None:
        self.asked = False

    def act(self, observation: Any) -> Any:
        if not self.asked:
            self.asked = True
            return Say("How much would you spend?")
        return CallBatch((ToolCall("finish", {}),))


def test_on_the_event_loop_a_reading_does_not_hold_up_the_other_episodes(
    tmp_path: Path,
) -> None:
    """Two episodes on one loop, each reading through an endpoint that answers only once
    both requests are in: were a reading made on the loop, the first would wait for the
    second forever (the barrier times out); off the loop, both are answered."""
    both_in = threading.Barrier(2, timeout=20)

    def answer(_: str) -> str:
        both_in.wait()
        return '{"asks": ["budget"]}'

    async def play_two() -> list[Any]:
        episodes = []
        for seed in (0, 1):
            env = Env("travel", reader=reading(SyncEndpoint(answer), tmp_path / f"{seed}.sqlite"))
            observation, _ = env.reset(seed=seed)
            episodes.append(Episode(env, _AskOnce(), observation))  # type: ignore[arg-type]
        return await asyncio.gather(*(adrive(e) for e in episodes))

    for trajectory in asyncio.run(play_two()):
        turn = trajectory.rounds[0].user
        assert turn is not None and turn.asked == ("budget",)
