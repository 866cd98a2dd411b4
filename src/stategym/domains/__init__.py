"""The registered domains, listed explicitly."""

from __future__ import annotations

from stategym.domain import Domain
from stategym.errors import UnknownDomainError


def _domains() -> dict[str, Domain]:
    from stategym.domains import travel

    return {d.name: d for d in (travel.DOMAIN,)}


_REGISTRY: dict[str, Domain] = {}


def all_domains() -> dict[str, Domain]:
    """Every registered domain by name (imported on first use)."""
    if not _REGISTRY:
        _REGISTRY.update(_domains())
    return _REGISTRY


def get_domain(name: str) -> Domain:
    try:
        return all_domains()[name]
    except KeyError:
        raise UnknownDomainError(
            f"unknown domain {name!r}; registered: {', '.join(all_domains())}"
        ) from None
