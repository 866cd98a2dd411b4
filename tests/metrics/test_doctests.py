"""The formula examples in the metrics docstrings are tests too."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import stategym.metrics

MODULES = sorted(
    m.name for m in pkgutil.iter_modules(stategym.metrics.__path__, "stategym.metrics.")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_the_formula_modules_have_examples():
    for name in ("clarification", "priority", "parallelism", "risk", "composite", "aggregate"):
        module = importlib.import_module(f"stategym.metrics.{name}")
        assert doctest.DocTestFinder().find(module), name
