"""The protocol's evaluation splits, and where each lies relative to the training topologies.

Given the training domains, :func:`make_splits` lists evaluation *cells*: a domain to play,
its split, and its distance to the nearest training topology. The splits:

============== ===========================================================================
split          what it holds
============== ===========================================================================
instances      each training domain, on seeds never used for training (in distribution)
surface        each synthetic training domain under new surfaces (same graph, new names)
composition    synthetic specs recombining the training motifs (all motifs when no training
               domain is synthetic) into compositions whose WL hash training never had,
               spread over the distance range
larger         each synthetic training spec with every sized motif grown; none for a spec
               whose grown topology is a training one (every size at its cap, or grown
               into another training spec: :func:`ungrowable`, said in the run's notes)
domain         every registered domain that is not a training domain
============== ===========================================================================

Counterfactual probes (one hidden value flipped) are built per task in
:mod:`stategym.topology.probes`. Where a cell lies: ``same`` (its WL hash is a training
one), ``close`` (a new hash but distance < :data:`DIFFERENT`, so not a different topology
under the definition), ``near`` (:data:`DIFFERENT` <= d < :data:`FAR`) or ``far``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from stategym.kernel.knobs import Knobs
from stategym.registry import all_domains, get_domain
from stategym.topology.distance import EXPANSION_BUDGET, edit_distance, wl_distance, wl_hash
from stategym.topology.graph import Topology, domain_topology
from stategym.topology.motifs import SIZED, Motif, Spec, is_synthetic

DIFFERENT = 0.2
"""A topology is different from the training ones when its hash is unseen and its distance to
every training topology is at least this."""
FAR = 0.4
"""Different topologies at this distance or more are far out of distribution."""
SURFACES = (101, 202)
"""Surface seeds offsets for the surface split (added to the training spec's surface)."""
DEFAULT_POOL = Spec(
    chain=2,
    fanout=3,
    diamond=True,
    branch=True,
    askgate=1,
    verifycommit=True,
    precond=True,
    conflict=True,
)
"""The motif pool for compositions when no training domain is synthetic."""


class Split(StrEnum):
    INSTANCES = "instances"
    SURFACE = "surface"
    COMPOSITION = "composition"
    LARGER = "larger"
    DOMAIN = "domain"
    PROBE = "probe"


class Band(StrEnum):
    """Where a cell lies relative to the training topologies."""

    SAME = "same"
    CLOSE = "close"
    NEAR = "near"
    FAR = "far"


@dataclass(frozen=True, slots=True)
class Placement:
    """A topology's distance to the nearest training topology.

    Attributes:
        distance: normalised GED to the nearest training topology.
        exact: that GED is exact (else an upper bound).
        proxy: the WL-kernel proxy distance to the same training topology.
        nearest: the nearest training domain.
        seen: the WL hash is a training topology's.
        band: same, close, near or far.
    """

    distance: float
    exact: bool
    proxy: float
    nearest: str
    seen: bool
    band: Band


@dataclass(frozen=True, slots=True)
class Cell:
    """One domain to evaluate, its split and its placement."""

    split: Split
    domain: str
    placement: Placement

    def to_dict(self) -> dict[str, object]:
        p = self.placement
        return {
            "split": str(self.split),
            "domain": self.domain,
            "distance": p.distance,
            "exact": p.exact,
            "proxy": p.proxy,
            "nearest": p.nearest,
            "seen": p.seen,
            "band": str(p.band),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Cell:
        placement = Placement(
            float(data["distance"]),
            bool(data["exact"]),
            float(data["proxy"]),
            str(data["nearest"]),
            bool(data["seen"]),
            Band(data["band"]),
        )
        return cls(Split(data["split"]), str(data["domain"]), placement)


def band(distance: float, seen: bool) -> Band:
    if seen:
        return Band.SAME
    if distance < DIFFERENT:
        return Band.CLOSE
    return Band.NEAR if distance < FAR else Band.FAR


def place(
    topology: Topology, train: Sequence[tuple[str, Topology]], budget: int = EXPANSION_BUDGET
) -> Placement:
    """Where ``topology`` lies relative to the training topologies."""
    hashes = {wl_hash(t) for _, t in train}
    seen = wl_hash(topology) in hashes
    best: tuple[float, bool, str, Topology] | None = None
    for name, other in train:
        found = edit_distance(topology, other, budget)
        if best is None or found.normalised < best[0]:
            best = (found.normalised, found.exact, name, other)
    assert best is not None, "place() needs at least one training topology"
    distance, exact, nearest, other = best
    return Placement(
        distance, exact, wl_distance(topology, other), nearest, seen, band(distance, seen)
    )


def _pool(train: Sequence[str]) -> Spec:
    """The union of the training specs' motifs (largest size of each), or the default pool."""
    specs = [Spec.parse(name) for name in train if is_synthetic(name)]
    if not specs:
        return DEFAULT_POOL
    merged = Spec()
    for spec in specs:
        merged = replace(
            merged,
            chain=max(merged.chain, spec.chain),
            fanout=max(merged.fanout, spec.fanout),
            askgate=max(merged.askgate, spec.askgate),
            **{
                m.value: getattr(merged, m.value) or getattr(spec, m.value)
                for m in Motif
                if m not in SIZED
            },
        )
    return merged


def compositions(pool: Spec) -> list[Spec]:
    """Every spec built from a subset of the pool's motifs (sizes as in the pool)."""
    present = [
        m
        for m in Motif
        if getattr(pool, m.value) not in (0, False) and not (m is Motif.FANOUT and pool.fanout == 1)
    ]
    out = []
    for size in range(1, len(present) + 1):
        for subset in itertools.combinations(present, size):
            values = {m.value: getattr(pool, m.value) for m in subset}
            out.append(Spec(**values))
    return out


def grow(spec: Spec) -> Spec:
    """The spec with every sized motif it has grown (chain +2, fan-out +2, gates +1)."""
    grown = replace(
        spec,
        chain=min(SIZED[Motif.CHAIN], spec.chain + 2) if spec.chain else 0,
        fanout=min(SIZED[Motif.FANOUT], spec.fanout + 2) if spec.fanout > 1 else 1,
        askgate=min(SIZED[Motif.ASKGATE], spec.askgate + 1) if spec.askgate else 0,
    )
    if grown == spec:
        grown = replace(spec, fanout=min(SIZED[Motif.FANOUT], spec.fanout + 2))
    return grown


def _grown(train: Sequence[str]) -> dict[str, str]:
    """Each synthetic training domain and the name of its grown spec (:func:`grow`)."""
    return {name: grow(Spec.parse(name)).name for name in train if is_synthetic(name)}


def ungrowable(train: Sequence[str], knobs: Knobs | None = None) -> dict[str, str]:
    """The synthetic training domains that give no ``larger`` cell, each with its grown spec.

    Growing stops at the size caps (:data:`~stategym.topology.motifs.SIZED`), so a spec at
    every cap (``synth:fanout6``) grows into itself, and a spec may grow into another
    training domain; either way its topology is a training one, a cell no larger than
    training, which :func:`make_splits` leaves out (audit 13B F8: a +0.00 "larger" gap).
    """
    knobs = knobs or Knobs()
    seen = {wl_hash(domain_topology(get_domain(name), knobs)) for name in train}
    return _ungrowable(train, knobs, seen)


def _ungrowable(train: Sequence[str], knobs: Knobs, seen: set[str]) -> dict[str, str]:
    """:func:`ungrowable`, given the training topologies' WL hashes ``seen``."""
    return {
        name: grown
        for name, grown in _grown(train).items()
        if wl_hash(domain_topology(get_domain(grown), knobs)) in seen
    }


def _spread(candidates: list[tuple[float, str]], count: int) -> list[str]:
    """``count`` names spread evenly over the sorted proxy distances."""
    ordered = sorted(candidates)
    if len(ordered) <= count:
        return [name for _, name in ordered]
    step = (len(ordered) - 1) / max(1, count - 1)
    return [ordered[round(i * step)][1] for i in range(count)]


def make_splits(
    train: Sequence[str],
    knobs: Knobs | None = None,
    compositions_per_split: int = 4,
    budget: int = EXPANSION_BUDGET,
) -> list[Cell]:
    """Every evaluation cell for the training domains ``train`` (names, synthetic or not)."""
    knobs = knobs or Knobs()
    train_tops = [(name, domain_topology(get_domain(name), knobs)) for name in train]
    seen = {wl_hash(t) for _, t in train_tops}
    named: list[tuple[Split, str]] = [(Split.INSTANCES, name) for name in train]
    synthetic = [Spec.parse(name) for name in train if is_synthetic(name)]
    for spec in synthetic:
        named += [(Split.SURFACE, spec.with_surface(spec.surface + s).name) for s in SURFACES]
    candidates = []
    for spec in compositions(_pool(train)):
        topology = domain_topology(get_domain(spec.name), knobs)
        if wl_hash(topology) not in seen:
            proxy = min(wl_distance(topology, t) for _, t in train_tops)
            candidates.append((proxy, spec.name))
    named += [(Split.COMPOSITION, n) for n in _spread(candidates, compositions_per_split)]
    stuck = _ungrowable(train, knobs, seen)
    named += [(Split.LARGER, grown) for name, grown in _grown(train).items() if name not in stuck]
    named += [(Split.DOMAIN, name) for name in all_domains() if name not in train]
    cells = []
    for split, name in dict.fromkeys(named):
        topology = domain_topology(get_domain(name), knobs)
        cells.append(Cell(split, name, place(topology, train_tops, budget)))
    return cells
