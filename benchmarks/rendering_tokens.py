"""Tokens per episode in the two renderings (OpenAI messages with JSON calls vs compact lines).

Plays the expert on held-out seeds of every domain, rebuilds each episode in both renderings
(:func:`stategym.rendering.transcript`, system prompt left out: it is paid once per episode
and is shown apart) and counts characters, whitespace-separated words and the tokens of a
byte-level BPE tokenizer trained here on both renderings of other seeds (so neither is
favoured). A message is counted as the model reads or writes it: ``ROLE: text``, tool calls
in the Hermes ``<tool_call>{json}</tool_call>`` form for the message rendering.

    python benchmarks/rendering_tokens.py [--episodes 40] [--vocab 2048]
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from statistics import mean

from stategym.agents import scripted
from stategym.kernel.env import Env
from stategym.registry import all_domains
from stategym.rendering import make_renderer, transcript
from stategym.rendering.messages import message_line
from stategym.rollout import run_episode

DOMAINS = [*sorted(all_domains()), "synth:chain2+fanout3"]
TRAIN_SEED = 1_000_000


def episodes(domain: str, seeds: range, kind: str) -> Iterator[tuple[str, str]]:
    """``(system prompt, episode text)`` of the expert's episodes in one rendering."""
    env = Env(domain)
    expert = scripted(env.domain, "expert")
    for seed in seeds:
        trajectory = run_episode(env, expert, seed)
        renderer = make_renderer(env.domain, env.task.knobs, kind)
        system = renderer.first_messages(env.task)[0]["content"]
        fresh = make_renderer(env.domain, env.task.knobs, kind)
        lines = [message_line(m) for m in transcript(fresh, trajectory, env.task)]
        yield system, "\n".join(lines)


def train(texts: list[str], vocab: int):  # type: ignore[no-untyped-def]
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(texts, trainer=trainer)
    return bpe


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--train", type=int, default=40)
    parser.add_argument("--vocab", type=int, default=2048)
    args = parser.parse_args()
    kinds = ("messages", "compact")
    corpus = [
        text
        for d in DOMAINS
        for kind in kinds
        for _, text in episodes(d, range(TRAIN_SEED, TRAIN_SEED + args.train), kind)
    ]
    bpe = train(corpus, args.vocab)
    print("| domain | rendering | chars | words | BPE tokens | agent's tokens | system tokens |")
    print("|---|---|---|---|---|---|---|")
    ratios = []
    for domain in DOMAINS:
        counts = {}
        for kind in kinds:
            pairs = list(episodes(domain, range(args.episodes), kind))
            tokens = mean(len(bpe.encode(t).ids) for _, t in pairs)
            system = mean(len(bpe.encode(s).ids) for s, _ in pairs)
            agent = mean(len(bpe.encode(_agent_lines(t)).ids) for _, t in pairs)
            counts[kind] = (tokens, agent)
            chars = mean(len(t) for _, t in pairs)
            words = mean(len(t.split()) for _, t in pairs)
            print(
                f"| {domain} | {kind} | {chars:.0f} | {words:.0f} | {tokens:.0f} | {agent:.0f} "
                f"| {system:.0f} |"
            )
        ratio = tuple(m / c for m, c in zip(counts["messages"], counts["compact"], strict=True))
        ratios.append(ratio)
        print(f"| {domain} | messages / compact | | | {ratio[0]:.2f} | {ratio[1]:.2f} | |")
    episode, agent = (mean(r[i] for r in ratios) for i in (0, 1))
    print(f"\nmean ratio over domains: {episode:.2f} per episode, {agent:.2f} the agent writes")


def _agent_lines(text: str) -> str:
    """What the agent wrote: the assistant messages (compact ones may span lines)."""
    kept, inside = [], False
    for line in text.splitlines():
        if line.startswith(("USER: ", "TOOL: ", "ASSISTANT: ")):
            inside = line.startswith("ASSISTANT: ")
        if inside:
            kept.append(line)
    return "\n".join(kept)


if __name__ == "__main__":
    main()
