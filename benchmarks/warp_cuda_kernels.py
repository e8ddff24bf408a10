"""What the warp engine's kernels ask of a GPU, read from their CUDA build: registers per thread, the stack frame
(local memory per thread: spilled registers, local arrays and structs copied for calls that were not inlined),
shared memory per block and machine-code size, for each kernel of the warp engine (rocketrl.sim.warp.kernels: the
one-kernel step; rocketrl.sim.warp.phase_kernels: the phase kernels of WarpEngine(split_step=True)).

Warp builds the module for an architecture ahead of time with its own compiler (NVRTC), so this needs no GPU:
it runs on any machine with warp-lang. On a GPU a thread's stack frame lives in device memory, so a kernel with
a frame of many KB per thread moves that much more memory per arena, and 255 registers per thread (the most a
thread can have) leave room for 256 threads per multiprocessor. Prints one JSON object; the build takes a few
minutes on a CPU. `--cache-dir DIR` keeps the build in Warp's kernel cache layout there, so a GPU machine
whose WARP_CACHE_PATH points at DIR loads it instead of building it (same warp-lang version and code).

    python benchmarks/warp_cuda_kernels.py [--arch 90] [--cache-dir DIR] [--block-dim 256]
"""

from __future__ import annotations

import argparse
import json
import struct
import tempfile
import time
from pathlib import Path

from rocketrl.infra.bench_report import machine_info

EIATTR_REGCOUNT = 0x2F
EIATTR_MIN_STACK_SIZE = 0x12
EIATTR_FORMAT_SVAL = 0x04


def cubin_kernel_resources(data: bytes) -> dict[str, dict[str, int]]:
    """Per kernel of a CUDA ELF (cubin): registers per thread, stack frame bytes per thread, static shared
    memory bytes per block and machine-code bytes, from its section headers and .nv.info attributes."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError("not a 64-bit ELF file (cubin)")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = sections[shstrndx][4]

    def c_string(at: int) -> str:
        return data[at : data.index(b"\0", at)].decode()

    names = [c_string(names_at + sec[0]) for sec in sections]
    symtab = sections[names.index(".symtab")]
    strtab_at = sections[symtab[6]][4]

    def symbol(index: int) -> str:
        return c_string(strtab_at + struct.unpack_from("<I", data, symtab[4] + index * symtab[9])[0])

    out: dict[str, dict[str, int]] = {}
    for name, sec in zip(names, sections):
        offset, size = sec[4], sec[5]
        if name.startswith(".text."):
            out.setdefault(name[6:], {})["code_bytes"] = size
        elif name.startswith(".nv.shared.") and not name.startswith(".nv.shared.reserved"):
            out.setdefault(name[11:], {})["shared_bytes_per_block"] = size
        elif name == ".nv.info":
            at = offset
            while at < offset + size:
                fmt, attr = data[at], data[at + 1]
                if fmt != EIATTR_FORMAT_SVAL:
                    at += 4
                    continue
                length = struct.unpack_from("<H", data, at + 2)[0]
                if attr in (EIATTR_REGCOUNT, EIATTR_MIN_STACK_SIZE):
                    index, value = struct.unpack_from("<II", data, at + 4)
                    key = "registers_per_thread" if attr == EIATTR_REGCOUNT else "stack_bytes_per_thread"
                    out.setdefault(symbol(index), {})[key] = value
                at += 4 + length
    return out


def kernel_name(symbol: str) -> str:
    """The kernel's Python name from its CUDA symbol (step_kernel_5132ae92_cuda_kernel_forward -> step_kernel)."""
    return symbol.split("_cuda_kernel_")[0].rsplit("_", 1)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", type=int, default=90, help="CUDA architecture (90: H100 and H200)")
    parser.add_argument("--cache-dir", help="keep the build here, in Warp's kernel cache layout")
    parser.add_argument("--block-dim", type=int, default=256, help="threads per block the module is built for")
    args = parser.parse_args()
    import warp as wp

    with tempfile.TemporaryDirectory(prefix="rocketrl-cuda-kernels-") as tmp:
        wp.config.kernel_cache_dir = args.cache_dir or tmp
        wp.config.quiet = True
        if hasattr(wp, "LOG_WARNING"):  # Warp versions that log by level
            wp.config.log_level = wp.LOG_WARNING
        wp.init()
        from rocketrl.sim.warp import kernels, phase_kernels

        by_kernel = {}
        started = time.perf_counter()
        for module in (kernels, phase_kernels):
            wp.set_module_options({"block_dim": args.block_dim}, module=module)
            paths = wp.compile_aot_module(module, arch=args.arch, use_ptx=False)
            for symbol, values in sorted(cubin_kernel_resources(Path(paths[0]).read_bytes()).items()):
                by_kernel[kernel_name(symbol)] = values
        build_s = time.perf_counter() - started
    print(
        json.dumps(
            {
                "machine": machine_info(),
                "warp": wp.config.version,
                "arch": f"sm_{args.arch}",
                "block_dim": args.block_dim,
                "build_s": round(build_s, 1),
                "kernels": by_kernel,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
