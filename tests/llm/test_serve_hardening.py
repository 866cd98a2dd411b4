"""``stategym serve`` answers a bad request with a 400 (413 when too large) naming what is
wrong, checked before the request joins a batch, and one request's failure never fails the
others decoded with it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import replace
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

import httpx

from stategym.llm.local import (
    ContextLengthError,
    Generation,
    InvalidRequestError,
    LocalModel,
    Sampling,
)
from stategym.llm.serve import MAX_BODY_BYTES, Batcher, ThreadedServer, create_app
from stategym.llm.tiny import TinyConfig, init_model

HI = [{"role": "user", "content": "hi"}]
SMALL = TinyConfig(
    episodes=4,
    steps=2,
    hidden_size=32,
    layers=1,
    heads=2,
    kv_heads=1,
    intermediate_size=64,
    vocab_size=300,
    max_positions=1024,
    batch_size=2,
)
"""An untrained model of a few seconds: these tests need a model, not a good one."""


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> LocalModel:
    return LocalModel(init_model(tmp_path_factory.mktemp("small") / "model", SMALL), threads=1)


@pytest.fixture(scope="module")
def origin(model: LocalModel) -> Iterator[str]:
    with ThreadedServer(create_app(model), lifespan="off") as server:
        yield server.origin


def _post(origin: str, body: Any) -> httpx.Response:
    """POST ``body`` as JSON escaped to ASCII (a lone surrogate is sent as its escape)."""
    content, headers = json.dumps(body).encode(), {"Content-Type": "application/json"}
    return httpx.post(
        f"{origin}/v1/chat/completions", content=content, headers=headers, timeout=120
    )


MALFORMED = {
    "prompt_token_ids 'abc'": ({"prompt_token_ids": "abc"}, "prompt_token_ids"),
    "prompt_token_ids []": ({"prompt_token_ids": []}, "prompt_token_ids"),
    "prompt_token_ids [-5]": ({"prompt_token_ids": [-5]}, "token id -5 is outside"),
    "prompt_token_ids [null]": ({"prompt_token_ids": [None]}, "prompt_token_ids.0"),
    "prompt_token_ids [1.5]": ({"prompt_token_ids": [1.5]}, "prompt_token_ids.0"),
    "prompt_token_ids out of vocabulary": ({"prompt_token_ids": [10**6]}, "vocabulary"),
    "messages []": ({"messages": []}, "messages"),
    "role 5": ({"messages": [{"role": 5, "content": "x"}]}, "messages.0.role"),
    "content {}": ({"messages": [{"role": "user", "content": {"a": 1}}]}, "messages.0.content"),
    "tool_calls 'x'": ({"messages": [{"role": "assistant", "tool_calls": "x"}]}, "tool_calls"),
    "tools [{'x': 1}]": ({"tools": [{"x": 1}]}, "tools.0.function"),
    "a tool without parameters the template needs": (
        {"tools": [{"type": "function", "function": {"name": "f"}}]},
        "the chat template cannot render",
    ),
    "parameters a template cannot join": (
        {
            "tools": [
                {"type": "function", "function": {"name": "f", "parameters": {"properties": 5}}}
            ]
        },
        "the chat template cannot render",
    ),
    "a lone surrogate": ({"messages": [{"role": "user", "content": "\ud800"}]}, "no valid text"),
    "seed -2**64": ({"seed": -(2**64)}, "seed"),
    "seed 2**70": ({"seed": 2**70}, "seed"),
    "top_p 0": ({"top_p": 0}, "top_p"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_request_is_a_400_naming_what_is_wrong(origin: str, case: str) -> None:
    fields, named = MALFORMED[case]
    reply = _post(origin, {"messages": HI, "max_tokens": 3, **fields})
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["type"] == "invalid_request_error" and named in error["message"]
    assert _post(origin, {"messages": HI, "max_tokens": 3}).status_code == 200  # serves on


def test_tiny_temperatures_and_top_ps_sample_the_top_token(origin: str) -> None:
    """Below MIN_TEMPERATURE is greedy; a top_p below float32's range keeps the top token
    (each made every row of its batch fail: an infinite logit, an empty nucleus)."""
    ids = {"messages": HI, "max_tokens": 6, "return_token_ids": True, "seed": 3}
    greedy = _post(origin, {**ids, "temperature": 0}).json()["choices"][0]["token_ids"]
    for extra in ({"temperature": 1e-300}, {"temperature": 1e-6}, {"top_p": 1e-300}):
        reply = _post(origin, {**ids, **extra})
        assert reply.status_code == 200, reply.text
        assert reply.json()["choices"][0]["token_ids"] == greedy


def test_a_body_over_the_limit_is_a_413_before_it_is_read(origin: str) -> None:
    big = {"messages": [{"role": "user", "content": "x" * (2 * MAX_BODY_BYTES)}]}
    reply = _post(origin, big)
    assert reply.status_code == 413
    assert reply.json()["error"]["code"] == "request_too_large"
    chunks = iter([b'{"messages": [{"role": "user", "content": "', b"x" * MAX_BODY_BYTES] * 2)
    streamed = httpx.post(f"{origin}/v1/chat/completions", content=chunks, timeout=120)
    assert streamed.status_code == 413  # no Content-Length: refused once past the limit
    assert _post(origin, {"messages": HI, "max_tokens": 3}).status_code == 200


def test_more_messages_than_the_context_has_tokens_are_refused_unrendered(
    model: LocalModel, origin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Audit 17B F1: 50,000 short messages were rendered for minutes before the context
    check refused them."""
    rendered: list[int] = []
    render = model.render

    def counted(messages: Any, tools: Any) -> list[int]:
        rendered.append(len(messages))
        return render(messages, tools)

    monkeypatch.setattr(model, "render", counted)
    many = [{"role": "user", "content": "hi"}] * (model.context + 1)
    reply = _post(origin, {"messages": many, "max_tokens": 3})
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["code"] == "context_length_exceeded" and "messages" in error["message"]
    assert rendered == []
    assert _post(origin, {"messages": HI, "max_tokens": 3}).status_code == 200
    assert rendered == [len(HI)]


