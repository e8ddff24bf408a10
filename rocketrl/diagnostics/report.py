"""Console tables of `rocketrl diagnose` results and of their comparison with an earlier result."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from rocketrl.infra.console import console_can_print_unicode


def console() -> Console:
    """A rich console that never wraps long lines; 120 columns wide when output goes to a file or pipe."""
    out = Console(soft_wrap=True, highlight=False)
    return out if out.is_terminal else Console(soft_wrap=True, highlight=False, width=120)


def _table(title: str, *columns: str) -> Table:
    style = box.SIMPLE_HEAD if console_can_print_unicode() else box.ASCII
    table = Table(title=title, title_justify="left", box=style)
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i == 0 else "right")
    return table


def _num(value: Any, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def _measure(value: float | None) -> str:
    """1234567 -> '1,234,567'; 0.01234 -> '0.01234'; None -> '-'."""
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def render_result(result: dict[str, Any], out: Console) -> None:
    """Print the system line, one table per test that ran, and the verdict."""
    s = result.get("system", {})
    rss = f", RSS {s['rss_mib']:,.0f} MiB" if "rss_mib" in s else ""
    out.print(
        f"[bold]machine[/]  {s.get('cpus')} CPU cores, torch {s.get('torch')} with {s.get('torch_threads')} threads"
        f"{rss} (peak {s.get('peak_rss_mib', 0):,.0f} MiB, "
        f"env workers' peak {s.get('children_peak_rss_mib', 0):,.0f} MiB)"
    )
    settings = result.get("settings", {})
    out.print(
        f"[bold]setup[/]    {settings.get('num_envs')} arenas {settings.get('team_size')}, "
        f"{settings.get('num_steps')} steps, device {settings.get('device')}"
    )
    if "env" in result:
        table = _table(
            "environment", "engine", "workers", "physics ticks/s", "env steps/s", "agent-steps/s", "physics share"
        )
        for name, row in result["env"].items():
            if "error" in row:
                table.add_row(name, "", "[red]failed[/]", "", "", "")
                continue
            table.add_row(
                name,
                str(row["workers"]),
                _num(row["physics_ticks_per_s"]),
                _num(row["env_steps_per_s"], 1),
                _num(row["agent_steps_per_s"]),
                f"{row['physics_share']:.0%}",
            )
        out.print(table)
        for row in result["env"].values():
            if "error" in row:
                out.print(f"[red]{row['error']}[/]")
    if "inference" in result:
        table = _table("inference (one sampling forward pass)", "device", "precision", "batch", "mean ms", "p50 ms")
        for column in ("p95 ms", "p99 ms", "inferences/s"):
            table.add_column(column, justify="right")
        for device, by_precision in result["inference"].items():
            for precision, rows in by_precision.items():
                for batch, row in rows.items():
                    table.add_row(
                        device,
                        precision,
                        batch,
                        *(f"{row[k]:.3f}" for k in ("mean_ms", "p50_ms", "p95_ms", "p99_ms")),
                        _num(row["inferences_per_s"]),
                    )
        out.print(table)
    if "train" in result:
        t = result["train"]
        table = _table(
            f"training ({t['updates_timed']} updates of {t['batch']:,} agent-steps, {t['device']}, "
            f"{t['agent_steps_per_s']:,.0f} agent-steps/s)",
            "stage",
            "seconds/update",
            "share",
        )
        for stage, seconds in t["seconds"].items():
            table.add_row(stage, f"{seconds:.3f}", f"{t['shares'][stage]:.0%}")
        out.print(table)
        if "gpu_util_percent" in t:
            out.print(f"GPU during training: {t['gpu_util_percent']:.0f}% busy, {t['gpu_memory_gib']:.2f} GiB used")
    if "gpu" in result:
        g = result["gpu"]
        if not g.get("available"):
            out.print(f"[bold]GPU[/]      no GPU: {g.get('reason')}")
        else:
            nvml = (
                f", {g['util_percent']:.0f}% busy, {g['memory_used_gib']:.2f} of {g['memory_total_gib']:.1f} GiB used"
                if "util_percent" in g
                else f" ({g.get('nvml_error')})"
            )
            out.print(
                f"[bold]GPU[/]      {g['name']}{nvml}, torch peak {g['torch_peak_allocated_gib']:.2f} GiB, "
                f"bf16 {'yes' if g.get('bf16_supported') else 'no'}"
            )
    message = result.get("verdict", {}).get("message")
    if message:
        out.print(f"[bold yellow]verdict[/]  {message}")
    for note in result.get("verdict", {}).get("notes", []):
        out.print(f"[yellow]note[/]     {note}")


def render_compare(rows: list[dict[str, Any]], out: Console, old_name: str) -> None:
    """Print the change of every numeric measure against the earlier result `old_name`."""
    table = _table(f"change against {old_name}", "measure", "old", "new", "change", "")
    colour = {"better": "green", "worse": "red"}
    only_old = sum(row["verdict"] == "gone" for row in rows)
    only_new = sum(row["verdict"] == "new" for row in rows)
    for row in rows:
        if row["verdict"] in ("new", "gone"):
            continue
        change = "-" if row["change"] is None else f"{row['change']:+.1%}"
        word = row["verdict"]
        table.add_row(
            row["key"],
            _measure(row["old"]),
            _measure(row["new"]),
            change,
            f"[{colour[word]}]{word}[/]" if word in colour else word,
        )
    out.print(table)
    if only_old or only_new:
        out.print(f"not compared: {only_old} measures only in {old_name}, {only_new} only in this result")
