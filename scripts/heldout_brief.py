"""Write the brief a held-out question set is written from, for a writer who reads nothing else.

The blind-set protocol (docs/environment.md, "The simulated user") needs each new held-out set
written by someone who has not seen the matcher, its phrase tables or the earlier sets. This
script writes the two files such a writer gets: ``brief.md`` (what to write: 13 kinds of
question per slot, priority, compound, open and unclear messages, the JSON layout) and
``brief_domains.md`` (each domain's opening request and every slot the benchmark's users hold,
with how the user states it), both generated from the code, so the brief follows the domains.

    python scripts/heldout_brief.py /tmp/v9brief --version 9
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from user_understanding import user_for  # noqa: E402  (the benchmark's choice of task)

DOMAINS = ("travel", "meetings", "shop", "bank", "cloud", "lookup", "synthetic")
KINDS = """\
   1. a plain, direct question;
   2. a terse question of one to three words;
   3. a long, polite question (two sentences or more), giving a reason;
   4. a guess to confirm ("You're ... , right?"), with a plausible made-up value;
   5. a statement of what the assistant needs, not phrased as a question;
   6. a paraphrase that avoids the slot's obvious keyword;
   7. a question that says the same thing twice in different words;
   8. a formal or unusual wording;
   9. a question that mentions **another** fact of the domain only as context, while asking
      about this one ("Setting aside X for now, what is Y?", "Now that I know X, ...");
   10. a yes/no framed question ("Do you have ...?", "Is there ...?");
   11. a casual question with a typo or a missing apostrophe;
   12. a question with a purpose clause ("So that I can ..., what ...?", "In order to ...");
   13. a colloquial, very short question."""
BRIEF = """\
# Brief: write a set of questions an assistant asks a user

A simulated user holds facts an assistant (a person or an AI agent) needs to do a task for
them. We need **realistic, varied questions** an assistant would ask the user to learn each
fact, to test whether a question-understanding component generalises. Write them as a real
assistant would, in many voices: polite LLM-agent prose, terse human shorthand, a non-native
speaker, a hurried typist with typos, someone who hedges. `brief_domains.md` beside this file
lists the seven domains, each with an example opening request and the facts (slot names) the
user holds, each shown with how the user states it.

## What to write, per domain

1. **slots**: for every slot listed, **exactly 13 questions** that ask for that fact and
   nothing else, in these 13 kinds (one each, in this order):
KINDS
2. **priorities**: 13 questions that ask which of the user's wishes matters most, or what
   the user would give up when not everything is possible (some naming two wishes, some
   naming none, some as a trade: "Would you ... if ...?").
3. **compound**: 5 questions that each ask for exactly two slots at once, each given as
   `["question", ["slot_a", "slot_b"]]`.
4. **open**: 8 questions that no single fact answers: asking the user to pick the option,
   asking for all requirements at once, asking what to do next.

And once, for all domains: **unclear**: 12 messages that ask nothing the user could answer
(greetings, small talk, status updates, gibberish, off-topic questions).

## Rules

- Do not read any other file on this machine: only this brief and `brief_domains.md`.
  Do not search for, open or copy earlier question sets. Write everything yourself, fresh.
- A slot question must be about that slot only. Never name a value the user has not said as
  if it were known, except in kind 4 (a guess) — use a made-up value there.
- Vary the wording across slots and domains; do not reuse a template with the noun swapped.
- Write in English; use the domain's natural vocabulary and also everyday words.

## Output

One JSON file, `OUT`:

```json
{
  "about": "Blind held-out set vVERSION, written <date> from a brief only (brief.md and brief_domains.md); no project files or earlier question sets were read.",
  "domains": {
    "travel": {
      "slots": {"destination": ["...13 questions..."], "...": []},
      "priorities": ["...13..."],
      "compound": [["question", ["origin", "destination"]], "...5 in all"],
      "open": ["...8..."]
    },
    "meetings": {}, "shop": {}, "bank": {}, "cloud": {}, "lookup": {}, "synthetic": {}
  },
  "unclear": ["...12..."]
}
```

Use exactly the slot names of `brief_domains.md` as keys. Check with `python3 -c "import json;
json.load(open('OUT'))"` that the file parses, and count
13 questions per slot before you finish.
"""  # noqa: E501  (the example line is the brief's text, as the writers of v7 and v8 read it)


def domains_text() -> str:
    """Each domain's opening request and the facts its benchmark user holds."""
    out = [
        "# The seven domains\n",
        "For each domain: what the user first asks the assistant (an example), and each fact "
        "the user holds,",
        "given by its name and by how the user states it when asked (the value is one example; "
        "other tasks",
        "have other values). Write questions an assistant would ask to learn that fact.\n",
    ]
    for name in DOMAINS:
        task = user_for(name).task
        out += [f"## {name}\n", f'Opening request (example): "{task.request.text}"\n']
        out.append("Facts the user holds:\n")
        out += [f'- `{s.name}`: "{s.say()}"' for s in task.slots if s.name != "priorities"]
        wishes = "; ".join(c.text for c in task.constraints)
        out += [
            "",
            f"The user's wishes (which can conflict; the user has a priority order among them): "
            f"{wishes}.",
            "",
        ]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="where to write brief.md and brief_domains.md")
    parser.add_argument("--version", type=int, required=True, help="the new set's number")
    args = parser.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    out = args.folder / f"heldout_questions_v{args.version}.json"
    brief = BRIEF.replace("KINDS", KINDS).replace("OUT", str(out))
    brief = brief.replace("VERSION", str(args.version))
    (args.folder / "brief.md").write_text(brief, encoding="utf-8")
    (args.folder / "brief_domains.md").write_text(domains_text(), encoding="utf-8")


if __name__ == "__main__":
    main()
