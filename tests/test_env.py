"""The environment: determinism, replay, snapshots, rounds, format errors, the episode's end."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from dataclasses import fields, replace
from typing import Any

import orjson
import pytest

from stategym import CallBatch, Env, Knobs, Say, ToolCall, call, calls
from stategym.agents import STYLES, scripted
from stategym.kernel.domain import Domain
from stategym.kernel.env import GIVE_UP_AFTER, USER_LATENCY
from stategym.kernel.errors import UnknownDomainError
from stategym.kernel.protocol import Action, action_to_message
from stategym.kernel.task import EventKind
from stategym.kernel.tools import Tool
from stategym.kernel.trajectory import dumps, replay
from stategym.rollout import run_episode

AGENTS = ("expert", "oracle", "serial", "random")
KNOB_SETS = (Knobs(), Knobs.all_off(), Knobs(dynamics=False, hidden_info=False))


def play(env: Env, agent: str, seed: int) -> list[Action]:
    """Run one scripted episode; returns its actions, as the log replays them."""
    trajectory = run_episode(env, scripted(env.domain, agent), seed)
    return [record.action() for record in trajectory.rounds]


def _placeholders(tool: Tool) -> dict[str, Any]:
    """Well-typed arguments for every parameter (the call may still fail as a ToolError)."""
    dummies: dict[Any, Any] = {str: "x", int: 0, float: 0.0, bool: False}
    return {
        p.name: p.choices[0] if p.choices else dummies.get(p.annotation, []) for p in tool.params
    }


def _tool_with(domain: Domain, annotation: type) -> tuple[Tool, str]:
    """A tool with a required argument of this type, and that argument's name."""
    for tool in domain.tools:
        for param in tool.params:
            if param.required and param.annotation is annotation and not param.choices:
                return tool, param.name
    pytest.skip(f"{domain.name} has no tool with a required {annotation.__name__} argument")


# -- determinism and replay -----------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("knobs", KNOB_SETS, ids=lambda k: k.describe())
def test_same_seed_gives_identical_trajectory_bytes(
    domain: Domain, agent: str, knobs: Knobs
) -> None:
    factory = scripted(domain, agent)
    for seed in range(12):
        first = dumps(run_episode(Env(domain, knobs=knobs), factory, seed))
        second = dumps(run_episode(Env(domain, knobs=knobs), factory, seed))
        assert first == second


def test_tasks_are_pure_functions_of_seed_and_knobs(domain: Domain) -> None:
    for seed, knobs in itertools.product(range(10), KNOB_SETS):
        assert domain.generate(seed, knobs) == domain.generate(seed, knobs)


_FINGERPRINT = """
import hashlib
from stategym import Env, Knobs
from stategym.agents import scripted
from stategym.registry import all_domains
from stategym.rollout import run_episode
from stategym.kernel.trajectory import dumps
digest = hashlib.sha256()
for domain in all_domains().values():
    for knobs in (Knobs(), Knobs.all_off()):
        for agent in ("expert", "random"):
            for seed in range(8):
                env = Env(domain, knobs=knobs)
                digest.update(dumps(run_episode(env, scripted(domain, agent), seed)))
print(digest.hexdigest())
"""


