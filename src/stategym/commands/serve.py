"""``stategym serve``: an OpenAI-compatible chat-completions server over a local model."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "serve"
HELP = "Serve a local Hugging Face model at /v1/chat/completions (OpenAI-compatible)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from stategym.commands import options

    parser.add_argument(
        "--model",
        type=Path,
        required=True,
        help="local model folder (written by save_pretrained, e.g. by `stategym model init`)",
    )
    parser.add_argument(
        "--name", default=None, help="model name clients ask for (default: the folder's name)"
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default: %(default)s, this machine only)",
    )
    parser.add_argument(
        "--port", type=port, default=8000, help="port to listen on (default: %(default)s)"
    )
    parser.add_argument("--device", default="cpu", help="torch device (default: %(default)s)")
    parser.add_argument(
        "--max-body-bytes",
        type=options.positive_int,
        default=None,
        help="largest request body; a larger one is answered 413 (default: 4 MiB)",
    )
    parser.add_argument(
        "--threads",
        type=options.positive_int,
        default=None,
        help="torch CPU threads (default: torch's choice)",
    )


def port(text: str) -> int:
    """A TCP port number, 0 (any free port) to 65535."""
    from stategym.commands.options import non_negative_int

    value = non_negative_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"expected a port number 0-65535, got {text!r}")
    return value


def main(args: argparse.Namespace) -> int:
    from stategym.llm.local import LocalModel
    from stategym.llm.serve import run_server

    _check_port(args.host, args.port)  # before the model loads, which can take minutes
    model = LocalModel(args.model, device=args.device, threads=args.threads)
    print(
        f"serving {args.model} as {args.name or model.name} at http://{args.host}:{args.port}/v1",
        flush=True,
    )
    limit = {} if args.max_body_bytes is None else {"max_body_bytes": args.max_body_bytes}
    run_server(model, host=args.host, port=args.port, name=args.name, **limit)
    return 0


def _check_port(host: str, port: int) -> None:
    """Refuse an address this machine cannot listen on (in use, not ours)."""
    import socket

    from stategym.kernel.errors import UsageError

    try:
        with socket.create_server((host, port)):
            pass
    except OSError as error:
        raise UsageError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
