"""The registry: domain names to :class:`~stategym.kernel.domain.Domain` objects, seeds to tasks.

It is the one module that knows which domains exist. The list below is explicit and each
domain is imported on first use, so importing the registry is cheap. ``synth:<spec>[@<surface>]``
names a synthetic domain (:mod:`stategym.domains.synthetic`), composed from topology motifs
on demand and cached by its canonical name.

The kernel never imports this module: it works on ``Domain`` objects, and
``import stategym`` hands it this registry (:func:`stategym.kernel.domain.use_registry`) to turn the
names users pass (``Env("travel")``, a trajectory's ``domain``) into domains and tasks.
See ``docs/architecture.md``.
"""

from __future__ import annotations

import functools
import importlib

from stategym.kernel.domain import Domain
from stategym.kernel.errors import UnknownDomainError
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import Task, check_seed

SYNTHETIC = "synth:"
"""Prefix of a synthetic domain's name."""

DOMAINS: dict[str, str] = {
    "travel": "stategym/Travel-v0",
    "meetings": "stategym/Meetings-v0",
    "cloud": "stategym/Cloud-v0",
    "lookup": "stategym/Lookup-v0",
    "shop": "stategym/Shop-v0",
    "bank": "stategym/Bank-v0",
}
"""Every registered domain, in listing order, with its Gymnasium id. Domain ``name`` lives in
``stategym.domains.<name>`` as ``DOMAIN``. The ids are known without importing any domain, so
they register cheaply; a test checks each equals its domain's ``env_id``."""

_LOADED: dict[str, Domain] = {}


def all_domains() -> dict[str, Domain]:
    """Every registered domain by name, in listing order (each imported on first use)."""
    return {name: get_domain(name) for name in DOMAINS}


def get_domain(name: str) -> Domain:
    """The domain registered under ``name``, or the synthetic domain it names.

    Only that domain's package is imported.

    Raises:
        UnknownDomainError: no such domain (or a synthetic spec that does not parse).
    """
    if name.startswith(SYNTHETIC):
        from stategym.domains.synthetic import synthetic_domain

        return synthetic_domain(name)
    domain = _LOADED.get(name)
    if domain is None:
        if name not in DOMAINS:
            raise UnknownDomainError(f"unknown domain {name!r}; registered: {', '.join(DOMAINS)}")
        # The name comes from the explicit table above: this is a deferred import, not discovery.
        domain = importlib.import_module(f"stategym.domains.{name}").DOMAIN
        _LOADED[name] = domain
    return domain


@functools.lru_cache(maxsize=4096, typed=True)
def cached_task(domain: str, seed: int, knobs: Knobs) -> Task:
    """Generate (or reuse) a task; tasks are pure functions of their arguments.

    ``typed``: an untyped cache keys on equality, and True == 1 == numpy.int64(1), so the
    first caller's type would stay in the task (its id, its trajectories) for every later
    caller; each type gets its own entry, and every task holds the plain ``int`` seed.

    Raises:
        TypeError, ValueError: ``seed`` is no seed (:func:`~stategym.kernel.task.check_seed`).
    """
    return get_domain(domain).generate(check_seed(seed), knobs)
