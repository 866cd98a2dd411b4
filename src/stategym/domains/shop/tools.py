"""Shop tools. Each docstring is exactly what the model sees, as its ``when_off``
sentences change it where a knob is off (:mod:`stategym.kernel.knob_text`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from stategym.kernel.errors import ToolError
from stategym.kernel.tools import Effect, tool
from stategym.kernel.world import USER_ACCOUNT

from .world import VENDOR_ACCOUNT, Approval, Cart, Line, Offer, Order, ShopWorld, order_option

CART_TICKS = 6
"""A cart line lasts this many clock ticks (when dynamics are on). It sets no stock aside and
locks no price: checkout reads both as they are then (a scheduled sell-out still fails it)."""
RESTOCKING_PCT = 20
"""Returning an order costs this share of what was paid (when irreversible is on)."""


@tool(effect=Effect.READ)
def get_account(world: ShopWorld) -> dict[str, Any]:
    """Read the buyer's account: name, the id of the delivery address on file, and its city."""
    a = world.base.account
    return {"buyer": a.buyer, "address_id": a.address_id, "city": a.city}


@tool(effect=Effect.READ)
def get_purchasing_policy(world: ShopWorld) -> dict[str, Any]:
    """Read the company purchasing policy: the vendors purchases may be made from, and the
    order total above which an order needs a purchase approval."""
    policy = world.base.policy
    return {
        "approved_vendors": list(policy.approved_vendors),
        "approval_over": policy.approval_over,
    }


@tool(effect=Effect.READ)
def search_catalog(world: ShopWorld, query: str) -> list[dict[str, Any]]:
    """Search the catalog for products of a kind. Specifications come from get_product,
    offers and prices from get_offers.

    Args:
        query: the kind of product, e.g. "office chair".
    """
    wanted = query.strip().lower().removesuffix("s")
    if not wanted:
        return []
    return [
        {"product_id": p.id, "name": p.name}
        for p in world.base.products.values()
        if wanted in p.category or p.category in wanted
    ]


@tool(effect=Effect.READ)
def get_product(world: ShopWorld, product_id: str) -> dict[str, Any]:
    """Read one product's specification: its brand and whether it is eco-certified.

    Args:
        product_id: a product from search_catalog.
    """
    product = world.base.products.get(product_id)
    if product is None:
        raise ToolError(f"no product {product_id}")
    return {
        "product_id": product.id,
        "name": product.name,
        "brand": product.brand,
        "eco_certified": product.eco,
    }


def _product_offers(world: ShopWorld, product_id: str) -> list[Offer]:
    """The product's offers that are still available."""
    if product_id not in world.base.products:
        raise ToolError(f"no product {product_id}")
    return [o for o in world.offers.values() if o.product_id == product_id and o.stock > 0]


@tool(effect=Effect.READ, latency=2, when_off={"dynamics": {", which can change": ""}})
def get_offers(world: ShopWorld, product_id: str) -> list[dict[str, Any]]:
    """List the vendors' available offers for one product and their unit prices, which can
    change. Shipping and arrival come from get_shipping_quote, units on hand from check_stock.

    Args:
        product_id: a product from search_catalog.
    """
    return [
        {
            "offer_id": o.id,
            "product_id": o.product_id,
            "vendor": o.vendor,
            "unit_price": o.unit_price,
        }
        for o in _product_offers(world, product_id)
    ]


@tool(effect=Effect.READ, latency=2)
def get_shipping_quote(world: ShopWorld, product_id: str, address_id: str) -> list[dict[str, Any]]:
    """Quote shipping to an address for every available offer of one product: the shipping
    cost per order and the delivery time in days.

    Args:
        product_id: a product from search_catalog.
        address_id: the delivery address id from get_account.
    """
    if address_id != world.base.account.address_id:
        raise ToolError(f"no address {address_id} on file")
    return [
        {
            "offer_id": o.id,
            "product_id": o.product_id,
            "shipping": o.shipping,
            "delivery_days": o.delivery_days,
        }
        for o in _product_offers(world, product_id)
    ]


@tool(effect=Effect.READ, when_off={"dynamics": {"Stock can change.": ""}})
def check_stock(world: ShopWorld, product_id: str) -> list[dict[str, Any]]:
    """Check the units each vendor has on hand for one product. Stock can change.

    Args:
        product_id: a product from search_catalog.
    """
    return [
        {"offer_id": o.id, "product_id": o.product_id, "stock": o.stock}
        for o in _product_offers(world, product_id)
    ]


