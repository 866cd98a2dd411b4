"""Shared fixtures: every registered domain, and bounded, deterministic Hypothesis settings.

``HYPOTHESIS_PROFILE=thorough`` runs the property tests with many more (random) examples.
"""

from __future__ import annotations

import contextlib
import os
import warnings

import pytest
from hypothesis import HealthCheck, settings

from stategym.kernel.domain import Domain
from stategym.registry import all_domains

# Hypothesis imports its failing-example patcher only once a test has failed; its
# dependencies then emit deprecation warnings, which (warnings are errors) turn the failure
# report into an INTERNALERROR. Importing it here, warnings silenced, keeps reports readable.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    with contextlib.suppress(ImportError):
        import hypothesis.extra._patching  # noqa: F401

settings.register_profile(
    "stategym",
    max_examples=60,
    deadline=None,
    derandomize=True,  # same examples on every run: a red test stays red
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough",
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "stategym"))

DOMAIN_NAMES = sorted(all_domains())
"""Every registered domain; tests parametrised over it pick up new domains automatically."""


@pytest.fixture(params=DOMAIN_NAMES)
def domain(request: pytest.FixtureRequest) -> Domain:
    """Each registered domain in turn."""
    return all_domains()[request.param]
