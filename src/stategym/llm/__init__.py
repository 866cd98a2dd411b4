"""LLM agents: OpenAI-compatible endpoints and local Hugging Face models.

Nothing here is imported by ``import stategym``: the environment never pays for LLM client
libraries. :func:`agent_factory` is what :func:`stategym.agents.resolve` calls for
``openai:MODEL`` and ``hf:PATH`` specs; :func:`stategym.llm.batch.run_many` plays many such
episodes concurrently. See ``docs/llm.md``.

What the model reads: an ``hf:PATH`` agent plays in the rendering its folder records
(:func:`~stategym.llm.model_files.recorded_rendering`: ``compact`` for a model the trainer
trained on it, ``messages`` for a folder without a record, any Hugging Face model from
elsewhere), so ``eval``/``run --agent hf:RUN/model`` play the policy as the trainer's own
held-out evaluation does. There is no option to play it otherwise. ``openai:`` agents always
play ``messages``: the server renders the conversation through its chat template.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stategym.kernel.domain import Domain
from stategym.kernel.errors import AgentOptionError, UsageError
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import Task
from stategym.llm.agent import Backend, ChatAgent
from stategym.llm.model_files import recorded_rendering
from stategym.llm.prompt import PROMPT_VERSION, render_demonstrations

RUNNER_OPTIONS = frozenset({"concurrency", "samples"})
"""Options that configure the runner, not the agent; accepted here and ignored."""
DEMONSTRATION_SEED = 2_000_000
"""First seed of the expert episodes ``demonstrations=k`` renders (far from evaluation seeds)."""


class LLMAgentFactory:
    """Builds one :class:`ChatAgent` per episode, all sharing one backend.

    Calling it with a task (and ``sample=i`` for the i-th sample of that task) gives the
    episode's agent; it is an :data:`~stategym.agents.base.AgentFactory`.
    """

    samples = True
    """It takes ``sample=``: the rollout engine passes each episode's sample number."""

    def __init__(
        self,
        name: str,
        backend: Backend,
        domain: Domain,
        *,
        demonstrations: str | int = "",
        seed: int = 0,
        rendering: str = "messages",
    ) -> None:
        self.name = name
        self.backend = backend
        self.domain = domain
        self.seed = seed
        self.rendering = rendering
        """What every episode's model reads (``messages`` or ``compact``)."""
        self._demonstrations = demonstrations
        self._rendered: dict[Knobs, str] = {}

    def __call__(self, task: Task, sample: int = 0) -> ChatAgent:
        return ChatAgent(
            self.name,
            self.backend,
            self.domain,
            task,
            demonstrations=self.demonstrations(task.knobs),
            sample=sample,
            seed=self.seed,
            rendering=self.rendering,
        )

    async def aclose(self) -> None:
        """Release the backend's connections for the running event loop."""
        close = getattr(self.backend, "aclose", None)
        if close is not None:
            await close()

    def demonstrations(self, knobs: Knobs) -> str:
        """The demonstration block for tasks with these knobs."""
        if isinstance(self._demonstrations, str):
            return self._demonstrations
        if knobs not in self._rendered:
            self._rendered[knobs] = expert_demonstrations(
                self.domain, self._demonstrations, knobs, rendering=self.rendering
            )
        return self._rendered[knobs]


def expert_demonstrations(
    domain: Domain,
    k: int,
    knobs: Knobs,
    first_seed: int = DEMONSTRATION_SEED,
    *,
    rendering: str = "messages",
) -> str:
    """``k`` expert episodes on seeds from ``first_seed``, rendered for the system prompt in
    ``rendering`` (the agent's)."""
    from stategym.agents import scripted
    from stategym.kernel.env import Env
    from stategym.rollout import run_episode

    env = Env(domain, knobs=knobs)
    expert = scripted(domain, "expert")
    trajectories, tasks = [], []
    for seed in range(first_seed, first_seed + k):
        trajectories.append(run_episode(env, expert, seed))
        tasks.append(env.task)
    return render_demonstrations(trajectories, tasks, rendering)