def test_trajectories_do_not_depend_on_the_process_hash_seed() -> None:
    """Set and dict order of strings varies between processes; results must not."""
    outputs = set()
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        done = subprocess.run(
            [sys.executable, "-c", _FINGERPRINT],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        outputs.add(done.stdout.strip())
    assert len(outputs) == 1


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("knobs", KNOB_SETS, ids=lambda k: k.describe())
def test_replay_reproduces_the_state_key(domain: Domain, agent: str, knobs: Knobs) -> None:
    env = Env(domain, knobs=knobs)
    for seed in range(12):
        trajectory = run_episode(env, scripted(domain, agent), seed)
        assert trajectory.digest == env.state_key()
        replayed = replay(trajectory)
        assert replayed.state_key() == trajectory.digest
        assert [r.events for r in replayed.rounds] == [r.events for r in trajectory.rounds]


def test_snapshot_and_restore_return_to_an_equal_state(domain: Domain) -> None:
    for seed in range(6):
        env = Env(domain)
        actions = play(env, "expert", seed)
        final = dumps(env.trajectory)
        for cut in sorted({0, len(actions) // 2, len(actions) - 1}):
            env.reset(seed=seed)
            for action in actions[:cut]:
                env.step(action)
            key, snapshot = env.state_key(), env.snapshot()
            for action in actions[cut:]:
                env.step(action)
            for _ in range(2):  # a snapshot stays valid after it was restored once
                env.restore(snapshot)
                assert env.state_key() == key
                for action in actions[cut:]:
                    env.step(action)
                assert dumps(env.trajectory) == final


def test_episodes_do_not_leak_into_the_shared_task(domain: Domain) -> None:
    """Writes land in the episode's copy-on-write tables, never in the task's shared base."""
    for seed in range(6):
        fresh = Env(domain)
        fresh.reset(seed=seed)
        start = fresh.state_key()
        played = Env(domain)
        play(played, "expert", seed)
        again = Env(domain)
        again.reset(seed=seed)
        assert again.state_key() == start


# -- the expert and the knobs -----------------------------------------------------------------


def test_expert_reaches_the_goal_under_every_knob_setting(domain: Domain) -> None:
    factory = scripted(domain, "expert")
    for values in itertools.product((True, False), repeat=len(fields(Knobs))):
        env = Env(domain, knobs=Knobs(*values))
        for seed in range(6):
            outcome = run_episode(env, factory, seed).outcome
            assert outcome is not None and outcome.goal_reached, (values, seed)


def test_stateless_tasks_offer_only_read_tools(domain: Domain) -> None:
    env = Env(domain, knobs=Knobs.all_off())
    _, info = env.reset(seed=0)
    names = [s["function"]["name"] for s in info["tools"]]
    assert (
        names[-1] == "finish"
        and "answer" in info["tools"][-1]["function"]["parameters"]["required"]
    )
    reads = {t.name for t in domain.tools if t.effect == "read" and not t.reads_own_writes}
    assert set(names[:-1]) == reads


def test_reset_after_a_given_task_offers_the_tools_of_the_new_task(domain: Domain) -> None:
    env = Env(domain)
    stateless = domain.generate(3, Knobs.all_off())
    for options, seed in (
        ({"task": stateless}, None),
        (None, 4),
        ({"task": stateless}, None),
        (None, 5),
    ):
        _, info = env.reset(seed=seed, options=options)
        offered = [s["function"]["name"] for s in info["tools"]]
        assert offered == [t.name for t in domain.available_tools(env.task.knobs)] + ["finish"]


def test_reset_without_seed_takes_the_next_task(domain: Domain) -> None:
    env = Env(domain)
    env.reset(seed=41)
    env.reset()
    assert env.task.seed == 42
    assert Env(domain).reset()[1]["task_id"] == domain.generate(0, Knobs()).id


def test_unknown_domain_is_a_clear_error() -> None:
    with pytest.raises(UnknownDomainError, match="registered"):
        Env("no-such-domain")


# -- rounds ----------------------------------------------------------------------------------


def test_a_batch_costs_its_slowest_call_and_a_message_costs_user_latency(domain: Domain) -> None:
    env = Env(domain, knobs=Knobs(dynamics=False))
    env.reset(seed=0)
    reads = [t for t in domain.tools if t.effect == "read"]
    batch = tuple(ToolCall(t.name, _placeholders(t)) for t in reads)
    before = env.world.clock
    env.step(CallBatch(batch))
    record = env.rounds[-1]
    counted = [
        t.latency
        for t, c in zip(reads, record.calls, strict=True)
        if c.error_kind in (None, "tool")
    ]
    assert record.latency == max(counted, default=1)
    assert env.world.clock == before + record.latency
    env.step(Say("hello"))
    assert env.world.clock == before + record.latency + USER_LATENCY


def test_message_tool_calls_are_one_parallel_round(domain: Domain) -> None:
    env = Env(domain)
    env.reset(seed=0)
    reads = [t for t in domain.tools if t.effect == "read"][:3]
    message = action_to_message(
        CallBatch(tuple(ToolCall(t.name, _placeholders(t), f"id{i}") for i, t in enumerate(reads)))
    )
    message["content"] = "narration beside tool calls is not delivered to the user"
    messages, _, _, _, info = env.step_message(message)
    assert len(env.rounds) == 1 and len(env.rounds[0].calls) == len(reads)
    assert [m["tool_call_id"] for m in messages if m["role"] == "tool"] == [
        f"id{i}" for i in range(len(reads))
    ]
    assert env.rounds[0].user is None and info == {}


def test_events_fire_once_the_clock_reaches_them(domain: Domain) -> None:
    for seed in range(20):
        env = Env(domain)
        env.reset(seed=seed)
        events = env.task.events
        assert [e.at for e in events] == sorted(e.at for e in events)
        while not env.done:
            env.step(CallBatch(()))
            due = [i for i, e in enumerate(events) if e.at <= env.world.clock]
            assert [i for r in env.rounds for i in r.events] == due


def test_changes_of_mind_are_announced_through_every_api(domain: Domain) -> None:
    """A notice raised at the end of an invalid round reaches the agent (it used to be dropped
    by the message API when the message could not be read)."""
    seen = 0
    for seed in range(60):
        env = Env(domain)
        env.reset(seed=seed)
        if not any(e.kind is EventKind.USER_UPDATE for e in env.task.events):
            continue
        for text in itertools.cycle(("not json", '{"role": "assistant"}', "[1, 2]")):
            if env.done:
                break
            messages, *_ = env.step_message(text)
            notice = env.rounds[-1].notice
            if notice is not None:
                seen += 1
                assert any(notice in m["content"] for m in messages if m["role"] == "user")
    if seen == 0:
        pytest.skip(f"{domain.name} schedules no change of mind in the first 60 tasks")


# -- format errors ---------------------------------------------------------------------------


def _round_of(env: Env, message: Any) -> tuple[list[dict[str, str]], dict[str, Any]]:
    messages, _, _, _, info = env.step_message(message)
    return messages, info


def _tool_error(messages: list[dict[str, str]]) -> str:
    (tool,) = [m for m in messages if m["role"] == "tool"]
    return orjson.loads(tool["content"])["error"]


def test_bad_calls_are_structured_errors(domain: Domain) -> None:
    tool, name = _tool_with(domain, str)
    env = Env(domain, knobs=Knobs(dynamics=False))
    env.reset(seed=0)
    world = env.world
    start = (
        dict(world.accounts),
        list(world.charges),
        world.next_id,
        [dict(t.changed) for t in world.tables()],
    )
    cases: list[tuple[ToolCall, str]] = [
        (ToolCall(tool.name, '{"' + name + '": '), "malformed_json"),
        (ToolCall(tool.name, "[1, 2]"), "malformed_json"),
        (ToolCall("no_such_tool", {}), "unknown_tool"),
        (ToolCall(tool.name, {}), "missing_argument"),
        (ToolCall(tool.name, {name: "x", "zzz": 1}), "unexpected_argument"),
        (ToolCall(tool.name, {name: 12}), "wrong_type"),
        (ToolCall("finish", {"answer": 3}), "wrong_type"),
        (ToolCall("finish", {"answer": "x", "extra": 1}), "wrong_type"),
    ]
    for bad, kind in cases:
        messages, info = _round_of(env, action_to_message(CallBatch((bad,))))
        assert info["format_errors"] == (kind,), bad
        assert _tool_error(messages)
        record = env.rounds[-1].calls[0]
        assert (record.error_kind, record.content, record.effect) == (kind, None, None)
        assert not env.done
    assert (
        dict(world.accounts),
        list(world.charges),
        world.next_id,
        [dict(t.changed) for t in world.tables()],
    ) == start
    assert env.world.clock == len(cases)


def test_unknown_tool_error_lists_the_available_tools(domain: Domain) -> None:
    env = Env(domain)
    env.reset(seed=0)
    result = env.step(calls(call("teleport")))
    error = result.observation.results[0].error or ""
    assert all(t.name in error for t in domain.tools) and "finish" in error


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("{not json", "malformed_json"),
        ("", "malformed_json"),
        ("[1, 2, 3]", "bad_message"),
        ("42", "bad_message"),
        ({"role": "assistant", "tool_calls": {"function": {}}}, "bad_message"),
        ({"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}, "bad_message"),
        ({"role": "assistant", "tool_calls": ["finish"]}, "bad_message"),
        ({"role": "assistant", "content": "   "}, "empty_action"),
        ({"role": "assistant", "content": None, "tool_calls": []}, "empty_action"),
        ({"role": "assistant", "content": ["a", "list"]}, "bad_message"),
        ({"role": "assistant", "content": [{"type": "image_url"}]}, "bad_message"),
        ({"role": "assistant", "content": 5}, "bad_message"),
        ({"role": "assistant", "content": True}, "bad_message"),
        ({"role": "assistant", "content": []}, "empty_action"),
        ({"role": "assistant", "content": [{"type": "text", "text": " "}]}, "empty_action"),
    ],
)
def test_unusable_messages_are_format_errors(domain: Domain, message: Any, kind: str) -> None:
    env = Env(domain)
    env.reset(seed=0)
    messages, info = _round_of(env, message)
    assert info["format_errors"] == (kind,)
    assert messages[0] == {"role": "user", "content": messages[0]["content"]}
    assert messages[0]["content"].startswith(f"[environment] {kind}")
    record = env.rounds[-1]
    assert record.kind == "invalid" and record.format_errors == (kind,)
    assert record.raw == (message if isinstance(message, str) else orjson.dumps(message).decode())


def test_typed_api_rejects_empty_and_foreign_actions(domain: Domain) -> None:
    env = Env(domain)
    env.reset(seed=0)
    foreign: tuple[tuple[Any, str], ...] = (
        (CallBatch(()), "empty_action"),
        ({"a": 1}, "empty_action"),
        (None, "empty_action"),
        (Say(None), "bad_message"),
    )
    for action, kind in foreign:
        assert env.step(action).info["format_errors"] == (kind,)
        assert env.rounds[-1].kind == "invalid"


def test_stateless_finish_needs_an_answer(domain: Domain) -> None:
    env = Env(domain, knobs=Knobs.all_off())
    env.reset(seed=0)
    assert env.step(calls(call("finish"))).info["format_errors"] == ("missing_argument",)
    result = env.step(calls(call("finish", answer="none")))
    assert result.terminated and env.outcome().answer == "none"


def test_steps_after_the_end_change_nothing(domain: Domain) -> None:
    env = Env(domain)
    env.reset(seed=0)
    env.step(calls(call("finish", answer="done")))
    assert env.done
    key, rounds = env.state_key(), len(env.rounds)
    for action in (calls(call("finish")), Say("hello?"), CallBatch(())):
        result = env.step(action)
        assert result.terminated and result.info == {"format_errors": ("episode_over",)}
        assert result.observation.error == "the episode is over"
    for message in ("garbage", {"role": "assistant", "content": "hi"}):
        messages, _, terminated, _, info = env.step_message(message)
        assert terminated and info == {"format_errors": ("episode_over",)}
        assert messages == [{"role": "user", "content": "[environment] the episode is over"}]
    assert env.state_key() == key and len(env.rounds) == rounds


def test_the_round_limit_truncates(domain: Domain) -> None:
    env = Env(domain)
    env.reset(seed=0)
    limit = env.task.max_rounds
    for index in range(limit):
        result = env.step(CallBatch(()))
        assert result.truncated == (index == limit - 1) and not result.terminated
    assert env.trajectory.truncated and env.trajectory.outcome is not None


def test_the_user_gives_up_after_unintelligible_messages(domain: Domain) -> None:
    env = Env(domain)
    env.reset(seed=0)
    for index in range(GIVE_UP_AFTER):
        result = env.step(Say("zxqv wrrt"))
        assert result.terminated == (index == GIVE_UP_AFTER - 1)
    assert "Goodbye" in (result.observation.user or "")


# -- outcome ---------------------------------------------------------------------------------


def test_outcome_of_expert_and_shotgun_buyer() -> None:
    env = Env("travel", knobs=Knobs(dynamics=False))
    shotgun = replace(STYLES["expert"], commit="shotgun", verify="skip")
    for seed in range(40):
        trajectory = run_episode(env, scripted(env.domain, "expert"), seed)
        outcome = trajectory.outcome
        assert outcome is not None and outcome.goal_reached and outcome.lost == 0
        assert outcome.spent == sum(c.amount for c in env.world.charges)
        if not env.task.truth.best:
            continue
        trajectory = run_episode(env, lambda task: env.domain.expert(task, shotgun), seed)
        outcome = trajectory.outcome
        assert outcome is not None and len(outcome.committed) > 1 and not outcome.goal_reached
        assert outcome.lost == outcome.spent - outcome.refunded > 0


def test_a_stopped_episode_is_logged_truncated_with_its_outcome_so_far() -> None:
    env = Env("travel")
    env.reset(seed=0)
    env.step(Say("What is your budget for this flight?"))
    stopped = env.stopped_trajectory()
    assert (stopped.truncated, stopped.terminated) == (True, False)
    assert stopped.outcome == env.outcome() and stopped.outcome is not None
    assert stopped.rounds == env.trajectory.rounds
    assert (env.trajectory.truncated, env.trajectory.outcome) == (False, None)
    env.step(calls(call("finish", answer="")))
    assert env.done and env.stopped_trajectory() == env.trajectory


def test_content_parts_are_their_joined_text() -> None:
    """OpenAI's assistant ``content`` may be a list of text parts; it was an empty action
    ("the message has neither tool calls nor text"), which was false (audit 15C N1)."""
    parts = [{"type": "text", "text": "What is "}, {"type": "text", "text": "your budget?"}]
    as_parts, as_text = Env("travel"), Env("travel")
    as_parts.reset(seed=3)
    as_text.reset(seed=3)
    told_parts = as_parts.step_message({"role": "assistant", "content": parts})
    told_text = as_text.step_message({"role": "assistant", "content": "What is your budget?"})
    assert told_parts == told_text
    assert as_parts.rounds == as_text.rounds and as_parts.rounds[0].kind == "say"


def test_an_empty_action_is_told_the_same_through_both_interfaces() -> None:
    """The typed ``step`` said "empty action: send tool calls or a message to the user",
    ``step_message`` "empty_action: the message has neither tool calls nor text", which
    did not say what to send (audit 15C N5); now both say the kind and what to send."""
    typed, messaged = Env("travel"), Env("travel")
    typed.reset(seed=0)
    messaged.reset(seed=0)
    typed.step(CallBatch(()))
    messaged.step_message({"role": "assistant", "content": None})
    assert typed.rounds[0].error == messaged.rounds[0].error
    assert typed.rounds[0].error == "empty_action: send tool calls or a message to the user"


def test_a_log_of_an_empty_action_written_before_the_new_words_still_verifies() -> None:
    from stategym.kernel.protocol import OLD_EMPTY_ACTION
    from stategym.kernel.verify import verify

    env = Env("travel")
    env.reset(seed=0)
    env.step(CallBatch(()))
    env.step(calls(call("finish", answer="done")))
    (empty, finish) = env.trajectory.rounds
    old = replace(env.trajectory, rounds=(replace(empty, error=OLD_EMPTY_ACTION), finish))
    assert verify(old) == []
    told = replace(env.trajectory, rounds=(replace(empty, error="empty action: hello"), finish))
    assert verify(told) != []
