"""Shop: typed records and the episode world."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from stategym.kernel.knobs import Knobs
from stategym.kernel.world import USER_ACCOUNT, Table, World

VENDOR_ACCOUNT = "vendors"


@dataclass(frozen=True, slots=True)
class Product:
    id: str
    name: str
    brand: str
    category: str
    eco: bool


@dataclass(frozen=True, slots=True)
class Offer:
    """One vendor's offer for one product; the option a purchase selects."""

    id: str
    product_id: str
    vendor: str
    unit_price: int
    shipping: int
    stock: int
    delivery_days: int


@dataclass(frozen=True, slots=True)
class Account:
    buyer: str
    address_id: str
    city: str


@dataclass(frozen=True, slots=True)
class Policy:
    """The purchasing policy.

    Attributes:
        approved_vendors: the vendors purchases may be made from.
        approval_over: orders whose total exceeds this need a purchase approval.
    """

    approved_vendors: tuple[str, ...]
    approval_over: int


@dataclass(frozen=True, slots=True)
class Approval:
    """A purchase approval for a cart's lines as they were when it was granted."""

    id: str
    cart_id: str
    lines: tuple[str, ...]
    total: int


@dataclass(frozen=True, slots=True)
class Cart:
    """The open cart; ``address_id`` is where checkout ships (``None`` until set)."""

    id: str
    status: Literal["open", "ordered"]
    address_id: str | None = None


@dataclass(frozen=True, slots=True)
class Line:
    """One offer in a cart. Prices are not locked: the cart shows the current price."""

    id: str
    cart_id: str
    offer_id: str
    quantity: int
    expires_at: int | None
    status: Literal["active", "removed", "ordered"]


@dataclass(frozen=True, slots=True)
class Order:
    """A placed order: every line of one checkout.

    Attributes:
        items: ``(offer_id, quantity, paid)`` per line.
        option: the option the order commits to (see :func:`order_option`).
    """

    id: str
    items: tuple[tuple[str, int, int], ...]
    paid: int
    option: str
    status: Literal["placed", "returned"]


@dataclass(frozen=True, slots=True)
class ShopBase:
    """The generated, read-only part of a shop world.

    Attributes:
        quantity: how many units the request asks for; an order of another quantity
            does not commit to the offer as an option (see :func:`order_option`).
    """

    products: Mapping[str, Product]
    offers: Mapping[str, Offer]
    account: Account
    policy: Policy
    quantity: int
    balance: int


def order_option(base: ShopBase, items: tuple[tuple[str, int, int], ...]) -> str:
    """The option an order of ``items`` selects.

    One line of the requested quantity selects its offer id. Anything else (several
    offers, another quantity) is not an option the user can agree to, and is named so
    that it matches no option id.
    """
    if len(items) == 1 and items[0][1] == base.quantity:
        return items[0][0]
    return "+".join(f"{offer}x{quantity}" for offer, quantity, _ in items)


class ShopWorld(World):
    TABLES = ("offers", "carts", "lines", "approvals", "orders")

    def __init__(self, base: ShopBase, knobs: Knobs) -> None:
        super().__init__({USER_ACCOUNT: base.balance, VENDOR_ACCOUNT: 0})
        self.base = base
        self.knobs = knobs
        self.offers: Table[str, Offer] = Table(base.offers)
        self.carts: Table[str, Cart] = Table({})
        self.lines: Table[str, Line] = Table({})
        self.approvals: Table[str, Approval] = Table({})
        self.orders: Table[str, Order] = Table({})
