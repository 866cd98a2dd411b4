"""Regression floors for the simulated user on the held-out sets v3 to v25.

Each set was written from the slots' meanings only, without reading the matcher, its phrase
tables or the earlier sets, and measured once, blind, with the matcher as it then was
(``python benchmarks/user_understanding.py --fixture PATH``): v3 and v4 on 2026-12-01, v5 to
v16 on 2026-12-02, v17 to v25 on 2026-12-03 (v5 after the matcher's first change that day,
v6 after its second, which read v5's misses, v7 after its third, which read v6's, v8 after
its fourth, which read v7's, v9 after its fifth, which read v8's, v10 after its sixth, which
read v9's, v11 after its seventh, which read v10's, v12 after its eighth, which read v11's,
v13 after its ninth, which read v12's, v14 after its tenth, which read v13's, v15 after its
eleventh, which read v14's, v16 after its twelfth, which read v15's, v17 after its
thirteenth, which read v16's, v18 after its fourteenth, which read v17's, v19 to v25 with
the fourteenth change unchanged). The floors below sit ten points under what each measured.
v3 to v17 are the matcher's training data now (``questions.json``, like v1 and v2), so their
floors guard only against forgetting them; the sets from v18 on are held out (v25 is the
newest; v18's questions, tried as training data, made the matcher worse, so no later set
joins the training data). The floors catch a regression; they do not certify the goal (>=
90% on every slot, no wrong answer), which no set has shown the rules meet: v16 was the
first with every slot at 90% or more, but three of its answers to slot questions were wrong;
v17 has one slot under 90% and nine such answers, v18 two and six, v19 two and one, v20 one
and four, v21 three and eight, v22 one and four, v23 none and nine, v24 none and two, v25
four and six. (v16 was measured once with the twelfth change as it then was; a hand-written
paraphrase test then made its "what" bind a verb's phrase only, and as committed the matcher
measures a little differently on v16, noted beside each figure.) The rule-based matcher is
the default; an LLM reader with the rules breaking its ties met the goal on v21, v22, v24 and
v25 and missed it by one answer on v23 (docs/environment.md), which these floors do not
test. About two fifths of each held-out set's slot questions are a training set's word for
word (``user_understanding.py --novel`` leaves them out)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from stategym import Knobs
from stategym.registry import get_domain
from understood import BLIND, SYNTHETIC, benchmark

SETS = tuple(f"v{n}" for n in range(3, BLIND + 1))


@dataclass(frozen=True)
class Floors:
    """What a blind set measured, less ten points (a ceiling, plus a margin, for wrong answers)."""

    domains: dict[str, float]
    """Pooled slot-question rate per domain."""
    lowest_slot: float
    mean_slot: float
    wrong_ceiling: int
    kinds: dict[str, float]
    """Pooled rate of the compound, priority and open questions."""
    unclear: float


FLOORS = {
    "v3": Floors(
        domains={
            "travel": 0.77,  # measured 102/117 = 87%
            "meetings": 0.77,  # measured 102/117 = 87%
            "shop": 0.73,  # measured 87/104 = 84%
            "bank": 0.81,  # measured 107/117 = 91%
            "cloud": 0.83,  # measured 73/78 = 94%
            "lookup": 0.67,  # measured 50/65 = 77%
            "synthetic": 0.81,  # measured 71/78 = 91%
        },
        lowest_slot=0.36,  # measured 6/13 = 46% (shop item)
        mean_slot=0.77,  # measured 87.6% over 52 slots, 24 under 90%
        wrong_ceiling=85,  # measured 68 (54 of them to slot questions)
        kinds={
            "(compound)": 0.64,  # measured 23/31 = 74%
            "(priorities)": 0.84,  # measured 85/90 = 94%
            "(open)": 0.78,  # measured 43/49 = 88%
        },
        unclear=0.65,  # measured 9/12 = 75%
    ),
    "v4": Floors(
        domains={
            "travel": 0.78,  # measured 104/117 = 89%
            "meetings": 0.75,  # measured 100/117 = 85%
            "shop": 0.72,  # measured 86/104 = 83%
            "bank": 0.80,  # measured 106/117 = 91%
            "cloud": 0.82,  # measured 72/78 = 92%
            "lookup": 0.65,  # measured 49/65 = 75%
            "synthetic": 0.79,  # measured 70/78 = 90%
        },
        lowest_slot=0.51,  # measured 8/13 = 62% (lookup path)
        mean_slot=0.76,  # measured 86.8% over 52 slots, 26 under 90%
        wrong_ceiling=105,  # measured 86 (68 of them to slot questions)
        kinds={
            "(compound)": 0.87,  # measured 34/35 = 97%
            "(priorities)": 0.80,  # measured 81/90 = 90%
            "(open)": 0.63,  # measured 41/56 = 73%
        },
        unclear=0.73,  # measured 10/12 = 83%
    ),
    "v5": Floors(
        domains={
            "travel": 0.85,  # measured 112/117 = 96%
            "meetings": 0.84,  # measured 111/117 = 95%
            "shop": 0.79,  # measured 93/104 = 89%
            "bank": 0.89,  # measured 116/117 = 99%
            "cloud": 0.90,  # measured 78/78 = 100%
            "lookup": 0.80,  # measured 59/65 = 91%
            "synthetic": 0.88,  # measured 77/78 = 99%
        },
        lowest_slot=0.66,  # measured 10/13 = 77% (lookup measure; also shop brand and item)
        mean_slot=0.85,  # measured 95.6% over 52 slots, 6 under 90%
        wrong_ceiling=57,  # measured 46 (17 of them to slot questions)
        kinds={
            "(compound)": 0.78,  # measured 31/35 = 89%
            "(priorities)": 0.68,  # measured 71/91 = 78%
            "(open)": 0.47,  # measured 32/56 = 57%
        },
        unclear=0.73,  # measured 10/12 = 83%
    ),
    "v6": Floors(
        domains={
            "travel": 0.79,  # measured 105/117 = 90%
            "meetings": 0.87,  # measured 114/117 = 97%
            "shop": 0.85,  # measured 99/104 = 95%
            "bank": 0.86,  # measured 113/117 = 97%
            "cloud": 0.87,  # measured 76/78 = 97%
            "lookup": 0.83,  # measured 61/65 = 94%
            "synthetic": 0.88,  # measured 77/78 = 99%
        },
        lowest_slot=0.59,  # measured 9/13 = 69% (travel window)
        mean_slot=0.85,  # measured 95.4% over 52 slots, 7 under 90%
        wrong_ceiling=50,  # measured 41 (23 of them to slot questions)
        kinds={
            "(compound)": 0.81,  # measured 32/35 = 91%
            "(priorities)": 0.79,  # measured 81/91 = 89%
            "(open)": 0.77,  # measured 49/56 = 88%
        },
        unclear=0.48,  # measured 7/12 = 58%
    ),
    "v7": Floors(
        domains={
            "travel": 0.89,  # measured 116/117 = 99%
            "meetings": 0.84,  # measured 110/117 = 94%
            "shop": 0.83,  # measured 97/104 = 93%
            "bank": 0.87,  # measured 114/117 = 97%
            "cloud": 0.90,  # measured 78/78 = 100%
            "lookup": 0.82,  # measured 60/65 = 92%
            "synthetic": 0.85,  # measured 74/78 = 95%
        },
        lowest_slot=0.66,  # measured 10/13 = 77% (shop quantity, lookup other)
        mean_slot=0.86,  # measured 96.0% over 52 slots, 5 under 90%
        wrong_ceiling=42,  # measured 34 (13 of them to slot questions)
        kinds={
            "(compound)": 0.64,  # measured 26/35 = 74%
            "(priorities)": 0.68,  # measured 71/91 = 78%
            "(open)": 0.68,  # measured 44/56 = 79%
        },
        unclear=0.90,  # measured 12/12 = 100%
    ),
    "v8": Floors(
        domains={
            "travel": 0.87,  # measured 114/117 = 97%
            "meetings": 0.86,  # measured 112/117 = 96%
            "shop": 0.82,  # measured 96/104 = 92%
            "bank": 0.88,  # measured 115/117 = 98%
            "cloud": 0.86,  # measured 75/78 = 96%
            "lookup": 0.82,  # measured 60/65 = 92%
            "synthetic": 0.88,  # measured 77/78 = 99%
        },
        lowest_slot=0.66,  # measured 10/13 = 77% (shop brand and item, cloud project_id)
        mean_slot=0.86,  # measured 96.0% over 52 slots, 8 under 90%
        wrong_ceiling=25,  # measured 20 (10 of them to slot questions)
        kinds={
            "(compound)": 0.64,  # measured 26/35 = 74%
            "(priorities)": 0.79,  # measured 81/91 = 89%
            "(open)": 0.79,  # measured 50/56 = 89%
        },
        unclear=0.73,  # measured 10/12 = 83%
    ),
    "v9": Floors(
        domains={
            "travel": 0.86,  # measured 113/117 = 97%
            "meetings": 0.88,  # measured 115/117 = 98%
            "shop": 0.84,  # measured 98/104 = 94%
            "bank": 0.90,  # measured 117/117 = 100%
            "cloud": 0.90,  # measured 78/78 = 100%
            "lookup": 0.83,  # measured 61/65 = 94%
            "synthetic": 0.88,  # measured 77/78 = 99%
        },
        lowest_slot=0.74,  # measured 11/13 = 85% (travel origin, meetings attendees, shop
        # address and brand, lookup measure)
        mean_slot=0.87,  # measured 97.5% over 52 slots, 5 under 90%
        wrong_ceiling=26,  # measured 21 (11 of them to slot questions)
        kinds={
            "(compound)": 0.78,  # measured 31/35 = 89%
            "(priorities)": 0.74,  # measured 77/91 = 85%
            "(open)": 0.86,  # measured 54/56 = 96%
        },
        unclear=0.81,  # measured 11/12 = 92%
    ),
    "v10": Floors(
        domains={
            "travel": 0.87,  # measured 114/117 = 97%
            "meetings": 0.88,  # measured 115/117 = 98%
            "shop": 0.86,  # measured 100/104 = 96%
            "bank": 0.89,  # measured 116/117 = 99%
            "cloud": 0.86,  # measured 75/78 = 96%
            "lookup": 0.80,  # measured 59/65 = 91%
            "synthetic": 0.88,  # measured 77/78 = 99%
        },
        lowest_slot=0.59,  # measured 9/13 = 69% (lookup pick)
        mean_slot=0.87,  # measured 97.0% over 52 slots, 3 under 90%
        wrong_ceiling=22,  # measured 18 (10 of them to slot questions)
        kinds={
            "(compound)": 0.72,  # measured 29/35 = 83%
            "(priorities)": 0.76,  # measured 79/91 = 87%
            "(open)": 0.84,  # measured 53/56 = 95%
        },
        unclear=0.90,  # measured 12/12 = 100%
    ),
    "v11": Floors(
        domains={
            "travel": 0.84,  # measured 110/117 = 94%
            "meetings": 0.89,  # measured 116/117 = 99%
            "shop": 0.84,  # measured 98/104 = 94%
            "bank": 0.89,  # measured 116/117 = 99%
            "cloud": 0.90,  # measured 78/78 = 100%
            "lookup": 0.82,  # measured 60/65 = 92%
            "synthetic": 0.87,  # measured 76/78 = 97%
        },
        lowest_slot=0.74,  # measured 11/13 = 85% (travel event_days and budget, shop item
        # and brand, lookup measure and pick)
        mean_slot=0.86,  # measured 96.7% over 52 slots, 6 under 90%
        wrong_ceiling=17,  # measured 14 (9 of them to slot questions)
        kinds={
            "(compound)": 0.72,  # measured 29/35 = 83%
            "(priorities)": 0.84,  # measured 86/91 = 95%
            "(open)": 0.81,  # measured 51/56 = 91%
        },
        unclear=0.90,  # measured 12/12 = 100%
    ),
    "v12": Floors(
        domains={
            "travel": 0.87,  # measured 114/117 = 97%
            "meetings": 0.89,  # measured 116/117 = 99%
            "shop": 0.88,  # measured 102/104 = 98%
            "bank": 0.89,  # measured 116/117 = 99%
            "cloud": 0.90,  # measured 78/78 = 100%
            "lookup": 0.83,  # measured 61/65 = 94%
            "synthetic": 0.88,  # measured 77/78 = 99%
        },
        lowest_slot=0.59,  # measured 9/13 = 69% (lookup subject)
        mean_slot=0.88,  # measured 98.2% over 52 slots, 2 under 90%
        wrong_ceiling=15,  # measured 12 (8 of them to slot questions)
        kinds={
            "(compound)": 0.84,  # measured 33/35 = 94%
            "(priorities)": 0.85,  # measured 87/91 = 96%
            "(open)": 0.88,  # measured 55/56 = 98%
        },
        unclear=0.90,  # measured 12/12 = 100%
    ),
    "v13": Floors(
        domains={
            "travel": 0.89,  # measured 116/117 = 99%
            "meetings": 0.87,  # measured 114/117 = 97%
            "shop": 0.86,  # measured 100/104 = 96%
            "bank": 0.85,  # measured 112/117 = 96%
            "cloud": 0.88,  # measured 77/78 = 99%
            "lookup": 0.86,  # measured 63/65 = 97%
            "synthetic": 0.86,  # measured 75/78 = 96%
        },
        lowest_slot=0.59,  # measured 9/13 = 69% (shop item)
        mean_slot=0.87,  # measured 97.2% over 52 slots, 2 under 90%
        wrong_ceiling=15,  # measured 12 (6 of them to slot questions)
        kinds={
            "(compound)": 0.70,  # measured 28/35 = 80%
            "(priorities)": 0.81,  # measured 83/91 = 91%
            "(open)": 0.77,  # measured 49/56 = 88%
        },
        unclear=0.81,  # measured 11/12 = 92%
    ),
    "v14": Floors(
        domains={
            "travel": 0.89,  # measured 116/117 = 99%
            "meetings": 0.87,  # measured 114/117 = 97%
            "shop": 0.84,  # measured 98/104 = 94%
            "bank": 0.89,  # measured 116/117 = 99%
            "cloud": 0.87,  # measured 76/78 = 97%
            "lookup": 0.82,  # measured 60/65 = 92%
            "synthetic": 0.87,  # measured 76/78 = 97%
        },
        lowest_slot=0.74,  # measured 11/13 = 85% (shop item and brand, lookup measure
        # and pick)
        mean_slot=0.87,  # measured 97.0% over 52 slots, 4 under 90%
        wrong_ceiling=21,  # measured 17 (8 of them to slot questions)
        kinds={
            "(compound)": 0.78,  # measured 31/35 = 89%
            "(priorities)": 0.82,  # measured 84/91 = 92%
            "(open)": 0.84,  # measured 53/56 = 95%
        },
        unclear=0.73,  # measured 10/12 = 83%
    ),
    "v15": Floors(
        domains={
            "travel": 0.89,  # measured 116/117 = 99%
            "meetings": 0.87,  # measured 114/117 = 97%
            "shop": 0.87,  # measured 101/104 = 97%
            "bank": 0.89,  # measured 116/117 = 99%
            "cloud": 0.90,  # measured 78/78 = 100%
            "lookup": 0.90,  # measured 65/65 = 100%
            "synthetic": 0.87,  # measured 76/78 = 97%
        },
        lowest_slot=0.74,  # measured 11/13 = 85% (meetings time of day, shop item)
        mean_slot=0.88,  # measured 98.5% over 52 slots, 2 under 90%
        wrong_ceiling=9,  # measured 7 (3 of them to slot questions)
        kinds={
            "(compound)": 0.78,  # measured 31/35 = 89%
            "(priorities)": 0.86,  # measured 88/91 = 97%
            "(open)": 0.82,  # measured 52/56 = 93%
        },
        unclear=0.90,  # measured 12/12 = 100%
    ),
    "v16": Floors(
        domains={
            "travel": 0.89,  # measured 116/117 = 99%
            "meetings": 0.89,  # measured 116/117 = 99%
            "shop": 0.87,  # measured 101/104 = 97% (102/104 as committed)
            "bank": 0.88,  # measured 115/117 = 98%
            "cloud": 0.88,  # measured 77/78 = 99%
            "lookup": 0.88,  # measured 64/65 = 98%
            "synthetic": 0.90,  # measured 78/78 = 100%
        },
        lowest_slot=0.82,  # measured 12/13 = 92% (nine slots; eight as committed)
        mean_slot=0.88,  # measured 98.7% over 52 slots (98.8% as committed), 0 under 90%
        wrong_ceiling=9,  # measured 7, 2 to slot questions (as committed 8, 3)
        kinds={
            "(compound)": 0.75,  # measured 30/35 = 86%
            "(priorities)": 0.81,  # measured 83/91 = 91%
            "(open)": 0.84,  # measured 53/56 = 95%
        },
        unclear=0.81,  # measured 11/12 = 92%
    ),
    "v17": Floors(
        domains={
            "travel": 0.87,  # measured 114/117 = 97%
            "meetings": 0.86,  # measured 113/117 = 97%
            "shop": 0.88,  # measured 102/104 = 98%
            "bank": 0.90,  # measured 117/117 = 100%
            "cloud": 0.90,  # measured 78/78 = 100%
            "lookup": 0.88,  # measured 64/65 = 98%
            "synthetic": 0.90,  # measured 78/78 = 100%
        },
        lowest_slot=0.74,  # measured 11/13 = 85% (meetings time of day)
        mean_slot=0.88,  # measured 98.5% over 52 slots, 1 under 90%
        wrong_ceiling=18,  # measured 15, 9 to slot questions
        kinds={
            "(compound)": 0.72,  # measured 29/35 = 83%
            "(priorities)": 0.83,  # measured 85/91 = 93%
            "(open)": 0.82,  # measured 52/56 = 93%
        },
        unclear=0.90,  # measured 12/12 = 100%
    ),
    "v18": Floors(
        domains={
            "travel": 0.89,  # measured 116/117 = 99%
            "meetings": 0.88,  # measured 115/117 = 98%
            "shop": 0.90,  # measured 104/104 = 100%
            "bank": 0.90,  # measured 117/117 = 100%
            "cloud": 0.90,  # measured 78/78 = 100%
            "lookup": 0.85,  # measured 62/65 = 95%
            "synthetic": 0.86,  # measured 75/78 = 96%
        },
        lowest_slot=0.74,  # measured 11/13 = 85% (lookup measure, meetings agenda)
        mean_slot=0.88,  # measured 98.7% over 52 slots, 2 under 90%
        wrong_ceiling=14,  # measured 11, 6 to slot questions
        kinds={
            "(compound)": 0.84,  # measured 33/35 = 94%
            "(priorities)": 0.83,  # measured 85/91 = 93%
            "(open)": 0.82,  # measured 52/56 = 93%
        },
        unclear=0.90,  # measured 12/12 = 100%
    ),
    "v19": Floors(
        domains={
            "travel": 0.90,  # measured 117/117 = 100%
            "meetings": 0.90,  # measured 117/117 = 100%
            "shop": 0.87,  # measured 101/104 = 97%
            "bank": 0.89,  # measured 116/117 = 99%
            "cloud": 0.90,  # measured 78/78 = 100%
            "lookup": 0.86,  # measured 63/65 = 97%
            "synthetic": 0.88,  # measured 77/78 = 99%
        },
        lowest_slot=0.74,  # measured 11/13 = 85% (shop item, lookup subject)
        mean_slot=0.88,  # measured 99.0% over 52 slots, 2 under 90%
        wrong_ceiling=5,  # measured 3, 1 to slot questions
        kinds={
            "(compound)": 0.87,  # measured 34/35 = 97%
            "(priorities)": 0.86,  # measured 88/91 = 97%
            "(open)": 0.82,  # measured 52/56 = 93%
        },
        unclear=0.90,  # measured 12/12 = 100%
    ),
    "v20": Floors(
        domains={
            "travel": 0.88,  # measured 115/117 = 98%
            "meetings": 0.88,  # measured 115/117 = 98%
            "shop": 0.89,  # measured 103/104 = 99%
            "bank": 0.87,  # measured 114/117 = 97%
            "cloud": 0.90,  # measured 78/78 = 100%
            "lookup": 0.83,  # measured 61/65 = 94%
            "synthetic": 0.88,  # measured 77/78 = 99%
        },
        lowest_slot=0.74,  # measured 11/13 = 85% (lookup pick)
        mean_slot=0.88,  # measured 98.1% over 52 slots, 1 under 90%
        wrong_ceiling=14,  # measured 11, 4 to slot questions
        kinds={
            "(compound)": 0.87,  # measured 34/35 = 97%
            "(priorities)": 0.81,  # measured 83/91 = 91%
            "(open)": 0.88,  # measured 55/56 = 98%
        },
        unclear=0.90,  # measured 12/12 = 100%
    ),
    "v21": Floors(
        domains={
            "travel": 0.88,  # measured 115/117 = 98%
            "meetings": 0.89,  # measured 116/117 = 99%
            "shop": 0.88,  # measured 102/104 = 98%
            "bank": 0.88,  # measured 115/117 = 98%
            "cloud": 0.90,  # measured 78/78 = 100%
            "lookup": 0.79,  # measured 58/65 = 89%
            "synthetic": 0.87,  # measured 76/78 = 97%
        },
        lowest_slot=0.74,  # measured 11/13 = 85% (lookup other, lookup measure, lookup pick)
        mean_slot=0.87,  # measured 97.6% over 52 slots, 3 under 90%
        wrong_ceiling=19,  # measured 15, 8 to slot questions
        kinds={
            "(compound)": 0.84,  # measured 33/35 = 94%
            "(priorities)": 0.82,  # measured 84/91 = 92%
            "(open)": 0.84,  # measured 53/56 = 95%
        },
        unclear=0.81,  # measured 11/12 = 92%
    ),
    "v22": Floors(
        domains={
            "travel": 0.88,  # measured 115/117 = 98%
            "meetings": 0.85,  # measured 112/117 = 96%
            "shop": 0.88,  # measured 102/104 = 98%
            "bank": 0.90,  # measured 117/117 = 100%
            "cloud": 0.90,  # measured 78/78 = 100%
            "lookup": 0.86,  # measured 63/65 = 97%
            "synthetic": 0.87,  # measured 76/78 = 97%
        },
        lowest_slot=0.74,  # measured 11/13 = 85% (meetings agenda)
        mean_slot=0.88,  # measured 98.1% over 52 slots, 1 under 90%
        wrong_ceiling=12,  # measured 9, 4 to slot questions
        kinds={
            "(compound)": 0.72,  # measured 29/35 = 83%
            "(priorities)": 0.84,  # measured 86/91 = 95%
            "(open)": 0.82,  # measured 52/56 = 93%
        },
        unclear=0.90,  # measured 12/12 = 100%
    ),
    "v23": Floors(
        domains={
            "travel": 0.87,  # measured 114/117 = 97%
            "meetings": 0.85,  # measured 112/117 = 96%
            "shop": 0.89,  # measured 103/104 = 99%
            "bank": 0.90,  # measured 117/117 = 100%
            "cloud": 0.90,  # measured 78/78 = 100%
            "lookup": 0.88,  # measured 64/65 = 98%
            "synthetic": 0.86,  # measured 75/78 = 96%
        },
        lowest_slot=0.82,  # measured 12/13 = 92% (thirteen slots)
        mean_slot=0.88,  # measured 98.1% over 52 slots, 0 under 90%
        wrong_ceiling=15,  # measured 12, 9 to slot questions
        kinds={
            "(compound)": 0.81,  # measured 32/35 = 91%
            "(priorities)": 0.85,  # measured 87/91 = 96%
            "(open)": 0.82,  # measured 52/56 = 93%
        },
        unclear=0.81,  # measured 11/12 = 92%
    ),
    "v24": Floors(
        domains={
            "travel": 0.89,  # measured 116/117 = 99%
            "meetings": 0.89,  # measured 116/117 = 99%
            "shop": 0.89,  # measured 103/104 = 99%
            "bank": 0.89,  # measured 116/117 = 99%
            "cloud": 0.90,  # measured 78/78 = 100%
            "lookup": 0.86,  # measured 63/65 = 97%
            "synthetic": 0.88,  # measured 77/78 = 99%
        },
        lowest_slot=0.82,  # measured 12/13 = 92% (seven slots)
        mean_slot=0.88,  # measured 99.0% over 52 slots, 0 under 90%
        wrong_ceiling=9,  # measured 6, 2 to slot questions
        kinds={
            "(compound)": 0.81,  # measured 32/35 = 91%
            "(priorities)": 0.85,  # measured 87/91 = 96%
            "(open)": 0.88,  # measured 55/56 = 98%
        },
        unclear=0.81,  # measured 11/12 = 92%
    ),
    "v25": Floors(
        domains={
            "travel": 0.86,  # measured 113/117 = 97%
            "meetings": 0.88,  # measured 115/117 = 98%
            "shop": 0.88,  # measured 102/104 = 98%
            "bank": 0.87,  # measured 114/117 = 97%
            "cloud": 0.90,  # measured 78/78 = 100%
            "lookup": 0.88,  # measured 64/65 = 98%
            "synthetic": 0.90,  # measured 78/78 = 100%
        },
        lowest_slot=0.74,  # measured 11/13 = 85% (event_days, agenda, item, iban)
        mean_slot=0.88,  # measured 98.2% over 52 slots, 4 under 90%
        wrong_ceiling=13,  # measured 10, 6 to slot questions
        kinds={
            "(compound)": 0.81,  # measured 32/35 = 91%
            "(priorities)": 0.85,  # measured 87/91 = 96%
            "(open)": 0.88,  # measured 55/56 = 98%
        },
        unclear=0.90,  # measured 12/12 = 100%
    ),
}


def _fixture(name: str) -> Any:
    return json.loads(benchmark().set_path(int(name.removeprefix("v"))).read_text())


@pytest.fixture(scope="module", params=SETS)
def blind(request: pytest.FixtureRequest) -> tuple[Floors, dict[str, Any]]:
    """A blind set's floors and what the matcher now measures on it."""
    return FLOORS[request.param], benchmark().measure(_fixture(request.param))


