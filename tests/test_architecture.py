"""The layers of ``docs/architecture.md``, enforced by parsing every module's imports.

The rule is a table of module prefixes to layers (the longest prefix wins), so it follows a
folder move by editing one table. A module may import its own layer and the layers below it;
the kernel imports no other layer; the metrics import only the kernel; neither imports an
LLM library. Every import counts: module level, inside functions, and under
``TYPE_CHECKING`` (a type-only import is still a dependency of the code's meaning).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

LAYERS: tuple[str, ...] = (
    "kernel",
    "domains",
    "registry",
    "renderer",
    "agents",
    "rollout",
    "metrics",
    "topology",
    "train",
    "adapters",
    "report",
    "cli",
)
"""Lowest first: a module may import its own layer and any layer before it."""

PREFIXES: dict[str, str] = {
    # kernel: the environment and what it is made of; it knows domains only as Domain objects
    "stategym.kernel": "kernel",
    "stategym.agents.base": "kernel",  # the Agent protocol a Domain's expert returns
    "stategym.agents.style": "kernel",  # the Style a Domain's expert takes
    # domains and what they are built from
    "stategym.domains": "domains",
    "stategym.generation": "domains",
    "stategym.agents.playbook": "domains",
    "stategym.agents.hearing": "domains",
    "stategym.topology.motifs": "domains",  # the spec language of the synthetic domains
    "stategym.registry": "registry",
    "stategym.rendering": "renderer",
    # agents: scripted baselines by name and the LLM backends
    "stategym.agents": "agents",
    "stategym.llm": "agents",
    "stategym.rollout": "rollout",
    "stategym.llm.batch": "rollout",
    "stategym.metrics": "metrics",
    "stategym.topology": "topology",
    "stategym.train": "train",
    "stategym.llm.tiny": "train",
    "stategym.llm.probe": "train",
    "stategym.adapters": "adapters",
    "stategym.gym": "adapters",
    "stategym.llm.serve": "adapters",
    # report: reads and writes run directories and their tables
    "stategym.report": "report",
    "stategym.rundir": "report",
    "stategym.summary": "report",
    "stategym.store": "report",
    "stategym.tables": "report",
    "stategym.metrics.report": "report",
    "stategym.topology.report": "report",
    # the experiments play, score and write run directories with tables and plots
    "stategym.experiments": "report",
    "stategym.cli": "cli",
    "stategym.__main__": "cli",
    "stategym.commands": "cli",
}

ROOT = "stategym"
"""The package itself (the public names; it installs the registry): the top layer. It is
matched exactly, not as a prefix, so a module the table misses has no layer and fails."""

EXCEPTIONS: dict[tuple[str, str], str] = {
    ("stategym.llm", "stategym.rollout"): (
        "k-shot demonstrations are played with the episode loop; they move to the rollout "
        "engine with it"
    ),
}
"""Known upward imports ``(module, imported)``, each with its reason. A test fails when one
is no longer needed, so the list only shrinks."""

LLM_LIBRARIES = ("openai", "torch", "transformers", "tokenizers", "fastapi", "uvicorn")


def layer_of(module: str) -> str | None:
    """The layer of a stategym module (longest matching prefix), ``None`` for other modules."""
    if module == ROOT:
        return LAYERS[-1]
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        layer = PREFIXES.get(".".join(parts[:end]))
        if layer is not None:
            return layer
    return None


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted((SRC / "stategym").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def imports(module: str, path: Path) -> set[str]:
    """Every module ``module`` imports, relative imports resolved, at any depth."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            found.add(name)
            # ``from stategym import registry`` imports a module, not a name
            found.update(
                f"{name}.{alias.name}" for alias in node.names if _is_module(name, alias.name)
            )
    return found


def _is_module(package: str, name: str) -> bool:
    base = SRC.joinpath(*package.split("."))
    return (base / f"{name}.py").exists() or (base / name / "__init__.py").exists()


MODULES = dict(_modules())
GRAPH = {module: imports(module, path) for module, path in MODULES.items()}


def _upward() -> set[tuple[str, str]]:
    rank = {layer: index for index, layer in enumerate(LAYERS)}
    found = set()
    for module, targets in GRAPH.items():
        mine = layer_of(module)
        assert mine is not None
        for target in targets:
            theirs = layer_of(target)
            if theirs is not None and rank[theirs] > rank[mine]:
                found.add((module, target))
    return found


def test_every_module_has_a_layer() -> None:
    assert [m for m in MODULES if layer_of(m) is None] == []
    assert set(PREFIXES.values()) <= set(LAYERS)


