"""Audit 13B, the protocol and topology findings F1, F2, F7, F8 and F9, each reproduced
through the path the auditor took (``stategym protocol`` / ``stategym topology``, or
:func:`run_protocol` and :func:`build_report` with an agent stood in at the resolver seam)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from stategym.agents import ScriptedAgent
from stategym.cli import main
from stategym.kernel.protocol import Observation
from stategym.topology import generalisation as protocol_module
from stategym.topology.generalisation import ProtocolConfig, run_protocol
from stategym.topology.report import build_report, render
from stategym.topology.split import Split, make_splits


def _quit_at_once(observation: Observation) -> Any:
    """A script with no action: the agent finishes in its first round, failing everything."""
    return
    yield


@pytest.fixture
def quitter(monkeypatch: pytest.MonkeyPatch) -> None:
    """``openai:quits`` stands for an LLM agent that fails every task (as audit 13B's tiny
    ``hf:`` model did), played in this process through the protocol's resolver seam."""
    real = protocol_module.resolve

    def resolve(domain: Any, spec: str, **options: Any) -> Any:
        if ":" in spec:
            return lambda task: ScriptedAgent("quits", _quit_at_once)
        return real(domain, spec)

    monkeypatch.setattr(protocol_module, "resolve", resolve)


@pytest.fixture(scope="module")
def base_cells() -> tuple[Any, ...]:
    """Cells for ``synth:base`` whose failing R is 0.05 in some and 0.05000000000000001 in
    others (the float noise of audit 13B F1), at different distances."""
    keep = {"synth:base", "travel", "meetings", "lookup", "shop", "bank"}
    cells = make_splits(("synth:base",), compositions_per_split=0)
    return tuple(c for c in cells if c.domain in keep)


def _report(cells: tuple[Any, ...], episodes: int) -> dict[str, Any]:
    config = ProtocolConfig("openai:quits", ("synth:base",), episodes=episodes, probes=0, plans=1)
    return build_report(run_protocol(config, cells))


def test_an_r_constant_up_to_float_noise_has_no_rank_correlation(quitter, base_cells) -> None:
    """F1: R was 0.05 in every cell up to the last bit; ranked raw, the noise made up a
    Spearman of -0.647 and a slope of -7e-18. Constant R has slope 0 and no correlation."""
    report = _report(base_cells, episodes=1)
    composites = {c["composite"] for c in report["cells"]}
    assert len(composites) > 1 and max(composites) - min(composites) < 1e-12  # the noise
    fit = report["score_vs_distance"]["0"]
    assert fit["spearman"] is None and fit["slope"] == 0.0
    rows = dict(render(report)[2].rows)
    assert rows["R vs distance Spearman (k=0)"] == "-"
    assert rows["R vs distance slope (k=0)"] == "+0.000"


def test_values_equal_up_to_float_noise_share_one_rank(quitter, base_cells) -> None:
    """F1, the same noise where R does vary: cells whose R differs in the last bit are a
    tie (one average rank), so the correlation is the one of R without the noise."""
    stats = pytest.importorskip("scipy.stats")
    report = _report(base_cells, episodes=2)
    cells = report["cells"]
    assert len({round(c["composite"], 12) for c in cells}) < len({c["composite"] for c in cells})
    expected = stats.spearmanr(
        [c["distance"] for c in cells], [round(c["composite"], 12) for c in cells]
    ).statistic
    assert report["score_vs_distance"]["0"]["spearman"] == pytest.approx(expected, abs=1e-12)


def _protocol(out: Path, *flags: str) -> dict[str, Any]:
    """Run ``stategym protocol`` with ``flags`` into ``out``; its ``cells.json``."""
    argv = ["protocol", "--episodes", "1", "--compositions", "0", "--out", str(out), *flags]
    assert main(argv) == 0
    return orjson.loads((out / "cells.json").read_bytes())


def test_a_scripted_agent_plays_zero_shot_whatever_shots_holds(tmp_path: Path) -> None:
    """F2: ``--shots 1,3`` with a scripted agent played no agent episode at all, while the
    note said it ran zero-shot. It plays k=0 in every cell, and the note says so."""
    out = tmp_path / "run"
    flags = ("--agents", "serial", "--train-on", "synth:base", "--probes", "0")
    index = _protocol(out, *flags, "--shots", "1,3")
    lines = (out / "serial" / "trajectories.jsonl").read_bytes().splitlines()
    agent = Counter(
        int(e["meta"]["shots"]) for e in map(orjson.loads, lines) if e["run"]["role"] == "agent"
    )
    assert agent == {0: len(index["cells"])}
    report = orjson.loads((out / "serial" / "report.json").read_bytes())
    assert [c["shots"] for c in report["cells"]] == [0] * len(index["cells"])
    assert report["splits"]["0"] and report["gaps"]["0"]
    assert any("zero-shot (k=0) only" in note and "(1,3)" in note for note in report["notes"])


