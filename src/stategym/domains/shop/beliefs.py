"""What a shop agent has learnt so far, and how it reads the user's words and tool results."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from stategym.agents.hearing import Answers, hear
from stategym.kernel.protocol import Observation
from stategym.kernel.task import Value

from .generator import PREFERENCES, active_preferences, satisfied
from .request import ANY_BRAND, ANY_DAY

_ANSWERS: Answers = (
    ("budget", re.compile(r"budget for the whole order is \$(\d+)"), int),
    ("deadline", re.compile(r"As for delivery, (by day \d+|any day)"), str),
    ("brand", re.compile(r"As for the brand, (\w+)\."), str),
)
DIAMOND = ("get_offers", "get_shipping_quote", "check_stock")
"""The per-product reads whose rows together describe an offer (with ``get_product``)."""
_FIELDS_ORDER = (
    "offer_id",
    "product_id",
    "vendor",
    "unit_price",
    "shipping",
    "stock",
    "delivery_days",
)
_FIELDS = frozenset(_FIELDS_ORDER)
NO_LIMIT = 10**9
"""The budget an agent that never asked assumes."""


def _preference(phrase: str) -> str | None:
    """The preference a phrase of the user's ranking speaks of."""
    if phrase == "an eco-certified product":
        return "eco"
    if phrase.startswith("delivery ") or phrase == "the delivery deadline":
        return "on_time"
    if phrase.startswith("the ") and phrase.endswith(" brand"):
        return "brand"
    return None


@dataclass(slots=True)
class OfferView:
    id: str
    product_id: str
    vendor: str
    unit_price: int
    shipping: int
    stock: int
    delivery_days: int


@dataclass(slots=True)
class ProductView:
    id: str
    name: str
    brand: str
    eco: bool


@dataclass(slots=True)
class Beliefs:
    """The agent's knowledge; ``None`` means not known yet."""

    values: dict[str, Value] = field(default_factory=dict)
    order: tuple[str, ...] | None = None
    address_id: str | None = None
    approved: tuple[str, ...] | None = None
    approval_over: int | None = None
    catalog: dict[str, str] = field(default_factory=dict)
    products: dict[str, ProductView] = field(default_factory=dict)
    offers: dict[str, OfferView] = field(default_factory=dict)
    fetched: set[tuple[str, str]] = field(default_factory=set)
    parts: dict[str, dict[str, Any]] = field(default_factory=dict)
    excluded: set[str] = field(default_factory=set)
    changed: bool = False

    def see(self, observation: Observation) -> dict[str, Any]:
        """Take in tool results and user words; returns successful results by tool name."""
        hear(self, observation.user, _ANSWERS, _preference)
        found: dict[str, Any] = {}
        for result in observation.results:
            if not result.ok:
                continue
            content = result.content
            found[result.name] = content
            if result.name == "get_account":
                self.address_id = content["address_id"]
            elif result.name == "get_purchasing_policy":
                self.approved = tuple(content["approved_vendors"])
                self.approval_over = content["approval_over"]
            elif result.name == "search_catalog":
                self.catalog.update((row["product_id"], row["name"]) for row in content)
            elif result.name == "get_product":
                self.fetched.add(("get_product", content["product_id"]))
                self.products[content["product_id"]] = ProductView(
                    content["product_id"],
                    content["name"],
                    content["brand"],
                    content["eco_certified"],
                )
            elif result.name in DIAMOND:
                self._offers(result.name, content)
            elif result.name == "review_cart":
                self._review(content)
        self._complete()
        return found

    def _offers(self, tool: str, rows: list[dict[str, Any]]) -> None:
        """Merge one per-product read; an offer is known once all of :data:`DIAMOND` saw it."""
        for row in rows:
            self.fetched.add((tool, row["product_id"]))
            self.parts.setdefault(row["offer_id"], {}).update(row)

    def _complete(self) -> None:
        """Know every offer whose reads, and its product's specification, are all in."""
        for offer_id, part in self.parts.items():
            if (
                offer_id not in self.offers
                and part.keys() >= _FIELDS
                and part["product_id"] in self.products
            ):
                self.offers[offer_id] = OfferView(*(part[k] for k in _FIELDS_ORDER))

    def _review(self, content: dict[str, Any]) -> None:
        for row in content["lines"]:
            view = self.offers.get(row["offer_id"])
            if view is not None:
                view.unit_price = row["unit_price"]
                if not row["in_stock"]:
                    view.stock = 0

    def quantity(self) -> int:
        return int(self.values["quantity"])

    def preferences(self) -> tuple[str, ...]:
        return active_preferences(
            PREFERENCES,
            str(self.values.get("deadline", ANY_DAY)),
            str(self.values.get("brand", ANY_BRAND)),
        )

    def sat(self, offer: OfferView) -> frozenset[str]:
        """The constraints an offer satisfies, as far as the agent knows."""
        product = self.products[offer.product_id]
        return satisfied(
            vendor=offer.vendor,
            total=self.total(offer),
            eco=product.eco,
            arrives=1 + offer.delivery_days,
            brand=product.brand,
            approved=self.approved or (),
            budget=int(self.values.get("budget", NO_LIMIT)),
            deadline=str(self.values.get("deadline", ANY_DAY)),
            wanted_brand=str(self.values.get("brand", ANY_BRAND)),
        )

    def total(self, offer: OfferView) -> int:
        return offer.unit_price * self.quantity() + offer.shipping

    def needs_approval(self, total: int) -> bool:
        """Whether the policy wants a purchase approval for an order of ``total``."""
        return self.approval_over is not None and total > self.approval_over

    def feasible(self, offer: OfferView) -> bool:
        hits = self.sat(offer)
        return (
            "within_policy" in hits
            and "within_budget" in hits
            and offer.stock >= self.quantity()
            and offer.id not in self.excluded
        )

    def meets(self, offer: OfferView) -> frozenset[str]:
        """The active preferences an offer meets, as far as the agent knows."""
        return self.sat(offer) & set(self.preferences())

    def default_order(self) -> tuple[str, ...]:
        return self.preferences()
