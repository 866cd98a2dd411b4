"""The tiny model recipe: a small causal LM that really emits tool calls, built with no download.

``stategym model init --out models/tiny`` runs :func:`init_model`:

1. play the domain's expert on training seeds (far from the seeds anyone evaluates on) and
   rebuild each episode as a chat (:func:`stategym.llm.prompt.transcript`);
2. train a byte-level BPE tokenizer on that text with ``tokenizers`` and give it a ChatML
   chat template that takes ``tools`` and writes calls as ``<tool_call>{json}</tool_call>``;
3. build a Qwen2 or Llama model from a small config with ``transformers`` (random weights);
4. warm it up with supervised learning on the expert chats (loss on assistant turns only).

From scratch and in CPU minutes such a model learns the protocol (when to ask, which
tools to call together, the call syntax), not the content (copying flight ids, comparing
prices): it is a test fixture and a starting point, not a good agent.
"""

from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from stategym.kernel.errors import UsageError
from stategym.kernel.knobs import Knobs
from stategym.llm.model_files import RECORD_FILE, check_out
from stategym.llm.prompt import PROMPT_VERSION, Message, first_messages, transcript

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerFast


SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
CALL_TAGS = ("<tool_call>", "</tool_call>")
BYTES = 256
"""The byte-level alphabet every tokenizer of the recipe starts from."""
MIN_VOCAB = BYTES + len(SPECIAL) + len(CALL_TAGS)
"""The smallest vocabulary the tokenizer can have (261: bytes, specials and call tags, no
merge); asked for fewer, the BPE trainer would quietly build this many anyway."""

CHAT_TEMPLATE = """\
{%- macro tool_lines() -%}
# Tools
{% for tool in tools %}{{ tool.function.name }}(
{{- tool.function.parameters.properties | join(', ') }})
{% endfor %}
{%- endmacro -%}
{%- if tools and (messages | length == 0 or messages[0].role != 'system') -%}
{{ '<|im_start|>system\\n' + tool_lines() + '<|im_end|>\\n' }}
{%- endif -%}
{%- for message in messages -%}
{%- if message.role == 'system' -%}
{{ '<|im_start|>system\\n' + message.content + '\\n' }}
{%- if tools %}{{ tool_lines() }}{% endif %}
{{- '<|im_end|>\\n' }}
{%- elif message.role == 'assistant' -%}
{{ '<|im_start|>assistant\\n' }}
{%- generation -%}
{%- if message.content %}{{ message.content }}{% endif -%}
{%- for call in message.tool_calls or [] -%}
{{ '<tool_call>{"name": "' + call.function.name + '", "arguments": ' }}
{%- if call.function.arguments is string %}{{ call.function.arguments }}
{%- else %}{{ call.function.arguments | tojson }}{% endif %}
{{- '}</tool_call>' }}
{%- endfor -%}
{{ '<|im_end|>' }}
{%- endgeneration -%}
{{ '\\n' }}
{%- else -%}
{{ '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif -%}
"""
"""ChatML with tools listed by signature (names and argument names: the long schemas would
cost the tiny model most of its context) and Hermes-style calls."""


