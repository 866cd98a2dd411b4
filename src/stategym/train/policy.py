"""The policy: a Hugging Face causal LM and its chat tokenizer, for training and for
batched generation.

:class:`Policy` loads any ``transformers`` causal LM with a chat template (a local folder,
or a hub id where the machine can reach one), or builds the tiny from-scratch model
(:func:`build_tiny`: a byte-level BPE trained on the demonstrations' own rendering and a
small Qwen2, as ``stategym model init`` makes one, without the warm-up: SFT is the warm-up).

:meth:`Policy.generate` continues ``B`` prompts given as token ids at once
(:class:`~stategym.llm.engine.Engine`): one prefill of what each row's kept cache does not
cover (an episode's cache is kept across its turns, so a round feeds only its observation),
then one decoding step per token for the whole batch, every row sampled from one seeded
generator. It returns the sampled ids and their log-probabilities under the
model's softmax at temperature 1 (what PPO's ratio is taken against). :meth:`Policy.forward`
gives per-token log-probabilities (and entropies) of padded training batches.

A policy whose logits are not finite (it diverged: a learning rate too large) cannot sample:
:meth:`Policy.generate` raises :class:`~stategym.llm.engine.NonFiniteLogits` (a usage error,
one line on the command line) instead of ``torch.multinomial``'s error, and
:meth:`Policy.load` refuses such a model (a diverged checkpoint) when it loads, naming it.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stategym.llm.engine import DIVERGED, Engine, NonFiniteLogits
from stategym.llm.local import ChatTokenizer, probe_greeting
from stategym.llm.model_files import check_model_dir, load_failed, loader_errors, quiet_loading
from stategym.llm.turns import check_turns

if TYPE_CHECKING:
    import torch

    from stategym.train.batching import Batch

Chat = tuple[list[dict[str, Any]], list[dict[str, Any]]]
"""``(messages, tools)``: one conversation, as the tokenizer is trained on."""


@dataclass(frozen=True, slots=True)
class Generated:
    """One row of a batched generation.

    Attributes:
        ids: the sampled ids (the end-of-turn id included when reached).
        logprobs: each sampled id's log-probability (softmax at temperature 1).
        stopped: the end-of-turn id was sampled (else the budget ran out).
    """

    ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    stopped: bool


class Policy:
    """A causal LM with its tokenizer, on one device.

    Args:
        model: a ``transformers`` causal LM.
        tokenizer: its (fast) tokenizer, with a chat template.
        device: torch device.
    """

    def __init__(self, model: Any, tokenizer: Any, device: str = "cpu") -> None:
        self.model = model.to(device)
        self.tokenizer = tokenizer
        self.device = device
        self.chat = ChatTokenizer(tokenizer)
        """The chat template observation tokens are cut from (token-in-token-out)."""
        eos = tokenizer.eos_token_id
        self.stops = frozenset({int(eos)} if eos is not None else ())
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else (eos or 0))
        self.engine = Engine(self.model, self.stops, self.pad_id)
        """Batched decoding, each episode's cache kept across its turns."""
        self.share_prefix = False
        """Training forwards compute the tokens every row of a batch begins with once
        (:func:`shared_prefix`); off by default, since the logits then differ from the
        plain forward's in the last bits."""
        self.shared_tokens = 0
        """Row-tokens the shared prefix spared so far (``shared x (rows - 1)`` a forward)."""

    @classmethod
    def load(cls, source: str | Path, *, device: str = "cpu", dtype: str = "float32") -> Policy:
        """A model folder, or a hub id (downloaded by ``transformers`` if it can be).

        Raises:
            UsageError: a folder :func:`~stategym.llm.model_files.check_model_dir` refuses, or a
                model that ``transformers`` cannot load (naming it and the first line of
                the reason), or a tokenizer whose turns cannot be cut into token segments
                (:func:`~stategym.llm.turns.check_turns`).
            NonFiniteLogits: the model's logits are not finite (a diverged checkpoint).
        """
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        _quiet()
        local = Path(source).is_dir()
        if local:
            check_model_dir(source)
        try:
            with quiet_loading():
                tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=local)
                model = AutoModelForCausalLM.from_pretrained(
                    source, local_files_only=local, dtype=getattr(torch, dtype)
                )
        except loader_errors() as error:
            raise load_failed(source, error) from None
        policy = cls(model, tokenizer, device)
        check_turns(policy.chat, source)
        try:
            policy.probe()
        except NonFiniteLogits:
            raise NonFiniteLogits(
                f"cannot use the model at {source}: {DIVERGED}; give a model saved before "
                "it diverged (when resuming, remove this checkpoint to resume from the one "
                "before), and a smaller --lr"
            ) from None
        return policy

    def probe(self) -> None:
        """Refuse a policy whose logits on a greeting are not finite (it diverged): what
        :meth:`load` runs, and what a trainer may run before saving, so that no checkpoint
        is written that a resume would refuse (finite weights can give infinite logits).

        Raises:
            NonFiniteLogits: the logits hold NaN or an infinity.
        """
        try:
            probe_greeting(self.engine, self.chat)
        except NonFiniteLogits:
            raise NonFiniteLogits(POLICY_DIVERGED) from None

    def save(self, folder: Path) -> None:
        """Weights, config and tokenizer in Hugging Face format (loadable as ``hf:FOLDER``)."""
        _quiet()
        folder.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)

    def forward(self, batch: Batch, *, entropy: bool = False) -> tuple[Any, Any]:
        """Per-token log-probabilities ``(B, L)`` of a right-padded batch (and entropies,
        ``None`` unless asked), aligned with ``batch.ids`` (position 0 holds 0)."""
        from stategym.train.losses import token_entropy, token_logprobs

        ids = batch.ids.to(self.device)
        shared = shared_prefix(batch) if self.share_prefix and batch.side == "right" else 0
        if shared:
            return self._prefixed(ids, shared, entropy)
        if batch.side == "right":
            # Every real token comes before its row's padding, so the causal mask alone keeps
            # padding out of every real token's attention: with no mask, SDPA takes its fused
            # causal kernel instead of materialising a (B, H, L, L) mask (forward + backward
            # of 16 x 700 tokens: 1.08 -> 0.71 s; the real tokens' logits are identical).
            logits = self.model(input_ids=ids).logits
        else:
            logits = self.model(
                input_ids=ids,
                attention_mask=batch.attention.to(self.device),
                position_ids=batch.positions.to(self.device),
            ).logits
        logp = token_logprobs(logits, ids)
        return logp, (token_entropy(logits) if entropy else None)

    def _prefixed(self, ids: Any, shared: int, entropy: bool) -> tuple[Any, Any]:
        """:meth:`forward` of a right-padded batch whose rows all begin with the same
        ``shared`` tokens: those run once, as one row, and every row continues from their
        keys and values; the prefix's log-probabilities (and entropies) are computed once
        and expanded. Gradients reach the prefix through every row (expanding sums them),
        so a step equals the plain forward's up to rounding."""
        import torch

        from stategym.train.losses import token_entropy, token_logprobs

        rows = ids.shape[0]
        self.shared_tokens += shared * (rows - 1)
        head = self.model(input_ids=ids[:1, :shared], use_cache=True)
        cache = head.cache if self.engine.cache_arg == "cache" else head.past_key_values
        for layer in cache.layers:
            layer.keys = layer.keys.expand(rows, -1, -1, -1)
            layer.values = layer.values.expand(rows, -1, -1, -1)
        options = {self.engine.cache_arg: cache}
        tail = self.model(input_ids=ids[:, shared:], use_cache=True, **options).logits
        # the prefix's last position predicts each row's first tail token
        joined = torch.cat([head.logits[:, -1:].expand(rows, -1, -1), tail], dim=1)
        edge = ids[:, shared - 1 :]

        def glue(before: Any, after: Any) -> Any:
            return torch.cat([before.expand(rows, -1), after[:, 1:]], dim=1)

        logp = glue(token_logprobs(head.logits, ids[:1, :shared]), token_logprobs(joined, edge))
        if not entropy:
            return logp, None
        spread = glue(token_entropy(head.logits), token_entropy(joined))
        return logp, spread

    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        *,
        max_tokens: int,
        temperature: float,
        generator: torch.Generator,
        sessions: Sequence[Hashable] | None = None,
    ) -> list[Generated]:
        """Continue every prompt at once (see the module docstring).

        Args:
            prompts: ``B`` prompts as token ids.
            max_tokens: most new tokens per row.
            temperature: 0 is greedy; above 0 samples from ``softmax(logits / temperature)``.
            generator: the seeded generator every row samples from.
            sessions: each row's episode key: its key/value cache is kept for its next
                turn, which then feeds only its new tokens (``None``: nothing kept). The
                caller clears :attr:`engine` when the weights change.

        Raises:
            NonFiniteLogits: the logits are not finite: the policy diverged.
        """
        from stategym.llm.engine import Request

        keys: Sequence[Hashable | None] = sessions or [None] * len(prompts)
        requests = [
            Request(tuple(p), max_tokens, key) for p, key in zip(prompts, keys, strict=True)
        ]
        try:
            decoded = self.engine.run(
                requests, lambda logits: _sample(logits, temperature, generator)
            )
        except NonFiniteLogits:
            raise NonFiniteLogits(POLICY_DIVERGED) from None
        return [Generated(d.ids, d.logprobs, d.stopped) for d in decoded]


