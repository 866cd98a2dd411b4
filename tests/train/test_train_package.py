"""The package: torch loads only on use, the public names are pinned, the examples run."""

from __future__ import annotations

import doctest
import importlib
import subprocess
import sys

import pytest

import stategym.train

MODULES = ("advantages", "values", "masks", "losses", "batching")


def _loaded_after(statement: str) -> bool:
    script = f"import sys\n{statement}\nprint('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip() == "True"


def test_importing_the_package_does_not_import_torch() -> None:
    assert not _loaded_after("import stategym.train as t\nt.dense_advantages([[1.0]])")
    assert _loaded_after("import stategym.train as t\nt.policy_loss")


def test_the_public_names_are_pinned() -> None:
    assert sorted(stategym.train.__all__) == sorted(
        {
            "AGGREGATIONS", "NORMS", "Aggregation", "Batch", "LossConfig", "LossParts", "Norm",
            "PerRound", "Sample", "Side", "Span", "aggregate", "call_advantages", "collate",
            "composite_advantages", "continuation_return", "dense_advantages", "fill_values",
            "gigpo_advantages", "k3_kl", "loss_mask", "mc_advantages", "mc_value",
            "minibatches", "normalise_group", "outcome_advantages", "pad", "per_round",
            "policy_loss", "return_to_go", "span_sums", "split", "token_advantages",
            "token_entropy", "token_logprobs",
        }
    )  # fmt: skip
    for name in stategym.train.__all__:
        assert getattr(stategym.train, name) is not None
    with pytest.raises(AttributeError):
        _ = stategym.train.no_such_name


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    if name in ("losses", "batching"):
        pytest.importorskip("torch")
    result = doctest.testmod(importlib.import_module(f"stategym.train.{name}"))
    assert result.failed == 0
