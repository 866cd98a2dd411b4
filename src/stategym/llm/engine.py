"""Batched decoding for a local causal LM: many sessions at once, each one's key/value
cache kept across its turns.

A *session* is one episode's token stream. Each turn its caller sends the whole prompt as
token ids (token-in-token-out: the previous prompt, the ids sampled, the observation's ids
from the renderer); :class:`Engine` keeps the keys and values of every token a session has
already fed, finds how much of the new prompt they cover (the common prefix: normally all
but the observation, and a prompt that rewrote history simply re-feeds from where it
differs), and feeds only the rest. :meth:`Engine.run` answers many sessions' requests with
one batched forward per decoding step.

Layout of one batch (row ``i``, ``Wc`` the longest kept cache, ``Ws`` the longest new
suffix)::

    [ pad | cache_i ][ pad | suffix_i ][ sampled tokens ... ]
     <---- Wc ----->  <---- Ws ----->

Padding is masked out by the attention mask, and position ids count each row's own real
tokens, so a row sees exactly what it would see alone (up to float rounding of batched
matrix products). The cache is preallocated for the whole turn (prompt and the longest
budget), so a decoding step writes one column instead of copying the cache, as the default
growing cache does. After the turn each row's real columns are cut out and kept for its
session's next turn. Assumes full attention in every layer (no sliding window), as the
tiny recipe and most chat models have.

Logits that hold NaN or an infinity (weights that diverged in training, or are damaged) are
refused where they are produced, before anything samples from them
(:class:`NonFiniteLogits`, one line on the command line): every step of :meth:`Engine.run`,
and :meth:`Engine.probe`, a forward of a short prompt its owners run when a model loads.
"""

from __future__ import annotations

import inspect
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stategym.kernel.errors import UsageError

if TYPE_CHECKING:
    import torch

Picker = Callable[["torch.Tensor"], "torch.Tensor"]
"""``(B, V)`` float logits -> ``(B,)`` the id each row picks."""

MAX_SESSIONS = 256
"""Sessions whose caches are kept at once; the least recently used beyond it are dropped
(a backstop for sessions nobody released: an episode that was cancelled)."""


DIVERGED = (
    "the model's logits are not finite (NaN or infinity): its weights diverged in training, "
    "or are damaged"
)
"""What :class:`NonFiniteLogits` says; its raisers add what to do about it."""


class NonFiniteLogits(UsageError):
    """The model's logits hold NaN or an infinity, so nothing can be sampled from them
    (``torch.multinomial`` would raise deep inside; an argmax would pick garbage silently).

    A usage error: the cure is another model (one saved before it diverged) or, in training,
    a smaller learning rate; the command line says it in one line.
    """


@dataclass(frozen=True, slots=True)
class Request:
    """One session's turn.

    Attributes:
        prompt: the whole prompt as token ids (at least one).
        budget: most new tokens.
        session: the session's key (``None``: a one-off prompt, nothing kept).
    """

    prompt: tuple[int, ...]
    budget: int
    session: Hashable | None = None


@dataclass(frozen=True, slots=True)
class Decoded:
    """One row's reply.

    Attributes:
        ids: the sampled ids (the stop id included when reached).
        logprobs: each sampled id's log-probability under the model's softmax at
            temperature 1 (what trainers and logs expect).
        stopped: a stop id was sampled (else the budget ran out).
    """

    ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    stopped: bool


@dataclass(frozen=True, slots=True)
class _Session:
    """The fed tokens of a session and their keys/values, per layer ``(H, n, D)``."""

    ids: tuple[int, ...]
    keys: tuple[Any, ...]
    values: tuple[Any, ...]

    def cut(self, keep: int) -> _Session:
        return _Session(
            self.ids[:keep],
            tuple(k[:, :keep] for k in self.keys),
            tuple(v[:, :keep] for v in self.values),
        )


@dataclass(frozen=True, slots=True)
class _Row:
    request: Request
    session: _Session | None
    keep: int
    suffix: tuple[int, ...]


