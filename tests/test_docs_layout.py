"""The docs' layout page (docs/layout.md) names every module of the package and every benchmark, so it matches the
tree."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "rocketrl"


def layout_block() -> str:
    """The first fenced block of docs/layout.md."""
    text = (ROOT / "docs" / "layout.md").read_text()
    return text.split("```", 2)[1]


def entries() -> dict[str, str]:
    """Folder as written at a line's start ('rocketrl/sim/', 'benchmarks/', ...) -> the text describing it."""
    described: dict[str, str] = {}
    current = None
    for line in layout_block().splitlines():
        head = re.match(r"^(\S+/)(?:\s|$)", line) or re.match(r"^(rocketrl/)\S+\.py\s", line)
        if head:
            current = head.group(1)
            described[current] = described.get(current, "") + line[len(current) :] + "\n"
        elif current is not None:
            described[current] += line + "\n"
    return described


def modules(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.py") if p.name != "__init__.py")


def test_every_package_and_module_is_in_the_layout() -> None:
    described = entries()
    missing = []
    packages = [p for p in sorted(PACKAGE.rglob("*")) if p.is_dir() and (p / "__init__.py").exists()]
    for package in [PACKAGE, *packages]:
        key = package.relative_to(ROOT).as_posix() + "/"
        if package.parent.name == "export" and package.name == "runtime":
            key = "rocketrl/export/"  # described with its parent, file by file
        text = described.get(key)
        if text is None:
            missing.append(key)
            continue
        missing += [f"{key}{name}" for name in modules(package) if not re.search(rf"\b{re.escape(name)}\b", text)]
    text = described.get("benchmarks/", "")
    missing += [f"benchmarks/{name}" for name in modules(ROOT / "benchmarks") if name not in text]
    assert not missing, f"docs/layout.md does not name: {', '.join(missing)}"
