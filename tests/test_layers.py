"""The package reads as floors, every import pointing down (or sideways without a cycle).

    0  infra/, typecheck.py, rocketrl/__init__.py   shared low-level pieces; import no other floor
    1  sim/                                          the physics engines
    2  env/                                          the batched game layer
    3  policy/, ppo/, league/, config.py,            learning
       distributed/config.py
    4  eval/, diagnostics/, render/, export/,        features, each with its command
       distributed/, cli_args.py, training.py        (training.py: a run from the library, local or on Ray)
    5  cli.py                                        the `rocketrl` command

config.py sits on the learning floor: it is the public face of the settings, re-exporting the TrainConfig
that ppo/train_config.py composes from each package's section (env/, ppo/, policy/, league/); nothing on
its own floor imports it.
distributed/config.py (RayConfig) is plain data that TrainConfig composes with the other sections, so it sits on
the learning floor while the rest of distributed/ is a feature; it counts as a package of its own here.
cli_args.py holds the argument types that the feature commands (eval, render) and cli.py share, so it
sits on the feature floor. Imports within a floor are allowed while they form no cycle: policy/ is
imported by league/ and ppo/, league/ by ppo/, ppo/ by config.py, and none of them import back.

Every `import rocketrl...` and `from ... import` counts, relative ones, those inside functions and those
under `if TYPE_CHECKING:` included. pretrained/ and configs/ hold data, no modules.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "rocketrl"

FLOORS: dict[str, int] = {
    "rocketrl": 0,
    "infra": 0,
    "typecheck": 0,
    "sim": 1,
    "env": 2,
    "policy": 3,
    "ppo": 3,
    "league": 3,
    "config": 3,
    "eval": 4,
    "diagnostics": 4,
    "render": 4,
    "export": 4,
    "distributed": 4,
    "distributed.config": 3,
    "cli_args": 4,
    "training": 4,
    "cli": 5,
}
"""Floor of each package (or top-level module) of rocketrl, by its name; 'rocketrl' is the package's __init__. A
dotted name (package.module) gives one module of a package a floor of its own."""

FLOOR_NAMES = {0: "infra", 1: "sim", 2: "env", 3: "learning", 4: "features", 5: "cli"}


def module_name(path: Path, root: Path = PACKAGE_ROOT) -> str:
    """rocketrl/env/obs.py -> 'rocketrl.env.obs'; rocketrl/env/__init__.py -> 'rocketrl.env'."""
    parts = (root.name, *path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_rocketrl(name: str) -> bool:
    return name == "rocketrl" or name.startswith("rocketrl.")


def imports_of(source: str, module: str, is_package: bool, known: Iterable[str]) -> set[str]:
    """The rocketrl modules that `source` (the text of `module`) imports, anywhere in the file.

    `from a import b` names the module a.b when that is a module of `known`, else a.
    """
    known = set(known)
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if _is_rocketrl(alias.name))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not _is_rocketrl(target):
                continue
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.add(submodule if submodule in known else target)
    found.discard(module)
    return found


def import_graph(root: Path = PACKAGE_ROOT) -> dict[str, set[str]]:
    """Every module of the package -> the rocketrl modules it imports."""
    paths = {module_name(path, root): path for path in sorted(root.rglob("*.py"))}
    return {
        module: imports_of(path.read_text(encoding="utf-8"), module, path.name == "__init__.py", paths)
        for module, path in paths.items()
    }


def group_of(module: str) -> str:
    """'rocketrl.env.obs' -> 'env'; 'rocketrl.config' -> 'config'; 'rocketrl' -> 'rocketrl';
    'rocketrl.distributed.config' -> 'distributed.config' (a module FLOORS names on its own)."""
    parts = module.split(".")
    if len(parts) > 2 and ".".join(parts[1:3]) in FLOORS:
        return ".".join(parts[1:3])
    return parts[1] if len(parts) > 1 else parts[0]


def floor_of(module: str) -> int:
    """The floor of a module; a module of no known package is an error naming it."""
    group = group_of(module)
    if group not in FLOORS:
        raise KeyError(f"{module}: {group!r} has no floor; add it to FLOORS in tests/test_layers.py")
    return FLOORS[group]


def file_of(module: str) -> str:
    """'rocketrl.env.obs' -> 'rocketrl/env/obs.py' (or .../__init__.py for a package)."""
    path = Path(*module.split("."))
    return f"{path}/__init__.py" if (PACKAGE_ROOT.parent / path).is_dir() else f"{path}.py"


def upward_imports(graph: Mapping[str, Iterable[str]]) -> list[str]:
    """One line per import of a higher floor: the importing file, the module imported, both floors."""
    problems = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            low, high = floor_of(module), floor_of(target)
            if high > low:
                problems.append(
                    f"{file_of(module)} imports {target}: floor {low} ({FLOOR_NAMES[low]}) imports "
                    f"floor {high} ({FLOOR_NAMES[high]})"
                )
    return problems


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """One cycle (first node repeated at the end) from every strongly connected part of more than one node."""
    nodes = sorted(set(graph) | {t for targets in graph.values() for t in targets})
    edges = {node: sorted(set(graph.get(node, ())) - {node}) for node in nodes}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges[node]:
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in nodes:
        if node not in index:
            connect(node)
    return [_cycle_within(component, edges) for component in components]


def _cycle_within(component: list[str], edges: Mapping[str, list[str]]) -> list[str]:
    """A path from the component's first node back to itself, inside the component (breadth first)."""
    members, start = set(component), component[0]
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in edges[node]:
                if target == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start] if node != start else [start, start]
                if target in members and target not in previous:
                    previous[target] = node
                    following.append(target)
        frontier = following
    raise AssertionError(f"no cycle through {start} in {component}")