@pytest.mark.parametrize("name", SETS)
def test_the_blind_set_covers_every_slot_of_every_domain(name: str) -> None:
    """At least twelve questions for every slot the benchmark's users hold, so a rate per slot
    means something; the slots are read from the domains, not from the fixture."""
    fixture = _fixture(name)
    assert set(fixture["domains"]) == set(FLOORS[name].domains)
    for name, spec in fixture["domains"].items():
        domain = get_domain(SYNTHETIC if name == "synthetic" else name)
        held = {s.name for seed in range(200) for s in domain.generate(seed, Knobs()).slots}
        held -= {"priorities"}
        assert set(spec["slots"]) == held, name
        assert all(len(qs) >= 12 for qs in spec["slots"].values()), name


def test_slot_questions_stay_above_the_measured_floor(
    blind: tuple[Floors, dict[str, Any]],
) -> None:
    floors, results = blind
    slots = [t for rows in results.values() for row, t in rows.items() if not row.startswith("(")]
    assert len(slots) == 52
    assert all(t.rate >= floors.lowest_slot for t in slots)
    assert sum(t.rate for t in slots) / len(slots) >= floors.mean_slot
    for name, floor in floors.domains.items():
        plain = [t for row, t in results[name].items() if not row.startswith("(")]
        assert sum(t.right for t in plain) / sum(t.total for t in plain) >= floor, name