class Engine:
    """Batched, cache-keeping decoding for one model (not re-entrant: one run at a time).

    Args:
        model: a ``transformers`` causal LM (in eval mode).
        stops: ids that end a reply.
        pad_id: id written on padding (masked out, never seen).
        max_sessions: caches kept at once (:data:`MAX_SESSIONS`).
    """

    def __init__(
        self, model: Any, stops: frozenset[int], pad_id: int, *, max_sessions: int = MAX_SESSIONS
    ) -> None:
        self.model = model
        self.stops = stops
        self.pad_id = pad_id
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[Hashable, _Session] = OrderedDict()
        forward = inspect.signature(model.forward).parameters
        # transformers renamed ``past_key_values`` to ``cache`` (5.x); take either.
        self.cache_arg = "cache" if "cache" in forward else "past_key_values"
        self._last_only = "logits_to_keep" in forward
        self.fed_tokens = 0
        """Prompt tokens fed so far (a measure of what the kept caches saved)."""
        self.prompt_tokens = 0
        """Prompt tokens asked for so far (fed or found in a cache)."""
        self.seconds = 0.0
        """Wall time spent in :meth:`run` so far (the model's share of a rollout)."""

    def clear(self) -> None:
        """Drop every session's cache (the weights changed, or a run ended)."""
        self._sessions.clear()

    def release(self, session: Hashable) -> None:
        """Drop one session's cache (its episode ended)."""
        self._sessions.pop(session, None)

    def probe(self, prompt: Sequence[int]) -> None:
        """Refuse a model whose logits over a short prompt are not finite.

        Run when a model loads (the prompt: a greeting in its chat template), so that a
        diverged checkpoint is refused there, naming it, rather than at its first reply. Not
        the pad id alone: its embedding may be zero, which a norm keeps at zero whatever the
        weights. One prompt cannot show that every prompt's logits are finite: :meth:`run`
        checks every step's. In eval mode (dropout would draw from the global random state),
        the model's mode restored after.

        Raises:
            NonFiniteLogits: the logits hold NaN or an infinity.
        """
        import torch

        device = next(self.model.parameters()).device
        training = self.model.training
        self.model.eval()
        try:
            with torch.inference_mode():
                ids = torch.tensor([list(prompt)], dtype=torch.long, device=device)
                logits = self.model(input_ids=ids).logits.float()
        finally:
            self.model.train(training)
        require_finite(logits)

    def run(self, requests: Sequence[Request], pick: Picker) -> list[Decoded]:
        """Answer every request: one prefill of the new suffixes, then one batched step per
        token, ``pick`` choosing each row's next id, until every row stopped or spent its
        budget.

        Raises:
            ValueError: an empty prompt or a budget below 1.
            NonFiniteLogits: a step's logits hold NaN or an infinity.
        """
        import torch

        for request in requests:
            if not request.prompt or request.budget < 1:
                raise ValueError("a request needs a prompt and a budget of at least 1")
        started = time.perf_counter()
        rows = [self._row(r) for r in requests]
        with torch.inference_mode():
            batch = _Batch.build(self.model, rows, self.pad_id)
            decoded = self._decode(batch, rows, pick)
        self.seconds += time.perf_counter() - started
        return decoded

    def _row(self, request: Request) -> _Row:
        self.prompt_tokens += len(request.prompt)
        session = None
        if request.session is not None:
            session = self._sessions.pop(request.session, None)
        keep = 0
        if session is not None:
            keep = _common_prefix(session.ids, request.prompt)
            keep = min(
                keep, len(request.prompt) - 1
            )  # the last prompt token's logits start the reply
            session = session.cut(keep) if keep > 0 else None
        self.fed_tokens += len(request.prompt) - keep
        return _Row(request, session, keep, request.prompt[keep:])

    def _forward(self, batch: _Batch, ids: Any, positions: Any, width: int) -> Any:
        options: dict[str, Any] = {self.cache_arg: batch.cache}
        if self._last_only:
            options["logits_to_keep"] = 1  # only the last column's logits are read
        out = self.model(
            input_ids=ids,
            attention_mask=batch.mask[:, :width],
            position_ids=positions,
            use_cache=True,
            **options,
        )
        logits = out.logits[:, -1].float()
        require_finite(logits)
        return logits

    def _decode(self, batch: _Batch, rows: Sequence[_Row], pick: Picker) -> list[Decoded]:
        """Prefill, then decode, keeping each row's cache as it leaves the batch.

        A row that has finished leaves the batch once a quarter of the batch has (its cache
        cut out for its session first): replies end at very different lengths (a short
        message, a few calls, the budget), and a finished row left in would cost a full
        row of every later step. ``pick`` still sees one row per request, in order (the
        rows that left hold zeros, and their picks are ignored), so what a row samples does
        not depend on when others left.
        """
        import torch

        width = batch.prompt_width
        logits = self._forward(batch, batch.ids, batch.positions, width)
        positions = batch.next_positions
        live = list(range(len(rows)))  # the request of each row the batch still holds
        out: list[list[int]] = [[] for _ in rows]
        logps: list[list[float]] = [[] for _ in rows]
        done = [False] * len(rows)
        stopped = [False] * len(rows)
        while True:
            if len(live) < len(rows):
                full = logits.new_zeros((len(rows), logits.shape[-1]))
                full[torch.tensor(live, device=logits.device)] = logits
                logits = full
            tokens = pick(logits)
            logp = torch.log_softmax(logits, -1).gather(-1, tokens[:, None])[:, 0]
            for i, token, lp in zip(live, tokens[live].tolist(), logp[live].tolist(), strict=True):
                if done[i]:
                    continue  # finished, not yet out of the batch: its ids are junk
                out[i].append(int(token))
                logps[i].append(float(lp))
                stopped[i] = int(token) in self.stops
                done[i] = stopped[i] or len(out[i]) >= rows[i].request.budget
            tokens = tokens[live]
            finished = [j for j, i in enumerate(live) if done[i]]
            if len(finished) == len(live):
                break
            if 4 * len(finished) >= len(live):
                for j in finished:
                    self._keep(batch, j, rows[live[j]], out[live[j]])
                kept = [j for j, i in enumerate(live) if not done[i]]
                batch.select(kept)
                tokens, positions = tokens[kept], positions[kept]
                live = [live[j] for j in kept]
            batch.mask[:, width] = 1
            width += 1
            logits = self._forward(batch, tokens[:, None], positions[:, None], width)
            positions = positions + 1
        for j, i in enumerate(live):
            self._keep(batch, j, rows[i], out[i])
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)
        return [
            Decoded(tuple(o), tuple(lp), s) for o, lp, s in zip(out, logps, stopped, strict=True)
        ]

    def _keep(self, batch: _Batch, j: int, row: _Row, reply: Sequence[int]) -> None:
        """Cut row ``j``'s real columns out of the batch's cache, for its session's next
        turn (the last id of a reply is never fed)."""
        import torch

        if row.request.session is None:
            return
        fed = len(reply) - 1
        start = batch.cache_width - row.keep
        suffix_start = batch.prompt_width - len(row.suffix)
        columns = torch.cat(
            [
                torch.arange(start, batch.cache_width),
                torch.arange(suffix_start, batch.prompt_width + fed),
            ]
        ).to(batch.mask.device)
        keys = tuple(layer.buffer_keys[j].index_select(1, columns) for layer in batch.layers)
        values = tuple(layer.buffer_values[j].index_select(1, columns) for layer in batch.layers)
        ids = row.request.prompt + tuple(reply[:fed])
        self._sessions[row.request.session] = _Session(ids, keys, values)


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    if tuple(a[:n]) == tuple(b[:n]):  # the usual case: the whole cache is a prefix
        return n
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def _layer_class() -> type:
    """A cache layer over a preallocated buffer: a step writes its column in place."""
    from transformers.cache_utils import DynamicLayer

    class BufferLayer(DynamicLayer):
        def __init__(self, keys: Any, values: Any, filled: int, capacity: int) -> None:
            super().__init__()
            self.capacity = capacity
            self.filled = filled
            self.buffer_keys = keys
            self.buffer_values = values
            if keys is not None:
                self._expose()

        def _expose(self) -> None:
            self.keys = self.buffer_keys[:, :, : self.filled]
            self.values = self.buffer_values[:, :, : self.filled]
            self.is_initialized = True
            self.device = self.buffer_keys.device

        def select(self, index: Any) -> None:
            self.buffer_keys = self.buffer_keys.index_select(0, index)
            self.buffer_values = self.buffer_values.index_select(0, index)
            self._expose()

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> Any:
            if self.buffer_keys is None:  # no session had a cache: allocate on first use
                rows, heads, _, dim = key_states.shape
                shape = (rows, heads, self.capacity, dim)
                self.buffer_keys = key_states.new_zeros(shape)
                self.buffer_values = value_states.new_zeros(
                    (rows, value_states.shape[1], self.capacity, value_states.shape[-1])
                )
            end = self.filled + key_states.shape[-2]
            self.buffer_keys[:, :, self.filled : end] = key_states
            self.buffer_values[:, :, self.filled : end] = value_states
            self.filled = end
            self._expose()
            return self.keys, self.values

    return BufferLayer


