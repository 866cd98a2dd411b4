"""verl's agent loop: one stategym episode per sample, token-in-token-out, R as the reward.

Supported: ``verl>=0.9.1,<0.10`` (tested: verl 0.9.1 with transformers 5.10, the newest
its ``transformers<5.11`` pin allows). What this relies on in verl (0.9.1 source,
``verl/experimental/agent_loop``): an agent loop is an :class:`AgentLoopBase` subclass
made per sample by hydra from a registry entry (``register(name)``, or a
``rollout.agent.agent_loop_config_path`` file naming ``_target_``), awaited as
``run(sampling_params, **row)``; it samples with ``server_manager.generate(request_id=...,
prompt_ids=..., sampling_params=...)``, which returns a ``TokenOutput`` (``token_ids``,
``log_probs``); a ``reward_score`` set on its :class:`AgentLoopOutput` is used as it is (no
reward function runs), put on the response's last token, and
``extra_fields["reward_extra_info"]`` is logged beside it.

How one sample is played: the row's ``extra_info`` names the task (:func:`dataset_rows`);
stategym's own episode loop (:func:`~stategym.rollout.play.adrive`) plays it with a
:class:`~stategym.llm.agent.ChatAgent` whose backend is verl's server, so the token stream,
the parsing and the rounds are the ones every stategym LLM agent has:

- **Token-in-token-out.** The prompt is the renderer's first messages through the
  tokenizer's chat template; each turn the server continues the whole stream, its ids are
  appended as sampled (``response_mask`` 1; their log-probs kept when the sampling
  asks for them, ``rollout.calculate_log_probs``), then the observation's tokens cut from
  the same template (mask 0). The response ends with the last sampled token.
- **One turn is one round.** The turn's text is parsed (:mod:`stategym.llm.parse`); all its
  calls are one :class:`~stategym.kernel.protocol.CallBatch`, plain text is a
  :class:`~stategym.kernel.protocol.Say` to the simulated user, and unreadable text is the
  environment's format error (never an exception).
- **A row names one task.** ``extra_info``'s seed goes through
  :func:`~stategym.kernel.task.check_seed` (an int: no string, float or bool), its domain is
  a name and its knobs text the core parses (absent or null: the default knobs); the
  row's prompt (``raw_prompt``, by role and text) must be that task's first messages and its
  ``data_source``, when given, ``stategym/<domain>``. Any other row is refused with an error
  naming the field, before anything is sampled: verl would filter and log one task while
  the reward came from another.
- **The tokenizer is checked** before anything is sampled, as every stategym agent that
  cuts token segments checks it at load (:func:`~stategym.llm.turns.check_turns`, about a
  millisecond a sample): a chat template that does not close an assistant turn with the
  end-of-sequence token stops the sample with one line naming the model's path, not an
  error at the first observation.
- **The server's output is read by type.** Token ids must be ints in ``[0, 2**32)``: any
  other is no sample (a negative id is no embedding index), a broken server, and stops the
  sample with a one-line :class:`ServerOutputError`; an id past the tokenizer's vocabulary
  is kept and decodes to nothing. Log-probs that are not one finite number per id (NaN,
  infinities) are left out of the round and named in its ``meta["dropped"]``, as the
  ``openai:`` agent does; the sample keeps one log-prob per id, 0.0 on that turn's ids
  (:func:`response_logprobs`).
- **Limits.** The episode's end, ``rollout.response_length`` (each turn may sample what is
  left of it), ``multi_turn.max_assistant_turns`` (turns sampled) and
  ``multi_turn.max_user_turns`` (observations fed back): a limit ends the episode, scored
  truncated. ``multi_turn.max_parallel_calls`` is the tool loop's and is not read here.
- **The reward** is the episode's composite R; the scorecard's row (success, the four
  dimensions, harm...), the round counts and ``dropped_logprobs`` (turns whose log-probs
  were left out) are ``reward_extra_info``, and the per-round credit (rewards that sum to
  R) is ``extra_fields["turn_scores"]``, which verl carries in the batch but does not
  train on.
"""

