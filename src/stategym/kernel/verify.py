"""Check that a trajectory is what replaying it gives, field for field.

The digest (``Trajectory.digest``, ``Env.state_key()``) covers the world and the user's
state only: a log whose call results, user turns or outcome were edited still replays to
its digest, and would be scored as edited. :func:`verify` replays the trajectory's actions
once (:func:`~stategym.kernel.trajectory.replay`) and compares everything the metrics
read: every round's clock, latency, calls and their results, the user's turns, notices,
events, charges and format errors, then how the episode ended, its outcome and its digest.
A call the environment rejected is logged as it saw it, so its replay is rejected in the same
words (:mod:`stategym.kernel.validation`): its error and kind are compared like any result.
What replay cannot reproduce is left out: what the model generated (``model``), the
runner's ``meta``, the agent's name and the run record (its ``probe`` chooses the task
replayed on), an invalid round's kind and text (replay cannot recover an unusable
message, so they are checked for form only; see ``docs/trajectory.md``), and the parse
errors an LLM backend reported: they end the round's ``format_errors`` and its
``meta["format_errors"]`` repeats them, so a logged list that ends with exactly that list,
made of the parser's kinds alone (:data:`PARSER_KINDS`), is compared without it
(:func:`environment_errors`); any other list is compared whole. How many a backend reported
is its word (replay cannot regenerate the model's text), but no other kind can be added.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson

from stategym.kernel.env import Env
from stategym.kernel.errors import StateGymError
from stategym.kernel.protocol import OLD_EMPTY_ACTION
from stategym.kernel.task import Task
from stategym.kernel.trajectory import RoundKind, RoundRecord, Trajectory, replay

UNCLOSED = "unclosed_tool_call"
"""Format-error kind: a ``<tool_call>`` without its ``</tool_call>`` (tolerated by the parser)."""
REPAIRED = "repaired_json"
"""Format-error kind: JSON that needed repair (Python literals, quotes, trailing commas)."""
UNCLOSED_THINK = "unclosed_think"
"""Format-error kind: a ``<think>`` without its ``</think>``; the reasoning runs to the end of
the reply and takes any call after it (a call drafted while thinking is not a call)."""
PARSER_KINDS = frozenset({UNCLOSED, REPAIRED, UNCLOSED_THINK})
"""The format-error kinds an LLM backend's parser reports from the text it read
(:mod:`stategym.llm.parse` writes them, and takes them from here): two malformations it
tolerates and a reasoning block left open. The only kinds :func:`environment_errors` leaves
out, since replay cannot regenerate the model's text. Defined in the kernel, which the
parser's layer may import and not the other way round."""
INVALID_KINDS = frozenset(
    {"empty_action", "bad_message", "malformed_json", "too_large", "bad_value"}
)
"""The format-error kinds an invalid round can log (one each)."""
UNREPLAYED = ("model", "meta")
"""Round fields replay cannot reproduce: what the model generated, what the runner added."""
INVALID_ONLY = ("format_errors", "raw", "error")
"""An invalid round's fields replay cannot reproduce (it plays the round as an empty batch)."""
ENDING = ("terminated", "truncated", "outcome", "digest")
"""The trajectory fields, after its rounds, that replay reproduces."""
SHOWN = 160
"""Characters of a differing value an error message shows."""


def verify(trajectory: Trajectory, env: Env | None = None, task: Task | None = None) -> list[str]:
    """Replay ``trajectory`` and say where its log differs from what the replay gives.

    Costs one replay. Rounds are compared in order and the first round that differs is
    reported (later ones follow from it); when every round agrees, each differing ending
    field (``terminated``, ``truncated``, ``outcome``, ``digest``) is reported.

    Args:
        trajectory: the log to check.
        env: an environment to replay on (needed for a trajectory whose user read messages
            with another reader, as :func:`~stategym.kernel.trajectory.replay` explains);
            default: a fresh one of the trajectory's domain and knobs.
        task: the task it was played on, for an episode played on a task given to
            ``Env.reset`` (:func:`~stategym.kernel.trajectory.replay`).

    Returns:
        The mismatches in words, the first first (``"round 3: calls[0].content: logged
        {...}, replayed {...}"``); empty when the log is exactly its replay. A trajectory
        that cannot be replayed (a domain this installation does not know, another reader,
        an environment of other knobs, a given task not passed) is one mismatch saying why.

    Example:
        >>> from stategym import Env, run_episode
        >>> from stategym.agents import resolve
        >>> env = Env("travel")
        >>> trajectory = run_episode(env, resolve(env.domain, "expert"), seed=0)
        >>> verify(trajectory)
        []
    """
    try:
        played = replay(trajectory, env, task)
    except StateGymError as error:  # an unknown domain (a KeyError: args[0] is unquoted)
        return [f"cannot be replayed: {error.args[0] if error.args else error}"]
    # An episode stopped from outside (a rollout limit) is logged truncated before its end.
    again = played.stopped_trajectory() if trajectory.truncated else played.trajectory
    for index, logged in enumerate(trajectory.rounds):
        if index >= len(again.rounds):
            return [
                f"round {index}: logged, but the replayed episode ended after round {index - 1}"
            ]
        found = _round_difference(logged, again.rounds[index], trajectory.domain)
        if found is not None:
            return [f"round {index}: {found}"]
    found_all = []
    for name in ENDING:
        mine, theirs = getattr(trajectory, name), getattr(again, name)
        if orjson.dumps(mine) != orjson.dumps(theirs):
            found_all.append(_difference(name, _plain(mine), _plain(theirs)) or name)
    return found_all


