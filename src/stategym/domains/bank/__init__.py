"""Bank: pay a supplier's invoice from the right account by the right rail.

Tool graph (see ``gold.py``): the invoice and the accounts are independent reads; the invoice
feeds the payee check (confirmation of payee), the rails and, only when some account holds
another currency, the exchange rates (a diamond that joins at the choice); a route that
converts currency needs a locked rate first (a write, the conditional branch); the user
confirms; ``send_transfer`` (commit) is gated by the payee check. ``recall_transfer`` exists,
but settled payments cannot be recalled.

Options are routes: an account id followed by the rail's code (``CA17EXP``, ``SV40STD``).
Tasks have must-ask slots (the fee limit, whether savings may be used, whether to avoid
currency conversion), derivable ones (due day, IBAN, balances), an irrelevant one (the
bookkeeping category), two incomparable policies above the needs (a verified payee, minimum
balances), preference conflicts decided by the user's priorities, and two kinds of task where
nothing should be paid: the payee's name does not match the account, or no account can pay
within the limits. The money ledger counts value in the invoice's currency.

Knobs: ``stateful`` off offers the read tools only and the answer is a route id or ``none``;
``irreversible`` off lets a transfer be recalled in full; ``hidden_info`` off states every
slot in the request; ``priorities`` off plants a route that meets every preference;
``dynamics`` off schedules no rate jumps, balance drops or fee-limit changes and locked rates
never expire.
"""

from __future__ import annotations

from stategym.domain import Commitment, Domain
from stategym.task import Task
from stategym.world import World

from .expert import bank_expert
from .generator import generate, regold
from .tools import TOOLS
from .world import BankWorld

SLOT_PHRASES: dict[str, tuple[str, ...]] = {
    "fee_cap": (
        "fee",
        "charges",
        "most you are willing to pay",
        "willing to pay",
        "cost of the transfer",
        "transfer cost",
        "how much extra",
    ),
    "savings": ("savings", "saving account", "touch your saving", "rainy day"),
    "conversion": ("convert", "conversion", "exchange", "currency"),
    "invoice": ("which invoice", "what invoice", "invoice number", "invoice id"),
    "payee": (
        "who is the payee",
        "who are you paying",
        "who to pay",
        "recipient",
        "who should receive",
        "who gets the money",
    ),
    "due_day": (
        "due",
        "deadline",
        "when must",
        "when should it arrive",
        "arrive by",
        "how soon must",
    ),
    "iban": ("account number", "iban", "bank detail", "sort code"),
    "balances": ("balance", "how much money", "funds", "how much do you have"),
    "category": (
        "category",
        "categorise",
        "categorize",
        "bookkeeping",
        "file it under",
        "expense type",
    ),
}


def _world(task: Task) -> World:
    return BankWorld(task.base, task.knobs)


def _commitments(world: World) -> tuple[Commitment, ...]:
    assert isinstance(world, BankWorld)
    return tuple(Commitment(t.route, t.id) for t in world.transfers.values() if t.status == "sent")


DOMAIN = Domain(
    name="bank",
    title="Pay an invoice: verify the payee, pick account and rail, lock FX; no recalls",
    tools=TOOLS,
    slot_phrases=SLOT_PHRASES,
    generate=generate,
    regold=regold,
    new_world=_world,
    commitments=_commitments,
    expert=bank_expert,
    instructions=(
        "You are a banking assistant paying a supplier's invoice for the user. Read the "
        "invoice and the accounts, check the payee's name against the account number before "
        "paying anything (never pay on a mismatch), compare the rails and exchange rates, ask "
        "the user only for what only they know, lock the rate when the paying account holds "
        "another currency, get the user's agreement, then send once: sent money cannot be "
        "recalled. A route is an account id followed by STD or EXP (standard or express rail)."
    ),
    env_id="stategym/Bank-v0",
)
