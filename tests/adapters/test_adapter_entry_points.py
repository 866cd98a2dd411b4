"""Regressions from outside audit 15c of the adapters (F1, F3, F5, F6; F2 and F7 are in
``tests/test_gym.py``, F8 in ``tests/test_boundary.py``).

- F1: OpenEnv's frame guard counted nesting after blanking strings with a pattern that took
  time quadratic in the escaped quotes of a string that never closes: one 60 KB frame held
  the server's event loop (every session) for 12 s.
- F3: the docs' ``stream`` example, run as a script, ended with a ``WorkerDied`` blaming a
  kill or out-of-memory, because it had no ``if __name__ == "__main__":``.
- F5: the knobs were an object for TRL and OpenEnv, an object or text for Gymnasium and
  verifiers; a wrong form failed deep inside (``'str' object has no attribute``) or, for
  OpenEnv, in every session. Since stop 42 a mapping (``{"dynamics": False}``, what JSON
  arguments such as ``vf-eval -a`` give) is a form every entry point takes too.
- F6: a TRL class (and so its instances) for a ``synth:`` domain or non-default knobs did
  not pickle.
"""

from __future__ import annotations

import ast
import pickle
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest

from stategym.kernel.knobs import Knobs
from stategym.registry import get_domain
from stategym.rendering import offered_tools

ROOT = Path(__file__).resolve().parents[2]
HANG_GUARD = 120
"""Seconds a child process may take before the test fails instead of hanging the suite."""


def _python(code: str, cwd: Path | None = None, stdin: bytes | None = None) -> Any:
    """Run ``code`` in a fresh interpreter, failing (not hanging) past :data:`HANG_GUARD`."""
    return subprocess.run(
        [sys.executable, "-c", code],
        input=stdin,
        capture_output=True,
        timeout=HANG_GUARD,
        cwd=cwd,
        check=False,
    )


# --- F1: the frame guard's scan is linear ------------------------------------------------


def test_an_unclosed_string_of_escaped_quotes_is_refused_in_linear_time() -> None:
    """1,000,000 escaped quotes (a 2 MB frame, within the 16 MiB the server reads): about
    12,000 s with the quadratic scan (0.77 s at 8,000, times 125 squared), milliseconds
    now. The child process is only a hang guard: nothing here reads a clock."""
    pytest.importorskip("openenv", reason="the openenv extra is not installed")
    code = textwrap.dedent(
        """
        from stategym.adapters.openenv import StategymAction
        from stategym.adapters.openenv_wire import MAX_FRAME_DEPTH, FrameGuard

        guard = FrameGuard(None, StategymAction)
        frame = "[" * (MAX_FRAME_DEPTH + 1) + '"' + '\\\\"' * 1_000_000
        print(guard.refusal({"type": "websocket.receive", "text": frame}))
        """
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr.decode()
    reply = done.stdout.decode()
    assert '"code": "VALIDATION_ERROR"' in reply and "nested more than 512 levels" in reply


@pytest.mark.parametrize(
    ("text", "deeper"),
    [
        ("[" * 513 + "]" * 513, True),
        ("[" * 512 + "]" * 512 + "[", False),  # never more than 512 open at once
        ('["' + "[" * 600 + '"]', False),  # brackets inside a string do not count
        ('["\\"' + "[" * 600 + '"]', False),  # nor after an escaped quote in it
        ('["\\\\"' + "[" * 600 + "]" * 600 + "]", True),  # an escaped backslash ends no string
        ("[" * 513 + '"' + '\\"' * 50, True),  # a string that never closes
        ('"' + "[" * 600, False),  # ... and holds the brackets
        ("[" * 513 + '"\\', True),  # a lone backslash at the end
    ],
)
def test_nesting_is_counted_outside_strings(text: str, deeper: bool) -> None:
    pytest.importorskip("openenv", reason="the openenv extra is not installed")
    from stategym.adapters.openenv_wire import MAX_FRAME_DEPTH, _nested_deeper

    assert _nested_deeper(text, MAX_FRAME_DEPTH) is deeper


# --- F3: the docs' stream example runs as a script; without its guard, the error says why ---


def _stream_example() -> str:
    """The Python block under "From Python, the same engine" in docs/integrations.md."""
    page = (ROOT / "docs" / "integrations.md").read_text(encoding="utf-8")
    after = page.split("From Python, the same engine", 1)[1]
    match = re.search(r"```python\n(.*?)```", after, re.DOTALL)
    assert match is not None
    return match.group(1)


def _run_script(tmp_path: Path, code: str) -> Any:
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        timeout=HANG_GUARD,
        cwd=tmp_path,
        check=False,
        text=True,
    )


