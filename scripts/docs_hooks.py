"""MkDocs hook (mkdocs.yml `hooks:`): writes the configuration reference from the config dataclasses.

A page whose Markdown holds the line `<!-- config-reference -->` gets, in its place, one table per section of a
training config (env, ppo, model, speed, run, league, ray) and one for the rewards file: every field with its type,
its default and the docstring written under it in the source, followed by the reward terms with their own
docstrings. It is built from the package in this tree at every `mkdocs build`, so the reference follows the code.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKER = "<!-- config-reference -->"


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _default(field: dataclasses.Field) -> str:
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return "required"
    if value is None:
        return "`null`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, dict):
        return "`{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}`" if value else "`{}`"
    return f"`{value}`"


def section_table(name: str, cls: type) -> str:
    """One section's Markdown: heading, the class docstring, and a table of its fields."""
    from rocketrl.ppo.train_config import describe_fields
    from rocketrl.typecheck import field_types, type_name

    docs, types = describe_fields(cls), field_types(cls)
    source = Path(inspect.getsourcefile(cls)).resolve().relative_to(ROOT).as_posix()
    lines = [
        f"## `{name}`",
        "",
        f"`{cls.__name__}` in `{source}`. {_cell(inspect.getdoc(cls) or '')}",
        "",
        "| field | type | default | meaning |",
        "|---|---|---|---|",
    ]
    for field in dataclasses.fields(cls):
        lines.append(
            f"| `{field.name}` | {_cell(type_name(types[field.name]))} | {_cell(_default(field))} "
            f"| {_cell(docs[field.name])} |"
        )
    return "\n".join(lines)


def reward_terms_table() -> str:
    """The reward terms a rewards file may weight, each with its function's docstring."""
    from rocketrl.env.rewards import REWARD_TERMS

    lines = [
        "## Reward terms",
        "",
        "The names `rewards.weights` and `rewards.weights_end` accept (`REWARD_TERMS` in `rocketrl/env/rewards.py`). "
        "Each term is unweighted, per car and step.",
        "",
        "| term | what it pays |",
        "|---|---|",
    ]
    for name, term in REWARD_TERMS.items():
        lines.append(f"| `{name}` | {_cell(inspect.getdoc(term) or '')} |")
    return "\n".join(lines)


def config_reference() -> str:
    """The whole generated reference, in file order of a training config, then the rewards file."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from rocketrl.env.rewards import RewardConfig
    from rocketrl.ppo.train_config import SECTIONS

    parts = [section_table(name, cls) for name, cls in SECTIONS.items()]
    parts.append(section_table("rewards", RewardConfig))
    parts.append(reward_terms_table())
    return "\n\n".join(parts) + "\n"


def on_page_markdown(markdown: str, page, config, files) -> str:
    """MkDocs event: put the generated reference where a page holds the marker."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, config_reference())
