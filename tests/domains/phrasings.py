"""How users phrase questions, per domain: paraphrases of the expert's questions for every
slot the user holds, and other ways of asking for the priority order.

Data for ``test_every_domain.py``, which checks that the simulated user routes each of them
to exactly its slot. The travel domain's tables live with the user's own tests
(``tests/test_user.py``).
"""

from __future__ import annotations

PARAPHRASES: dict[str, dict[str, tuple[str, ...]]] = {
    "bank": {
        "fee_cap": (
            "What fees are acceptable?",
            "How much extra can it cost you?",
            "What are you willing to pay on top?",
            "Are bank charges a concern?",
        ),
        "savings": ("Can I take it from your savings?", "Is the rainy day money off limits?"),
        "conversion": (
            "May I convert currency?",
            "Is an exchange between currencies ok?",
            "Do you mind a conversion?",
        ),
        "invoice": ("Which invoice is it?", "What's the invoice number?"),
        "payee": ("Who are you paying?", "Who should receive the money?", "Who's the recipient?"),
        "due_day": ("When is it due?", "Is there a deadline?", "When must the money land?"),
        "iban": (
            "What's their IBAN?",
            "Do you have their bank details?",
            "What account number should I use?",
        ),
        "balances": (
            "What's your balance?",
            "How much money do you have?",
            "Are there enough funds?",
        ),
        "category": ("Which category is this?", "How should I categorise it for bookkeeping?"),
    },
    "cloud": {
        "need_gb": (
            "How much storage do you need to free up?",
            "How much space should this reclaim?",
            "How many GB do we need back?",
            "How much space do you need?",
            "What amount do we need to free?",
        ),
        "idle_min": (
            "How long has a volume to be idle before it counts?",
            "When is a volume unused enough for you?",
            "How many days without activity make a volume inactive?",
            "What counts as stale?",
        ),
        "project_id": (
            "Which project should I clean up?",
            "What is the project id?",
            "What project is it?",
        ),
        "team": (
            "Which team are you on?",
            "What team owns your volumes?",
            "Is this your team's budget?",
        ),
        "retention": (
            "Which tiers does the retention policy protect?",
            "Is there a backup policy I should know?",
            "Which volumes require a snapshot before deletion?",
        ),
        "window": (
            "When is your maintenance window?",
            "What time suits you for the change?",
            "When can I make the change?",
        ),
    },
    "lookup": {
        "subject": (
            "Which product do you mean?",
            "Which company is that exactly?",
            "Can you give me the full name?",
            "What is the exact name?",
        ),
        "path": (
            "What do you want to know?",
            "What exactly are you after?",
            "Could you rephrase the question?",
        ),
        "other": ("And the other one?", "What is the second one?"),
        "measure": ("Which measure matters?", "By what measure?", "Compare them by what?"),
        "pick": (
            "Lowest or highest?",
            "Do you want the earliest or the latest?",
            "Smallest or largest?",
        ),
    },
    "meetings": {
        "optional": (
            "Which attendees are optional?",
            "Who must be there?",
            "Is anyone mandatory?",
            "Who can miss it if need be?",
            "Who is essential?",
        ),
        "duration": (
            "How long should it be?",
            "What duration do you have in mind?",
            "How many minutes do you need?",
            "How much time should I book?",
        ),
        "time_of_day": (
            "Mornings or afternoons?",
            "What time suits you?",
            "Any preferred time of day?",
            "Earlier or later in the day?",
        ),
        "room_feature": (
            "Do you need video?",
            "Should the room have a whiteboard?",
            "Any equipment you need?",
            "What kind of room do you want?",
        ),
        "attendees": (
            "Who should attend?",
            "Who is invited?",
            "Can you share the guest list?",
            "Who are the participants?",
        ),
        "window": (
            "Which days work?",
            "What date would you like?",
            "When could we do it?",
        ),
        "working_hours": (
            "What are your working hours?",
            "When do you work?",
            "When does your workday start?",
        ),
        "timezone": (
            "Which time zones are people in?",
            "Where are they based?",
            "Is everyone on UTC?",
        ),
        "agenda": (
            "What is the agenda?",
            "What's the topic?",
            "What is the purpose of the meeting?",
        ),
    },
    "shop": {
        "budget": (
            "What's your budget?",
            "How much can you spend in total?",
            "What can the team afford?",
            "Is there a price limit?",
        ),
        "deadline": (
            "By when do you need them?",
            "Is there a deadline?",
            "How soon must it arrive? I mean, when do you need it?",
            "What delivery date works?",
        ),
        "brand": (
            "Any particular brand?",
            "Do you care about the manufacturer?",
            "What make do you prefer?",
        ),
        "item": ("What product should I look for?", "Which item is it?"),
        "quantity": ("How many do you need?", "What quantity?"),
        "address": (
            "What's the shipping address?",
            "Where should I send it to?",
            "What address do we deliver to?",
        ),
        "vendors": (
            "Which vendors are approved?",
            "Any supplier I must use?",
            "Which shops are we allowed to buy from?",
        ),
        "color": ("Which colour?", "Any color preference?"),
    },
}
"""For each domain: each slot the user holds, and questions about it in other words."""

PRIORITY_QUESTIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "cloud": {
        "What matters most to you?": (),
        "Would you rather keep the detach-free option or the idle one?": (),
    },
    "meetings": {
        "What matters most to you?": (),
        "Would you rather have everyone there or your preferred slot?": (),
    },
}
"""For each domain: ways to ask for the priority order besides the expert's question, each with
the slots its words also ask about (a slot a comparison only names is not asked)."""
