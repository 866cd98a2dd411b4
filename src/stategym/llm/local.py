"""A local Hugging Face causal LM behind one call: chat messages and tools in, text out.

Shared by the local agent (``hf:PATH``) and ``stategym serve``. The model's own chat template
renders the conversation and the tools, so any chat model whose template takes ``tools``
works; every text of the conversation (contents, calls' names and arguments, tools' names,
descriptions and schemas) is tokenised as text, so only the template's own markers are special
(:meth:`ChatTokenizer.render`). Decoding goes through :class:`~stategym.llm.engine.Engine`:
many requests in one batch (one forward per decoding step), each episode's key/value cache
kept across its turns (a session), each row sampled from its own generator seeded by its
request: the same seed gives the same tokens whatever else shares the batch, two seeds of
:data:`SEEDS` (the signed 32-bit integers, the bits torch's CPU generator keeps) give two
generator states, and the log-probability of every sampled token comes out as a by-product
(what RL trainers need), with no global random state touched.

A folder is checked before it loads (:func:`~stategym.llm.model_files.check_model_dir`), and
its logits on :data:`GREETING` must be finite (a diverged checkpoint is refused, naming it);
non-finite logits later stop decoding (:class:`~stategym.llm.engine.NonFiniteLogits`).
"""

from __future__ import annotations

import copy
import math
import re
import threading
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import orjson

from stategym.kernel.errors import UsageError
from stategym.kernel.files import refuse_special_entries
from stategym.llm.engine import DIVERGED, Engine, NonFiniteLogits, greedy
from stategym.llm.model_files import (
    check_model_dir,
    first_line,
    load_failed,
    loader_errors,
    quiet_loading,
)
from stategym.llm.turns import GREETING, check_turns, template_errors
from stategym.rendering.tokens import first_segment

if TYPE_CHECKING:
    import torch

Message = dict[str, Any]

MIN_TEMPERATURE = 1e-5
"""Temperatures below it (0 included) pick the most likely token, as vLLM does: dividing the
logits by less overflows them to infinity, and the softmax of infinities is no distribution."""
SEEDS = range(-(2**31), 2**31)
"""The seeds a row's generator takes: the signed 32-bit integers. ``torch.Generator.manual_seed``
takes any 64-bit number, but the CPU generator (a Mersenne Twister) keeps only its low 32 bits
(seeds ``s`` and ``s + 2**32`` sample the same tokens); within this range every seed gives
its own generator state on every device (CUDA's keeps 64 bits), and a seed is given to torch
as it is, so a seed samples as it did before the range was narrowed. Others are refused
(:meth:`LocalModel.check`), not folded into it."""


def probe_greeting(engine: Engine, chat: ChatTokenizer) -> None:
    """One forward of :data:`GREETING` through ``engine``.

    Raises:
        NonFiniteLogits: the model's logits hold NaN or an infinity (it diverged).
    """
    engine.probe(chat.render(GREETING, []))


@dataclass(frozen=True, slots=True)
class Sampling:
    """How to pick tokens.

    Attributes:
        temperature: 0 (or anything below :data:`MIN_TEMPERATURE`) picks the most likely
            token (greedy); above it samples.
        top_p: nucleus sampling mass in ``(0, 1]`` (1: the whole distribution); the most
            likely token is always kept, however small.
        max_tokens: most new tokens per reply.
        seed: seed of this reply's random generator, in :data:`SEEDS` (``None``: 0).
    """

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int | None = None


@dataclass(frozen=True, slots=True)
class Generation:
    """One reply of the model.

    Attributes:
        text: the decoded reply, without the end-of-turn token.
        prompt_ids: the rendered prompt's token ids.
        completion_ids: the generated token ids (the end-of-turn token included, if reached).
        logprobs: log-probability of each generated token under the sampling distribution's
            source (the model's softmax at temperature 1, as trainers expect).
        finish_reason: ``stop`` (end of turn) or ``length`` (``max_tokens`` reached).
        seconds: wall time of rendering and decoding.
    """

    text: str
    prompt_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    finish_reason: Literal["stop", "length"]
    seconds: float


