"""``stategym serve``: an OpenAI-compatible chat-completions server over a local model.

It speaks OpenAI messages, rendered through the model's chat template, so it serves only a
model trained on them: a folder whose stategym record says it was trained on the ``compact``
rendering (the trainer's default) is refused in one line before anything loads
(:func:`~stategym.llm.model_files.check_servable`; play such a model with ``hf:PATH``).
A folder without a record (any Hugging Face chat model) is served.
"""

from __future__ import annotations

import argparse
import socket
from pathlib import Path

NAME = "serve"
HELP = "Serve a local Hugging Face model at /v1/chat/completions (OpenAI-compatible)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from stategym.commands import options

    parser.add_argument(
        "--model",
        type=Path,
        required=True,
        help="local model folder (written by save_pretrained, e.g. by `stategym model init`), "
        "trained on OpenAI messages (a model trained on `--rendering compact` is refused)",
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
    from stategym.llm.model_files import check_servable
    from stategym.llm.serve import run_server

    check_servable(args.model)  # a compact model: refused before the port and the weights
    # Bound before the model loads (which can take minutes), so a port in use fails at once,
    # and kept for the server: with --port 0 the port printed is the one the system gave.
    sock = _bind(args.host, args.port)
    try:
        model = LocalModel(args.model, device=args.device, threads=args.threads)
        port = sock.getsockname()[1]
        print(
            f"serving {args.model} as {args.name or model.name} at http://{args.host}:{port}/v1",
            flush=True,
        )
        limit = {} if args.max_body_bytes is None else {"max_body_bytes": args.max_body_bytes}
        run_server(model, host=args.host, port=port, name=args.name, sock=sock, **limit)
    finally:
        sock.close()
    return 0


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``.

    Raises:
        UsageError: an address this machine cannot listen on (in use, not ours).
    """
    from stategym.kernel.errors import UsageError

    try:
        return socket.create_server((host, port))
    except OSError as error:
        raise UsageError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