from __future__ import annotations

import operator
import reprlib
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import (
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
    register,
)

from stategym.adapters.trl import dataset_rows as prompt_rows
from stategym.kernel.env import Env
from stategym.kernel.errors import AgentStopped
from stategym.kernel.knobs import Knobs, KnobsGiven, as_knobs
from stategym.kernel.task import Task, check_seed
from stategym.kernel.trajectory import ModelTurn, Trajectory, summarise_rounds
from stategym.llm.agent import ChatAgent, Reply, Turn, finite_number
from stategym.llm.local import ChatTokenizer, Message
from stategym.llm.parse import parse
from stategym.llm.turns import check_turns
from stategym.metrics import credit, score
from stategym.rendering.base import roles_and_texts
from stategym.rendering.tokens import POLICY, TokenStream
from stategym.rollout.play import Episode, adrive

SUPPORTED_VERL = ">=0.9.1,<0.10"
"""The verl versions this adapter is tested with (it reads verl 0.9.1's agent loop)."""
AGENT_NAME = "stategym"
"""The agent loop's name in verl's registry (a dataset row's ``agent_name``)."""
TOKEN_ID_LIMIT = 2**32
"""Token ids are below this: the tokenizers library's id type (``u32``; it cannot decode an
id past it) and any vocabulary's size, so an id outside ``[0, 2**32)`` is no token."""
_ROWS = "stategym.adapters.verl.dataset_rows"


class ServerOutputError(RuntimeError):
    """verl's server returned what no sampling makes (a token id outside ``[0, 2**32)``, no
    list of ids): a broken or misconfigured server, which the sample cannot be played or
    trained on past (verl's batch holds the ids as int64 embedding indices)."""


class ServerBackend:
    """A stategym chat backend whose replies verl's server samples, one per turn.

    Args:
        server: verl's ``server_manager`` (an ``LLMServerClient``).
        tokenizer: the policy's tokenizer (its chat template renders the conversation).
        sampling: verl's sampling parameters for this sample.
        rollout: verl's ``actor_rollout_ref.rollout`` config (lengths, turn limits).
    """

    def __init__(self, server: Any, tokenizer: Any, sampling: Mapping[str, Any], rollout: Any):
        self.server = server
        self.tokenizer = tokenizer
        self.sampling = dict(sampling)
        self.chat = ChatTokenizer(tokenizer)
        """The chat template the agent cuts observation tokens from."""
        check_turns(self.chat, getattr(tokenizer, "name_or_path", "") or "verl's policy")  # ~1 ms
        self.request_id = uuid4().hex  # one per episode: verl routes a session to one server
        self.prompt_length = int(rollout.prompt_length)
        self.response_length = int(rollout.response_length)
        self.max_turns = rollout.multi_turn.max_assistant_turns
        self.max_observations = rollout.multi_turn.max_user_turns
        self._end = tokenizer.eos_token_id  # the end of turn (ChatTokenizer's rule)
        self._first = 0

    def describe(self) -> dict[str, Any]:
        return {"backend": "verl"}

    def complete_sync(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], turn: Turn
    ) -> Reply:
        raise TypeError("verl's server is asynchronous: play the episode with adrive")

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], turn: Turn
    ) -> Reply:
        prompt = list(turn.prompt_ids or ())
        if turn.index == 0:
            self._first = len(prompt)
            if len(prompt) > self.prompt_length:
                raise ValueError(
                    f"the task's first prompt has {len(prompt)} tokens and "
                    f"rollout.prompt_length is {self.prompt_length}: raise it"
                )
        left = self.response_length - (len(prompt) - self._first)
        if left <= 0:
            raise AgentStopped("response_length: no room left for another turn")
        if self.max_turns is not None and turn.index >= self.max_turns:
            raise AgentStopped(f"max_assistant_turns: {self.max_turns} turns sampled")
        if self.max_observations is not None and turn.index > self.max_observations:
            raise AgentStopped(f"max_user_turns: {self.max_observations} observations fed")
        output = await self.server.generate(
            request_id=self.request_id,
            prompt_ids=prompt,
            sampling_params={**self.sampling, "max_tokens": left},
        )
        ids = token_ids_of(getattr(output, "token_ids", None), turn.index)
        closed = bool(ids) and ids[-1] == self._end
        text = str(self.tokenizer.decode(ids[:-1] if closed else ids, skip_special_tokens=False))
        parsed = parse(text)
        meta: dict[str, Any] = {
            "completion_token_ids": ids,
            "finish_reason": "stop" if closed else "length",
            "text": text,
            "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(ids)},
        }
        if self.sampling.get("logprobs"):
            logprobs = logprobs_of(getattr(output, "log_probs", None), len(ids))
            if logprobs is None:
                meta["dropped"] = ["log_probs"]
            else:
                meta["logprobs"] = logprobs
        return Reply(parsed.to_message(f"call_{turn.index}"), meta, parsed.errors)