def test_the_docs_stream_example_runs_as_a_script(tmp_path: Path) -> None:
    example = _stream_example()
    assert 'if __name__ == "__main__":' in example
    done = _run_script(tmp_path, example)
    assert done.returncode == 0, done.stderr


def test_workers_that_never_start_are_told_apart_from_a_killed_worker(tmp_path: Path) -> None:
    """An unguarded script: every worker fails while importing it. The line named a kill,
    the out-of-memory killer or a crash, and said the finished episodes were saved."""
    unguarded = textwrap.dedent(
        """
        from stategym.rollout import Agents, episode_specs, stream
        from stategym.rollout.workers import Spread

        specs = episode_specs("travel", "expert", range(40))
        played = list(stream(specs, Agents(), spread=Spread(workers=2)))
        """
    )
    done = _run_script(tmp_path, unguarded)
    assert done.returncode != 0
    prefix = "stategym.rollout.workers.WorkerDied: "
    (line,) = [line for line in done.stderr.splitlines() if line.startswith(prefix)]
    assert "no worker started" in line and 'if __name__ == "__main__":' in line
    assert "out of memory" not in line and "run the same command again" not in line


# --- F5: one reading of knobs for every entry point --------------------------------------


def test_as_knobs_reads_every_form_and_names_a_wrong_one() -> None:
    from stategym.kernel.knobs import as_knobs

    assert as_knobs(None) == Knobs() == as_knobs("default")
    assert as_knobs(Knobs.all_off()) == Knobs.all_off() == as_knobs("all_off")
    assert as_knobs("dynamics=off") == Knobs(dynamics=False)
    assert as_knobs({"dynamics": False}) == Knobs(dynamics=False) == as_knobs({"dynamics": "off"})
    assert as_knobs({}) == Knobs()
    with pytest.raises(TypeError, match=r"knobs must be Knobs, their text .* got list \["):
        as_knobs(["dynamics=off"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="knobs: bad knob 'gravity=off'"):
        as_knobs("gravity=off")
    with pytest.raises(ValueError, match=r"knobs: no knob 'gravity'; the knobs are \["):
        as_knobs({"gravity": False})
    with pytest.raises(
        TypeError, match=r"knobs\.dynamics must be a bool, 'on' or 'off'; got int 0"
    ):
        as_knobs({"dynamics": 0})  # 0 is not False: JSON's false is
    with pytest.raises(ValueError, match=r"knobs\.dynamics must be a bool, 'on' or 'off'"):
        as_knobs({"dynamics": "no"})


def _entry_points() -> dict[str, Any]:
    """Each adapter's entry point that takes knobs, as ``knobs -> its knobs``."""
    from stategym.gym import StateGymEnv

    points: dict[str, Any] = {
        "gym": lambda knobs: StateGymEnv("travel", knobs=knobs).core.knobs,
    }
    try:
        from stategym.adapters import trl as trl_adapter
    except ImportError:  # the trl extra
        pass
    else:
        points["trl class"] = lambda knobs: trl_adapter.environment_class("travel", knobs).knobs
        points["trl rows"] = lambda knobs: _prompt_knobs(
            trl_adapter.dataset_rows("travel", [1], knobs)[0]["prompt"]
        )
    try:
        from stategym.adapters import openenv as openenv_adapter
    except ImportError:  # the openenv extra
        pass
    else:
        points["openenv environment"] = lambda knobs: (
            openenv_adapter.StategymEnvironment("travel", knobs).env.knobs
        )
        points["openenv app"] = lambda knobs: _session_knobs(
            openenv_adapter.build_app("travel", knobs)
        )
    try:
        from stategym.adapters import verifiers as vf_adapter
    except ImportError:  # the verifiers extra
        pass
    else:
        points["verifiers"] = lambda knobs: (
            vf_adapter.load_environment("travel", seeds=[1], knobs=knobs).knobs
        )
        points["verifiers rows"] = lambda knobs: _prompt_knobs(
            vf_adapter.task_rows("travel", [1], knobs)[0]["prompt"]
        )
    try:
        with warnings.catch_warnings():  # ray warns about its own deprecated modules on import
            warnings.simplefilter("ignore", DeprecationWarning)
            from stategym.adapters import verl as verl_adapter
    except ImportError:  # the verl extra, which has an environment of its own
        pass
    else:
        points["verl rows"] = lambda knobs: Knobs.parse(
            verl_adapter.dataset_rows("travel", [1], knobs)[0]["extra_info"]["knobs"]
        )
    return points


def _prompt_knobs(prompt: list[dict[str, Any]]) -> Knobs:
    """Which of all-on or all-off knobs rendered ``prompt`` (the two this test passes)."""
    from stategym.adapters.trl import _first_messages

    for knobs in (Knobs(), Knobs.all_off()):
        if _first_messages("travel", 1, knobs) == prompt:
            return knobs
    raise AssertionError("a prompt of other knobs")


def _session_knobs(app: Any) -> Knobs:
    """The knobs of a session of an OpenEnv app (the environment its factory makes)."""
    from fastapi.testclient import TestClient

    with TestClient(app) as client, client.websocket_connect("/ws") as socket:
        socket.send_json({"type": "reset", "data": {"seed": 1}})
        reply = socket.receive_json()
    assert reply["type"] == "observation", reply
    tools = reply["data"]["observation"]["tools"]
    for knobs in (Knobs(), Knobs.all_off()):
        if tools == offered_tools(get_domain("travel"), knobs):
            return knobs
    raise AssertionError("the tools of other knobs")


@pytest.mark.parametrize("point", sorted(_entry_points()))
def test_every_entry_point_takes_knobs_as_an_object_text_or_a_mapping(point: str) -> None:
    make = _entry_points()[point]
    assert make(Knobs.all_off()) == Knobs.all_off() == make("all_off")
    assert make(None) == Knobs()
    mapped = {"stateful": False, "irreversible": "off", "hidden_info": False}
    assert make({**mapped, "priorities": "off", "dynamics": False}) == Knobs.all_off()
    with pytest.raises(TypeError, match="knobs must be Knobs, their text"):
        make(3)
    with pytest.raises(ValueError, match="bad knob"):
        make("gravity=off")
    with pytest.raises(ValueError, match="no knob 'gravity'"):
        make({"gravity": False})


# --- F6: every TRL class and instance pickles ---------------------------------------------


@pytest.mark.parametrize(
    ("domain", "knobs"),
    [("travel", None), ("travel", Knobs.all_off()), ("synth:askgate1", None)],
    ids=["default", "all-off", "synth"],
)
def test_trl_classes_and_instances_pickle_into_a_fresh_process(
    domain: str, knobs: Knobs | None
) -> None:
    """TRL's async trainer pickles its ``environment_factory`` into a spawned process."""
    pytest.importorskip("trl", reason="the trl extra is not installed")
    from stategym.adapters.trl import environment_class

    cls = environment_class(domain, knobs)
    assert pickle.loads(pickle.dumps(cls)) is cls
    env = cls()
    env.reset(seed=3)
    key = env.env.state_key()
    code = textwrap.dedent(
        """
        import pickle, sys
        cls, env = pickle.loads(sys.stdin.buffer.read())
        assert type(env) is cls and cls.__module__ == "stategym.adapters.trl"
        print(repr((cls.__name__, cls.domain_name, cls.knobs.describe(), env.env.state_key())))
        """
    )
    done = _python(code, stdin=pickle.dumps((cls, env)))
    assert done.returncode == 0, done.stderr.decode()
    name, domain_name, knobs_text, state_key = ast.literal_eval(done.stdout.decode())
    assert (name, domain_name) == (cls.__name__, domain)
    assert knobs_text == (knobs or Knobs()).describe() and state_key == key


def test_a_name_the_module_does_not_make_is_no_attribute() -> None:
    pytest.importorskip("trl", reason="the trl extra is not installed")
    from stategym.adapters import trl as trl_adapter

    for name in ("NopeEnvironment", "TravelEnvironment[nope|all_off]", "X[travel|gravity=off]"):
        with pytest.raises(AttributeError):
            getattr(trl_adapter, name)