_BUFFER_LAYER: type | None = None


@dataclass(slots=True)
class _Batch:
    """One turn's padded inputs and preallocated cache."""

    ids: Any
    positions: Any
    next_positions: Any
    mask: Any
    cache: Any
    layers: list[Any]
    cache_width: int
    prompt_width: int

    def select(self, kept: Sequence[int]) -> None:
        """Keep only rows ``kept`` (in that order) of the mask and the cache."""
        import torch

        index = torch.tensor(kept, device=self.mask.device)
        self.mask = self.mask.index_select(0, index)
        for layer in self.layers:
            layer.select(index)

    @classmethod
    def build(cls, model: Any, rows: Sequence[_Row], pad_id: int) -> _Batch:
        import torch
        from transformers import DynamicCache

        global _BUFFER_LAYER
        if _BUFFER_LAYER is None:
            _BUFFER_LAYER = _layer_class()
        device = next(model.parameters()).device
        count = len(rows)
        cache_width = max(r.keep for r in rows)
        suffix_width = max(len(r.suffix) for r in rows)
        prompt_width = cache_width + suffix_width
        capacity = prompt_width + max(r.request.budget for r in rows)
        ids = torch.full((count, suffix_width), pad_id, dtype=torch.long)
        positions = torch.zeros((count, suffix_width), dtype=torch.long)
        mask = torch.zeros((count, capacity), dtype=torch.long)
        for i, row in enumerate(rows):
            n = len(row.suffix)
            ids[i, suffix_width - n :] = torch.tensor(row.suffix, dtype=torch.long)
            positions[i, suffix_width - n :] = torch.arange(row.keep, row.keep + n)
            mask[i, cache_width - row.keep : cache_width] = 1
            mask[i, prompt_width - n : prompt_width] = 1
        next_positions = torch.tensor([r.keep + len(r.suffix) for r in rows], dtype=torch.long)
        cache = DynamicCache(config=model.config)
        layers = [
            _BUFFER_LAYER(*_stacked(rows, index, cache_width, capacity), capacity)
            for index in range(len(cache.layers))
        ]
        cache.layers = layers
        return cls(
            ids.to(device), positions.to(device), next_positions.to(device), mask.to(device),
            cache, layers, cache_width, prompt_width,
        )  # fmt: skip