def test_no_layer_imports_a_higher_one() -> None:
    upward = _upward()
    unexpected = {
        f"{module} ({layer_of(module)}) imports {target} ({layer_of(target)})"
        for module, target in upward
        if (module, target) not in EXCEPTIONS
    }
    assert sorted(unexpected) == []


def test_every_exception_is_still_needed() -> None:
    assert sorted(set(EXCEPTIONS) - _upward()) == []


@pytest.mark.parametrize("layer", ["kernel", "metrics"])
def test_the_kernel_and_the_metrics_import_no_domain_registry_or_llm_library(layer: str) -> None:
    allowed = {"kernel", layer}
    bad = sorted(
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        if layer_of(module) == layer
        for target in targets
        if (layer_of(target) not in (None, *allowed)) or target.split(".")[0] in LLM_LIBRARIES
    )
    assert bad == []


def test_the_table_classifies_what_it_should() -> None:
    # a slip in the table (a prefix shadowed by a longer one) would silently move a module
    assert layer_of("stategym.kernel.env") == "kernel"
    assert layer_of("stategym.domains.synthetic.tools") == "domains"
    assert layer_of("stategym.agents.random_agent") == "agents"
    assert layer_of("stategym.metrics.score") == "metrics"
    assert layer_of("stategym.metrics.report") == "report"
    assert layer_of("stategym.topology.motifs") == "domains"
    assert layer_of("stategym.commands.run") == "cli"
    assert layer_of("numpy") is None
    assert layer_of("stategym") == "cli" and layer_of("stategym.unlisted") is None


def test_imports_are_read_from_every_depth() -> None:
    # random_agent imports the registry inside a function; the package imports it by name
    assert "stategym.registry" in GRAPH["stategym.agents.random_agent"]
    assert "stategym.registry" in GRAPH["stategym"]
    assert "stategym.metrics.gold" in GRAPH["stategym.metrics.score"]  # a relative import


def _loaded_by(statement: str) -> list[str]:
    script = f"import sys\n{statement}\nprint('\\n'.join(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return result.stdout.split()


def test_import_stategym_loads_the_kernel_only() -> None:
    loaded = _loaded_by("import stategym")
    heavy = {"domains", "renderer", "metrics", "topology", "train", "report"}
    assert [m for m in loaded if layer_of(m) in heavy] == []
    assert [m for m in loaded if m.startswith("stategym.llm")] == []
    others = ("networkx", "rich", "matplotlib", *LLM_LIBRARIES)
    assert [m for m in loaded if m.split(".")[0] in others] == []


def test_one_domain_imports_only_itself() -> None:
    loaded = _loaded_by('import stategym; stategym.Env("travel")')
    domains = {m.split(".")[2] for m in loaded if m.startswith("stategym.domains.")}
    assert domains == {"travel"}


def test_the_cli_imports_only_the_command_that_runs() -> None:
    quiet = "import contextlib, io\nfrom stategym import cli\n"
    run = "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
    loaded = _loaded_by(quiet + run + "    cli.main(['--help'])")
    assert [m for m in loaded if m.startswith("stategym.commands.")] == []
    loaded = _loaded_by(quiet + run + "    cli.main(['score', '--help'])")
    commands = {m for m in loaded if m.startswith("stategym.commands.")}
    assert commands == {"stategym.commands.score", "stategym.commands.options"}


def test_the_cli_help_lines_are_the_commands_own() -> None:
    import importlib

    from stategym.cli import COMMANDS

    for name, help_line in COMMANDS.items():
        module = importlib.import_module(f"stategym.commands.{name}")
        assert (name, help_line) == (module.NAME, module.HELP)


def test_gymnasium_ids_are_the_domains_own() -> None:
    import gymnasium

    import stategym  # noqa: F401  (registers the ids)
    from stategym.registry import DOMAINS, all_domains

    assert {name: d.env_id for name, d in all_domains().items()} == DOMAINS
    for name, env_id in DOMAINS.items():
        assert gymnasium.spec(env_id).kwargs == {"domain": name}


def test_a_task_carries_what_scoring_needs_from_its_domain() -> None:
    # the metrics read Task.read_only instead of asking the registry for the domain
    from stategym.kernel.knobs import Knobs
    from stategym.registry import all_domains, get_domain

    synthetic = get_domain("synth:chain1+askgate+conflict")
    for domain in (*all_domains().values(), synthetic):
        for seed in range(3):
            assert domain.generate(seed, Knobs()).read_only == domain.read_only