def agent_factory(kind: str, target: str, domain: Domain, **options: Any) -> LLMAgentFactory:
    """The factory for an LLM agent spec ``KIND:TARGET``.

    ``hf`` plays the folder's recorded rendering (module docstring), ``openai`` messages.

    Args:
        kind: ``openai`` (any OpenAI-compatible endpoint; ``target`` is the model name) or
            ``hf`` (a local Hugging Face model; ``target`` is its directory).
        target: model name or path.
        domain: the domain the agent plays.
        **options: ``openai``: ``base_url``, ``api_key``, ``temperature``, ``top_p``,
            ``max_tokens``, ``seed``, ``logprobs``, ``token_ids``, ``timeout``, ``retries``,
            ``backoff``, ``extra_body``, ``tokenizer`` (a local tokenizer folder:
            token-in-token-out), ``client`` (a ready ``AsyncOpenAI``). ``hf``:
            ``temperature``, ``top_p``, ``max_tokens``, ``seed``, ``device``, ``threads``,
            ``prompt_ids``. Both: ``demonstrations`` (a rendered block, or a number k of
            expert episodes). ``None`` values mean "default"; ``concurrency`` and
            ``samples`` belong to the runner and are ignored.

    Raises:
        KeyError: unknown kind.
        AgentOptionError: an option this kind does not take (a ``TypeError``).
        UsageError: ``hf``: no saved model at ``target``. (An ``openai`` endpoint is
            checked at its first request, see :meth:`OpenAIBackend.check`, so making a
            factory never touches the network.)
    """
    given = {k: v for k, v in options.items() if v is not None and k not in RUNNER_OPTIONS}
    demonstrations = given.pop("demonstrations", "")
    seed = int(given.get("seed") or 0)
    rendering = "messages"
    if kind == "openai":
        backend: Backend = _openai_backend(target, given)
        name = f"openai:{target}"
    elif kind == "hf":
        backend = _hf_backend(target, given)
        name = f"hf:{Path(target).name}"
        rendering = recorded_rendering(target)
    else:
        raise KeyError(f"unknown LLM agent kind {kind!r}; use openai:MODEL or hf:PATH")
    return LLMAgentFactory(
        name, backend, domain, demonstrations=demonstrations, seed=seed, rendering=rendering
    )


def check_agent(kind: str, target: str, **options: Any) -> None:
    """Fail fast for an LLM agent spec ``KIND:TARGET``, without loading a model.

    ``hf``: the folder holds a saved model; ``openai``: the endpoint answers and serves the
    model (skipped when ``client`` is given). Commands call it before slow preparation; the
    agents make the same checks themselves, ``hf`` when loading, ``openai`` before the
    first request.

    Raises:
        UsageError: an unknown kind, a missing model folder, an unreachable endpoint.
    """
    if kind == "hf":
        from stategym.llm.model_files import check_model_dir

        check_model_dir(target)
    elif kind == "openai":
        from stategym.llm.openai_agent import check_endpoint

        if options.get("client") is None:
            check_endpoint(target, options.get("base_url"), options.get("api_key"))
    else:
        raise UsageError(f"unknown LLM agent kind {kind!r}; use openai:MODEL or hf:PATH")


def _openai_backend(model: str, options: dict[str, Any]) -> Backend:
    from dataclasses import fields

    from stategym.llm.openai_agent import OpenAIBackend, Settings

    client = options.pop("client", None)
    api_key = options.pop("api_key", None)
    _check(options, {f.name for f in fields(Settings)} - {"model"}, "openai")
    return OpenAIBackend(Settings(model=model, **options), client=client, api_key=api_key)


def _hf_backend(path: str, options: dict[str, Any]) -> Backend:
    from stategym.llm.hf_agent import HFBackend
    from stategym.llm.local import LocalModel, Sampling
    from stategym.llm.turns import check_turns

    _check(
        options,
        {"temperature", "top_p", "max_tokens", "seed", "device", "threads", "prompt_ids"},
        "hf",
    )
    model = LocalModel(path, device=options.get("device", "cpu"), threads=options.get("threads"))
    check_turns(model.chat, path)  # the agent cuts token segments (serve does not: no check)
    sampling = Sampling(
        **{k: options[k] for k in ("temperature", "top_p", "max_tokens") if k in options}
    )
    return HFBackend(model, sampling, prompt_ids=bool(options.get("prompt_ids", False)))


def _check(options: dict[str, Any], allowed: set[str], kind: str) -> None:
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise AgentOptionError(
            f"{kind} agents take no option {', '.join(unknown)}; "
            f"options: {', '.join(sorted(allowed))}"
        )


__all__ = [
    "PROMPT_VERSION",
    "ChatAgent",
    "LLMAgentFactory",
    "agent_factory",
    "expert_demonstrations",
    "render_demonstrations",
]
