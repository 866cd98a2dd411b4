"""An LLM reads the agent's messages for the simulated user: off by default, every answer cached.

The simulated user stays the deterministic one: it holds the hidden facts, judges proposals and
words every reply. Only its *reading* of a message (which slots or intents the message asks
about) goes to a model behind an OpenAI-compatible endpoint (vLLM, SGLang, Ollama,
``stategym serve``, a hosted API)::

    from stategym import Env
    from stategym.llm.reading import LLMReading

    reading = LLMReading("qwen2.5-7b-instruct", base_url="http://127.0.0.1:8000/v1",
                         cache="readings.sqlite")
    env = Env("travel", reader=reading)

The model sees the domain's slots (each named by the first phrases of the domain's table),
three shared intents (``priorities``, ``choice``, ``overview``) and the message, and answers
``{"asks": [labels]}``, or, for a message that could mean either of two facts with nothing in
it to decide, ``{"asks": [], "between": [two labels]}``: the user then asks which was meant,
as it does at a tie of the rule-based reading. Requests are greedy (temperature 0, seed 0),
and **every answer is kept in a SQLite file** keyed by a digest of the whole request (model,
prompt, message): the same message is sent once, ever, and a later run, a replay or a worker
process reads the file, so scores stay reproducible even where the server is not
deterministic. With
``offline=True`` nothing is sent: a message the file does not hold raises
:class:`~stategym.kernel.errors.UsageError` (so a re-score cannot silently change reader).

An answer that is not the JSON asked for, or names no known label, reads as "not
understood" and is cached as such (its raw text kept beside it, for inspection). An endpoint
that fails after the client's retries raises ``UsageError``: the run stops, as it does when an
agent's endpoint fails, rather than scoring episodes whose user could not read.

Trajectories played with a reader name it in ``meta["reader"]`` (``openai:MODEL``);
:func:`~stategym.kernel.trajectory.replay` replays them only on an environment made with the
same reader. Measure a model's reading on the held-out question sets with
``python benchmarks/user_understanding.py --reader openai:MODEL --base-url URL --cache F``.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stategym.kernel.errors import UsageError
from stategym.kernel.understanding import CHOICE, OVERVIEW, PRIORITIES, Reading

if TYPE_CHECKING:
    from openai import OpenAI

READING_PROMPT_VERSION = 2
"""Bumped whenever :func:`reading_prompt` changes; part of every cache key."""
PHRASES_SHOWN = 4
"""How many of a slot's phrases describe it to the model."""
MAX_REPLY_TOKENS = 120
"""The longest answer asked for: a short JSON list of labels."""
SHARED_LABELS: Mapping[str, tuple[str, str]] = {
    "priorities": (
        PRIORITIES,
        "which of the user's wishes matters most, or what the user would give up or accept "
        "when not everything can be had (a trade-off)",
    ),
    "choice": (
        CHOICE,
        "asks the user to pick the option, or what the assistant should choose or do next, "
        "or whether to go ahead",
    ),
    "overview": (
        OVERVIEW,
        "asks for all of the user's requirements or facts at once, or whether there is "
        "anything else to know",
    ),
}
"""Labels every domain offers besides its slots: ``label -> (intent, description)``."""
_SCHEMA = """\
CREATE TABLE IF NOT EXISTS readings (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    message TEXT NOT NULL,
    labels TEXT NOT NULL,
    raw TEXT NOT NULL
)"""