def _round_difference(logged: RoundRecord, again: RoundRecord, domain: str) -> str | None:
    """The first field where a logged round differs from its replay, in words, or ``None``."""
    # The common case first: one serialisation each, compared as bytes (verify costs little
    # more than the replay); the field-by-field walk below runs only on a difference.
    if logged.kind is not RoundKind.INVALID and _bare(logged) == orjson.dumps(again):
        return None
    mine, theirs = _plain(logged), _plain(again)
    mine["format_errors"] = environment_errors(mine["format_errors"], mine["meta"])
    for name in UNREPLAYED:
        del mine[name], theirs[name]
    if logged.kind is RoundKind.INVALID and again.kind is RoundKind.INVALID:
        for name in INVALID_ONLY:
            del theirs[name]
        problem = _invalid_form(mine.pop("format_errors"), mine.pop("error"))
        del mine["raw"]
        if problem is not None:
            return problem
    for position, (call, replayed) in enumerate(zip(mine["calls"], theirs["calls"], strict=False)):
        if replayed["error_kind"] == "unknown_tool" and call["error_kind"] != "unknown_tool":
            return f"calls[{position}]: {call['name']!r} is no tool of {domain}"
    return _difference("", mine, theirs)


def environment_errors(format_errors: list[Any], meta: dict[str, Any]) -> list[Any]:
    """A round's logged ``format_errors`` without the backend's parse errors.

    An LLM agent appends the parse errors its backend reported (``unclosed_tool_call``,
    ``repaired_json``, ``unclosed_think``) to the environment's and repeats them in
    ``meta["format_errors"]``; replay gives the environment's alone. Only a trailing run equal
    to that list, item for item, and made of :data:`PARSER_KINDS` alone, is taken off: an edit
    elsewhere in the list, or any other kind added with its claim (``wrong_type``,
    ``unknown_tool``), is still a difference.

    Example:
        >>> environment_errors(["malformed_json", "unclosed_tool_call"],
        ...                    {"format_errors": ["unclosed_tool_call"]})
        ['malformed_json']
        >>> environment_errors(["malformed_json", "wrong_type"], {"format_errors": ["wrong_type"]})
        ['malformed_json', 'wrong_type']
    """
    reported = meta.get("format_errors")
    if type(reported) is not list or not reported or len(reported) > len(format_errors):
        return format_errors
    if not all(type(kind) is str and kind in PARSER_KINDS for kind in reported):
        return format_errors
    cut = len(format_errors) - len(reported)
    return format_errors[:cut] if format_errors[cut:] == reported else format_errors


def _invalid_form(format_errors: list[str], error: str | None) -> str | None:
    """What is wrong with an invalid round's logged kind and error text, or ``None``."""
    if len(format_errors) != 1 or format_errors[0] not in INVALID_KINDS:
        kinds = ", ".join(sorted(INVALID_KINDS))
        return f"format_errors: an invalid round logs one of {kinds}, got {_shown(format_errors)}"
    kind = format_errors[0]
    # None: version 1 did not log the text; OLD_EMPTY_ACTION: an empty action before stop 42
    if (
        error is None
        or error.startswith(f"{kind}: ")
        or (kind == "empty_action" and error == OLD_EMPTY_ACTION)
    ):
        return None
    return f"error: an invalid round of kind {kind} cannot have been told {_shown(error)}"


def _difference(path: str, logged: Any, replayed: Any) -> str | None:
    """The first path where two JSON values differ, with both values, or ``None``."""
    if type(logged) is dict and type(replayed) is dict and logged.keys() == replayed.keys():
        for key, mine in logged.items():
            found = _difference(f"{path}.{key}" if path else key, mine, replayed[key])
            if found is not None:
                return found
        return None
    if type(logged) is list and type(replayed) is list and len(logged) == len(replayed):
        for position, (mine, theirs) in enumerate(zip(logged, replayed, strict=True)):
            found = _difference(f"{path}[{position}]", mine, theirs)
            if found is not None:
                return found
        return None
    # type(): a logged 1 is no replayed true, nor 1.0 (JSON keeps them apart, so do scores)
    if type(logged) is type(replayed) and logged == replayed:
        return None
    return f"{path}: logged {_shown(logged)}, replayed {_shown(replayed)}"


def _bare(logged: RoundRecord) -> bytes:
    """The round's JSON without what replay cannot reproduce (as a replayed round has it)."""
    if logged.model is None and not logged.meta:
        return orjson.dumps(logged)
    return orjson.dumps(replace(logged, model=None, meta={}))


def _plain(value: Any) -> Any:
    """``value`` as the log's JSON holds it (tuples are lists, records are objects)."""
    return orjson.loads(orjson.dumps(value))


def _shown(value: Any) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"
