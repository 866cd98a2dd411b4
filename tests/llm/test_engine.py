"""The batched generation engine: a batch answers what one-at-a-time decoding answers, a
kept cache continues as a full re-encode of the same ids would, and nothing depends on
which requests share a batch.

A small random Qwen2 (no tokenizer, no training: the engine only sees ids) keeps these tests
at a few seconds; the tiny recipe's model is exercised by ``test_tiny_model.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from stategym.llm.engine import Decoded, Engine, Request, greedy  # noqa: E402

VOCAB = 97
TOL = 1e-4
"""Float tolerance on log-probabilities (batched and padded matrix products round
differently from single rows)."""


@pytest.fixture(scope="module")
def model() -> Any:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        tie_word_embeddings=True, pad_token_id=0,
    )  # fmt: skip
    return Qwen2ForCausalLM(config).eval()


def _engine(model: Any, stops: frozenset[int] = frozenset()) -> Engine:
    return Engine(model, stops, pad_id=0)


def _prompts(lengths: list[int], seed: int = 1) -> list[tuple[int, ...]]:
    generator = torch.Generator().manual_seed(seed)
    return [tuple(torch.randint(1, VOCAB, (n,), generator=generator).tolist()) for n in lengths]


def _same(a: Decoded, b: Decoded) -> None:
    assert a.ids == b.ids and a.stopped == b.stopped
    assert a.logprobs == pytest.approx(b.logprobs, abs=TOL)


def test_a_batch_answers_what_one_at_a_time_does(model: Any) -> None:
    prompts = _prompts([3, 17, 9, 40])
    budgets = [5, 12, 1, 8]  # rows finish at different steps
    alone = [
        _engine(model).run([Request(p, b)], greedy)[0]
        for p, b in zip(prompts, budgets, strict=True)
    ]
    # A stop id the second row reaches mid-reply: that row ends early, the others go on.
    stop = alone[1].ids[3]
    stops = frozenset({stop})
    alone = [
        _engine(model, stops).run([Request(p, b)], greedy)[0]
        for p, b in zip(prompts, budgets, strict=True)
    ]
    batched = _engine(model, stops).run(
        [Request(p, b) for p, b in zip(prompts, budgets, strict=True)], greedy
    )
    assert alone[1].stopped and alone[1].ids[-1] == stop
    assert [len(d.ids) for d in batched] == [len(d.ids) for d in alone]
    for one, many in zip(alone, batched, strict=True):
        _same(one, many)


def test_a_kept_cache_continues_as_a_full_re_encode(model: Any) -> None:
    engine = _engine(model)
    prompts = _prompts([6, 21, 11])
    first = engine.run([Request(p, 7, i) for i, p in enumerate(prompts)], greedy)
    observations = _prompts([4, 1, 9], seed=2)
    # Round 2's prompt: round 1's prompt, what was sampled, the observation's ids.
    second = [p + d.ids + o for p, d, o in zip(prompts, first, observations, strict=True)]
    fed_before = engine.fed_tokens
    continued = engine.run([Request(p, 7, i) for i, p in enumerate(second)], greedy)
    # Only the last sampled id (never fed) and the observation were fed.
    assert engine.fed_tokens - fed_before == sum(1 + len(o) for o in observations)
    for prompt, cont in zip(second, continued, strict=True):
        fresh = _engine(model).run([Request(prompt, 7)], greedy)[0]
        _same(fresh, cont)


def test_rows_that_leave_the_batch_early_keep_their_cache(model: Any) -> None:
    # Budgets that end rows at different steps: the short ones leave the batch (their
    # caches cut out then) while the others go on decoding.
    engine = _engine(model)
    prompts = _prompts([6, 21, 11, 30, 3])
    budgets = [2, 9, 1, 5, 9]
    first = engine.run(
        [Request(p, b, i) for i, (p, b) in enumerate(zip(prompts, budgets, strict=True))], greedy
    )
    assert [len(d.ids) for d in first] == budgets
    for prompt, budget, reply in zip(prompts, budgets, first, strict=True):
        _same(_engine(model).run([Request(prompt, budget)], greedy)[0], reply)
    observations = _prompts([4, 1, 9, 2, 5], seed=2)
    second = [p + d.ids + o for p, d, o in zip(prompts, first, observations, strict=True)]
    fed_before = engine.fed_tokens
    continued = engine.run([Request(p, 6, i) for i, p in enumerate(second)], greedy)
    assert engine.fed_tokens - fed_before == sum(1 + len(o) for o in observations)
    for prompt, cont in zip(second, continued, strict=True):
        _same(_engine(model).run([Request(prompt, 6)], greedy)[0], cont)


def test_a_rewritten_history_is_fed_from_where_it_differs(model: Any) -> None:
    engine = _engine(model)
    (prompt,) = _prompts([20])
    engine.run([Request(prompt, 4, "a")], greedy)
    rewritten = (*prompt[:8], 5, 6, 7, *prompt[8:])
    fed_before = engine.fed_tokens
    reply = engine.run([Request(rewritten, 4, "a")], greedy)[0]
    assert engine.fed_tokens - fed_before == len(rewritten) - 8
    _same(_engine(model).run([Request(rewritten, 4)], greedy)[0], reply)
    # A prompt the cache covers whole still feeds its last id (its logits start the reply).
    again = engine.run([Request(rewritten[:10], 3, "a")], greedy)[0]
    _same(_engine(model).run([Request(rewritten[:10], 3)], greedy)[0], again)


def test_sampling_is_deterministic_and_sessions_are_released(model: Any) -> None:
    def sample() -> list[Decoded]:
        engine = _engine(model)
        generator = torch.Generator().manual_seed(3)

        def pick(logits: Any) -> Any:
            return torch.multinomial(torch.softmax(logits, -1), 1, generator=generator)[:, 0]

        prompts = _prompts([5, 13])
        first = engine.run([Request(p, 6, i) for i, p in enumerate(prompts)], pick)
        second = [p + d.ids + (9,) for p, d in zip(prompts, first, strict=True)]
        return first + engine.run([Request(p, 6, i) for i, p in enumerate(second)], pick)

    assert sample() == sample()
    engine = Engine(model, frozenset(), 0, max_sessions=2)
    for key in range(3):
        engine.run([Request((1, 2, 3), 2, key)], greedy)
    assert sorted(engine._sessions) == [1, 2]  # the least recently used went first
    engine.release(1)
    assert sorted(engine._sessions) == [2]
    engine.clear()
    assert not engine._sessions


def test_requests_are_checked(model: Any) -> None:
    with pytest.raises(ValueError, match="budget"):
        _engine(model).run([Request((), 3)], greedy)
    with pytest.raises(ValueError, match="budget"):
        _engine(model).run([Request((1,), 0)], greedy)
