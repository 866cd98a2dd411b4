"""Tool topologies: extraction, identity and distance, synthetic domains composed from
motifs, and the generalisation protocol built on them."""

from __future__ import annotations

from stategym.topology.distance import (
    EditDistance,
    distance_matrix,
    edit_distance,
    ged_distance,
    wl_distance,
    wl_hash,
)
from stategym.topology.graph import Topology, describe, domain_topology, task_topology
from stategym.topology.motifs import Motif, Spec

__all__ = [
    "EditDistance",
    "Motif",
    "Spec",
    "Topology",
    "describe",
    "distance_matrix",
    "domain_topology",
    "edit_distance",
    "ged_distance",
    "task_topology",
    "wl_distance",
    "wl_hash",
]
