"""The spec language of synthetic domains."""

from __future__ import annotations

import pytest

from stategym.topology.motifs import Spec


def test_parse_and_canonical_names() -> None:
    spec = Spec.parse("synth:verifycommit+fanout3+chain2+askgate@7")
    assert spec == Spec(chain=2, fanout=3, askgate=1, verifycommit=True, surface=7)
    assert spec.key == "chain2+fanout3+askgate+verifycommit"
    assert spec.name == "synth:chain2+fanout3+askgate+verifycommit@7"
    assert Spec.parse(spec.name) == spec
    assert Spec.parse("base") == Spec()
    assert Spec().name == "synth:base"
    assert Spec.parse("askgate3+conflict").motifs() == 4
    assert Spec.parse("chain2+fanout3+diamond").motifs() == 5


@pytest.mark.parametrize(
    "bad",
    [
        "chain0",
        "chain7",
        "fanout9",
        "diamond2",
        "loop",
        "chain2+chain3",
        "chain2@x",
        "askgate4",
        "",
        "chain2+",
    ],
)
def test_bad_specs_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        Spec.parse(bad)
