"""Beyond one machine: the same episode specs as Ray tasks, merged back in spec order.

:func:`play_on_ray` is :func:`~stategym.rollout.workers.play_in_processes` on a Ray
cluster: the specs are cut into the same chunks, each chunk is one Ray task that plays it
with :func:`~stategym.rollout.workers.play_chunk`, and the parent yields every
``(spec, trajectory)`` in spec order, so a Ray run writes the same bytes as a run in one
process. It joins the cluster the caller already joined (``ray.init`` called before), or
``address`` (``None``: Ray's default, the cluster in ``RAY_ADDRESS`` or a new local one).
Every node must have the same stategym installed: a task names the functions it runs by
module, it does not ship them.

Joining a cluster (:func:`connect`): an address where nothing accepts a TCP connection within
:data:`CONNECT_PATIENCE` seconds is refused in one line before ``ray.init`` (the address Ray
itself would dial: ``RAY_ADDRESS``, a running local cluster, the node's own IP for
``localhost``). Ray would otherwise retry for about ten minutes, printing warnings, in C++
calls that hold off SIGTERM and Ctrl-C for up to half a minute each; the check is a Python
call, which they stop at once. ``ray.init`` also replaces the process's SIGTERM handler with
its own (``sys.exit(15)``: no summary, no ``stategym: terminated``); the one that was there is
put back. Not checked: a port that accepts connections but is no Ray cluster. Ray's own
retries decide there (about twenty tries of about 35 s, with Ray's warnings, then one line;
``RAY_gcs_server_port_wait_time_s=N`` makes it N tries in Ray 2.60), and a SIGTERM lands
when the current try returns.

As with worker processes, only scripted specs play here (LLM agents play in the parent:
see :mod:`stategym.rollout.workers`). The trainer's rollouts can take the same path: call
:func:`play_on_ray` with the specs of a batch.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit

from stategym.kernel.errors import UsageError
from stategym.kernel.understanding import ReaderSource
from stategym.rollout.agents import AgentSource
from stategym.rollout.play import TaskOf, spec_task
from stategym.rollout.spec import EpisodeSpec
from stategym.rollout.workers import (
    CHUNK,
    WINDOW,
    Scored,
    Scorer,
    chunks,
    hand_over,
    play_chunk,
)

CONNECT_PATIENCE = 10.0
"""Seconds the check that something answers at a cluster's address waits for a TCP
connection: twice Ray's own wait for one (5 s), for a slow network."""


def connect(address: str | None = None) -> Any:
    """The ``ray`` module, joined to a cluster (the one already joined, else ``address``).

    An address where nothing answers is refused before ``ray.init`` (:func:`_check_answers`):
    Ray itself would retry for about ten minutes, in C++ calls that hold off every signal
    handler for up to half a minute each. This process's SIGTERM handler is kept
    (:func:`_init`).

    Raises:
        UsageError: Ray is not installed, or no Ray cluster answers at the address.
    """
    check_reachable(address)
    import ray

    if not ray.is_initialized():
        _init(ray, address, joining=_bootstrap_address(address) is not None)
    return ray


def check_reachable(address: str | None = None) -> None:
    """Refuse, before a command creates or changes anything, a ``--ray`` that
    :func:`connect` would refuse later: Ray not installed, a malformed address, or one where
    nothing answers (the same checks, without starting or joining Ray).

    Raises:
        UsageError: as :func:`connect`.
    """
    try:
        import ray
    except ImportError:
        raise UsageError("--ray needs Ray: pip install 'stategym[ray]'") from None
    if not ray.is_initialized():
        target = _bootstrap_address(address)
        if target is not None:
            _check_answers(address, target)


