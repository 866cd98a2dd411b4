"""The same model through `stategym serve` and as `hf:`, token-in-token-out: the same tokens?

    python scripts/served_vs_hf.py BASE_URL MODEL_DIR DEVICE EPISODES

Plays travel seeds 0..EPISODES-1 greedily (48-token replies, run seed 0) twice: as an
``openai:`` agent given the model's tokenizer (``tokenizer=MODEL_DIR``: each request carries
the episode's token stream, which the server continues as given) against the server at
BASE_URL, and as ``hf:MODEL_DIR`` on DEVICE. Both keep the sampled ids as sampled and cut
the observations from the same chat template, so the two can be equal token for token; it
prints how many episodes are. (``stategym run --agent openai:...`` from the command line
sends messages instead, which the server renders and tokenises again: see compare_runs.py.)
"""

from __future__ import annotations

import asyncio
import sys


def main() -> None:
    from stategym.llm import agent_factory
    from stategym.llm.batch import run_many
    from stategym.registry import get_domain

    base_url, model, device, episodes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    domain, seeds = get_domain("travel"), range(episodes)
    settings = {"temperature": 0.0, "max_tokens": 48, "seed": 0}
    served = agent_factory(
        "openai", "model", domain, base_url=base_url, tokenizer=model, token_ids=True,
        logprobs=True, **settings,
    )  # fmt: skip
    local = agent_factory("hf", model, domain, device=device, **settings)
    first = asyncio.run(run_many("travel", served, seeds, concurrency=8))
    second = asyncio.run(run_many("travel", local, seeds, concurrency=8))
    same = differing = 0
    for x, y in zip(first, second, strict=True):
        ids = [[r.model.token_ids if r.model else None for r in t.rounds] for t in (x, y)]
        same += ids[0] == ids[1] and x.digest == y.digest
        differing += ids[0] != ids[1]
    print(
        f"served (token-in-token-out) vs hf: {len(first)} episodes, same tokens and world "
        f"digest {same}, differing tokens {differing}"
    )


if __name__ == "__main__":
    main()