def token_ids_of(value: Any, turn: int) -> list[int]:
    """The server's sampled ids as plain ints, each in ``[0, TOKEN_ID_LIMIT)``.

    A model samples from its vocabulary, so an id outside that range (or no list of ids) is
    the server's fault: it stops the sample. Ids past the tokenizer's vocabulary but inside
    the range are kept (models pad their embedding past it) and decode to nothing.

    Raises:
        ServerOutputError: not a list of such ids.
    """
    if not isinstance(value, list | tuple):
        raise ServerOutputError(
            f"verl's server returned {type(value).__name__} as the token ids of turn {turn}, "
            "not a list: check the inference server"
        )
    ids = []
    for position, token in enumerate(value):
        number = _token_id(token)
        if number is None:
            raise ServerOutputError(
                f"verl's server returned {reprlib.repr(token)} as token {position} of turn "
                f"{turn}: a token id is an int in [0, 2**32) (the tokenizer's id type), so "
                "this is the inference server's output, not a model's choice: check the server "
                "and the tokenizer it serves"
            )
        ids.append(number)
    return ids


def _token_id(token: Any) -> int | None:
    """``token`` as a token id (numpy's ints too), or ``None`` (a bool is no id)."""
    if isinstance(token, bool):
        return None
    try:
        number = operator.index(token)
    except TypeError:
        return None
    return number if 0 <= number < TOKEN_ID_LIMIT else None


def logprobs_of(value: Any, count: int) -> list[float] | None:
    """The server's log-probs of ``count`` sampled ids, or ``None`` when they are not one
    finite number per id (all or none, as the ``openai:`` agent reads them); ``None`` from
    the server is no log-probs, which only a turn with no ids has."""
    values = [] if value is None else value
    if not isinstance(values, list | tuple) or len(values) != count:
        return None
    finite = [finite_number(v) for v in values]
    return None if None in finite else [number for number in finite if number is not None]


@register(AGENT_NAME)
class StategymAgentLoop(AgentLoopBase):
    """Plays the stategym episode a dataset row names (see the module docstring).

    verl makes one per sample with its worker's arguments (``AgentLoopBase``'s); the tool
    list verl's worker passes is not used: the domain's tools are the renderer's.
    """

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        domain, seed, knobs = episode_of(kwargs.get("extra_info"))
        check_data_source(kwargs.get("data_source"), domain)
        env = Env(domain, knobs=knobs)
        observation, _ = env.reset(seed=seed)
        backend = ServerBackend(
            self.server_manager, self.tokenizer, sampling_params, self.rollout_config
        )
        agent = ChatAgent("verl", backend, env.domain, env.task)
        check_prompt(kwargs.get("raw_prompt", kwargs.get("prompt")), agent.messages, env.task)
        trajectory = await adrive(Episode(env, agent, observation))
        if agent.tokens is None:  # the backend has a chat template, so the agent keeps one
            raise RuntimeError("the agent kept no token stream")
        return loop_output(
            trajectory,
            env.task,
            agent.tokens,
            backend.response_length,
            logprobs=bool(backend.sampling.get("logprobs")),
        )


