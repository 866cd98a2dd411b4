"""``stategym serve`` decodes concurrent requests together, and each gets its own tokens."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

import httpx

from stategym.kernel.env import Env
from stategym.llm.local import LocalModel
from stategym.llm.prompt import first_messages
from stategym.llm.serve import Batcher, ThreadedServer, create_app
from stategym.registry import get_domain

TRAVEL = get_domain("travel")
TOKENS = 48


@pytest.fixture(scope="module")
def model(tiny_model: Path) -> LocalModel:
    return LocalModel(tiny_model, threads=1)


def _body(task: int, **extra: Any) -> dict[str, Any]:
    """A request for the first round of travel task ``task`` (``extra`` overrides fields)."""
    env = Env("travel")
    env.reset(seed=task)
    return {
        "messages": first_messages(TRAVEL, env.task),
        "tools": env.tool_schemas,
        "temperature": 1.0,
        "max_tokens": TOKENS,
        "seed": 100 + task,
        "return_token_ids": True,
        "logprobs": True,
        **extra,
    }


async def _post_all(origin: str, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=origin, timeout=120) as client:
        replies = await asyncio.gather(
            *(client.post("/v1/chat/completions", json=body) for body in bodies)
        )
    assert all(r.status_code == 200 for r in replies), [r.text for r in replies]
    return [r.json() for r in replies]


def _served(model: LocalModel) -> tuple[ThreadedServer, Batcher]:
    app = create_app(model)
    return ThreadedServer(app, lifespan="off"), app.state.batcher


def test_concurrent_requests_share_batches_and_keep_their_own_tokens(model: LocalModel) -> None:
    bodies = [_body(seed) for seed in range(6)]
    server, batcher = _served(model)
    with server:
        alone = [asyncio.run(_post_all(server.origin, [body]))[0] for body in bodies]
        assert batcher.batches == [1] * 6
        together = asyncio.run(_post_all(server.origin, bodies))
    shared = batcher.batches[6:]
    assert sum(shared) == 6
    assert max(shared) > 1, shared  # the requests that arrived while one decoded waited
    for one, other in zip(alone, together, strict=True):
        (a,), (b,) = one["choices"], other["choices"]
        assert a["token_ids"] == b["token_ids"]  # a row's seed decides its tokens
        assert a["message"] == b["message"]
        assert one["usage"] == other["usage"]
        assert [t["logprob"] for t in a["logprobs"]["content"]] == pytest.approx(
            [t["logprob"] for t in b["logprobs"]["content"]], abs=1e-4
        )


def test_a_requests_choices_are_rows_of_one_batch(model: LocalModel) -> None:
    server, batcher = _served(model)
    with server:
        (three,) = asyncio.run(_post_all(server.origin, [_body(2, n=3, seed=7)]))
        singles = asyncio.run(_post_all(server.origin, [_body(2, seed=seed) for seed in (7, 8, 9)]))
    assert batcher.batches[0] == 3
    assert [c["index"] for c in three["choices"]] == [0, 1, 2]
    assert [c["token_ids"] for c in three["choices"]] == [
        s["choices"][0]["token_ids"] for s in singles
    ]
    assert three["usage"]["completion_tokens"] == sum(
        s["usage"]["completion_tokens"] for s in singles
    )


def test_a_batch_never_takes_more_rows_than_its_cap(model: LocalModel) -> None:
    app = create_app(model)
    batcher: Batcher = app.state.batcher
    batcher.max_rows = 2
    with ThreadedServer(app, lifespan="off") as server:
        replies = asyncio.run(_post_all(server.origin, [_body(s, max_tokens=8) for s in range(5)]))
    assert len(replies) == 5
    assert max(batcher.batches) <= 2
    assert sum(batcher.batches) == 5
