"""The episode loop every sync caller shares (``run``, the protocol, scripted evaluation)."""

from __future__ import annotations

from stategym import CallBatch, Env, Observation, call
from stategym.kernel.errors import AgentStopped
from stategym.kernel.protocol import Action
from stategym.kernel.task import Task
from stategym.rollout import play, run_episode


class StopsAfterOneRound:
    """Looks something up once, then cannot continue (as an LLM past its context)."""

    name = "stops"

    def __init__(self) -> None:
        self.turns = 0

    def act(self, observation: Observation) -> Action:
        self.turns += 1
        if self.turns > 1:
            raise AgentStopped("context_length: the prompt has 9000 tokens; the model takes 8192")
        return CallBatch((call("get_profile"),))


def test_a_stopped_agent_ends_its_episode_truncated_with_the_reason() -> None:
    def make(task: Task) -> StopsAfterOneRound:
        return StopsAfterOneRound()

    trajectory = run_episode(Env("travel"), make, seed=3)
    assert len(trajectory.rounds) == 1
    assert trajectory.truncated and not trajectory.terminated
    assert trajectory.outcome is not None and trajectory.outcome.committed == ()
    assert trajectory.meta["stop_reason"].startswith("context_length")


def test_play_continues_from_a_reset_onto_a_given_task() -> None:
    env = Env("travel")
    env.reset(seed=5)
    task = env.task
    observation, _ = env.reset(options={"task": task})
    trajectory = play(env, StopsAfterOneRound(), observation)
    assert trajectory.seed == 5 and trajectory.agent == "stops"