@tool(
    effect=Effect.WRITE,
    when_off={
        "dynamics": {
            "A line lasts until its expires_at but sets no stock aside and does not lock the "
            "price: checkout charges current prices and fails if the offer sells out first.": (
                "A line does not expire; prices do not change here, and only your own orders "
                "take stock."
            )
        }
    },
)
def add_to_cart(world: ShopWorld, offer_id: str, quantity: int) -> dict[str, Any]:
    """Put units of an offer in the cart (one open cart; created on the first add). A line
    lasts until its expires_at but sets no stock aside and does not lock the price: checkout
    charges current prices and fails if the offer sells out first. Changing the cart clears
    its delivery address.

    Args:
        offer_id: an offer from get_offers.
        quantity: number of units.
    """
    offer = world.offers.get(offer_id)
    if offer is None:
        raise ToolError(f"no offer {offer_id}")
    if quantity < 1:
        raise ToolError("quantity must be at least 1")
    if offer.stock < quantity:
        raise ToolError(f"offer {offer_id} has only {offer.stock} in stock")
    cart = next((c for c in world.carts.values() if c.status == "open"), None)
    if cart is None:
        cart = Cart(world.new_id("K"), "open")
    # A changed cart ships anew: its delivery must be set after the last change.
    world.carts[cart.id] = replace(cart, address_id=None)
    expires = world.clock + CART_TICKS if world.knobs.dynamics else None
    line = Line(world.new_id("L"), cart.id, offer_id, quantity, expires, "active")
    world.lines[line.id] = line
    return {
        "cart_id": cart.id,
        "line_id": line.id,
        "option": offer_id,
        "quantity": quantity,
        "expires_at": expires,
    }


@tool(effect=Effect.WRITE)
def remove_from_cart(world: ShopWorld, line_id: str) -> dict[str, Any]:
    """Take a line out of the cart.

    Args:
        line_id: a line from add_to_cart.
    """
    line = world.lines.get(line_id)
    if line is None or line.status != "active":
        raise ToolError(f"no active cart line {line_id}")
    world.lines[line_id] = replace(line, status="removed")
    cart = world.carts[line.cart_id]
    if cart.status == "open":
        world.carts[cart.id] = replace(cart, address_id=None)
    return {"line_id": line_id, "option": line.offer_id}


@tool(effect=Effect.WRITE)
def set_delivery(world: ShopWorld, cart_id: str, address_id: str) -> dict[str, Any]:
    """Set the cart's delivery address; checkout ships there. Set it after the last item is
    in the cart.

    Args:
        cart_id: the cart from add_to_cart.
        address_id: the delivery address id from get_account.
    """
    lines = _active_lines(world, cart_id)
    if not lines:
        raise ToolError(f"cart {cart_id} is empty")
    if address_id != world.base.account.address_id:
        raise ToolError(f"no address {address_id} on file")
    world.carts[cart_id] = replace(world.carts[cart_id], address_id=address_id)
    return {
        "cart_id": cart_id,
        "option": order_option(world.base, _items(world, lines)),
        "address_id": address_id,
    }


def _active_lines(world: ShopWorld, cart_id: str) -> list[Line]:
    cart = world.carts.get(cart_id)
    if cart is None:
        raise ToolError(f"no cart {cart_id}")
    if cart.status != "open":
        raise ToolError(f"cart {cart_id} was already checked out")
    return [ln for ln in world.lines.values() if ln.cart_id == cart_id and ln.status == "active"]


@tool(
    effect=Effect.READ,
    when_off={"dynamics": {" and when it expires": ""}},
    reads_own_writes=True,
)
def review_cart(world: ShopWorld, cart_id: str) -> dict[str, Any]:
    """Show the cart at current prices and stock: each line, whether its units are still in
    stock, its arrival day and when it expires, and the total that checkout would charge.

    Args:
        cart_id: the cart from add_to_cart.
    """
    rows = []
    for line in _active_lines(world, cart_id):
        offer = world.offers[line.offer_id]
        product = world.base.products[offer.product_id]
        rows.append(
            {
                "line_id": line.id,
                "offer_id": offer.id,
                "product": product.name,
                "vendor": offer.vendor,
                "quantity": line.quantity,
                "unit_price": offer.unit_price,
                "shipping": offer.shipping,
                "line_total": offer.unit_price * line.quantity + offer.shipping,
                "in_stock": offer.stock >= line.quantity,
                "arrives_day": 1 + offer.delivery_days,
                "expires_at": line.expires_at,
            }
        )
    return {"cart_id": cart_id, "lines": rows, "total": sum(r["line_total"] for r in rows)}


def _items(world: ShopWorld, lines: list[Line]) -> tuple[tuple[str, int, int], ...]:
    """``(offer_id, quantity, line total)`` of every line, at current prices."""
    items = []
    for line in lines:
        offer = world.offers[line.offer_id]
        items.append((offer.id, line.quantity, offer.unit_price * line.quantity + offer.shipping))
    return tuple(items)