def test_hostile_requests_among_good_ones_fail_alone(origin: str) -> None:
    good = [{"messages": HI, "max_tokens": 5, "seed": seed} for seed in range(3)]
    alone = [_post(origin, body).json()["choices"][0]["message"] for body in good]
    hostile = [
        {"messages": HI, "prompt_token_ids": [10**6], "max_tokens": 5},
        {"messages": HI, "seed": 2**70, "max_tokens": 5},
    ]

    async def together() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=origin, timeout=120) as client:
            calls = (client.post("/v1/chat/completions", json=b) for b in [*good, *hostile])
            return await asyncio.gather(*calls)

    replies = asyncio.run(together())
    assert [r.status_code for r in replies] == [200, 200, 200, 400, 400]
    assert [r.json()["choices"][0]["message"] for r in replies[:3]] == alone


def test_the_model_refuses_what_it_cannot_decode_before_decoding(model: LocalModel) -> None:
    good = ((1, 2, 3), Sampling(max_tokens=2), None)
    for prompt, sampling in [
        ((), Sampling()),
        ((model.vocab_size,), Sampling()),
        ((-1,), Sampling()),
        ((1,), Sampling(seed=2**64)),
        ((1,), Sampling(temperature=float("inf"))),
        ((1,), Sampling(top_p=0.0)),
        ((1,), Sampling(max_tokens=0)),
    ]:
        with pytest.raises(InvalidRequestError, match="request 1: "):
            model.generate_batch([good, (prompt, sampling, None)])
    assert len(model.generate_batch([good])) == 1


