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

from stategym.kernel.domain import Commitment, Domain
from stategym.kernel.task import Task
from stategym.kernel.understanding.labelled import with_questions
from stategym.kernel.world import World

from .expert import shop_expert
from .generator import generate, regold
from .tools import TOOLS
from .world import ShopWorld

# How a question may name each slot; the first phrase names the slot as the user would.
# The user's intent model trains on these (stategym.kernel.understanding): inflections and
# synonyms are the model's, so a table lists the ways of asking, not every wording.
SLOT_PHRASES: dict[str, tuple[str, ...]] = {
    "budget": (
        "my budget",
        "afford",
        "how much can the order cost",
        "price limit",
        "cost limit",
        "maximum total",
        "most you can pay",
        "most you would pay",
        "money for the order",
        "spending limit",
        "upper limit on the total",
        "how much money do you have for it",
        "total budget",
        "how expensive can the order be",
        "what amount not to exceed",
        "how much to put toward it",
    ),
    "deadline": (
        "the delivery deadline",
        "by which day do you need it",
        "by when",
        "deadline",
        "need it by",
        "need them by",
        "delivery date",
        "arrive by",
        "how soon",
        "when do you need it",
        "when should it arrive",
        "latest delivery day",
        "how urgent",
        "how fast must it arrive",
        "when must the delivery be here",
        "target delivery day",
        "delivered by a certain day",
    ),
    "brand": (
        "the brand",
        "brand",
        "manufacturer",
        "which maker",
        "what make",
        "preferred brand",
        "brand preference",
        "who makes it",
        "a particular brand",
        "any brand",
        "favourite brand",
        "brands to avoid",
    ),
    "item": (
        "the product",
        "what product",
        "which product",
        "what item",
        "which item",
        "what are you buying",
        "what do you want to buy",
        "what should i buy",
        "what should i order",
        "what to purchase",
        "what equipment",
        "what kind of product",
        "which article",
        "product type",
    ),
    "quantity": (
        "the quantity",
        "how many",
        "quantity",
        "number of units",
        "units do you need",
        "how many pieces",
        "one or several",
        "how many items",
        "number of items",
    ),
    "address": (
        "the delivery address",
        "ship to",
        "shipping address",
        "deliver to",
        "delivery address",
        "address",
        "where should i send it",
        "send it to",
        "where should it be delivered",
        "which office",
        "where to ship",
        "which location should receive it",
        "where should the items arrive",
        "shipping destination",
        "which city to deliver to",
    ),
    "vendors": (
        "the approved vendors",
        "vendor",
        "supplier",
        "approved seller",
        "allowed to buy from",
        "may you buy from",
        "can you buy from",
        "which shop",
        "approved vendors",
        "approved suppliers",
        "permitted stores",
        "vendor list",
        "which merchants",
        "restricted to certain vendors",
        "which retailers",
        "sellers to avoid",
    ),
    "color": (
        "the colour",
        "which colour",
        "color preference",
        "what shade",
        "finish",
        "a specific color",
    ),
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
    slot_phrases=with_questions(__name__, SLOT_PHRASES),
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
    instructions_when_off={
        "irreversible": {"Returns cost a restocking fee.": "Returns are refunded in full."}
    },
    answer_instructions=(
        "You are a purchasing assistant choosing equipment for a company team. Look up what "
        "tools can tell you (account, purchasing policy, catalog, and for every product its "
        "offers, shipping quote, stock and specification), ask the buyer only for what only "
        "they know, compare every offer, and recommend the best one."
    ),
    moves="Prices and stock may change.",
    expires="Cart lines may expire.",
    answer_form="the id of the offer you recommend, or 'none' if no offer fits",
    env_id="stategym/Shop-v0",
)