@tool(effect=Effect.WRITE)
def request_approval(world: ShopWorld, cart_id: str) -> dict[str, Any]:
    """Request the purchase approval the policy requires above its threshold. It covers the
    cart's lines and total as they are now, so set the delivery first.

    Args:
        cart_id: the cart from add_to_cart.
    """
    lines = _active_lines(world, cart_id)
    if not lines:
        raise ToolError(f"cart {cart_id} is empty")
    if world.carts[cart_id].address_id is None:
        raise ToolError(f"set the delivery of cart {cart_id} first: approvals cover the shipment")
    approved = world.base.policy.approved_vendors
    for line in lines:
        vendor = world.offers[line.offer_id].vendor
        if vendor not in approved:
            raise ToolError(f"approval denied: {vendor} is not an approved vendor")
    items = _items(world, lines)
    total = sum(item[2] for item in items)
    approval = Approval(world.new_id("A"), cart_id, tuple(ln.id for ln in lines), total)
    world.approvals[approval.id] = approval
    return {
        "approval_id": approval.id,
        "option": order_option(world.base, items),
        "approved_total": total,
    }


def _check_approval(
    world: ShopWorld, cart_id: str, lines: list[Line], total: int, approval_id: str
) -> None:
    """Refuse a checkout above the policy's threshold without a matching approval."""
    if total <= world.base.policy.approval_over:
        return
    approval = world.approvals.get(approval_id)
    if approval is None or approval.cart_id != cart_id:
        raise ToolError(
            f"orders over {world.base.policy.approval_over} need an approval from request_approval"
        )
    if approval.lines != tuple(ln.id for ln in lines) or total > approval.total:
        raise ToolError(f"the cart changed since approval {approval_id}; request a new one")


@tool(
    effect=Effect.COMMIT,
    when_off={
        "irreversible": {
            "Returning it later costs a restocking fee.": "Returning it later refunds it in full."
        }
    },
)
def checkout(world: ShopWorld, cart_id: str, approval_id: str = "") -> dict[str, Any]:
    """Place the order for everything in the cart at current prices, ship it to the cart's
    delivery address and charge the buyer's card. Returning it later costs a restocking fee.

    Args:
        cart_id: the cart from add_to_cart, with its address set by set_delivery.
        approval_id: the purchase approval, when the total is above the policy's threshold.
    """
    lines = _active_lines(world, cart_id)
    if not lines:
        raise ToolError(f"cart {cart_id} is empty")
    if world.carts[cart_id].address_id is None:
        raise ToolError(f"cart {cart_id} has no delivery address; use set_delivery")
    for line in lines:
        if line.expires_at is not None and world.clock > line.expires_at:
            raise ToolError(f"line {line.id} expired at t={line.expires_at}; add the offer again")
        if world.offers[line.offer_id].stock < line.quantity:
            raise ToolError(f"offer {line.offer_id} sold out before checkout")
    items = _items(world, lines)
    paid = sum(item[2] for item in items)
    _check_approval(world, cart_id, lines, paid, approval_id)
    for line in lines:
        offer = world.offers[line.offer_id]
        world.offers[offer.id] = replace(offer, stock=offer.stock - line.quantity)
        world.lines[line.id] = replace(line, status="ordered")
    world.carts[cart_id] = replace(world.carts[cart_id], status="ordered")
    order = Order(world.new_id("O"), items, paid, order_option(world.base, items), "placed")
    world.orders[order.id] = order
    world.transfer(USER_ACCOUNT, VENDOR_ACCOUNT, paid, f"order {order.option}", order.id)
    return {
        "order_id": order.id,
        "option": order.option,
        "charged": paid,
        "items": [{"offer_id": o, "quantity": q, "paid": p} for o, q, p in items],
    }


@tool(
    effect=Effect.COMMIT,
    when_off={
        "irreversible": {
            "The refund is what was paid minus a restocking fee.": (
                "The refund is everything that was paid."
            )
        }
    },
)
def return_order(world: ShopWorld, order_id: str) -> dict[str, Any]:
    """Return a placed order. The refund is what was paid minus a restocking fee.

    Args:
        order_id: the order to return.
    """
    order = world.orders.get(order_id)
    if order is None or order.status != "placed":
        raise ToolError(f"no placed order {order_id}")
    fee = order.paid * RESTOCKING_PCT // 100 if world.knobs.irreversible else 0
    world.orders[order_id] = replace(order, status="returned")
    for offer_id, quantity, _ in order.items:
        offer = world.offers[offer_id]
        world.offers[offer_id] = replace(offer, stock=offer.stock + quantity)
    if order.paid - fee > 0:
        world.transfer(VENDOR_ACCOUNT, USER_ACCOUNT, order.paid - fee, "refund", order_id)
    return {"order_id": order_id, "option": order.option, "refund": order.paid - fee, "fee": fee}


@tool(effect=Effect.READ, reads_own_writes=True)
def list_orders(world: ShopWorld) -> list[dict[str, Any]]:
    """List the buyer's orders and their status."""
    return [
        {"order_id": o.id, "offers": [i[0] for i in o.items], "paid": o.paid, "status": o.status}
        for o in world.orders.values()
    ]


TOOLS = (
    get_account,
    get_purchasing_policy,
    search_catalog,
    get_product,
    get_offers,
    get_shipping_quote,
    check_stock,
    add_to_cart,
    remove_from_cart,
    set_delivery,
    review_cart,
    request_approval,
    checkout,
    return_order,
    list_orders,
)
