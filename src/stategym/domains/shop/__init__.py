"""Shop: buy equipment for a team from approved vendors within budget.

Tool graph (see ``gold.py``): the account, the purchasing policy and a catalog search are
independent reads; the search fans out, per product, into a diamond of four reads --
``get_offers`` (vendors, unit prices), ``get_shipping_quote`` (shipping and arrival to the
address id from ``get_account``), ``check_stock`` and ``get_product`` (brand, eco label) --
that join at the cart, where the offer is chosen. Then a chain of two writes: the cart line,
and the cart's delivery address (``set_delivery``, which must follow the last cart change,
since any change clears it). After the delivery come the cart review (the verify-before-commit
read) and, only when the total is above the policy's threshold, a purchase approval (write);
the buyer confirms; ``checkout`` (commit) joins the cart and the approval.
``return_order`` undoes an order for a restocking fee.

Options are offer ids (``OF512``); an order of another quantity, or of several offers, is no
option. Tasks have must-ask slots (budget, delivery deadline, brand), derivable ones (the
address, the approved vendors), an irrelevant one (colour), preference conflicts decided by
the buyer's priorities, and tasks where no approved offer fits (buy nothing).

Knobs: ``stateful`` off offers the read tools only and the answer is an offer id or
``none``; ``irreversible`` off makes returns free; ``hidden_info`` off states every slot in
the request; ``priorities`` off plants an offer that meets every preference; ``dynamics`` off
schedules no price jumps, sell-outs or budget changes and cart lines never expire.
"""

from __future__ import annotations

from stategym.domain import Commitment, Domain
from stategym.task import Task
from stategym.world import World

from .expert import shop_expert
from .generator import generate, regold
from .tools import TOOLS
from .world import ShopWorld

SLOT_PHRASES: dict[str, tuple[str, ...]] = {
    "budget": (
        "budget",
        "spend",
        "afford",
        "how much can",
        "how much may",
        "price limit",
        "cost limit",
        "maximum total",
        "most you can pay",
        "most you would pay",
        "money do you have",
    ),
    "deadline": (
        "by which day",
        "by when",
        "deadline",
        "need it by",
        "need them by",
        "delivery date",
        "arrive by",
        "how soon",
        "when do you need",
        "what day",
        "which day",
    ),
    "brand": ("brand", "manufacturer", "which maker", "what make"),
    "item": (
        "what product",
        "which product",
        "what item",
        "which item",
        "what are you buying",
        "what do you want to buy",
        "what should i buy",
    ),
    "quantity": ("how many", "quantity", "number of units", "units do you need"),
    "address": (
        "ship to",
        "shipped",
        "shipping address",
        "deliver to",
        "delivery address",
        "address",
        "where should i send",
        "send it to",
    ),
    "vendors": (
        "vendor",
        "supplier",
        "approved seller",
        "allowed to buy from",
        "may you buy from",
        "can you buy from",
        "which shop",
    ),
    "color": ("color", "colour"),
}


def _world(task: Task) -> World:
    return ShopWorld(task.base, task.knobs)


def _commitments(world: World) -> tuple[Commitment, ...]:
    assert isinstance(world, ShopWorld)
    return tuple(Commitment(o.option, o.id) for o in world.orders.values() if o.status == "placed")


DOMAIN = Domain(
    name="shop",
    title="Buy for a team from approved vendors within budget; prices move, returns cost a fee",
    tools=TOOLS,
    slot_phrases=SLOT_PHRASES,
    generate=generate,
    regold=regold,
    new_world=_world,
    commitments=_commitments,
    expert=shop_expert,
    instructions=(
        "You are a purchasing assistant buying equipment for a company team. Look up what "
        "tools can tell you (account, purchasing policy, catalog, and for every product its "
        "offers, shipping quote, stock and specification), ask the buyer only for what only "
        "they know, compare every offer, put the best one in the cart, set the cart's "
        "delivery address after its last change, review the cart to see the current total "
        "before checking out, request a purchase approval when the total is above the "
        "policy's threshold, get the buyer's agreement, then check out once. Returns cost a "
        "restocking fee."
    ),
    env_id="stategym/Shop-v0",
)
