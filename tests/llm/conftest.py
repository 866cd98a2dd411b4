"""Fixtures for the LLM tests: the scripted endpoint and the tiny model, built once per
session by the real recipe, small enough to train in about a minute.

Test modules that need the optional libraries skip themselves when they are missing
(``pytest.importorskip``); a conftest cannot skip without failing the collection.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

TEST_RECIPE = {"episodes": 160, "steps": 70, "batch_size": 6, "lr": 4e-3, "max_length": 1024}
"""Small enough to build in about a minute on two busy cores."""


@pytest.fixture
def endpoint() -> Callable[..., Any]:
    """Makes a :class:`llm_fixtures.ScriptedEndpoint` from a script."""
    from llm_fixtures import ScriptedEndpoint

    return ScriptedEndpoint


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model, built once per test session by the real recipe."""
    from stategym.llm.tiny import TinyConfig, init_model

    return init_model(tmp_path_factory.mktemp("tiny") / "model", TinyConfig(**TEST_RECIPE))