def _bootstrap_address(address: str | None) -> str | None:
    """The ``host:port`` Ray will dial for ``address`` (``None``: it starts a local instance).

    Ray's own rule, so that the check dials what Ray would (it reads ``RAY_ADDRESS`` and
    finds a running local cluster, and dials the node's own IP for ``localhost``); it lives
    in a private module, so where that is missing the address is taken as given. A Ray
    Client address (``ray://host:port``) is its ``host:port``.
    """
    if address is not None and "://" in address:
        parts = urlsplit(address)
        return f"{parts.hostname}:{parts.port}" if parts.hostname and parts.port else None
    try:
        from ray._private.services import canonicalize_bootstrap_address
    except ImportError:
        return address or os.environ.get("RAY_ADDRESS") or None
    try:
        return canonicalize_bootstrap_address(address)  # type: ignore[arg-type]  # None: as ray.init
    except (ValueError, ConnectionError) as error:  # a malformed address; "auto" and none
        raise UsageError(f"--ray {address}: {_first_line(error)}") from None


def _check_answers(address: str | None, target: str) -> None:
    """Refuse a cluster address where nothing accepts a TCP connection within
    :data:`CONNECT_PATIENCE`, in one line (``address``: as given, for the message).

    Only that is checked: a port that answers but is no Ray cluster is left to Ray, which
    gives up after its own retries. The wait is a Python call, so SIGTERM and Ctrl-C stop it
    at once.
    """
    host, _, port = target.rpartition(":")
    given = address or f"(RAY_ADDRESS={os.environ.get('RAY_ADDRESS', '')})"
    try:
        with socket.create_connection((host.strip("[]"), int(port)), CONNECT_PATIENCE):
            return
    except (OSError, ValueError) as error:
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
    raise UsageError(
        f"--ray {given}: no Ray cluster answers at {target} ({reason}); start one there "
        "(ray start --head) or give the address of a running one"
    )


def _init(ray: Any, address: str | None, *, joining: bool) -> None:
    """``ray.init``, with this process's SIGTERM handler kept.

    Ray sets its own (``sys.exit(15)``) and keeps it: a run stopped by SIGTERM would then
    end without its summary and without ``stategym: terminated``. The handler that was
    there is put back, and a SIGTERM Ray caught meanwhile is handed to it.

    Raises:
        UsageError: joining a cluster, Ray could not (``joining``; starting a local instance
            keeps Ray's own error, with its diagnostics).
    """
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main_thread else None
    terminated: SystemExit | None = None
    try:
        ray.init(address=address, include_dashboard=False, logging_level=logging.WARNING)
    except SystemExit as stop:
        if stop.code != signal.SIGTERM or previous is None:
            raise
        terminated = stop
    except (ConnectionError, RuntimeError) as error:
        if not joining:
            raise
        raise UsageError(f"--ray {address}: Ray could not join: {_first_line(error)}") from None
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    if terminated is not None:
        signal.raise_signal(signal.SIGTERM)  # to the handler put back (cli: Terminated)
        raise terminated  # that handler ignores SIGTERM: end as Ray would have


def _first_line(error: BaseException) -> str:
    """The first line of an error's message (Ray's run on over many)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def play_on_ray(
    specs: Sequence[EpisodeSpec],
    agents: AgentSource,
    *,
    address: str | None = None,
    task_of: TaskOf = spec_task,
    scorer: Scorer | None = None,
    reader: ReaderSource | None = None,
) -> Iterator[Scored]:
    """Play scripted specs as Ray tasks (a chunk each), yielding them in spec order, each
    with ``scorer``'s result (computed by the task that played it; ``None`` without one).

    ``agents`` and ``task_of`` are put in Ray's object store once and shared by every task
    (an :class:`~stategym.rollout.Agents` travels as its recipe).

    Raises:
        UsageError: Ray is not installed.
        Whatever an episode raised, after every episode before it.
    """
    ray = connect(address)
    play = ray.remote(play_chunk)
    shared_agents, shared_task_of = ray.put(agents), ray.put(task_of)
    window = max(1, int(ray.cluster_resources().get("CPU", 1))) * WINDOW
    parts = chunks(specs, CHUNK)
    refs: dict[int, Any] = {}
    submitted = 0
    try:
        for index, part in enumerate(parts):
            while submitted < len(parts) and submitted < index + window:
                refs[submitted] = play.remote(
                    parts[submitted], shared_agents, shared_task_of, scorer=scorer, reader=reader
                )
                submitted += 1
            yield from hand_over(part, ray.get(refs.pop(index)))
    finally:
        for ref in refs.values():  # stopped early: the tasks not handed over are not needed
            ray.cancel(ref, force=True)