POLICY_DIVERGED = (
    "the policy's logits are not finite (NaN or infinity): it diverged; lower --lr (or the "
    "loss coefficients) and start again from a checkpoint saved before it diverged"
)
"""What :meth:`Policy.generate` and :meth:`Policy.probe` say of non-finite logits."""


MIN_SHARED = 16
"""The fewest common tokens worth a separate prefix pass."""


def shared_prefix(batch: Batch) -> int:
    """How many leading tokens every row of a right-padded batch has in common, capped so
    that every row keeps at least one token after them (0 when under :data:`MIN_SHARED`
    or with one row).

    A batch of one family's episodes shares the start of its system prompt (measured on
    ``ask-or-act`` with the 1,024-id tokenizer: about 380 of an episode's ~750 tokens), so the
    training forward computes it once for the batch instead of once per row.
    """
    rows, width = batch.ids.shape
    if rows < 2 or width == 0:
        return 0
    same = (batch.ids == batch.ids[:1]).all(dim=0)
    differs = (~same).nonzero()
    common = int(differs[0, 0]) if len(differs) else width
    common = min(common, int(batch.lengths.min()) - 1)
    return common if common >= MIN_SHARED else 0


def _quiet() -> None:
    """No per-file progress bars from ``transformers`` (the trainer draws its own)."""
    from transformers.utils import logging

    logging.disable_progress_bar()


