"""``stategym serve``: an OpenAI-compatible chat-completions server over a local model."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "serve"
HELP = "Serve a local Hugging Face model at /v1/chat/completions (OpenAI-compatible)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", type=Path, required=True, help="local model directory")
    parser.add_argument(
        "--name", default=None, help="model name clients ask for (default: the directory's name)"
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default: %(default)s, this machine only)",
    )
    parser.add_argument("--port", type=int, default=8000, help="(default: %(default)s)")
    parser.add_argument("--device", default="cpu", help="torch device (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")


def main(args: argparse.Namespace) -> int:
    from stategym.llm.local import LocalModel
    from stategym.llm.serve import run_server

    model = LocalModel(args.model, device=args.device, threads=args.threads)
    print(
        f"serving {args.model} as {args.name or model.name} at http://{args.host}:{args.port}/v1",
        flush=True,
    )
    run_server(model, host=args.host, port=args.port, name=args.name)
    return 0