def test_agent_shots_is_the_rule() -> None:
    """F2: one public rule for the shots an agent plays (the log check mirrors it)."""
    from stategym.topology.generalisation import agent_shots

    for shots in ((0,), (1, 3), (0, 1, 8)):
        assert agent_shots(ProtocolConfig("serial", ("travel",), shots=shots)) == (0,)
        assert agent_shots(ProtocolConfig("openai:m", ("travel",), shots=shots)) == shots


def test_no_probe_note_when_no_probe_was_asked_for(tmp_path: Path) -> None:
    """F7: ``--probes 0`` noted that travel, meetings... have no probe pair; they have (the
    default run finds 10 each), none was asked for."""
    flags = ("--agents", "serial", "--train-on", "travel", "--probes", "0")
    index = _protocol(tmp_path / "run", *flags)
    report = orjson.loads((tmp_path / "run" / "serial" / "report.json").read_bytes())
    for notes in (index["notes"], report["notes"]):
        assert not any("probe" in note for note in notes), notes


def test_the_probe_note_says_what_the_search_did(tmp_path: Path) -> None:
    """F7: where probes were asked for and the search gave up, the note says how many pairs
    it found and when it gives up, not that the domain has none."""
    flags = ("--agents", "serial", "--train-on", "synth:base", "--probes", "1")
    index = _protocol(tmp_path / "run", *flags)
    (note,) = [n for n in index["notes"] if "probe" in n]
    assert "fewer counterfactual probe pairs than --probes 1" in note
    assert "synth:base 0" in note and "gives up once 40 x (pairs found + 1)" in note
    assert "travel" not in note  # travel has a pair among its first seeds


def test_a_spec_at_the_size_caps_has_no_larger_cell(tmp_path: Path) -> None:
    """F8: ``synth:fanout6`` grows into itself (every size capped), and its "larger" cell was
    the training spec, a +0.00 "larger" gap. The cell is left out and a note says why."""
    index = _protocol(
        tmp_path / "run", "--agents", "serial", "--train-on", "synth:fanout6", "--probes", "0"
    )
    assert Split.LARGER not in {c["split"] for c in index["cells"]}
    report = orjson.loads((tmp_path / "run" / "serial" / "report.json").read_bytes())
    assert "larger" not in report["splits"]["0"] and "larger" not in report["gaps"]["0"]
    assert "| larger |" not in (tmp_path / "run" / "protocol.md").read_text()
    assert any(
        n.startswith("no larger split for synth:fanout6: grown, it is synth:fanout6")
        for n in report["notes"]
    ), report["notes"]


def test_a_spec_grown_into_another_training_spec_has_no_larger_cell() -> None:
    """F8, the same rule: chain2 grows into chain4, a training spec, so only chain4's grown
    spec is a larger cell, and no larger cell is a training topology."""
    train = ("synth:chain2", "synth:chain4")
    larger = [c for c in make_splits(train, compositions_per_split=0) if c.split is Split.LARGER]
    assert [c.domain for c in larger] == ["synth:chain6"]
    assert not any(c.placement.seen for c in larger)
    from stategym.topology.split import ungrowable

    assert ungrowable(train) == {"synth:chain2": "synth:chain4"}


@pytest.mark.parametrize("name", ["f9.txt", "f9noext"])
def test_draw_refuses_a_format_it_cannot_write_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """F9: ``--draw f9.txt`` was a matplotlib traceback, and ``--draw f9noext`` printed
    "drew f9noext" while writing f9noext.png. Both are refused before anything is drawn."""
    path = tmp_path / name
    with pytest.raises(SystemExit) as exited:
        main(["topology", "synth:base", "--draw", str(path)])
    assert exited.value.code == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "cannot draw to" in error and ".svg" in error
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["t.svg", "t.PNG", "t.pdf"])
def test_draw_prints_the_file_it_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """F9 (a guard): every format drawn is written to the path printed, and only there."""
    if not name.endswith(".svg"):
        pytest.importorskip("matplotlib")
    path = tmp_path / name
    assert main(["topology", "synth:base", "--draw", str(path)]) == 0
    printed = "".join(capsys.readouterr().out.split())  # rich may wrap a long path
    assert f"drew{path}" in printed
    assert list(tmp_path.iterdir()) == [path]
