"""The house: every import points down a floor or stays on its own, and no modules import each other in a circle.

Floors, lowest first (docs/design.md draws them): the modules directly in bot/ (config, errors,
logs, metric, ...), used by all; bot/store/ (git and SQLite); bot/engine/ (the metric over the
index); bot/render/ (pure: Report in, text out); bot/digests/; bot/service/ (serve's machinery);
bot/faces/. Imports inside
functions and under TYPE_CHECKING count too: a lazy import is still an arrow.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BOT = Path(__file__).resolve().parents[1] / "bot"
FLOORS = ["", "store", "engine", "render", "digests", "service", "faces"]


def module_name(path: Path) -> str:
    parts = path.relative_to(BOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every bot module `path` imports (`from . import x` names module x when x is one)."""
    parts = path.relative_to(BOT.parent).with_suffix("").parts
    package = list(parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1] + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "bot":
                base = node.module.split(".")
            else:
                continue
            for alias in node.names:
                candidate = BOT.parent.joinpath(*base, alias.name)
                found.add(".".join([*base, alias.name]) if candidate.with_suffix(".py").exists() or candidate.is_dir()
                          else ".".join(base))
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "bot"}
    return found


def floor_of(module: str) -> int:
    parts = module.split(".")
    return FLOORS.index(parts[1]) if len(parts) > 2 and parts[1] in FLOORS else 0


MODULES = {module_name(p): p for p in sorted(BOT.rglob("*.py"))}
GRAPH = {name: {i for i in imports_of(path) if i != name} for name, path in MODULES.items()}


def test_the_floors_are_the_folders():
    assert {p.name for p in BOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()} == set(FLOORS) - {""}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_points_up(module):
    upward = sorted(i for i in GRAPH[module] if floor_of(i) > floor_of(module))
    assert upward == [], f"{module} imports a higher floor: {upward}; pass a function or a protocol down instead"


def test_no_modules_import_each_other_in_a_circle():
    packages = {name for name, path in MODULES.items() if path.name == "__init__.py"}
    graph = {name: {i for i in targets if i in MODULES and i not in packages} for name, targets in GRAPH.items()}
    state: dict[str, int] = {}
    circles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                circles.append(trail[trail.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert circles == []


def test_the_checker_sees_imports_of_every_form():
    """Known arrows of each form, so that an empty list above means no upward import, not a blind parser."""
    assert "bot.engine.engine" in GRAPH["bot.faces.slack"]  # from ..engine.engine import Engine
    assert "bot.store.graph" in GRAPH["bot.store.indexer"]  # from . import graph
    assert "bot.digests.blocks" in GRAPH["bot.digests.face"]  # from . import blocks as render
    assert "bot.store.mirrors.mirror" in GRAPH["bot.engine.tracking"]  # a lazy import inside a method
    assert [floor_of(m) for m in ("bot.errors", "bot.store.index", "bot.engine.query", "bot.render.text",
                                  "bot.digests.digest", "bot.service.syncs", "bot.faces.cli")] == [0, 1, 2, 3, 4, 5, 6]