def check_device(device: str) -> None:
    """Refuse a torch device this machine cannot use, in one line, before anything loads.

    Raises:
        UsageError: ``device`` is no torch device name, or names a CUDA device that torch
            does not see here (a CPU-only build, no GPU, or an index past the last GPU).
    """
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError):
        raise UsageError(f"unknown torch device {device!r}; use cpu, cuda or cuda:N") from None
    if parsed.type != "cuda":
        return
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        raise UsageError(
            f"device {device!r}: torch {torch.__version__} sees no CUDA device on this machine"
        )
    if parsed.index is not None and parsed.index >= count:
        raise UsageError(f"device {device!r}: torch sees {count} CUDA device(s), cuda:0 up")


class ChatTokenizer:
    """A tokenizer's chat template, as the renderer's token segments need it (a
    :class:`~stategym.rendering.tokens.ChatTemplate`): template text and tokenisation.

    Args:
        tokenizer: a Hugging Face (fast) tokenizer with a chat template.
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        template = str(tokenizer.chat_template or "")
        # Templates written for HF tool use expect arguments as objects; ours (and Qwen's)
        # print strings verbatim, which keeps the exact text the model was trained on.
        self._arguments_as_text = "is string" in template
        self._specials = _special_strings(tokenizer)
        self._as_text: Any = None  # the backend that reads special-token strings as text

    @classmethod
    def load(cls, path: str | Path) -> ChatTokenizer:
        """The tokenizer saved in a local folder (never from a hub).

        Raises:
            UsageError: ``transformers`` cannot load it (it reads ``config.json`` too, to
                choose the tokenizer's class), naming the folder, or the folder holds a
                FIFO, a device or a socket, which the loader would wait on (naming it), or
                its turns cannot be cut into token segments
                (:func:`~stategym.llm.turns.check_turns`).
        """
        from transformers import AutoTokenizer

        refuse_special_entries(Path(path))
        try:
            with quiet_loading():
                chat = cls(AutoTokenizer.from_pretrained(Path(path), local_files_only=True))
        except loader_errors() as error:
            raise load_failed(path, error) from None
        check_turns(chat, path)
        return chat

    @property
    def end_of_turn(self) -> str:
        """The text that closes an assistant turn: the tokenizer's end-of-sequence token."""
        return str(self.tokenizer.eos_token)

    @property
    def specials(self) -> re.Pattern[str] | None:
        """The tokenizer's special-token strings, longest first (``None``: it has none)."""
        return self._specials

    def render(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> list[int]:
        """The prompt's token ids, with the template's generation prompt appended; every text
        of the conversation tokenised as text (:func:`~stategym.rendering.tokens.first_segment`:
        contents, calls' names and arguments, tools' names, descriptions and schemas), so a
        served conversation that sends model text back (a tool result naming what the model
        wrote, an earlier call's arguments) holds no turn marker the template did not write,
        as a token-in-token-out prompt holds none.

        Raises:
            ValueError: a template that rewrites special-token strings of those texts so that
                they cannot be told from its own markers
                (:func:`~stategym.rendering.tokens.conversation_texts`).
        """
        return list(first_segment(self, messages, tools).ids)

    def template(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], generation: bool
    ) -> str:
        """The conversation as the chat template's text (the renderer cuts token segments
        from it: :mod:`stategym.rendering.tokens`)."""
        return str(
            self.tokenizer.apply_chat_template(
                [self.prepare(m) for m in messages],
                tools=list(tools) or None,
                add_generation_prompt=generation,
                tokenize=False,
            )
        )

    def tokenize(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """Token ids of ``text`` (no special tokens added) and each token's character span."""
        encoded = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        spans = [(int(a), int(b)) for a, b in encoded["offset_mapping"]]
        return list(encoded["input_ids"]), spans

    def tokenize_content(
        self, text: str, contents: Sequence[tuple[int, int]]
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """As :meth:`tokenize`, except that a special-token string inside one of ``contents``
        (character ranges of the conversation's texts) is tokenised as text: only the
        template's own markers are special (:class:`~stategym.rendering.tokens.ContentTokenizer`).

        The tokenizer already cuts the text at every special token, so cutting it there
        changes nothing else: each such string is tokenised alone as text (as transformers'
        ``apply_chat_template(..., sanitize_control_tokens=True)`` does), the pieces between
        as before; text with none is tokenised in one piece, exactly as :meth:`tokenize`.
        (A SentencePiece tokenizer that marks the start of a text with a space would add one
        after each cut; byte-level BPE, Qwen's and the tiny model's, adds none.)
        """
        found = [
            match.span()
            for start, end in contents
            if self._specials is not None
            for match in self._specials.finditer(text, start, end)
        ]
        if not found:
            return self.tokenize(text)
        pieces: list[tuple[int, int, bool]] = []  # start, end, whether read as text
        position = 0
        for start, end in found:
            pieces += [(position, start, False), (start, end, True)]
            position = end
        pieces.append((position, len(text), False))
        ids: list[int] = []
        spans: list[tuple[int, int]] = []
        for start, end, as_text in pieces:
            tokenize = self._tokenize_as_text if as_text else self.tokenize
            piece_ids, piece_spans = tokenize(text[start:end])
            ids.extend(piece_ids)
            spans.extend((start + a, start + b) for a, b in piece_spans)
        return ids, spans

    def _tokenize_as_text(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """Token ids and spans of ``text`` with special-token strings read as text: a copy of
        the backend, set so once (transformers' ``split_special_tokens`` flips the shared
        backend's setting on every call, which a concurrent call would see)."""
        if not text:
            return [], []
        if self._as_text is None:
            backend = copy.deepcopy(self.tokenizer.backend_tokenizer)
            backend.encode_special_tokens = True
            self._as_text = backend
        encoding = self._as_text.encode(text, add_special_tokens=False)
        return list(encoding.ids), [(int(a), int(b)) for a, b in encoding.offsets]

    def prepare(self, message: Message) -> Message:
        """Template-friendly copy: text content, arguments as the template expects them."""
        prepared = dict(message)
        content = prepared.get("content")
        if isinstance(content, list):  # OpenAI content parts: keep the text parts
            prepared["content"] = "".join(
                str(p.get("text", "")) for p in content if isinstance(p, dict)
            )
        elif content is None:
            prepared["content"] = ""
        if prepared.get("tool_calls") and not self._arguments_as_text:
            prepared["tool_calls"] = [_arguments_object(call) for call in prepared["tool_calls"]]
        return prepared


def _special_strings(tokenizer: Any) -> re.Pattern[str] | None:
    """A pattern of the tokenizer's special tokens' strings, longest first (as the tokenizer
    matches them: leftmost, longest); ``None`` when it has none."""
    added = getattr(tokenizer, "added_tokens_decoder", {}).values()
    strings = sorted({str(t.content) for t in added if t.special and t.content}, key=len)
    if not strings:
        return None
    return re.compile("|".join(re.escape(s) for s in reversed(strings)))


class LocalModel:
    """A causal LM and its tokenizer loaded from a local directory (never from a hub).

    Args:
        path: a directory written by ``save_pretrained`` (``stategym model init`` makes one).
        device: torch device.
        threads: torch intra-op threads (``None``: torch's default).

    Raises:
        UsageError: a folder :func:`~stategym.llm.model_files.check_model_dir` refuses, a
            model ``transformers`` cannot load, or a model whose logits are not finite
            (:class:`~stategym.llm.engine.NonFiniteLogits`), each naming the folder.
    """

    def __init__(
        self, path: str | Path, *, device: str = "cpu", threads: int | None = None
    ) -> None:
        check_model_dir(path)  # a wrong path fails in milliseconds, before torch imports
        check_device(device)
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if threads is not None:
            torch.set_num_threads(threads)
        self.path = Path(path)
        try:
            with quiet_loading():
                self.tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
                model: Any = AutoModelForCausalLM.from_pretrained(self.path, local_files_only=True)
        except loader_errors() as error:
            raise load_failed(self.path, error) from None
        self.model = model.to(device).eval()  # Any: transformers types ``to`` too narrowly
        self.device = device
        self.threads = torch.get_num_threads()
        """The torch intra-op threads it decodes with (``threads``, or torch's default)."""
        self.name = self.path.name
        self._stops = _stop_ids(self.tokenizer, self.model)
        self.chat = ChatTokenizer(self.tokenizer)
        """The chat template and tokenizer (token segments are cut from it)."""
        self._lock = threading.Lock()  # one decode at a time: the model is not re-entrant
        pad = self.tokenizer.pad_token_id
        self.engine = Engine(self.model, self._stops, int(pad if pad is not None else 0))
        """Batched decoding with each session's cache kept across its turns."""
        if not self._stops:
            raise UsageError(
                f"cannot use the model at {self.path}: it names no token that ends a reply "
                "(no eos_token in its tokenizer, no eos_token_id in generation_config.json), "
                "so every reply would run to max_tokens"
            )
        try:
            probe_greeting(self.engine, self.chat)
        except NonFiniteLogits:
            raise NonFiniteLogits(
                f"cannot use the model at {self.path}: {DIVERGED}; give a model saved before "
                "it diverged"
            ) from None
        except template_errors(ValueError) as error:  # it cannot render a user's "Hello"
            raise UsageError(
                f"cannot use the model at {self.path}: its chat template fails on a greeting "
                f"({type(error).__name__}: {first_line(error)})"
            ) from None

    @property
    def context(self) -> int:
        """The most tokens (prompt and reply) the model accepts."""
        return int(getattr(self.model.config, "max_position_embeddings", 2048))

    @property
    def vocab_size(self) -> int:
        """Token ids run from 0 to this (excluded): the rows of the input embedding."""
        return int(self.model.get_input_embeddings().num_embeddings)

    def check(self, prompt: Sequence[int], sampling: Sampling) -> None:
        """Refuse a request the model cannot decode, before it joins a batch.

        Raises:
            InvalidRequestError: an empty prompt, a token id outside the vocabulary, a seed
                outside :data:`SEEDS`, a temperature, ``top_p`` or ``max_tokens`` that does
                not sample (a negative or infinite temperature, ``top_p`` outside ``(0, 1]``).
        """
        if not prompt:
            raise InvalidRequestError("the prompt has no tokens")
        low, high = min(prompt), max(prompt)
        if low < 0 or high >= self.vocab_size:
            bad = low if low < 0 else high
            raise InvalidRequestError(
                f"token id {bad} is outside the vocabulary: ids run from 0 to {self.vocab_size - 1}"
            )
        if sampling.seed is not None and sampling.seed not in SEEDS:
            raise InvalidRequestError(
                f"seed {sampling.seed} is outside [-2**31, 2**31): the generator keeps 32 bits"
            )
        if not (math.isfinite(sampling.temperature) and sampling.temperature >= 0):
            raise InvalidRequestError(f"temperature {sampling.temperature} is not in [0, inf)")
        if not 0 < sampling.top_p <= 1:
            raise InvalidRequestError(f"top_p {sampling.top_p} is not in (0, 1]")
        if sampling.max_tokens < 1:
            raise InvalidRequestError(f"max_tokens {sampling.max_tokens} is below 1")

    def render(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> list[int]:
        """The prompt's token ids, with the template's generation prompt appended."""
        return self.chat.render(messages, tools)

    def generate(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], sampling: Sampling
    ) -> Generation:
        """Reply to a conversation (rendered by the chat template and tokenised whole).

        Raises:
            ContextLengthError: the prompt leaves no room for a reply in the model's context.
        """
        started = time.perf_counter()
        return self.generate_ids(self.render(messages, tools), sampling, started=started)

    def generate_ids(
        self,
        prompt: Sequence[int],
        sampling: Sampling,
        *,
        started: float | None = None,
        session: Hashable | None = None,
    ) -> Generation:
        """Continue a prompt given as token ids (token-in-token-out: nothing re-tokenised).

        Args:
            prompt: the whole prompt.
            sampling: how to pick tokens.
            started: when the request started (``seconds`` counts from it).
            session: the episode's key: its cache is kept, so its next prompt (this one,
                the reply, an observation) feeds only the new tokens.

        Raises:
            ContextLengthError: the prompt leaves no room for a reply in the model's context.
        """
        replies = self.generate_batch([(prompt, sampling, session)], started=started)
        reply = replies[0]
        if isinstance(reply, ContextLengthError):
            raise reply
        return reply

    def generate_batch(
        self,
        requests: Sequence[tuple[Sequence[int], Sampling, Hashable | None]],
        *,
        started: float | None = None,
    ) -> list[Generation | ContextLengthError]:
        """Continue many ``(prompt ids, sampling, session)`` requests in one batch
        (:class:`~stategym.llm.engine.Engine`): one forward per decoding step for all of
        them, each row sampled from its own generator seeded by its ``sampling.seed``, so a
        row's tokens do not depend on which others share its batch. A request with no room
        left in the context gets a :class:`ContextLengthError` in its place.

        Raises:
            InvalidRequestError: a request :meth:`check` refuses (nothing is decoded).
        """
        from stategym.llm.engine import Request

        for index, (prompt, sampling, _) in enumerate(requests):
            try:
                self.check(prompt, sampling)
            except InvalidRequestError as error:
                raise InvalidRequestError(f"request {index}: {error}") from None
        started = time.perf_counter() if started is None else started
        answers: list[Generation | ContextLengthError | None] = [None] * len(requests)
        todo: list[int] = []
        for i, (prompt, sampling, _) in enumerate(requests):
            budget = min(sampling.max_tokens, self.context - len(prompt))
            if budget <= 0:
                answers[i] = ContextLengthError(
                    f"the prompt has {len(prompt)} tokens; the model takes {self.context}"
                )
            else:
                todo.append(i)
        if todo:
            engine_requests = [
                Request(
                    tuple(requests[i][0]),
                    min(requests[i][1].max_tokens, self.context - len(requests[i][0])),
                    requests[i][2],
                )
                for i in todo
            ]
            picker = _row_picker([requests[i][1] for i in todo], self.device)
            with self._lock:
                decoded = self.engine.run(engine_requests, picker)
            elapsed = time.perf_counter() - started
            for i, reply in zip(todo, decoded, strict=True):
                answers[i] = self._generation(requests[i][0], reply, elapsed)
        return [a for a in answers if a is not None]

    def release(self, session: Hashable) -> None:
        """Forget a session's cache (its episode ended)."""
        with self._lock:
            self.engine.release(session)

    def _generation(self, prompt: Sequence[int], reply: Any, seconds: float) -> Generation:
        text_ids = reply.ids[:-1] if reply.stopped else reply.ids
        text = str(self.tokenizer.decode(list(text_ids), skip_special_tokens=False))
        return Generation(
            text,
            tuple(prompt),
            tuple(reply.ids),
            tuple(reply.logprobs),
            "stop" if reply.stopped else "length",
            seconds,
        )


class ContextLengthError(ValueError):
    """The conversation no longer fits in the model's context."""


class InvalidRequestError(ValueError):
    """A request the model cannot decode (:meth:`LocalModel.check`)."""


def _row_picker(samplings: Sequence[Sampling], device: str) -> Any:
    """A :data:`~stategym.llm.engine.Picker` where row ``i`` samples with ``samplings[i]``
    from its own generator (greedy rows need none: one argmax for the whole batch)."""
    import torch

    if all(s.temperature < MIN_TEMPERATURE for s in samplings):
        return greedy
    generators = [torch.Generator(device=device).manual_seed(s.seed or 0) for s in samplings]

    def pick(logits: torch.Tensor) -> torch.Tensor:
        chosen = [_pick(logits[i], sampling, generators[i]) for i, sampling in enumerate(samplings)]
        return torch.tensor(chosen, device=logits.device)

    return pick


def _pick(logits: torch.Tensor, sampling: Sampling, generator: torch.Generator) -> int:
    import torch

    if sampling.temperature < MIN_TEMPERATURE:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits / sampling.temperature, -1)
    if sampling.top_p < 1.0:
        sorted_probs, order = torch.sort(probs, descending=True)
        keep = torch.cumsum(sorted_probs, -1) - sorted_probs < sampling.top_p
        keep[0] = True  # a top_p below float32's smallest number kept nothing
        probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_probs[keep])
    return int(torch.multinomial(probs, 1, generator=generator))


def _stop_ids(tokenizer: Any, model: Any) -> frozenset[int]:
    """End-of-turn tokens: the tokenizer's eos and the generation config's."""
    stops: set[int] = set()
    for source in (tokenizer.eos_token_id, getattr(model.generation_config, "eos_token_id", None)):
        if isinstance(source, int):
            stops.add(source)
        elif isinstance(source, list):
            stops.update(int(s) for s in source)
    return frozenset(stops)


def _arguments_object(call: Any) -> Any:
    """A tool call whose JSON-text arguments are decoded (left as text if not JSON)."""
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        return call
    arguments = call["function"].get("arguments")
    if isinstance(arguments, str):
        try:
            decoded = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return call
        return {**call, "function": {**call["function"], "arguments": decoded}}
    return call
