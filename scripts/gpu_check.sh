#!/usr/bin/env bash
# Every CUDA check in one go, on a machine with an NVIDIA GPU: tests/test_cuda.py, then the GPU rows of the
# benchmarks (the warp engine on CUDA up to 1,048,576 arenas, stepped as one kernel and as phase kernels replayed
# in a CUDA graph; end-to-end training on CUDA with RocketSim and with warp, and a profile of the operations of
# training at 65,536 warp arenas; the overlap of arena halves).
# Reports go to the folder given (default gpu_check/); a short summary is printed last. Run it from the
# repository root: bash scripts/gpu_check.sh [OUT_DIR]
set -u
out=${1:-gpu_check}
mkdir -p "$out"
py=${PYTHON:-python}
"$py" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device: torch.cuda.is_available() is False')" || exit 1
export PYTHONUNBUFFERED=1
status=0
run() {  # name, command...: the command's stdout into $out/name, its stderr into $out/name.err
    local name=$1
    shift
    echo "== $name"
    if ! "$@" >"$out/$name" 2>"$out/$name.err"; then
        echo "   failed: see $out/$name.err"
        status=1
    fi
}
run test_cuda.txt "$py" -m pytest -q -p no:cacheprovider tests/test_cuda.py
tail -1 "$out/test_cuda.txt"
run engine_throughput_cuda.json "$py" benchmarks/engine_throughput.py --device cuda --no-plane-only \
    --step-kinds whole,split_graph --arenas 4096,65536,262144,1048576
run train_throughput_cuda.json "$py" benchmarks/train_throughput.py --no-peer --threads none --iterations 2 \
    --warp-cuda-arenas 4096,16384,65536 --profile-learn "$out/learn_profile.txt"
run overlap_cuda.json "$py" benchmarks/overlap.py --device cuda --arenas 256 --rounds 3
"$py" - "$out" <<'PY'
import json, sys
from pathlib import Path

out = Path(sys.argv[1])
def load(name):
    try:
        return json.loads((out / name).read_text())
    except (OSError, ValueError):
        return None
engine = load("engine_throughput_cuda.json")
if engine:
    for team, rows in engine["warp"].items():
        for kind in sorted({row["step_kind"] for row in rows}):
            best = max((row for row in rows if row["step_kind"] == kind), key=lambda row: row["car_ticks_per_s"])
            print(f"warp on CUDA {team}, {kind}: {best['car_ticks_per_s']:.3g} car-ticks/s at {best['arenas']:,} arenas")
train = load("train_throughput_cuda.json")
if train:
    for label, row in train["ours"].items():
        print(f"training {label}: {row.get('sps') or row.get('error')} agent-steps/s")
overlap = load("overlap_cuda.json")
if overlap:
    print("overlap ratios:", overlap.get("ratios"))
PY
exit $status