@dataclass(frozen=True, slots=True)
class TinyConfig:
    """The recipe's settings. The defaults built in 362 s of CPU time (one thread; loss 7.00
    -> 0.25) on this project's 2-core machine at a load average of ~7, where it took 34
    minutes of wall time; on a machine with a free core the wall time comes near the CPU
    time. The previous default (240 steps, each passing an attention mask) took 761 CPU-s
    there. A progress bar on stderr shows the step, the loss, tokens/s and the time left."""

    arch: Literal["qwen2", "llama"] = "qwen2"
    """Model architecture."""
    domain: str = "travel"
    """Domain whose expert episodes the tokenizer and the warm-up use."""
    episodes: int = 400
    """Expert episodes to learn from."""
    first_seed: int = 1_000_000
    """First training seed; evaluation conventionally uses seeds from 0, far below this."""
    knobs: str = "default"
    """Knobs of the training tasks (``Knobs.parse`` syntax)."""
    vocab_size: int = 1024
    """Tokenizer vocabulary, special tokens included."""
    hidden_size: int = 128
    """Width of the model."""
    layers: int = 2
    """Transformer blocks."""
    heads: int = 4
    """Attention heads."""
    kv_heads: int = 2
    """Key/value heads (grouped-query attention)."""
    intermediate_size: int = 384
    """Width of each MLP."""
    max_positions: int = 8192
    """Context the model accepts (rotary positions; training sees at most ``max_length``)."""
    max_length: int = 1536
    """Training sequences are cut to this many tokens."""
    steps: int = 160
    """Optimiser steps of the warm-up (240, the previous default, end at a loss of 0.22
    instead of 0.25, pick the expert's tools more often but loop to the round limit with
    most rounds failing to parse; see ``docs/llm.md``)."""
    batch_size: int = 8
    """Sequences per step."""
    lr: float = 3e-3
    """Peak learning rate (linear warm-up for 10% of steps, then cosine decay)."""
    seed: int = 0
    """Seed of weight initialisation and batch order."""
    threads: int = 1
    """Torch CPU threads while training (0: torch's default). The matrices are too small to
    split well: on a shared 2-core machine one thread trains faster than two."""


def check_config(config: TinyConfig) -> None:
    """Refuse settings the recipe cannot build with, in one line, before any work (each
    would otherwise fail as a traceback deep in the build, or write a NaN model).

    Raises:
        UsageError: naming the ``stategym model init`` option and what it needs.
    """
    from stategym.kernel.task import SEED_LIMIT

    def need(ok: bool, message: str) -> None:
        if not ok:
            raise UsageError(message)

    for name in ("episodes", "hidden_size", "layers", "heads", "kv_heads", "intermediate_size"):
        value = getattr(config, name)
        need(value >= 1, f"--{name.replace('_', '-')} must be at least 1, got {value}")
    need(config.steps >= 1, f"--steps must be at least 1, got {config.steps}")
    need(config.batch_size >= 1, f"--batch-size must be at least 1, got {config.batch_size}")
    need(config.max_length >= 1, f"--max-length must be at least 1, got {config.max_length}")
    need(
        config.max_positions >= 1, f"--max-positions must be at least 1, got {config.max_positions}"
    )
    need(
        config.heads % config.kv_heads == 0,
        f"--heads {config.heads} must be a multiple of --kv-heads {config.kv_heads} "
        "(grouped-query attention shares each key/value head among whole groups of heads)",
    )
    need(
        config.hidden_size % config.heads == 0,
        f"--hidden-size {config.hidden_size} must be a multiple of --heads {config.heads} "
        "(each head takes an equal share of the width)",
    )
    need(
        config.vocab_size >= MIN_VOCAB,
        f"--vocab-size {config.vocab_size} is below the tokenizer's least, {MIN_VOCAB} "
        f"({BYTES} bytes, {len(SPECIAL)} special tokens and {len(CALL_TAGS)} call tags)",
    )
    need(
        math.isfinite(config.lr) and config.lr > 0,
        f"--lr must be a finite number above 0, got {config.lr}",
    )
    need(
        config.threads >= 0, f"--threads must be 0 (torch's default) or more, got {config.threads}"
    )
    need(
        config.first_seed >= 0 and config.first_seed + config.episodes <= SEED_LIMIT,
        f"--first-seed {config.first_seed} with --episodes {config.episodes} is outside the "
        f"seeds 0 .. {SEED_LIMIT - 1}",
    )
    need(
        -(2**63) <= config.seed < 2**64,
        f"--seed must be in -2**63 .. 2**64 - 1, got {config.seed}",
    )
    try:
        Knobs.parse(config.knobs)
    except ValueError as error:
        raise UsageError(f"--knobs {config.knobs!r}: {error}") from None


def expert_chats(config: TinyConfig) -> list[tuple[list[Message], list[dict[str, Any]]]]:
    """The expert's episodes on the training seeds, as (messages, tools) chats."""
    from stategym.agents import scripted
    from stategym.kernel.env import Env
    from stategym.rollout import run_episode

    env = Env(config.domain, knobs=Knobs.parse(config.knobs))
    expert = scripted(env.domain, "expert")
    chats = []
    for seed in range(config.first_seed, config.first_seed + config.episodes):
        trajectory = run_episode(env, expert, seed)
        task = env.task
        messages = first_messages(env.domain, task)[:1] + transcript(trajectory, task)
        chats.append((messages, list(env.tool_schemas)))
    return chats


