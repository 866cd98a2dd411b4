"""Whether a tokenizer's turns can be cut into token segments, checked when it loads.

What cuts segments (:mod:`~stategym.rendering.tokens`: ``hf:`` agents, the trainer, an
``openai:`` agent's ``tokenizer``) needs a chat template that closes an assistant turn with
the tokenizer's end-of-sequence token and renders a turn the same once messages follow it;
without them an episode failed at its first observation. ``serve`` renders each request whole
and does not need them (Qwen3's own template drops the thinking block of every turn but the
last, and is served).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from stategym.kernel.errors import UsageError
from stategym.llm.model_files import first_line
from stategym.rendering.tokens import NO_END_OF_TURN, AssistantTurns, observation_segment

if TYPE_CHECKING:
    from stategym.llm.local import ChatTokenizer

GREETING: tuple[dict[str, Any], ...] = ({"role": "user", "content": "Hello"},)
"""The conversation a model's logits are probed on when it loads
(:meth:`~stategym.llm.engine.Engine.probe`), and an observation of the turn check: any chat
template renders it."""


def template_errors(*more: type[Exception]) -> tuple[type[Exception], ...]:
    """What a chat template raises on a conversation it cannot render: Jinja's errors
    (``raise_exception`` too), and Python's from the expressions it evaluates (a ``+`` of
    a string and a number, a missing key, a division by zero, a range too big). A model
    whose template fails on the greeting or the check's conversation is refused at load;
    ``serve`` answers a request whose conversation fails so with a 400. ``more``: other
    errors the caller reads so (``ValueError``)."""
    from jinja2 import TemplateError

    return (TemplateError, TypeError, KeyError, IndexError, AttributeError, ArithmeticError, *more)


def check_turns(chat: ChatTokenizer, source: str | Path) -> None:
    """Refuse a tokenizer whose turns cannot be cut into token segments: one with no chat
    template or no end-of-sequence token, or whose template fails on a plain conversation,
    does not close an assistant turn with that token (a folder without
    ``tokenizer_config.json`` can load with another one), or renders a turn differently once
    messages follow it; or one that matches a special token in text its normaliser rewrote
    (:func:`forged_special`).

    Raises:
        UsageError: naming ``source`` and what the tokenizer lacks.
    """
    refused = f"cannot use the model at {source}"
    if not chat.tokenizer.chat_template:
        raise UsageError(f"{refused}: its tokenizer has no chat template")
    if not chat.tokenizer.eos_token:
        raise UsageError(
            f"{refused}: its tokenizer names no end-of-sequence token (eos_token, in "
            "tokenizer_config.json, is missing or empty), which closes an assistant turn"
        )
    forged = forged_special(chat.tokenizer)
    if forged is not None:
        look_alike, special = forged
        raise UsageError(
            f"{refused}: its tokenizer matches the special token {special!r} after its "
            f"normaliser rewrites text, so a tool result or a user quoting {look_alike!r} "
            "would hold a real turn marker; save it with normalized=false on its special "
            "tokens (tokenizer.json's added_tokens)"
        )
    try:
        AssistantTurns(chat, []).segment({"role": "assistant", "content": "Hello"})
        observation_segment(chat, GREETING, [], closed=True)
    except ValueError as error:
        raise UsageError(f"{refused}: {error}{_end_of_turn_hint(chat, source, error)}") from None
    except template_errors() as error:
        raise UsageError(
            f"{refused}: its chat template fails on a plain conversation "
            f"({type(error).__name__}: {first_line(error)})"
        ) from None


_FULL_WIDTH = {code: code + 0xFEE0 for code in range(0x21, 0x7F)}
"""ASCII's printable characters to their full-width forms (NFKC maps them back)."""


def forged_special(tokenizer: Any) -> tuple[str, str] | None:
    """A look-alike of one of ``tokenizer``'s special tokens that its normaliser turns into
    that token (``(look-alike, special)``), or ``None``. Special tokens whose added-token
    entry says ``normalized`` are matched in the normalised text, where the pattern that keeps
    the conversation's texts from holding a marker
    (:attr:`~stategym.llm.local.ChatTokenizer.specials`) matches the raw text: with NFKC,
    a tool result quoting ``<|im_end|>`` in full-width letters held a real one (audit
    17A F5). The look-alikes tried: :func:`_look_alikes`."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    normalizer = getattr(backend, "normalizer", None)
    if normalizer is None:
        return None
    added = getattr(tokenizer, "added_tokens_decoder", {}).values()
    for token in added:
        special = str(token.content)
        if not (token.special and getattr(token, "normalized", False) and special):
            continue
        matched = normalizer.normalize_str(special)  # what the tokenizer looks for
        for look_alike in (matched, *_look_alikes(special)):
            if look_alike != special and matched in normalizer.normalize_str(look_alike):
                return look_alike, special
    return None


def _look_alikes(special: str) -> tuple[str, ...]:
    """Spellings of ``special`` a normaliser may turn into what it matches: full-width,
    upper-, lower- and swapped-case; with an accent on each letter (accent stripping); and
    with a character some normaliser drops between each two (a NUL: BERT's clean-up; a
    zero-width space; a soft hyphen). :func:`forged_special` also tries the normalised token
    itself (NFKC turns the full-width bars of DeepSeek's markers into ASCII ones)."""
    accented = "".join(c + "\u0301" if c.isalpha() else c for c in special)
    dropped = tuple(mark.join(special) for mark in ("\x00", "\u200b", "\u00ad"))
    cases = (special.upper(), special.lower(), special.swapcase())
    return (special.translate(_FULL_WIDTH), *cases, accented, *dropped)


def _end_of_turn_hint(chat: ChatTokenizer, source: str | Path, error: ValueError) -> str:
    """What a turn must end with, where that is why it cannot be cut (not for a template's
    own ``ValueError``, nor for a turn rendered differently once messages follow it)."""
    if str(error) != NO_END_OF_TURN:
        return ""
    folder = Path(source)
    missing = folder.is_dir() and not (folder / "tokenizer_config.json").exists()
    named = "; the folder has no tokenizer_config.json, which names it" if missing else ""
    token = chat.end_of_turn
    return f" (a turn must end with the tokenizer's end-of-sequence token, here {token!r}{named})"