def reading_prompt(phrases: Mapping[str, tuple[str, ...]]) -> str:
    """The system prompt for one domain's phrase table: its labels, and the answer's form."""
    lines = [
        "You read messages an assistant sends to its user, for a simulated user in a "
        "benchmark. Say which of the user's facts the message asks the user to tell.",
        "",
        "Labels (a fact, then the words it goes by):",
    ]
    for slot, names in phrases.items():
        lines.append(f"- {slot}: " + "; ".join(names[:PHRASES_SHOWN]))
    for label, (_, description) in SHARED_LABELS.items():
        lines.append(f"- {label}: {description}")
    lines += [
        "",
        "Rules: a label is asked only if the message asks the user for it (a question, a "
        "request, a guess to confirm). A fact the message only mentions as context, or "
        "states itself, is not asked. Proposing an option asks nothing. Greetings, thanks "
        "and status updates ask nothing.",
        'Answer with JSON only: {"asks": [labels]}, an empty list if the message asks '
        "nothing the user could answer.",
        "If the message asks for one fact but could as well mean either of two of the facts "
        'above, with nothing in it to decide, do not choose: answer {"asks": [], "between": '
        "[the two labels]}, and the user will ask which one was meant.",
    ]
    return "\n".join(lines)


def parse_labels(content: str | None, known: Mapping[str, str]) -> tuple[str, ...]:
    """The intents an answer names, in its order, without repeats: the first JSON object (or
    list) in ``content``, its ``asks`` list, labels matched case-insensitively against
    ``known`` (``label -> intent``); anything else is ignored. Unparseable: ``()``."""
    found = _first_json(content or "")
    return _intents(found.get("asks") if isinstance(found, dict) else found, known)


def parse_between(content: str | None, slots: Mapping[str, str]) -> tuple[str, ...]:
    """The two facts an answer says the message lies between (its ``between`` list, matched
    against ``slots``, a domain's ``label -> slot``): ``()`` unless its ``asks`` list is empty
    (or absent) and it names exactly two different slots there."""
    found = _first_json(content or "")
    if not isinstance(found, dict) or found.get("asks"):
        return ()
    between = _intents(found.get("between"), slots)
    return between if len(between) == 2 else ()


def _intents(labels: Any, known: Mapping[str, str]) -> tuple[str, ...]:
    if not isinstance(labels, list):
        return ()
    intents = (known.get(label.strip().lower()) for label in labels if isinstance(label, str))
    return tuple(dict.fromkeys(i for i in intents if i is not None))


def _first_json(text: str) -> Any:
    decoder = json.JSONDecoder()
    for start, char in enumerate(text):
        if char in "{[":
            try:
                return decoder.raw_decode(text, start)[0]
            except json.JSONDecodeError:
                continue
    return None


@dataclass(frozen=True, slots=True)
class LLMReading:
    """Reading by a model behind an OpenAI-compatible endpoint (an environment's ``reader``).

    Attributes:
        model: the model name the server knows.
        cache: the SQLite file that keeps every answer (created if missing).
        base_url: the endpoint; ``None``: ``OPENAI_BASE_URL``, else OpenAI's.
        api_key: default ``OPENAI_API_KEY``, else ``"EMPTY"``.
        offline: send nothing; a message the cache does not hold raises ``UsageError``.
        timeout: seconds per request.
        client: a ready ``openai.OpenAI`` client (a test seam); not pickled.
    """

    model: str
    cache: Path | str
    base_url: str | None = None
    api_key: str | None = None
    offline: bool = False
    timeout: float = 60.0
    client: OpenAI | None = None

    @property
    def name(self) -> str:
        return f"openai:{self.model}"

    def reader(self, phrases: Mapping[str, tuple[str, ...]]) -> LLMReader:
        return LLMReader(self, phrases)


