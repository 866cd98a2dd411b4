"""The generated tools of a synthetic domain.

Tool names, argument names and descriptions come from the :class:`Surface`; what each tool
does comes from the motif it belongs to. Schemas are built exactly as the :func:`tool`
decorator builds them, from typed :class:`~stategym.kernel.tools.Param` objects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from stategym.kernel.errors import ToolError
from stategym.kernel.knob_text import knob_sentences
from stategym.kernel.tools import Effect, Param, Tool
from stategym.kernel.world import USER_ACCOUNT, usable_hold
from stategym.topology.motifs import Spec

from .surface import Surface, with_article
from .world import VENDOR_ACCOUNT, Hold, Prepared, Purchase, SynthBase, SynthWorld

HOLD_TICKS = 4
"""A hold lasts this many clock ticks (when dynamics are on). It keeps the price, not stock."""
SOURCE_LATENCY = 2


def make_tool(
    name: str,
    fn: Callable[..., Any],
    effect: Effect,
    description: str,
    params: tuple[tuple[str, type, str], ...] = (),
    latency: int = 1,
    when_off: Mapping[str, Mapping[str, str]] | None = None,
    reads_own_writes: bool = False,
) -> Tool:
    """A tool from a function taking ``(world, **arguments)`` and ``(name, type, doc)`` params
    (``when_off`` and ``reads_own_writes``: as :func:`~stategym.kernel.tools.tool` takes
    them)."""
    typed = tuple(Param(n, t, True, None, doc) for n, t, doc in params)
    schema = {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {p.name: p.schema() for p in typed},
                "required": [p.name for p in typed],
                "additionalProperties": False,
            },
        },
    }
    return Tool(
        name,
        fn,
        effect,
        latency,
        description,
        typed,
        schema,
        knob_sentences(
            f"tool {name}", "\n".join((description, *(d for _, _, d in params))), when_off
        ),
        reads_own_writes,
    )


def option_field(surface: Surface) -> str:
    """Name of the option id field and argument (``option_id``, ``offer_id``...)."""
    return f"{surface.noun}_id"


def input_key(spec: Spec, stage: str) -> str:
    """Canonical value key a stage's tools take (``ref``, ``k2``, ``merged``...)."""
    tail = f"k{spec.chain}" if spec.chain else "ref"
    if stage == "diamond":
        return tail
    before_branch = "merged" if spec.diamond else tail
    if stage == "branch":
        return before_branch
    return "route_key" if spec.branch else before_branch


def expected_value(base: SynthBase, key: str) -> str:
    """The value named by canonical key ``key`` (``ref``, ``k1``.., ``left``..) in this world."""
    if key == "ref":
        return base.ref
    if key.startswith("k"):
        return base.links[int(key[1:]) - 1]
    return {
        "left": base.left,
        "right": base.right,
        "merged": base.merged,
        "route_key": base.route_key,
    }[key]


def _lookup(
    surface: Surface, inputs: tuple[str, ...], output: str, *, route: int | None = None
) -> Callable[..., Any]:
    """A read that checks its input values and returns the next value in the graph."""
    names = {surface.values[k]: k for k in inputs}

    def run(world: SynthWorld, **arguments: Any) -> dict[str, Any]:
        for name, key in names.items():
            if arguments[name] != expected_value(world.base, key):
                raise ToolError(f"unknown {surface.nouns[key]} {arguments[name]!r}")
        if route is not None and route != world.base.route:
            raise ToolError(
                f"{next(iter(arguments.values()))} is not on the {surface.routes[route]} route"
            )
        if output == "route":
            return {surface.route_field: surface.routes[world.base.route]}
        return {surface.values[output]: expected_value(world.base, output)}

    return run


def _source(surface: Surface, key: str, index: int) -> Callable[..., Any]:
    arg = surface.values[key]
    id_field = option_field(surface)
    flag_a, flag_b = surface.flags

    def run(world: SynthWorld, **arguments: Any) -> list[dict[str, Any]]:
        if arguments[arg] != expected_value(world.base, key):
            raise ToolError(f"unknown {surface.nouns[key]} {arguments[arg]!r}")
        return [
            {
                id_field: o.id,
                "price": o.price,
                "category": o.category,
                "grade": o.level,
                flag_a: o.flag_a,
                flag_b: o.flag_b,
                "stock": o.stock,
            }
            for o in world.options.values()
            if o.source == index and o.stock > 0
        ]

    return run


def _param(surface: Surface, key: str, origin: str) -> tuple[str, type, str]:
    return (surface.values[key], str, f"the {surface.nouns[key]}, from {origin}")