def _stacked(rows: Sequence[_Row], layer: int, width: int, capacity: int) -> tuple[Any, Any, int]:
    """Layer ``layer``'s buffers with each row's kept cache right-aligned in ``width``
    columns (``None`` when no row has one: allocated at the first update)."""
    model_row = next((r.session for r in rows if r.session is not None), None)
    if model_row is None:
        return None, None, 0
    k0, v0 = model_row.keys[layer], model_row.values[layer]
    keys = k0.new_zeros((len(rows), k0.shape[0], capacity, k0.shape[-1]))
    values = v0.new_zeros((len(rows), v0.shape[0], capacity, v0.shape[-1]))
    for i, row in enumerate(rows):
        if row.session is not None:
            keys[i, :, width - row.keep : width] = row.session.keys[layer]
            values[i, :, width - row.keep : width] = row.session.values[layer]
    return keys, values, width


def require_finite(logits: Any) -> None:
    """Refuse logits that hold NaN or an infinity (:class:`NonFiniteLogits`).

    Every row is checked, finished ones too: their logits come from the same weights. One
    reduction per decoding step; the step's sampled ids are read back to the host anyway.
    """
    import torch

    if not bool(torch.isfinite(logits).all()):
        raise NonFiniteLogits(DIVERGED)


def greedy(logits: Any) -> Any:
    """The :data:`Picker` of greedy decoding: each row's most likely id."""
    import torch

    return torch.argmax(logits, dim=-1)


__all__ = [
    "DIVERGED",
    "MAX_SESSIONS",
    "Decoded",
    "Engine",
    "NonFiniteLogits",
    "Picker",
    "Request",
    "greedy",
    "require_finite",
]