def episode_of(extra_info: Any) -> tuple[str, int, Knobs]:
    """``(domain, seed, knobs)`` from a row's ``extra_info`` (:func:`dataset_rows` writes it).

    The seed goes through :func:`~stategym.kernel.task.check_seed` (an int; no string, float
    or bool), the knobs are text the core parses (absent or null: the default knobs; a
    parquet column of rows with and without them reads missing ones as null).

    Raises:
        ValueError: a row that names no stategym task, a seed out of range, bad knobs.
        TypeError: a domain, seed or knobs of the wrong type.
    """
    if not isinstance(extra_info, Mapping) or not {"domain", "seed"} <= extra_info.keys():
        raise ValueError(
            f"a row for the {AGENT_NAME!r} agent loop needs extra_info with 'domain' and "
            f"'seed' ({_ROWS} writes them); got {reprlib.repr(extra_info)}"
        )
    domain = extra_info["domain"]
    if not isinstance(domain, str):
        raise TypeError(f"the row's extra_info.domain is {type(domain).__name__}, not a name")
    return domain, _seed_of(extra_info["seed"]), _knobs_of(extra_info.get("knobs"))


def _seed_of(seed: Any) -> int:
    try:
        return check_seed(seed)
    except (TypeError, ValueError) as error:
        raise type(error)(
            f"the row's extra_info.seed: {error} ({_ROWS} writes the task's seed, an int)"
        ) from None


def _knobs_of(knobs: Any) -> Knobs:
    if knobs is None:
        return Knobs()
    if not isinstance(knobs, str):
        raise TypeError(
            f"the row's extra_info.knobs is {type(knobs).__name__}, not text ({_ROWS} "
            "writes Knobs.describe())"
        )
    try:
        return Knobs.parse(knobs)
    except ValueError as error:
        raise ValueError(f"the row's extra_info.knobs: {error}") from None


def check_data_source(data_source: Any, domain: str) -> None:
    """Refuse a row whose ``data_source`` (verl groups its logs and rewards by it) names
    another domain than its ``extra_info``; a row without one is not checked.

    Raises:
        ValueError: it is not ``stategym/<domain>``, as :func:`dataset_rows` writes it.
    """
    expected = f"{AGENT_NAME}/{domain}"
    if data_source is not None and not (isinstance(data_source, str) and data_source == expected):
        raise ValueError(
            f"the row's data_source {reprlib.repr(data_source)} is not "
            f"{expected!r}, the data source of its extra_info's domain: "
            f"make the rows with {_ROWS}"
        )


def check_prompt(prompt: Any, first: Sequence[Message], task: Task) -> None:
    """Refuse a row whose prompt (verl hands it to the loop as ``raw_prompt``) is not its
    task's first messages: verl filters and logs that prompt, while the loop plays the task.

    Messages are compared by role and text, whatever other keys a dataset added (numpy's
    array of them is read as its list); a row without a prompt is not checked.

    Raises:
        ValueError: another task's prompt, or no chat messages.
    """
    if prompt is None:
        return
    if hasattr(prompt, "tolist") and not isinstance(prompt, str | bytes):
        prompt = prompt.tolist()
    if roles_and_texts(prompt) != roles_and_texts(first):
        raise ValueError(
            f"the row's prompt is not the first messages of {task.domain} seed {task.seed} "
            f"with knobs {task.knobs.describe()!r}, the task its extra_info names: make the "
            f"rows with {_ROWS}"
        )