class _Breaks:
    """A model whose batch raises when any row asks for 13 tokens (a bug one request meets:
    what the checks before batching could not see)."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def generate_batch(
        self, requests: Sequence[tuple[Sequence[int], Sampling, Hashable | None]]
    ) -> list[Generation | ContextLengthError]:
        self.calls.append(len(requests))
        if any(sampling.max_tokens == 13 for _, sampling, _ in requests):
            raise RuntimeError("row of 13 tokens")
        return [Generation("ok", tuple(p), (), (), "stop", 0.0) for p, _, _ in requests]


def test_a_batch_that_fails_is_decoded_again_one_request_at_a_time() -> None:
    model = _Breaks()
    batcher = Batcher(model)  # type: ignore[arg-type]
    sampling = Sampling(max_tokens=5)
    requests = [[((i,), sampling)] for i in range(3)]
    requests.insert(1, [((9,), replace(sampling, max_tokens=13)), ((9,), sampling)])

    async def together() -> list[Any]:
        calls = (batcher.generate(jobs) for jobs in requests)
        return await asyncio.gather(*calls, return_exceptions=True)

    answers = asyncio.run(together())
    assert batcher.batches == [5, 1, 2, 1, 1]  # the shared batch, then each request alone
    assert isinstance(answers[1], RuntimeError)
    for index in (0, 2, 3):
        (generation,) = answers[index]
        assert generation.prompt_ids == requests[index][0][0]


NULLABLE = ["temperature", "top_p", "n", "logprobs", "stream", "return_token_ids", "model"]
"""Optional fields with a default, which OpenAI's API takes ``null`` for (audit 9, F7)."""


@pytest.mark.parametrize("field", NULLABLE)
def test_a_null_optional_field_means_its_default(origin: str, field: str) -> None:
    """Regression: ``null`` was a 400 (``temperature: Input should be a valid number``)."""
    body = {"messages": HI, "max_tokens": 4, "seed": 5, "return_token_ids": True}
    reply = _post(origin, {**body, field: None})
    assert reply.status_code == 200, reply.text
    left_out = {k: v for k, v in body.items() if k != field}
    assert reply.json()["choices"] == _post(origin, left_out).json()["choices"]


def test_the_openai_client_may_pass_none(origin: str) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=f"{origin}/v1", api_key="none", max_retries=0)
    reply = client.chat.completions.create(
        model="model", messages=HI, max_tokens=2, temperature=None, top_p=None, n=None
    )
    assert len(reply.choices) == 1


UNPARSED = {
    "bytes that are not UTF-8": b'{"messages": [{"role": "user", "content": "\xff\xfe"}]}',
    "JSON nested 100k deep": b'{"messages": [], "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "not JSON": b"{not json",
}


@pytest.mark.parametrize("case", list(UNPARSED))
def test_a_body_that_cannot_be_parsed_is_a_400_in_the_documented_shape(
    origin: str, case: str
) -> None:
    """Regression: FastAPI answered ``{"detail": "There was an error parsing the body"}``."""
    reply = httpx.post(
        f"{origin}/v1/chat/completions",
        content=UNPARSED[case],
        headers={"Content-Type": "application/json"},
        timeout=120,
    )
    assert reply.status_code == 400, reply.text
    assert set(reply.json()) == {"error"}
    assert reply.json()["error"]["type"] == "invalid_request_error"
    assert reply.json()["error"]["message"]
    assert _post(origin, {"messages": HI, "max_tokens": 3}).status_code == 200  # serves on


def test_every_refusal_is_in_the_documented_shape(origin: str) -> None:
    """An unknown path (404) and another method (405) too."""
    for reply in (httpx.get(f"{origin}/v1/nowhere"), httpx.get(f"{origin}/v1/chat/completions")):
        assert 400 <= reply.status_code < 500
        assert reply.json()["error"]["type"] == "invalid_request_error", reply.text
    assert "POST" in httpx.get(f"{origin}/v1/chat/completions").headers["allow"]
