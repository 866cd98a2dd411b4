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
- **Limits.** The episode's end, ``rollout.response_length`` (each turn may sample what is
  left of it), ``multi_turn.max_assistant_turns`` (turns sampled) and
  ``multi_turn.max_user_turns`` (observations fed back): a limit ends the episode, scored
  truncated. ``multi_turn.max_parallel_calls`` is the tool loop's and is not read here.
- **The reward** is the episode's composite R; the scorecard's row (success, the four
  dimensions, harm...) and the round counts are ``reward_extra_info``, and the per-round
  credit (rewards that sum to R) is ``extra_fields["turn_scores"]``, which verl carries
  in the batch but does not train on.
"""

from __future__ import annotations

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
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import Task
from stategym.kernel.trajectory import Trajectory, summarise_rounds
from stategym.llm.agent import ChatAgent, Reply, Turn
from stategym.llm.local import ChatTokenizer, Message
from stategym.llm.parse import parse
from stategym.metrics import credit, score
from stategym.rendering.tokens import POLICY, TokenStream
from stategym.rollout.play import Episode, adrive

SUPPORTED_VERL = ">=0.9.1,<0.10"
"""The verl versions this adapter is tested with (it reads verl 0.9.1's agent loop)."""
AGENT_NAME = "stategym"
"""The agent loop's name in verl's registry (a dataset row's ``agent_name``)."""


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
        ids = list(output.token_ids)
        closed = bool(ids) and ids[-1] == self._end
        text = str(self.tokenizer.decode(ids[:-1] if closed else ids, skip_special_tokens=False))
        parsed = parse(text)
        meta: dict[str, Any] = {
            "completion_token_ids": ids,
            "finish_reason": "stop" if closed else "length",
            "text": text,
            "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(ids)},
        }
        if self.sampling.get("logprobs"):  # asked for: every turn has them, or none does
            logprobs = list(output.log_probs or ())
            if len(logprobs) != len(ids):
                raise RuntimeError(f"the server gave {len(logprobs)} log-probs for {len(ids)} ids")
            meta["logprobs"] = logprobs
        return Reply(parsed.to_message(f"call_{turn.index}"), meta, parsed.errors)


@register(AGENT_NAME)
class StategymAgentLoop(AgentLoopBase):
    """Plays the stategym episode a dataset row names (see the module docstring).

    verl makes one per sample with its worker's arguments (``AgentLoopBase``'s); the tool
    list verl's worker passes is not used: the domain's tools are the renderer's.
    """

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        domain, seed, knobs = episode_of(kwargs.get("extra_info"))
        env = Env(domain, knobs=knobs)
        observation, _ = env.reset(seed=seed)
        backend = ServerBackend(
            self.server_manager, self.tokenizer, sampling_params, self.rollout_config
        )
        agent = ChatAgent("verl", backend, env.domain, env.task)
        trajectory = await adrive(Episode(env, agent, observation))
        if agent.tokens is None:  # the backend has a chat template, so the agent keeps one
            raise RuntimeError("the agent kept no token stream")
        return loop_output(trajectory, env.task, agent.tokens, backend.response_length)


def episode_of(extra_info: Any) -> tuple[str, int, Knobs]:
    """``(domain, seed, knobs)`` from a row's ``extra_info`` (:func:`dataset_rows` writes it).

    Raises:
        ValueError: a row that names no stategym task.
    """
    if not isinstance(extra_info, Mapping) or not {"domain", "seed"} <= extra_info.keys():
        raise ValueError(
            f"a row for the {AGENT_NAME!r} agent loop needs extra_info with 'domain' and "
            f"'seed' (stategym.adapters.verl.dataset_rows writes them); got {extra_info!r}"
        )
    knobs = Knobs.parse(str(extra_info.get("knobs") or "default"))
    return str(extra_info["domain"]), int(extra_info["seed"]), knobs


def loop_output(
    trajectory: Trajectory, task: Task, stream: TokenStream, limit: int
) -> AgentLoopOutput:
    """verl's output of a played episode: its tokens up to the last sampled one (at most
    ``limit`` of them after the prompt), R and the scorecard."""
    card = score(trajectory, task)
    start = stream.spans[0][0] if stream.spans else len(stream.ids)
    end = stream.spans[-1][1] if stream.spans else start
    mask = [int(letter == POLICY) for letter in stream.mask[start:end]]
    turns = [r.model for r in trajectory.rounds if r.model is not None]
    logprobs: list[float] | None = None
    if turns and all(t.logprobs is not None and t.span is not None for t in turns):
        logprobs = [0.0] * (end - start)
        for turn in turns:
            assert turn.span is not None and turn.logprobs is not None  # checked above
            logprobs[turn.span.start - start : turn.span.end - start] = turn.logprobs
    info: dict[str, Any] = {**card.row(), **summarise_rounds(trajectory.rounds)}
    timing = trajectory.meta.get("timing", {})
    return AgentLoopOutput(
        prompt_ids=stream.ids[:start],
        response_ids=stream.ids[start:end][:limit],
        response_mask=mask[:limit],
        response_logprobs=logprobs[:limit] if logprobs is not None else None,
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


def dataset_rows(domain: str, seeds: Sequence[int], knobs: Knobs | None = None) -> list[dict]:
    """verl dataset rows (write them to parquet): one per task seed.

    Each row has verl's ``prompt`` (the renderer's first messages, as
    :func:`stategym.adapters.trl.dataset_rows` makes them; the loop renders the same again
    from the task), ``data_source`` (``stategym/<domain>``), ``agent_name``
    (:data:`AGENT_NAME`) and ``extra_info`` naming the task (domain, seed, knobs, index).
    """
    knobs = knobs or Knobs()
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
    "ServerBackend",
    "StategymAgentLoop",
    "dataset_rows",
    "episode_of",
    "loop_output",
]
