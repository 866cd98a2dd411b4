"""Each dimension is declared once, and everything that lists dimensions reads the list.

- one declaration per :class:`Dimension`, refused twice or missing;
- the aggregate columns, the scorecard headers and the protocol report's columns come from
  the declarations;
- each declaration's running quality, given every event of an episode, is exactly the
  scorecard's Q_d and applicability (what credit's last round settles to).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from stategym.agents import scripted
from stategym.kernel.env import Env
from stategym.metrics import DECLARED, Dimension, score
from stategym.metrics.aggregate import COLUMNS
from stategym.metrics.declaration import EventCounts, by_dimension
from stategym.metrics.dimensions import LABELS
from stategym.metrics.gold import gold_of
from stategym.metrics.report import headers
from stategym.metrics.taskset import MIXED
from stategym.registry import all_domains, get_domain
from stategym.rollout import run_episode
from stategym.topology.report import CELL_COLUMNS, MEASURES


def test_every_dimension_is_declared_exactly_once():
    assert tuple(DECLARED) == tuple(Dimension)
    assert len(set(LABELS.values())) == len(LABELS)
    specs = tuple(DECLARED.values())
    with pytest.raises(RuntimeError, match="one each"):
        by_dimension(specs[:-1])
    with pytest.raises(RuntimeError, match="one each"):
        by_dimension((*specs, replace(specs[0], label="again")))


def test_tables_take_their_dimension_columns_from_the_declarations():
    for dimension, label in LABELS.items():
        assert str(dimension) in COLUMNS and str(dimension) in MEASURES
        assert label in headers([]) and label in CELL_COLUMNS


@pytest.mark.parametrize("name", sorted(all_domains()))
def test_running_qualities_with_every_event_are_the_scorecards(name):
    domain = get_domain(name)
    for agent in ("expert", "random", "ask-nothing", "shotgun", "spray"):
        for seed in range(6):
            env = Env(domain, knobs=MIXED[seed % len(MIXED)])
            played = run_episode(env, scripted(domain, agent), seed)
            card = score(played, env.task)
            counts = EventCounts(calls=len([c for r in played.rounds for c in r.calls]))
            counts.calls -= sum(c.name == "finish" for r in played.rounds for c in r.calls)
            counts.done = True
            for event in card.events:
                counts.add(event)
            gold = gold_of(env.task)
            for dimension, spec in DECLARED.items():
                running = spec.running(counts, gold)
                assert running == (card.quality(dimension), dimension in card.applicable)