def lookup_tools(spec: Spec, surface: Surface) -> list[Tool]:
    """The chain, diamond and branch lookups of a spec."""
    tools: list[Tool] = []
    previous = "ref"
    for i in range(1, spec.chain + 1):
        out = f"k{i}"
        origin = "the request" if previous == "ref" else surface.tool(f"link{i - 1}")
        tools.append(
            make_tool(
                surface.tool(f"link{i}"),
                _lookup(surface, (previous,), out),
                Effect.READ,
                f"Look up the {surface.nouns[out]} that belongs to "
                f"{with_article(surface.nouns[previous])}.",
                (_param(surface, previous, origin),),
            )
        )
        previous = out
    if spec.diamond:
        tail = input_key(spec, "diamond")
        for side in ("left", "right"):
            tools.append(
                make_tool(
                    surface.tool(side),
                    _lookup(surface, (tail,), side),
                    Effect.READ,
                    f"Look up the {surface.nouns[side]} of {with_article(surface.nouns[tail])}.",
                    (_param(surface, tail, "an earlier lookup or the request"),),
                )
            )
        tools.append(
            make_tool(
                surface.tool("merge"),
                _lookup(surface, ("left", "right"), "merged"),
                Effect.READ,
                f"Combine {with_article(surface.nouns['left'])} and "
                f"{with_article(surface.nouns['right'])} into the "
                f"{surface.nouns['merged']}.",
                (
                    _param(surface, "left", surface.tool("left")),
                    _param(surface, "right", surface.tool("right")),
                ),
            )
        )
    if spec.branch:
        tools += _branch_tools(spec, surface)
    return tools


def _branch_tools(spec: Spec, surface: Surface) -> list[Tool]:
    key = input_key(spec, "branch")
    tools = [
        make_tool(
            surface.tool("route"),
            _lookup(surface, (key,), "route"),
            Effect.READ,
            f"Tell which route ({surface.routes[0]} or {surface.routes[1]}) "
            f"{with_article(surface.nouns[key])} is on.",
            (_param(surface, key, "an earlier lookup or the request"),),
        )
    ]
    for index in (0, 1):
        tools.append(
            make_tool(
                surface.tool(f"via{index}"),
                _lookup(surface, (key,), "route_key", route=index),
                Effect.READ,
                f"Look up the {surface.nouns['route_key']} of "
                f"{with_article(surface.nouns[key])} on the {surface.routes[index]} route. "
                "Fails for the other route.",
                (_param(surface, key, "an earlier lookup or the request"),),
            )
        )
    return tools


def source_tools(spec: Spec, surface: Surface) -> list[Tool]:
    key = input_key(spec, "sources")
    return [
        make_tool(
            surface.tool(f"source{i}"),
            _source(surface, key, i),
            Effect.READ,
            f"List the {surface.noun}s one source offers, with price, category, grade, "
            "features and stock. Prices and stock can change.",
            (_param(surface, key, "an earlier lookup or the request"),),
            latency=SOURCE_LATENCY,
            when_off={
                "dynamics": {
                    "Prices and stock can change.": (
                        "Prices stay as shown, and only purchases take stock."
                    )
                }
            },
        )
        for i in range(1, spec.fanout + 1)
    ]


def _option(world: SynthWorld, option_id: str, surface: Surface):
    option = world.options.get(option_id)
    if option is None:
        raise ToolError(f"no {surface.noun} {option_id}")
    if option.stock <= 0:
        raise ToolError(f"{surface.noun} {option_id} is sold out")
    return option


def _hold(surface: Surface) -> Callable[..., Any]:
    arg = option_field(surface)

    def run(world: SynthWorld, **arguments: Any) -> dict[str, Any]:
        option = _option(world, arguments[arg], surface)
        expires = world.clock + HOLD_TICKS if world.knobs.dynamics else None
        hold = Hold(world.new_id("H"), option.id, option.price, expires, "active")
        world.holds[hold.id] = hold
        return {"hold_id": hold.id, "option": option.id, "price": hold.price, "expires_at": expires}

    return run


def _prepare(surface: Surface) -> Callable[..., Any]:
    arg = option_field(surface)

    def run(world: SynthWorld, **arguments: Any) -> dict[str, Any]:
        option = _option(world, arguments[arg], surface)
        world.prepared[option.id] = Prepared(option.id)
        return {"option": option.id, "prepared": True}

    return run


