"""An LLM agent's reply that the core's message interface rejects is logged, and explained to
the model, as ``Env.step_message`` logs and explains the same message.

Regression (audit 9, F6): ``MessageRenderer.parse`` turned every rejected reply into an empty
batch, so a reply with 65 tool calls, or a tool name that is not text, was logged
``empty_action`` and the model told "empty_action: send tool calls or a message to the user",
while ``Env.step_message`` said ``too_large`` or ``bad_message`` and why.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from first_reply import play_first_reply, rebuilt_conversation
from stategym.kernel.boundary import MAX_CALLS, MAX_TEXT
from stategym.kernel.env import EMPTY_ACTION, Env
from stategym.kernel.knobs import Knobs
from stategym.kernel.trajectory import RoundKind
from stategym.kernel.verify import verify
from stategym.registry import get_domain
from stategym.rendering import MessageRenderer


def _calls(*names: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": "{}"}}
            for i, n in enumerate(names)
        ],
    }


REJECTED = {
    "many_calls": (_calls(*["get_profile"] * (MAX_CALLS + 1)), "too_large"),
    "name_null": (_calls(None), "bad_message"),
    "name_number": (_calls(7), "bad_message"),
    "name_list": (_calls(["get_profile"]), "bad_message"),
    "second_name_null": (_calls("get_profile", None), "bad_message"),
    "no_function": (
        {"role": "assistant", "content": None, "tool_calls": [{"id": "x", "type": "function"}]},
        "bad_message",
    ),
    "calls_not_a_list": (
        {"role": "assistant", "content": None, "tool_calls": {"name": "get_profile"}},
        "bad_message",
    ),
    "text_over_the_cap": ({"role": "assistant", "content": "a" * (MAX_TEXT + 1)}, "too_large"),
}
EMPTY = {"role": "assistant", "content": ""}


COMPACT_REJECTED = {
    "many_calls": (
        "\n".join(["get_profile"] * (MAX_CALLS + 1)),
        f"too_large: the round has {MAX_CALLS + 1} tool calls; at most {MAX_CALLS} are allowed",
    ),
    "text_over_the_cap": (
        "a" * (MAX_TEXT + 1),
        f"too_large: a message to the user is at most {MAX_TEXT} characters",
    ),
}
"""Compact replies the environment's reader rejects whole, with the error it logs."""


def _step_message(message: dict[str, Any]) -> tuple[list[dict[str, str]], Any]:
    """What the core's message interface answers and logs for ``message`` as a first round."""
    env = Env("travel")
    env.reset(seed=0)
    observed, _, _, _, info = env.step_message(message)
    return observed, (env.rounds[0], info)


@pytest.mark.parametrize("case", sorted(REJECTED))
def test_a_rejected_reply_is_logged_and_told_as_step_message_does(case: str) -> None:
    message, kind = REJECTED[case]
    trajectory, backend, _, _ = play_first_reply(message)
    expected, (logged, info) = _step_message(message)
    first = trajectory.rounds[0]
    assert first.kind is RoundKind.INVALID and first.format_errors == (kind,)
    assert first.format_errors == logged.format_errors == info["format_errors"]
    assert first.error == logged.error and first.error.startswith(f"{kind}: ")
    # the model's next request ends with what step_message answered, word for word
    told = backend.seen[1][-len(expected) :]
    assert told == expected and expected[-1]["content"] == f"[environment] {logged.error}"
    assert trajectory.terminated


def test_the_65_call_reply_says_why() -> None:
    trajectory, _, _, _ = play_first_reply(REJECTED["many_calls"][0])
    assert trajectory.rounds[0].error == (
        f"too_large: the round has {MAX_CALLS + 1} tool calls; at most {MAX_CALLS} are allowed"
    )


def test_an_empty_reply_is_an_empty_action_told_what_to_send() -> None:
    """The kind is step_message's; the words are the environment's for an empty batch."""
    trajectory, backend, _, _ = play_first_reply(EMPTY)
    _, (logged, _) = _step_message(EMPTY)
    first = trajectory.rounds[0]
    assert first.format_errors == logged.format_errors == ("empty_action",)
    assert first.error == EMPTY_ACTION
    assert backend.seen[1][-1]["content"] == f"[environment] {EMPTY_ACTION}"


@pytest.mark.parametrize("case", [*sorted(REJECTED), "empty"])
def test_a_rejected_round_verifies_and_the_conversation_is_its_transcript(case: str) -> None:
    trajectory, _, agent, env = play_first_reply(REJECTED[case][0] if case in REJECTED else EMPTY)
    assert verify(trajectory) == []
    assert agent.messages[1:] == rebuilt_conversation(trajectory, env)
    assert agent.messages[2] == {"role": "assistant", "content": ""}


def test_a_rejected_reply_is_a_plain_value() -> None:
    from stategym.rendering.messages import RejectedReply  # here: the other tests run on old code

    renderer = MessageRenderer(get_domain("travel"), Knobs())
    action = renderer.parse(REJECTED["name_null"][0])
    assert action == RejectedReply("bad_message", "tool_calls[0] needs a function with a name")
    assert pickle.loads(pickle.dumps(action)) == action
    assert "bad_message" in repr(action) and hash(action) == hash(
        pickle.loads(pickle.dumps(action))
    )
    assert renderer.action_message(action, 0) == {"role": "assistant", "content": ""}


@pytest.mark.parametrize("case", sorted(COMPACT_REJECTED))
def test_a_compact_reply_rejected_whole_is_an_empty_reply_in_the_conversation(case: str) -> None:
    """Regression (stop 57): the compact rendering kept a reply the environment rejects whole
    (65 call lines, a message over the cap) in the live conversation, where the log rebuilds
    the invalid round as an empty reply, so the conversation was not its transcript."""
    text, error = COMPACT_REJECTED[case]
    trajectory, backend, agent, env = play_first_reply(
        {"role": "assistant", "content": text}, "compact"
    )
    first = trajectory.rounds[0]
    assert first.kind is RoundKind.INVALID and first.format_errors == ("too_large",)
    assert first.error == error
    assert backend.seen[1][-1]["content"] == f"[environment] {error}"
    assert verify(trajectory) == [] and trajectory.terminated
    assert agent.messages[1:] == rebuilt_conversation(trajectory, env, "compact")
    assert agent.messages[2] == {"role": "assistant", "content": ""}