def _sample(logits: Any, temperature: float, generator: Any) -> Any:
    """``(B,)`` one id per row: the argmax at temperature 0, else a sample."""
    import torch

    if temperature <= 0:
        return torch.argmax(logits, dim=-1)
    probs = torch.softmax(logits / temperature, dim=-1)
    return torch.multinomial(probs.cpu(), 1, generator=generator)[:, 0].to(logits.device)


@dataclass(frozen=True, slots=True)
class TinySize:
    """The tiny model's shape (``stategym model init``'s recipe, smaller by default)."""

    vocab_size: int = 1024
    """Tokenizer vocabulary, special tokens included."""
    hidden_size: int = 128
    """Width of the model."""
    layers: int = 2
    """Transformer blocks."""
    heads: int = 4
    """Attention heads."""
    intermediate_size: int = 384
    """Width of each MLP."""


def build_tiny(chats: Sequence[Chat], seed: int, size: TinySize | None = None) -> Policy:
    """A from-scratch tiny model whose tokenizer is trained on ``chats`` (no download).

    The weights are seeded by ``seed``; the tokenizer is a pure function of the chats, so
    the same chats and seed give the same policy.
    """
    from stategym.llm.tiny import TinyConfig, build_model, train_tokenizer

    size = size or TinySize()
    recipe = TinyConfig(
        vocab_size=size.vocab_size,
        hidden_size=size.hidden_size,
        layers=size.layers,
        heads=size.heads,
        kv_heads=max(1, size.heads // 2),
        intermediate_size=size.intermediate_size,
        seed=seed,
    )
    import tempfile

    trained = train_tokenizer(chats, size.vocab_size)
    # Loaded from a model folder, the tokenizer is the architecture's class (Qwen2Tokenizer),
    # which rebuilds the trained byte-level BPE's pre-tokenizer and normaliser and so splits
    # text differently from the tokenizer in memory (measured: 8,709 vs 8,710 ids on one
    # file). The policy starts from the loaded form, which is what hf:CHECKPOINT, eval and a
    # resumed run will use.
    with tempfile.TemporaryDirectory() as folder:
        Policy(build_model(recipe, trained), trained).save(Path(folder))
        return Policy.load(folder)


__all__ = ["Chat", "Generated", "Policy", "TinySize", "build_tiny"]