def train_tokenizer(
    chats: Sequence[tuple[list[Message], list[dict[str, Any]]]], vocab_size: int
) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained on the chats, with the chat template attached."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(CALL_TAGS),
        special_tokens=list(SPECIAL),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_texts(chats), trainer=trainer)
    bpe.add_tokens([AddedToken(tag, special=False, normalized=False) for tag in CALL_TAGS])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        unk_token=None,
        model_max_length=1_000_000,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def _texts(chats: Sequence[tuple[list[Message], list[dict[str, Any]]]]) -> list[str]:
    """Every string the template will show: contents, tool names, calls as written."""
    texts: list[str] = []
    for messages, tools in chats:
        texts.extend(str(t["function"]["name"]) for t in tools)
        for message in messages:
            if message.get("content"):
                texts.append(str(message["content"]))
            for call in message.get("tool_calls") or ():
                function = call["function"]
                texts.append(
                    f'{CALL_TAGS[0]}{{"name": "{function["name"]}", "arguments": '
                    f"{function['arguments']}}}{CALL_TAGS[1]}"
                )
    return texts


def build_model(config: TinyConfig, tokenizer: PreTrainedTokenizerFast) -> PreTrainedModel:
    """A randomly initialised causal LM of the configured architecture."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    common: dict[str, Any] = dict(
        vocab_size=len(tokenizer),
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.layers,
        num_attention_heads=config.heads,
        num_key_value_heads=config.kv_heads,
        max_position_embeddings=config.max_positions,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    model_config = Qwen2Config(**common) if config.arch == "qwen2" else LlamaConfig(**common)
    torch.manual_seed(config.seed)
    return AutoModelForCausalLM.from_config(model_config)


def encode(
    tokenizer: PreTrainedTokenizerFast,
    chats: Sequence[tuple[list[Message], list[dict[str, Any]]]],
    max_length: int,
) -> list[tuple[list[int], list[int]]]:
    """Token ids and labels per chat; labels are -100 outside assistant turns."""
    examples = []
    for messages, tools in chats:
        encoded: Any = tokenizer.apply_chat_template(
            messages,
            tools=list[Any](tools),
            tokenize=True,
            return_dict=True,
            return_assistant_tokens_mask=True,
        )
        ids = list(encoded["input_ids"])[:max_length]
        mask = list(encoded["assistant_masks"])[:max_length]
        labels = [token if keep else -100 for token, keep in zip(ids, mask, strict=True)]
        examples.append((ids, labels))
    return examples


def learnable(
    examples: Sequence[tuple[list[int], list[int]]], max_length: int
) -> list[tuple[list[int], list[int]]]:
    """The examples with at least one assistant token: a chat cut before its first reply
    teaches nothing, and a batch of only such chats has no loss to average (NaN, which
    would then poison every weight).

    Raises:
        UsageError: ``max_length`` cuts every chat before its first reply.
    """
    kept = [example for example in examples if any(label != -100 for label in example[1])]
    if not kept:
        raise UsageError(
            f"--max-length {max_length} cuts every chat before its first reply (the system "
            "prompt and the tool list come first): nothing to learn from; give a larger "
            "--max-length"
        )
    return kept


@dataclass(frozen=True, slots=True)
class Step:
    """One finished optimiser step of the warm-up, as a progress display sees it.

    Attributes:
        done: steps finished so far (1 after the first).
        steps: steps in all.
        loss: this step's loss.
        tokens: tokens (padding included) the steps so far have processed.
        seconds: wall time since the warm-up started.
    """

    done: int
    steps: int
    loss: float
    tokens: int
    seconds: float


class Watcher(Protocol):
    """Told what :func:`init_model` is doing. It only reads values the recipe has already
    computed (it draws no random numbers and touches no tensor), so watching a build cannot
    change the model it writes."""

    def phase(self, name: str) -> None:
        """A preparation phase starts (playing the expert, training the tokenizer...)."""

    def step(self, step: Step) -> None:
        """An optimiser step of the warm-up has finished."""


@dataclass(frozen=True, slots=True)
class WarmUp:
    """What the supervised warm-up did.

    Attributes:
        steps: optimiser steps.
        first_loss: the first step's loss.
        final_loss: the mean loss of the last 10 steps (of every step, if fewer).
        seconds: wall time.
        tokens: tokens processed (padding included).
        cpu_seconds: CPU time of this process (wall time on a shared machine overstates
            the work; with one thread this is the work).
        curve: the mean loss of each tenth of the steps, in order (does it still fall?).
    """

    steps: int
    first_loss: float
    final_loss: float
    seconds: float
    tokens: int
    cpu_seconds: float = math.nan
    curve: tuple[float, ...] = ()


def warm_up(
    model: PreTrainedModel,
    examples: Sequence[tuple[list[int], list[int]]],
    config: TinyConfig,
    pad_id: int,
    watcher: Watcher | None = None,
) -> WarmUp:
    """Supervised learning on assistant tokens: AdamW, warm-up then cosine decay."""
    import torch

    generator = torch.Generator().manual_seed(config.seed)
    optimiser = torch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=0.01, betas=(0.9, 0.95)
    )
    warm = max(1, config.steps // 10)
    model.train()
    losses: list[float] = []
    tokens = 0
    started, cpu = time.perf_counter(), time.process_time()
    order: list[int] = []
    for step in range(config.steps):
        scale = (
            (step + 1) / warm
            if step < warm
            else 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, config.steps - warm)))
        )
        for group in optimiser.param_groups:
            group["lr"] = config.lr * scale
        if not order:
            order = _length_pooled(examples, config.batch_size, generator)
        picks, order = order[: config.batch_size], order[config.batch_size :]
        ids, labels = _batch([examples[i] for i in picks], pad_id)
        loss = assistant_loss(model, ids, labels)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        try:
            optimiser.step()
        except RuntimeError as error:  # an update too large for the weights' float type
            if "overflow" not in str(error):
                raise
            raise UsageError(
                f"the warm-up's update overflowed at step {step + 1} of {config.steps} "
                f"(--lr {config.lr}); nothing was saved: give a smaller --lr"
            ) from None
        losses.append(loss.detach().item())
        if not math.isfinite(losses[-1]):
            raise UsageError(
                f"the warm-up loss is {losses[-1]} at step {step + 1} of {config.steps} "
                f"(--lr {config.lr}); nothing was saved: give a smaller --lr"
            )
        tokens += int(ids.numel())
        if watcher is not None:
            elapsed = time.perf_counter() - started
            watcher.step(Step(step + 1, config.steps, losses[-1], tokens, elapsed))
    model.eval()
    tail = losses[-10:] or [math.nan]
    return WarmUp(
        config.steps,
        losses[0] if losses else math.nan,
        sum(tail) / len(tail),
        time.perf_counter() - started,
        tokens,
        time.process_time() - cpu,
        _tenths(losses),
    )


def _tenths(losses: Sequence[float]) -> tuple[float, ...]:
    """The mean of each tenth of ``losses`` (fewer parts when there are under ten)."""
    parts = min(10, len(losses))
    bounds = [len(losses) * k // parts for k in range(parts + 1)]
    return tuple(round(sum(losses[a:b]) / (b - a), 4) for a, b in itertools.pairwise(bounds))


POOL = 4
"""Batches drawn together and sorted by length before they are split (less padding)."""


def _length_pooled(
    examples: Sequence[tuple[list[int], list[int]]], batch_size: int, generator: torch.Generator
) -> list[int]:
    """The next ``POOL`` batches' example indices, drawn at random, then each batch made of
    examples of similar length: a batch is as wide as its longest sequence and attention
    costs the square of it, so random widths waste about a third of a step on padding."""
    import torch

    picks = torch.randint(len(examples), (POOL * batch_size,), generator=generator).tolist()
    picks.sort(key=lambda i: len(examples[i][0]))
    batches = [picks[b : b + batch_size] for b in range(0, len(picks), batch_size)]
    shuffled = torch.randperm(len(batches), generator=generator).tolist()
    return [i for b in shuffled for i in batches[b]]


def assistant_loss(model: Any, ids: torch.Tensor, labels: torch.Tensor) -> Any:
    """The causal LM loss (mean cross-entropy of each labelled token given the ones before)
    of a right-padded batch, with the output layer applied only where a label is: four
    fifths of the tokens are the prompt and the observations, and their logits would be
    computed only to be ignored.

    No attention mask: every real token comes before its row's padding, so the causal mask
    alone keeps padding out of every real token's attention, and SDPA takes its fused causal
    kernel instead of materialising a ``(B, H, L, L)`` mask (a step of 8 x ~1,300 tokens:
    3.0 -> 1.95 CPU-s; the loss and gradients are the same). Running the ~330 tokens every
    row shares (system prompt, tool list) once, as the trainer does, did not pay here
    (2.13 CPU-s): a tail continuing from a cache needs the materialised mask again, and at
    these lengths attention, not the projections, is most of a step.
    """
    import torch

    hidden = model.base_model(input_ids=ids).last_hidden_state
    targets = labels[:, 1:]
    keep = targets != -100
    logits = model.get_output_embeddings()(hidden[:, :-1][keep])
    return torch.nn.functional.cross_entropy(logits.float(), targets[keep])


def _batch(
    examples: Sequence[tuple[list[int], list[int]]], pad_id: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ids and labels (-100 on padding: never learned)."""
    import torch

    width = max(len(ids) for ids, _ in examples)
    ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), width), -100, dtype=torch.long)
    for row, (tokens, targets) in enumerate(examples):
        ids[row, : len(tokens)] = torch.tensor(tokens)
        labels[row, : len(targets)] = torch.tensor(targets)
    return ids, labels


