"""The documentation site builds in strict mode (no broken link, anchor or missing page), its configuration
reference is generated from the config dataclasses, and the README stays a short guide whose links resolve."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 400

pytest.importorskip("mkdocs", reason="the docs test needs MkDocs: pip install -e .[test] (or .[docs])")
pytest.importorskip("material", reason="the docs test needs mkdocs-material: pip install -e .[test] (or .[docs])")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "NO_MKDOCS_2_WARNING": "1",
    }
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}"
    return out


def built_page(site: Path, page: str) -> Path:
    """Where MkDocs writes a page of docs/: NAME.md -> NAME/index.html, a folder's index.md -> its index.html."""
    stem = page.removesuffix(".md")
    return site / (stem.removesuffix("index") if stem.endswith("index") else stem + "/") / "index.html"


def test_the_site_builds_strictly_with_every_page_of_the_nav(site) -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = re.findall(r":\s+(\S+\.md)\s*$", nav, flags=re.MULTILINE)
    assert len(pages) >= 20
    for page in pages:
        assert built_page(site, page).is_file(), f"{page} was not built"


def test_the_configuration_reference_names_every_field_of_every_section(site) -> None:
    from rocketrl.config import SECTIONS
    from rocketrl.env.rewards import REWARD_TERMS, RewardConfig

    html = (site / "guide" / "configuration" / "index.html").read_text()
    for cls in [*SECTIONS.values(), RewardConfig]:
        for name in cls.__dataclass_fields__:
            assert f"<code>{name}</code>" in html, f"{cls.__name__}.{name} is missing from the reference"
    for term in REWARD_TERMS:
        assert f"<code>{term}</code>" in html


def test_the_readme_is_a_short_guide() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; keep it to {README_MAX_LINES}"


def test_the_readme_links_resolve(site) -> None:
    text = (ROOT / "README.md").read_text()
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        assert (ROOT / path).is_file(), f"README links to {path}, which does not exist"
        if anchor and path.startswith("docs/") and path.endswith(".md"):
            html = built_page(site, path.removeprefix("docs/")).read_text()
            assert f'id="{anchor}"' in html, f"README links to {target}: no such anchor"


def test_the_pages_that_describe_the_shipped_bot_name_the_newest_gauntlet_version() -> None:
    """Shipping a bot (scripts/make_pretrained.py) makes it `pretrained`; the README, the RLBot guide and the results'
    shipped-bot card must say which one it is, or a user reads the figures of the bot before it."""
    from rocketrl.policy.load import gauntlet_versions

    newest = gauntlet_versions()[-1]
    readme = (ROOT / "README.md").read_text()
    assert f"It is `gauntlet_v{newest}`" in readme, f"README.md does not name the shipped bot, gauntlet_v{newest}"
    for page in ("docs/guide/rlbot.md", "docs/results/learning.md"):
        text = (ROOT / page).read_text()
        start = text.find("`--checkpoint pretrained` is the newest")
        assert start >= 0 and f"gauntlet/v{newest}.safetensors`" in text[start : start + 200], (
            f"{page} does not describe the shipped bot, rocketrl/pretrained/gauntlet/v{newest}.safetensors"
        )
