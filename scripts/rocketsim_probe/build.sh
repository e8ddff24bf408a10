#!/usr/bin/env bash
# Builds the RocketSim probes (probe, gjk_probe) against RocketSim's C++ library at the commit pinned below, the
# physics the `rocketsim` Python package replays (checked: a probe replays the package's car to 0.0001 uu).
# Needs git, cmake and a C++20 compiler; takes a few minutes.
#     bash scripts/rocketsim_probe/build.sh [BUILD_DIR]   (default: scripts/rocketsim_probe/build)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/build}"
commit=972dc093058efa50e153f64381b68678ad78baee  # ZealanL/RocketSim, 2025-04-20
mkdir -p "$build"
if [ ! -d "$build/RocketSim" ]; then
    git clone -q https://github.com/ZealanL/RocketSim "$build/RocketSim"
fi
git -C "$build/RocketSim" checkout -q "$commit"
# GCC 12 rejects a reinterpret_cast inside a constexpr operator[]; the function is fine without constexpr.
grep -rl "constexpr float operator\[\]" "$build/RocketSim/src" | xargs -r sed -i 's/constexpr float operator\[\]/float operator[]/'
cmake -S "$build/RocketSim" -B "$build/lib" -DCMAKE_BUILD_TYPE=Release > "$build/cmake.log" 2>&1
cmake --build "$build/lib" -j "$(nproc)" > "$build/make.log" 2>&1
include=(-I"$build/RocketSim/src" -I"$build/RocketSim/libsrc/bullet3-3.24")
for tool in probe gjk_probe; do
    g++ -O2 -std=c++20 "${include[@]}" "$here/$tool.cpp" "$build/lib/libRocketSim.a" -o "$build/$tool"
done
echo "built $build/probe and $build/gjk_probe"