def init_model(
    out: Path,
    config: TinyConfig | None = None,
    watcher: Watcher | None = None,
    *,
    overwrite: bool = False,
) -> Path:
    """Run the whole recipe and save the model, tokenizer and recipe record in ``out``.

    Args:
        out: directory to write (created if missing; an existing one must be empty unless
            ``overwrite``).
        config: the recipe (default: :class:`TinyConfig`'s defaults).
        watcher: told each phase and each warm-up step (``stategym model init`` draws a
            progress bar with it); the weights written are the same with or without one.
        overwrite: write into a non-empty ``out``, replacing the model files there.

    Raises:
        UsageError: settings :func:`check_config` refuses, an ``out`` :func:`check_out`
            refuses (both before any work), or a warm-up whose loss or weights are not
            finite (before anything is saved).
    """
    import torch

    config = config or TinyConfig()
    check_config(config)
    check_out(out, overwrite=overwrite)
    tell = watcher.phase if watcher is not None else (lambda name: None)
    started, cpu = time.perf_counter(), time.process_time()
    tell(f"playing {config.episodes} expert episodes")
    chats = expert_chats(config)
    tell("training the tokenizer")
    tokenizer = train_tokenizer(chats, config.vocab_size)
    tell("encoding the chats")
    examples = learnable(encode(tokenizer, chats, config.max_length), config.max_length)
    model = build_model(config, tokenizer)
    threads = torch.get_num_threads()
    if config.threads > 0:
        torch.set_num_threads(config.threads)
    try:
        tell("warm-up")
        record = warm_up(model, examples, config, tokenizer.pad_token_id, watcher)
    finally:
        torch.set_num_threads(threads)
    if not all(bool(torch.isfinite(p).all()) for p in model.parameters()):
        raise UsageError(
            f"the warm-up left weights that are not finite (--lr {config.lr}); nothing was "
            "saved: give a smaller --lr"
        )
    tell("saving")
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    meta = {
        "recipe": asdict(config),
        "prompt_version": PROMPT_VERSION,
        "rendering": "messages",  # the expert chats are the messages rendering's transcripts
        "parameters": sum(p.numel() for p in model.parameters()),
        "warm_up": asdict(record),
        "seconds": time.perf_counter() - started,
        "cpu_seconds": time.process_time() - cpu,
        "torch": torch.__version__,
    }
    (out / RECORD_FILE).write_text(json.dumps(meta, indent=2) + "\n")
    return out