def test_wrong_answers_stay_below_the_measured_ceiling(
    blind: tuple[Floors, dict[str, Any]],
) -> None:
    """A wrong answer reveals a slot the agent did not ask for, so it is worse than a miss."""
    floors, results = blind
    wrong = sum(t.wrong for rows in results.values() for t in rows.values())
    assert wrong <= floors.wrong_ceiling


@pytest.mark.parametrize("row", ["(compound)", "(priorities)", "(open)"])
def test_other_kinds_of_question_stay_above_the_measured_floor(
    blind: tuple[Floors, dict[str, Any]], row: str
) -> None:
    floors, results = blind
    tallies = [rows[row] for rows in results.values() if row in rows and rows[row].total]
    assert sum(t.right for t in tallies) >= floors.kinds[row] * sum(t.total for t in tallies)


def test_unclear_messages_stay_above_the_measured_floor(
    blind: tuple[Floors, dict[str, Any]],
) -> None:
    """Off-topic or gibberish messages reach nothing."""
    floors, results = blind
    assert results["(all)"]["(unclear)"].rate >= floors.unclear


def test_the_wilson_interval_of_a_rate() -> None:
    """What the benchmark prints beside the rate of wrong answers to slot questions."""
    wilson = benchmark().wilson
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson(50, 100) == pytest.approx((0.4038, 0.5962), abs=1e-4)
    low, high = wilson(6, 711)
    assert low < 6 / 711 < high
    assert wilson(0, 0) == (0.0, 1.0)


