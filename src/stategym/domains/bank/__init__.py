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

from stategym.kernel.domain import Commitment, Domain
from stategym.kernel.task import Task
from stategym.kernel.understanding.labelled import with_questions
from stategym.kernel.world import World

from .expert import bank_expert
from .generator import generate, regold
from .tools import TOOLS
from .world import BankWorld

# How a question may name each slot; the first phrase names the slot as the user would.
# The user's intent model trains on these (stategym.kernel.understanding): inflections and
# synonyms are the model's, so a table lists the ways of asking, not every wording.
SLOT_PHRASES: dict[str, tuple[str, ...]] = {
    "fee_cap": (
        "my fee limit",
        "fee",
        "fees",
        "transfer fee",
        "charges",
        "most you are willing to pay in fees",
        "fee limit",
        "cost of the transfer in fees",
        "how much extra can it cost",
        "bank charges",
        "maximum fee",
        "how much in fees",
        "transaction costs",
        "express fee",
        "fee ceiling",
        "acceptable charge",
    ),
    "savings": (
        "whether i may use my savings",
        "savings",
        "savings account",
        "use your savings",
        "touch your savings",
        "rainy day money",
        "pay from savings",
        "take money from your savings",
        "leave your savings alone",
        "is the savings account off limits",
        "draw on savings",
        "dip into savings",
        "savings available for this",
    ),
    "conversion": (
        "whether i may convert currency",
        "convert currency",
        "currency conversion",
        "exchange currency",
        "foreign exchange",
        "fx",
        "pay from an account in another currency",
        "foreign currency account",
        "avoid converting",
        "exchange rate",
        "same currency as the invoice",
        "change currencies",
        "money converted",
    ),
    "invoice": (
        "the invoice",
        "which invoice",
        "what invoice",
        "invoice number",
        "invoice id",
        "which invoice should i pay",
        "invoice reference",
        "which bill",
        "bill to settle",
        "which of the invoices",
        "number on the invoice",
    ),
    "payee": (
        "the payee",
        "who is the payee",
        "who are you paying",
        "who to pay",
        "recipient",
        "who should receive the money",
        "who gets the money",
        "beneficiary",
        "payee name",
        "which supplier is paid",
        "who is the money for",
        "who gets paid",
        "which vendor is the payment for",
    ),
    "due_day": (
        "the due date",
        "when is it due",
        "due date",
        "deadline for the payment",
        "when must it be paid",
        "when should the money arrive",
        "pay by what day",
        "how soon must it be paid",
        "payment deadline",
        "on which day is it due",
        "when do they expect the money",
        "latest day to pay",
        "how much time to pay",
    ),
    "iban": (
        "the payee's account number",
        "account number",
        "iban",
        "bank details",
        "sort code",
        "their bank account",
        "payee account",
        "which account to send it to",
        "destination account",
        "recipient's bank details",
        "account details of the supplier",
        "payment details",
    ),
    "balances": (
        "my balances",
        "balance",
        "account balances",
        "how much money do you have",
        "funds",
        "how much do you have",
        "enough money",
        "available funds",
        "money in your accounts",
        "sufficient funds",
        "can your accounts cover it",
        "how much is left",
        "what is in your accounts",
        "cash in the bank",
        "how much is available",
    ),
    "category": (
        "the bookkeeping category",
        "categorise",
        "bookkeeping",
        "file it under",
        "expense type",
        "expense category",
        "classify the payment",
        "budget line",
        "which heading",
        "cost centre",
        "ledger category",
        "label the expense",
        "tag the payment",
        "for the books",
        "what kind of expense",
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
    slot_phrases=with_questions(__name__, SLOT_PHRASES),
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
    instructions_when_off={
        "irreversible": {
            "sent money cannot be recalled.": "recall_transfer brings sent money back in full."
        }
    },
    answer_instructions=(
        "You are a banking assistant choosing how to pay a supplier's invoice for the user. "
        "Read the invoice and the accounts, check the payee's name against the account number "
        "(never recommend paying on a mismatch), compare the rails and exchange rates, ask the "
        "user only for what only they know, and recommend one route. A route is an account id "
        "followed by STD or EXP (standard or express rail)."
    ),
    moves="Exchange rates and balances may change.",
    expires="Rate quotes may expire.",
    answer_form=(
        "the route you recommend: the paying account's id, then STD or EXP (like CA17 EXP), "
        "or 'none' if no route fits"
    ),
    env_id="stategym/Bank-v0",
)
