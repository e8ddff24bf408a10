"""Where the warp engine's CPU step spends its time, Warp function by Warp function.

The step kernel (rocketrl.sim.warp.kernels) is built with DWARF line tables added to the engine's own compiler
flags (the same optimised code; a build of its own in Warp's kernel cache), stepped in the engine_throughput game
(full throttle, boost, a steady steer; 1 launch thread) under `perf record` (CPU-clock samples), and each
sample's address resolved through the object's line tables to the chain of functions inlined there. A function's
share is the share of the kernel's samples whose chain holds it (inclusive: callees count), so shares of nested
functions overlap. Functions the compiler kept out of line (those taking part in a call, as car_ball's solver)
count only their own samples there; `out_of_line` names them with the phase whose calls reach them (read from the
generated C++), and `phases` (tick.py's: car_tick_start, ball_and_meetings, car_tick_end, end_tick, ...) counts
them in it. `innermost` counts each sample in the innermost function (native ones too: wp.quat_rotate, ...),
`hot_statements` in the innermost Warp statement (function, Python line, source). Needs Linux `perf` (with
access to CPU-clock samples) and binutils (`objdump`, `addr2line`). Prints one JSON object.

    python benchmarks/warp_cpu_profile.py [--team-size 1] [--seconds 15] [--arenas 1024] [--top 40] [--out FILE]
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rocketrl.infra.bench_report import machine_info

LINE_TABLES = " -debug-info-kind=line-tables-only -dwarf-version=4"
"""Clang (cc1) flags that add line tables (and the inlining chain) without changing the optimised code."""
PHASES = ("begin_step", "car_tick_start", "ball_and_meetings", "car_tick_end", "end_tick", "end_step_car")
TOOLS = ("perf", "objdump", "addr2line")


def run_child(team: int, arenas: int, seconds: float, info: Path) -> None:
    """Build the line-table step kernel, step the game for `seconds`, write the kernel's address and object."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from engine_throughput import TICK_SKIP, _controls

    from rocketrl.sim.warp import kernels
    from rocketrl.sim.warp.engine import WarpEngine, init_warp

    init_warp()
    module = kernels.step_kernel.module
    module.options["cpu_compiler_flags"] = (
        str(module.options.get("cpu_compiler_flags") or "-march=native") + LINE_TABLES
    )
    engine = WarpEngine(arenas, team, team, tick_skip=TICK_SKIP, device="cpu", num_workers=1)
    engine.t["controls"].copy_(_controls(arenas, 2 * team))
    for _ in range(40):
        engine.step_raw()
    (module_exec,) = module.execs.values()
    forward = module_exec.get_kernel_hooks(kernels.step_kernel).forward
    address = ctypes.cast(forward, ctypes.c_void_p).value
    started, steps = time.perf_counter(), 0
    while time.perf_counter() - started < seconds:
        engine.step_raw()
        steps += 1
    rate = steps * arenas * TICK_SKIP / (time.perf_counter() - started)
    engine.close()
    info.write_text(json.dumps({"address": address, "object": module_exec.binary_path, "arena_ticks_per_s": rate}))


def symbol_offset(obj: str, name_part: str) -> tuple[int, str]:
    """Offset in its section of the one function symbol of `obj` whose name ends with name_part, and the section."""
    table = subprocess.run(["objdump", "-t", obj], capture_output=True, text=True, check=True).stdout
    rows = [row.split() for row in table.splitlines() if " F " in row and row.split()[-1].endswith(name_part)]
    if len(rows) != 1:
        raise SystemExit(f"expected one symbol ending {name_part!r} in {obj}, found {len(rows)}")
    return int(rows[0][0], 16), rows[0][3]


def inline_chains(obj: str, section: str, offsets: list[int]) -> list[list[tuple[str, str]]]:
    """Per offset, the C++ functions inlined there, innermost first, each with its source location (`addr2line
    -i`: after each address, a function's line and its file:line per level)."""
    query = "\n".join(hex(o) for o in offsets)
    command = ["addr2line", "-e", obj, "-j", section, "-i", "-f", "-a"]
    lines = subprocess.run(command, input=query, capture_output=True, text=True, check=True).stdout.splitlines()
    chains: list[list[tuple[str, str]]] = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("0x"):
            chains.append([])
            i += 1
        else:
            chains[-1].append((lines[i], lines[i + 1] if i + 1 < len(lines) else "??:0"))
            i += 2
    return chains


def python_lines(cpp: str) -> list[str]:
    """Per line of the generated C++ (index = line - 1), the Python statement it was generated from: the nearest
    `// statement <L n>` comment at or above it, as `L<n> statement`."""
    out, current = [], ""
    for line in cpp.splitlines():
        m = re.match(r"\s*// (.*?)\s+<L (\d+)>$", line)
        if m:
            current = f"L{m.group(2)} {m.group(1)}"
        out.append(current)
    return out


def call_graph(cpp: str) -> dict[str, set[str]]:
    """Warp function -> the Warp functions it calls, read from the module's generated C++ (forward code only)."""
    graph: dict[str, set[str]] = {}
    current = None
    for line in cpp.splitlines():
        head = re.match(r"static [^(]*?\b(\w+?)_\d+\($", line)
        if head:
            current = None if head.group(1).startswith("adj_") else head.group(1)
        elif "cpu_kernel_forward(" in line and not line.startswith(" "):
            current = "step_kernel"
        elif current:
            graph.setdefault(current, set()).update(re.findall(r"\b([a-z]\w*?)_\d+\(", line))
    return graph


