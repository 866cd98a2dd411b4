"""The request schema of ``stategym serve``: the fields of a chat-completions request the
server reads, checked before the request joins a batch (a bad one is answered 400, naming the
field). Fields the server does not read are kept, not refused, as OpenAI-compatible servers
keep them. A ``null`` for a field that has a default means that default, as OpenAI reads it
(``temperature=None`` from the ``openai`` client is temperature 1): the key is dropped before
the field is checked, so the field is as if the client had left it out."""

from __future__ import annotations

from typing import Any, Literal

import pydantic

from stategym.llm.local import SEEDS


class _Open(pydantic.BaseModel):
    """A part of a request: the fields this server reads are checked, others kept, and a
    ``null`` where a field has a default is that default."""

    model_config = pydantic.ConfigDict(extra="allow")

    @pydantic.model_validator(mode="before")
    @classmethod
    def _null_is_the_default(cls, data: Any) -> Any:
        # Only fields whose default is not None: the others take null as it is (a message's
        # ``content: null`` is kept as sent, for the chat template).
        if not isinstance(data, dict):
            return data
        defaults = {
            name
            for name, field in cls.model_fields.items()
            if not field.is_required() and field.get_default(call_default_factory=True) is not None
        }
        return {k: v for k, v in data.items() if v is not None or k not in defaults}


class TextPart(_Open):
    """One part of a message's content (only text parts: the models served read text)."""

    type: Literal["text"]
    text: str


class FunctionCall(_Open):
    """A called function: its name, and its arguments as JSON text (or an object)."""

    name: str
    arguments: str | dict[str, Any]


class ToolCallPart(_Open):
    """One tool call of an assistant message."""

    id: str = ""
    type: Literal["function"] = "function"
    function: FunctionCall


class ChatMessage(_Open):
    """One message of the conversation, as OpenAI's chat-completions schema has it."""

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[TextPart] | None = None
    tool_calls: list[ToolCallPart] | None = None
    tool_call_id: str | None = None
    name: str | None = None


class FunctionSpec(_Open):
    """A function the model may call."""

    name: str = pydantic.Field(min_length=1)
    description: str = ""
    parameters: dict[str, Any] | None = None


class ToolSpec(_Open):
    """One offered tool (``{"type": "function", "function": {...}}``)."""

    type: Literal["function"] = "function"
    function: FunctionSpec


class ChatRequest(_Open):
    """The fields of a chat-completions request this server reads (others are ignored)."""

    model: str = ""
    messages: list[ChatMessage] = pydantic.Field(min_length=1)
    tools: list[ToolSpec] | None = None
    temperature: float = pydantic.Field(1.0, ge=0.0, le=2.0)
    top_p: float = pydantic.Field(1.0, gt=0.0, le=1.0)
    max_tokens: int | None = pydantic.Field(None, ge=1)
    max_completion_tokens: int | None = pydantic.Field(None, ge=1)
    n: int = pydantic.Field(1, ge=1, le=16)
    seed: int | None = pydantic.Field(None, ge=SEEDS.start, le=SEEDS.stop - 1)
    """A signed 32-bit integer (:data:`~stategym.llm.local.SEEDS`: the bits torch's generator
    keeps, so two seeds never sample alike; OpenAI's is 64-bit); choice ``i`` samples with
    ``seed + i``, which must be one too."""
    logprobs: bool = False
    stream: bool = False
    return_token_ids: bool = False
    prompt_token_ids: list[pydantic.StrictInt] | None = pydantic.Field(None, min_length=1)
    """Token-in-token-out: the prompt's ids, continued as given (``messages`` not rendered)."""


__all__ = [
    "ChatMessage",
    "ChatRequest",
    "FunctionCall",
    "FunctionSpec",
    "TextPart",
    "ToolCallPart",
    "ToolSpec",
]
