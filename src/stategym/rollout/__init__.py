"""The rollout engine: episodes as plain specs, one play loop, one resume rule.

- :class:`EpisodeSpec` (:mod:`.spec`): one episode as frozen, picklable data (domain,
  seed, knobs, agent spec and options, sample, role, probe, tags); :func:`pending` is the
  resume rule (the specs whose episode a log does not hold yet, by :func:`trajectory_key`).
- :mod:`.play`: the episode loop, blocking (:func:`drive`) and async (:func:`adrive`) over
  one :class:`Episode`; :func:`run_episode` and :func:`play` for a ready environment.
- :mod:`.engine`: :func:`stream` plays many specs (LLM agents concurrently) and yields each
  trajectory as it ends; ``run``, ``eval`` and ``protocol`` all use it (:func:`stream_scored`
  with each episode scored by the function handed in, on the worker that played it).
- :mod:`.agents`: spec -> agent (:class:`Agents` resolves names; :class:`FixedAgent` plays a
  ready factory).
- :mod:`.workers`: scripted specs over worker processes (:class:`Spread`,
  :func:`play_in_processes`), merged in spec order; :mod:`.ray`: the same as Ray tasks
  (:func:`stategym.rollout.ray.play_on_ray`, imports Ray only when called).
- :mod:`.log`: the one strict reader of a trajectories file.
- :mod:`.tokens`: the token log of a token-in-token-out episode (ids, logprobs, mask, spans).
"""

from __future__ import annotations

from stategym.rollout.agents import Agents, AgentSource, FixedAgent
from stategym.rollout.engine import (
    DEFAULT_CONCURRENCY,
    play_concurrently,
    play_in_order,
    play_spec,
    stream,
    stream_scored,
)
from stategym.rollout.log import Log, load_log, read_log, refuse_duplicates, refuse_unverified
from stategym.rollout.play import (
    Episode,
    adrive,
    drive,
    play,
    run_episode,
    run_episodes,
    spec_task,
)
from stategym.rollout.spec import (
    EpisodeSpec,
    episode_specs,
    pending,
    plain_options,
    requested,
    trajectory_key,
)
from stategym.rollout.workers import Spread, play_in_processes, worker_count

__all__ = [
    "DEFAULT_CONCURRENCY",
    "AgentSource",
    "Agents",
    "Episode",
    "EpisodeSpec",
    "FixedAgent",
    "Log",
    "Spread",
    "adrive",
    "drive",
    "episode_specs",
    "load_log",
    "pending",
    "plain_options",
    "play",
    "play_concurrently",
    "play_in_order",
    "play_in_processes",
    "play_spec",
    "read_log",
    "refuse_duplicates",
    "refuse_unverified",
    "requested",
    "run_episode",
    "run_episodes",
    "spec_task",
    "stream",
    "stream_scored",
    "trajectory_key",
    "worker_count",
]
