"""No function or method of the package runs over MAX_LINES lines (decorators left out, docstring included):
a long one is split along its own phases into named helpers."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "rocketrl"
MAX_LINES = 100


def long_functions(root: Path = PACKAGE_ROOT, limit: int = MAX_LINES) -> list[str]:
    """'path:line name (N lines)' of every function in the .py files under `root` longer than `limit` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if length > limit:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_function_is_longer_than_the_limit() -> None:
    offenders = long_functions()
    assert not offenders, f"functions over {MAX_LINES} lines; split them into named helpers:\n" + "\n".join(offenders)


def test_the_check_finds_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"        x{i} = {i}" for i in range(100))
    (tmp_path / "long.py").write_text(f"def short():\n    pass\n\n\nclass A:\n    def long(self):\n{body}\n")
    assert long_functions(tmp_path) == [f"{tmp_path.name}/long.py:6 long (101 lines)"]
