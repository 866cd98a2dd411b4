"""Which knobs each task of an evaluation uses.

``default`` (every property on), any ``Knobs.parse`` spec, or ``mixed``: seed ``s`` plays
``MIXED[s % len(MIXED)]``, every single-knob-off variant and the stateless special case in
turn, so one evaluation covers the whole range from Search-R1-like lookup to the full
problem.
"""

from __future__ import annotations

from collections.abc import Callable

from stategym.kernel.knobs import Knobs

MIXED: tuple[Knobs, ...] = (
    Knobs(),
    Knobs(stateful=False),
    Knobs(irreversible=False),
    Knobs(hidden_info=False),
    Knobs(priorities=False),
    Knobs(dynamics=False),
    Knobs.all_off(),
)
"""The mixed task set's knob settings, in the order seeds cycle through them."""


def knob_schedule(spec: str) -> Callable[[int], Knobs]:
    """``seed -> knobs`` for a spec: ``mixed`` or a :meth:`Knobs.parse` spec.

    >>> knob_schedule("mixed")(8) == Knobs(stateful=False)
    True
    >>> knob_schedule("dynamics=off")(8).dynamics
    False
    """
    if spec.strip() == "mixed":
        return lambda seed: MIXED[seed % len(MIXED)]
    knobs = Knobs.parse(spec)
    return lambda seed: knobs