class LLMReader:
    """One domain's LLM reading (see the module docstring); made by :class:`LLMReading`."""

    def __init__(self, settings: LLMReading, phrases: Mapping[str, tuple[str, ...]]) -> None:
        self.settings = settings
        self.slots = {slot.lower(): slot for slot in phrases}
        self.labels = self.slots | {label: intent for label, (intent, _) in SHARED_LABELS.items()}
        self.prompt = reading_prompt(phrases)
        self._seen: dict[str, tuple[Reading, ...]] = {}
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._client: OpenAI | None = settings.client

    def __getstate__(self) -> dict[str, Any]:
        # A copy (a worker process, a deep-copied environment) opens its own connection and
        # client; the settings' client is a test seam and does not travel.
        state = self.__dict__.copy()
        state.update(_db=None, _client=None, _lock=None, _seen={})
        state["settings"] = replace(self.settings, client=None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def read(self, text: str, *, beside_request: bool = False) -> tuple[Reading, ...]:
        # ``beside_request`` is not sent: the prompt already has a stated fact asked nothing,
        # and leaving it out keeps every cached answer's key.
        del beside_request
        seen = self._seen.get(text)
        if seen is None:
            with self._lock:
                seen = self._seen[text] = self._readings(text, *self._answer_of(text))
        return seen

    def request(self, text: str) -> dict[str, Any]:
        """The chat-completions request for ``text``; its digest is the cache key."""
        return {
            "model": self.settings.model,
            "messages": [
                {"role": "system", "content": self.prompt},
                {"role": "user", "content": text},
            ],
            "temperature": 0,
            "seed": 0,
            "max_tokens": MAX_REPLY_TOKENS,
        }

    def _answer_of(self, text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The intents the model reads ``text`` to ask, and the two facts it lies between."""
        body = self.request(text)
        key = hashlib.sha256(
            json.dumps([READING_PROMPT_VERSION, body], sort_keys=True).encode()
        ).hexdigest()
        db = self._connection()
        row = db.execute("SELECT labels FROM readings WHERE key = ?", (key,)).fetchone()
        if row is not None:
            return _stored(row[0])
        if self.settings.offline:
            raise UsageError(
                f"the reading cache {self.settings.cache} has no answer of {self.settings.model} "
                f"for the message {text[:80]!r}; run once with the endpoint (offline=False)"
            )
        raw = self._ask(body)
        asks, between = parse_labels(raw, self.labels), parse_between(raw, self.slots)
        stored = json.dumps({"asks": asks, "between": between} if between else asks)
        db.execute(
            "INSERT OR IGNORE INTO readings VALUES (?, ?, ?, ?, ?)",
            (key, self.settings.model, text, stored, raw or ""),
        )
        # Another process may have answered first: the first answer stored is the one read.
        row = db.execute("SELECT labels FROM readings WHERE key = ?", (key,)).fetchone()
        return _stored(row[0])

    def _ask(self, body: dict[str, Any]) -> str | None:
        import openai

        from stategym.llm.openai_agent import api_key_or_default

        client = self._client
        if client is None:
            client = self._client = openai.OpenAI(
                base_url=self.settings.base_url,
                api_key=api_key_or_default(self.settings.api_key),
                timeout=self.settings.timeout,
            )
        try:
            completion = client.chat.completions.create(**body)
        except openai.OpenAIError as error:
            where = self.settings.base_url or "the endpoint"
            raise UsageError(f"the user's reader at {where} failed: {error}") from None
        if not completion.choices:
            return None
        return completion.choices[0].message.content

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            path = Path(self.settings.cache)
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                db = sqlite3.connect(
                    path, timeout=60, isolation_level=None, check_same_thread=False
                )
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(_SCHEMA)
            except sqlite3.DatabaseError as error:
                raise UsageError(f"cannot use {path} as a reading cache: {error}") from None
            self._db = db
        return self._db

    def _readings(
        self, text: str, intents: tuple[str, ...], between: tuple[str, ...]
    ) -> tuple[Reading, ...]:
        clause = text.lower()
        evidence = (self.settings.name,)
        if not intents:
            return (Reading(clause, None, 0.0, evidence, between),)
        return tuple(Reading(clause, intent, 1.0, evidence) for intent in intents)


def _stored(labels: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A cached answer: the intents read, as a JSON list, or with the two facts a message
    lies between, as ``{"asks": [], "between": [a, b]}``."""
    found = json.loads(labels)
    if isinstance(found, dict):
        return tuple(found["asks"]), tuple(found["between"])
    return tuple(found), ()