def package_graph(graph: Mapping[str, Iterable[str]]) -> dict[str, set[str]]:
    """The module graph folded onto packages (and top-level modules)."""
    folded: dict[str, set[str]] = {}
    for module, targets in graph.items():
        folded.setdefault(group_of(module), set()).update(group_of(t) for t in targets)
    return folded


def layering_problems(graph: Mapping[str, Iterable[str]]) -> list[str]:
    """Upward imports, then cycles between packages, then cycles between modules; empty when all is well."""
    problems = upward_imports(graph)
    problems += ["package cycle: " + " -> ".join(cycle) for cycle in cycles(package_graph(graph))]
    problems += ["module cycle: " + " -> ".join(cycle) for cycle in cycles(graph)]
    return problems


def test_every_module_has_a_floor() -> None:
    graph = import_graph()
    assert "rocketrl.ppo.trainer" in graph and "rocketrl.cli" in graph
    for module, targets in graph.items():
        floor_of(module)
        for target in targets:
            floor_of(target)


def test_imports_point_down_without_cycles() -> None:
    problems = layering_problems(import_graph())
    assert not problems, "\n".join(problems)


def test_the_checker_reports_an_upward_import() -> None:
    graph = {"rocketrl.sim.arena": {"rocketrl.ppo.trainer"}, "rocketrl.ppo.trainer": set()}
    (problem,) = layering_problems(graph)
    assert problem == "rocketrl/sim/arena.py imports rocketrl.ppo.trainer: floor 1 (sim) imports floor 3 (learning)"


def test_the_checker_reports_cycles_within_a_floor() -> None:
    graph = {
        "rocketrl.league.league": {"rocketrl.ppo.trainer"},
        "rocketrl.ppo.trainer": {"rocketrl.ppo.update"},
        "rocketrl.ppo.update": {"rocketrl.league.league"},
    }
    problems = layering_problems(graph)
    assert problems == [
        "package cycle: league -> ppo -> league",
        "module cycle: rocketrl.league.league -> rocketrl.ppo.trainer -> rocketrl.ppo.update -> rocketrl.league.league",
    ]


def test_imports_are_read_from_functions_relative_forms_and_type_checking_blocks() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "from . import obs\n"
        "from ..sim import arena\n"
        "if TYPE_CHECKING:\n"
        "    from rocketrl.ppo.trainer import Trainer\n"
        "def f():\n"
        "    import rocketrl.league.replay\n"
        "    from rocketrl.policy.base import Policy\n"
        "import rocketrl_bot\n"
    )
    known = {"rocketrl.env.obs", "rocketrl.sim.arena", "rocketrl.policy.base"}
    assert imports_of(source, "rocketrl.env.batched", False, known) == {
        "rocketrl.env.obs",
        "rocketrl.sim.arena",
        "rocketrl.ppo.trainer",
        "rocketrl.league.replay",
        "rocketrl.policy.base",
    }