def _buy(spec: Spec, surface: Surface) -> Callable[..., Any]:
    arg = "hold_id" if spec.verifycommit else option_field(surface)

    def run(world: SynthWorld, **arguments: Any) -> dict[str, Any]:
        # Every check comes before the first write: a buy that fails leaves the world as it
        # was (its hold still active), as every tool's ToolError must.
        hold = (
            usable_hold(world.holds, arguments[arg], world.clock, "hold again")
            if spec.verifycommit
            else None
        )
        option = _option(world, arguments[arg] if hold is None else hold.option, surface)
        price = option.price if hold is None else hold.price
        if spec.precond and option.id not in world.prepared:
            raise ToolError(
                f"{surface.noun} {option.id} must be prepared with {surface.tool('prepare')} first"
            )
        if hold is not None:
            world.holds[hold.id] = replace(hold, status="used")
        world.options[option.id] = replace(option, stock=option.stock - 1)
        purchase = Purchase(world.new_id("B"), option.id, price, "active")
        world.purchases[purchase.id] = purchase
        world.transfer(
            USER_ACCOUNT, VENDOR_ACCOUNT, price, f"{surface.noun} {option.id}", purchase.id
        )
        return {"purchase_id": purchase.id, "option": option.id, "charged": price}

    return run


def _cancel(world: SynthWorld, purchase_id: str) -> dict[str, Any]:
    purchase = world.purchases.get(purchase_id)
    if purchase is None or purchase.status != "active":
        raise ToolError(f"no active purchase {purchase_id}")
    refund = 0 if world.knobs.irreversible else purchase.price
    world.purchases[purchase_id] = replace(purchase, status="cancelled")
    option = world.options[purchase.option]
    world.options[option.id] = replace(option, stock=option.stock + 1)  # back in stock
    if refund:
        world.transfer(VENDOR_ACCOUNT, USER_ACCOUNT, refund, "refund", purchase_id)
    return {"purchase_id": purchase_id, "option": purchase.option, "refund": refund}


def _purchases(world: SynthWorld) -> list[dict[str, Any]]:
    return [
        {"purchase_id": p.id, "option": p.option, "price": p.price, "status": p.status}
        for p in world.purchases.values()
    ]


def state_tools(spec: Spec, surface: Surface) -> list[Tool]:
    """Hold, prepare, buy, cancel and the purchase list (offered only when stateful)."""
    noun, field = surface.noun, option_field(surface)
    option_param = (field, str, f"the {noun}, from a listing")
    tools: list[Tool] = []
    if spec.verifycommit:
        tools.append(
            make_tool(
                surface.tool("hold"),
                _hold(surface),
                Effect.WRITE,
                f"Hold {with_article(noun)}'s current price. The hold shows the price you "
                f"would pay and when it expires; it sets no stock aside, so buying fails if the "
                f"{noun} sells out first.",
                (option_param,),
                when_off={
                    "dynamics": {
                        "and when it expires; it sets no stock aside, so buying fails if the "
                        f"{noun} sells out first.": (
                            "and keeps it; holds do not expire, and only your own purchases "
                            "take stock here."
                        )
                    }
                },
            )
        )
    if spec.precond:
        tools.append(
            make_tool(
                surface.tool("prepare"),
                _prepare(surface),
                Effect.WRITE,
                f"Prepare {with_article(noun)} for purchase; only a prepared {noun} can be bought.",
                (option_param,),
            )
        )
    buy_param = (
        ("hold_id", str, f"a hold from {surface.tool('hold')} that has not expired")
        if spec.verifycommit
        else option_param
    )
    tools.append(
        make_tool(
            surface.tool("buy"),
            _buy(spec, surface),
            Effect.COMMIT,
            f"Buy {with_article(noun)} and charge the user's account. Payment cannot be undone.",
            (buy_param,),
            when_off={
                "irreversible": {
                    "Payment cannot be undone.": (
                        f"Payment can be undone: {surface.tool('cancel')} refunds the whole price."
                    )
                },
                **({"dynamics": {" that has not expired": ""}} if spec.verifycommit else {}),
            },
        )
    )
    tools.append(
        make_tool(
            surface.tool("cancel"),
            lambda world, **a: _cancel(world, a["purchase_id"]),
            Effect.COMMIT,
            f"Cancel a purchase; the {noun} is back in stock. The price is not refunded.",
            (("purchase_id", str, f"a purchase from {surface.tool('buy')}"),),
            when_off={
                "irreversible": {"The price is not refunded.": "The whole price is refunded."}
            },
        )
    )
    tools.append(
        make_tool(
            surface.tool("purchases"),
            _purchases,
            Effect.READ,
            "List the user's purchases and their status.",
            reads_own_writes=True,
        )
    )
    return tools