def test_novel_leaves_out_exactly_the_questions_a_training_set_holds() -> None:
    """``--novel`` asks every question of the blind set but those a training set holds in
    the same words (:func:`plain` form), and nothing else goes missing: the tallies count each
    question left once. A slot none of whose questions is left has no row."""
    bench = benchmark()
    fixture = _fixture(f"v{BLIND}")
    trained = bench.trained_questions()
    cases = [
        q
        for spec in fixture["domains"].values()
        for _, q, _, _ in bench.cases(spec)
        if bench.plain(q) not in trained
    ]
    cases += [m for m in fixture["unclear"] if bench.plain(m) not in trained]
    assert 0 < len(cases) < len(bench.questions(fixture))
    results = bench.measure(fixture, leave_out=trained)
    assert sum(t.total for rows in results.values() for t in rows.values()) == len(cases)
    assert all(t.total for rows in results.values() for t in rows.values())


def test_novel_refuses_a_set_the_matcher_trained_on(capsys: pytest.CaptureFixture[str]) -> None:
    """Every question of a training set is a training question: nothing to measure."""
    bench = benchmark()
    with pytest.raises(SystemExit) as exit_:
        bench.main(["--fixture", str(bench.set_path(17)), "--novel"])
    assert exit_.value.code == 2
    assert "every question of heldout_questions_v17.json is a training question" in (
        capsys.readouterr().err
    )