def loop_output(
    trajectory: Trajectory, task: Task, stream: TokenStream, limit: int, *, logprobs: bool
) -> AgentLoopOutput:
    """verl's output of a played episode: its tokens up to the last sampled one (at most
    ``limit`` of them after the prompt), R and the scorecard; with ``logprobs`` (the sampling
    asked for them) one log-prob per response id (:func:`response_logprobs`)."""
    card = score(trajectory, task)
    start = stream.spans[0][0] if stream.spans else len(stream.ids)
    end = stream.spans[-1][1] if stream.spans else start
    mask = [int(letter == POLICY) for letter in stream.mask[start:end]]
    turns = [r.model for r in trajectory.rounds if r.model is not None]
    values = response_logprobs(turns, start, end) if logprobs else None
    info: dict[str, Any] = {**card.row(), **summarise_rounds(trajectory.rounds)}
    dropped = [r for r in trajectory.rounds if "log_probs" in r.meta.get("dropped", ())]
    info["dropped_logprobs"] = len(dropped)
    timing = trajectory.meta.get("timing", {})
    return AgentLoopOutput(
        prompt_ids=stream.ids[:start],
        response_ids=stream.ids[start:end][:limit],
        response_mask=mask[:limit],
        response_logprobs=values[:limit] if values is not None else None,
        reward_score=card.composite,
        num_turns=2 * len(stream.spans),  # the prompt, each turn and the observations between
        metrics=AgentLoopMetrics(
            generate_sequences=timing.get("agent_s", 0.0), tool_calls=timing.get("env_s", 0.0)
        ),
        extra_fields={
            "reward_extra_info": info,
            "turn_scores": list(credit(trajectory, task, card).rewards),
            "tool_rewards": [],
        },
    )


def response_logprobs(turns: Sequence[ModelTurn], start: int, end: int) -> list[float]:
    """One log-prob per response id (``stream`` ids ``start:end``): the server's on each
    turn's sampled ids, 0.0 elsewhere.

    0.0 is verl's own fill (observation ids, padding). A turn whose log-probs the server gave
    unreadable (named in its round's ``meta["dropped"]``) has 0.0 on its sampled ids too, so
    the sample keeps one value per id, which verl's batch needs; verl has no per-token flag
    for a missing log-prob, so the count of such turns is ``reward_extra_info``'s
    ``dropped_logprobs``.
    """
    values = [0.0] * (end - start)
    for turn in turns:
        if turn.logprobs is not None and turn.span is not None:
            values[turn.span.start - start : turn.span.end - start] = turn.logprobs
    return values


def dataset_rows(domain: str, seeds: Sequence[int], knobs: KnobsGiven = None) -> list[dict]:
    """verl dataset rows (write them to parquet): one per task seed.

    Each row has verl's ``prompt`` (the renderer's first messages, as
    :func:`stategym.adapters.trl.dataset_rows` makes them; the loop renders the same again
    from the task), ``data_source`` (``stategym/<domain>``), ``agent_name``
    (:data:`AGENT_NAME`) and ``extra_info`` naming the task (domain, seed, knobs, index).
    ``knobs`` as :func:`~stategym.kernel.knobs.as_knobs` reads them (an object, their text,
    a mapping or ``None``).
    """
    knobs = as_knobs(knobs)
    return [
        {
            "data_source": f"{AGENT_NAME}/{domain}",
            "prompt": row["prompt"],
            "agent_name": AGENT_NAME,
            "extra_info": {
                "index": index,
                "domain": domain,
                "seed": row["seed"],
                "knobs": knobs.describe(),
            },
        }
        for index, row in enumerate(prompt_rows(domain, seeds, knobs))
    ]


__all__ = [
    "AGENT_NAME",
    "SUPPORTED_VERL",
    "TOKEN_ID_LIMIT",
    "ServerBackend",
    "ServerOutputError",
    "StategymAgentLoop",
    "check_data_source",
    "check_prompt",
    "dataset_rows",
    "episode_of",
    "loop_output",
    "response_logprobs",
]