def phase_of(graph: dict[str, set[str]], function: str) -> str:
    """The one phase (PHASES) whose calls reach `function`, or "several"."""
    found = []
    for phase in PHASES:
        seen, todo = set(), [phase]
        while todo:
            f = todo.pop()
            if f == function:
                found.append(phase)
                break
            if f not in seen:
                seen.add(f)
                todo.extend(graph.get(f, ()))
    return found[0] if len(found) == 1 else "several"


def warp_name(symbol: str) -> str:
    """A Warp function's name from its C++ function (`cast_wheels_0`, or mangled: `_ZL12solve_pair_0...`), the
    kernel's (`step_kernel_<hash>_cpu_...`), or a native function's (`quat_rotate<float>` -> `wp.quat_rotate`)."""
    mangled = re.match(r"_ZL(\d+)", symbol)
    if mangled:
        symbol = symbol[mangled.end() : mangled.end() + int(mangled.group(1))]
    if re.match(r"step_kernel_[0-9a-f]+_cpu_", symbol):
        return "step_kernel"
    plain = re.fullmatch(r"([A-Za-z_]\w*?)_\d+", symbol)
    if plain:
        return plain.group(1)
    return "wp." + symbol.split("<")[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--team-size", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=15.0, help="seconds of stepping sampled")
    parser.add_argument("--arenas", type=int, default=1024)
    parser.add_argument("--top", type=int, default=40, help="functions listed")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        run_child(args.team_size, args.arenas, args.seconds, args.child)
        return
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        raise SystemExit(f"warp_cpu_profile needs {', '.join(missing)}: install linux-perf and binutils")
    with tempfile.TemporaryDirectory() as tmp:
        info, data = Path(tmp) / "kernel.json", Path(tmp) / "perf.data"
        child = [sys.executable, __file__, "--child", str(info), "--team-size", str(args.team_size)]
        child += ["--seconds", str(args.seconds), "--arenas", str(args.arenas)]
        record = subprocess.run(
            ["perf", "record", "-q", "-e", "cpu-clock", "-F", "4000", "-o", str(data), "--", *child]
        )
        if record.returncode != 0 or not info.exists():
            raise SystemExit("perf record failed: is perf allowed to sample (kernel.perf_event_paranoid <= 1)?")
        kernel = json.loads(info.read_text())
        ips = subprocess.run(["perf", "script", "-i", str(data), "-F", "ip"], capture_output=True, text=True).stdout
    obj = kernel["object"]
    forward_offset, section = symbol_offset(obj, "_cpu_forward")
    base = kernel["address"] - forward_offset
    headers = subprocess.run(["objdump", "-h", obj], capture_output=True, text=True, check=True).stdout
    size = next(int(row.split()[2], 16) for row in headers.splitlines() if row.split()[1:2] == [section])
    counts = collections.Counter(int(ip, 16) - base for ip in ips.split())
    inside = {off: n for off, n in counts.items() if 0 <= off < size}
    total = sum(inside.values())
    if total == 0:
        raise SystemExit("no samples fell in the step kernel")
    offsets = sorted(inside)
    inclusive: collections.Counter[str] = collections.Counter()
    innermost: collections.Counter[str] = collections.Counter()
    out_of_line: collections.Counter[str] = collections.Counter()
    cpp = Path(obj).with_name(Path(obj).name.split(".cpu")[0] + ".cpp").read_text()
    statements = python_lines(cpp)
    hot: collections.Counter[str] = collections.Counter()
    for off, chain in zip(offsets, inline_chains(obj, section, offsets)):
        names = [warp_name(sym) for sym, _ in chain]
        for (_, where), name in zip(chain, names):
            path, _, line = where.rpartition(":")
            if path.endswith(".cpp") and line.isdigit():
                hot[f"{name} {statements[int(line) - 1]}"] += inside[off]
                break
        for name in set(names):
            inclusive[name] += inside[off]
        innermost[names[0]] += inside[off]
        if names[-1] != "step_kernel":
            out_of_line[names[-1]] += inside[off]

    graph = call_graph(cpp)
    phases: collections.Counter[str] = collections.Counter({p: inclusive[p] for p in PHASES})
    out_of_line_phase = {name: phase_of(graph, name) for name in out_of_line}
    for name, n in out_of_line.items():
        phases[out_of_line_phase[name]] += n

    def shares(counter: collections.Counter[str], top: int | None = None) -> dict[str, float]:
        return {name: round(n / total, 4) for name, n in counter.most_common(top)}

    report = {
        "machine": machine_info(),
        "team_size": args.team_size,
        "arenas": args.arenas,
        "seconds": args.seconds,
        "samples_in_kernel": total,
        "samples_elsewhere": sum(counts.values()) - total,
        "arena_ticks_per_s_while_sampled": round(kernel["arena_ticks_per_s"]),
        "phases": shares(phases),
        "out_of_line": {
            name: {"share": share, "phase": out_of_line_phase[name]} for name, share in shares(out_of_line).items()
        },
        "inclusive": shares(inclusive, args.top),
        "innermost": shares(innermost, args.top),
        "hot_statements": shares(hot, args.top),
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
