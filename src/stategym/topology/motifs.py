"""Motifs and the spec language of synthetic domains.

A spec is a ``+``-separated list of motifs, each at most once, some with a size::

    chain2+fanout3+diamond+branch+askgate2+verifycommit+precond+conflict@7

============  ================================================================================
motif         what it adds to the tool graph
============  ================================================================================
``chainK``    K lookups in series, each piping its result into the next (PIPE chain)
``fanoutN``   N independent sources listing the options, called in one parallel round
``diamond``   two independent lookups off the same key whose results merge (PIPE diamond)
``branch``    a lookup whose returned value decides which of two tools comes next (DECIDE)
``askgateM``  M facts only the user knows gate the choice (``ask`` nodes, GATE edges)
``verifycommit``  hold the choice to see its fresh price, get the user's yes, then pay
              (WRITE -> confirm -> COMMIT, PIPE + ORDER)
``precond``   a state precondition: the option must be prepared before the commit (ORDER)
``conflict``  a priority conflict pair: two preferences no feasible option meets together;
              the user's (hidden) order decides
============  ================================================================================

``@S`` picks surface ``S``: tool names, argument and field names, descriptions and id formats
drawn with seed ``S`` (``@0``, the default, is the plain abstract surface). The surface is an
axis independent of the graph: every surface of a spec has the same topology.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import StrEnum


class Motif(StrEnum):
    CHAIN = "chain"
    FANOUT = "fanout"
    DIAMOND = "diamond"
    BRANCH = "branch"
    ASKGATE = "askgate"
    VERIFYCOMMIT = "verifycommit"
    PRECOND = "precond"
    CONFLICT = "conflict"


SIZED = {Motif.CHAIN: 6, Motif.FANOUT: 6, Motif.ASKGATE: 3}
"""Motifs that take a size, and their largest size."""
PREFIX = "synth:"
BASE = "base"
"""The spec with no motif: one source, one commit."""
_TOKEN = re.compile(r"^([a-z]+?)(\d*)$")


@dataclass(frozen=True, slots=True)
class Spec:
    """A parsed synthetic-domain spec.

    Attributes:
        chain: lookups in series before the sources (0: the sources take the request's
            reference directly).
        fanout: sources listing the options (at least 1).
        diamond: a diamond of lookups after the chain.
        branch: a conditional branch after the diamond.
        askgate: must-ask facts gating the choice (0 to 3).
        verifycommit: hold, confirm, then pay.
        precond: prepare before the commit.
        conflict: a priority conflict pair of preferences.
        surface: the surface seed (names only).
    """

    chain: int = 0
    fanout: int = 1
    diamond: bool = False
    branch: bool = False
    askgate: int = 0
    verifycommit: bool = False
    precond: bool = False
    conflict: bool = False
    surface: int = 0

    @classmethod
    def parse(cls, text: str) -> Spec:
        """Parse ``chain2+fanout3@7`` (with or without the ``synth:`` prefix).

        Raises:
            ValueError: an unknown or repeated motif, or a size out of range.
        """
        text = text.strip().removeprefix(PREFIX)
        body, _, surface = text.partition("@")
        if surface and not surface.isdigit():
            raise ValueError(f"bad surface {surface!r}: use @<integer>")
        values: dict[str, int | bool] = {"surface": int(surface or 0)}
        for token in body.split("+"):
            if token == BASE:
                continue
            motif, size = _motif(token)
            if motif.value in values:
                raise ValueError(f"motif {motif} appears twice in {text!r}")
            values[motif.value] = size if motif in SIZED else True
        return cls(**values)  # type: ignore[arg-type]

    @property
    def key(self) -> str:
        """The canonical spec without the surface (the topology's name)."""
        tokens = []
        if self.chain:
            tokens.append(f"chain{self.chain}")
        if self.fanout > 1:
            tokens.append(f"fanout{self.fanout}")
        tokens += [m.value for m in (Motif.DIAMOND, Motif.BRANCH) if getattr(self, m.value)]
        if self.askgate:
            tokens.append("askgate" if self.askgate == 1 else f"askgate{self.askgate}")
        tokens += [
            m.value
            for m in (Motif.VERIFYCOMMIT, Motif.PRECOND, Motif.CONFLICT)
            if getattr(self, m.value)
        ]
        return "+".join(tokens) or BASE

    @property
    def name(self) -> str:
        """The domain name: ``synth:<key>`` plus ``@<surface>`` for a renamed surface."""
        return PREFIX + self.key + (f"@{self.surface}" if self.surface else "")

    def motifs(self) -> int:
        """How many motif units the spec composes (a sized motif counts its size)."""
        return (
            self.chain
            + (self.fanout - 1)
            + self.askgate
            + sum(bool(getattr(self, m.value)) for m in Motif if m not in SIZED)
        )

    def with_surface(self, surface: int) -> Spec:
        return replace(self, surface=surface)


def _motif(token: str) -> tuple[Motif, int]:
    match = _TOKEN.match(token)
    if match is None:
        raise ValueError(f"bad motif {token!r}")
    name, digits = match.groups()
    try:
        motif = Motif(name)
    except ValueError:
        raise ValueError(
            f"unknown motif {name!r}; motifs: {', '.join(m.value for m in Motif)}"
        ) from None
    if motif not in SIZED:
        if digits:
            raise ValueError(f"motif {motif} takes no size")
        return motif, 1
    size = int(digits) if digits else 1
    low = 1
    if not low <= size <= SIZED[motif]:
        raise ValueError(f"{motif} size must be in {low}..{SIZED[motif]}, got {size}")
    return motif, size


def is_synthetic(name: str) -> bool:
    return name.startswith(PREFIX)
