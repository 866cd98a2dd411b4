"""The registered domains, listed explicitly."""

from __future__ import annotations

from stategym.domain import Domain
from stategym.errors import UnknownDomainError


def _domains() -> dict[str, Domain]:
    from stategym.domains import bank, cloud, lookup, meetings, shop, travel

    return {
        d.name: d
        for d in (
            travel.DOMAIN,
            meetings.DOMAIN,
            cloud.DOMAIN,
            lookup.DOMAIN,
            shop.DOMAIN,
            bank.DOMAIN,
        )
    }


_REGISTRY: dict[str, Domain] = {}


def all_domains() -> dict[str, Domain]:
    """Every registered domain by name (imported on first use)."""
    if not _REGISTRY:
        _REGISTRY.update(_domains())
    return _REGISTRY


def get_domain(name: str) -> Domain:
    if name.startswith("synth:"):  # composed from motifs on demand, cached by spec
        from stategym.topology.synthetic import synthetic_domain

        return synthetic_domain(name)
    try:
        return all_domains()[name]
    except KeyError:
        raise UnknownDomainError(
            f"unknown domain {name!r}; registered: {', '.join(all_domains())}"
        ) from None
