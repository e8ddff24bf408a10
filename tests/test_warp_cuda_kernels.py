"""benchmarks/warp_cuda_kernels.py reads each kernel's registers and stack frame from a CUDA build that Warp makes
without a GPU: two small kernels built for sm_90, one whose local array is indexed at run time (so it lives in
the thread's stack frame, 32 floats = 128 bytes at least) and one without any."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest
from benchmark_loader import load_benchmark

MODULE = textwrap.dedent(
    """
    import warp as wp

    Floats32 = wp.types.vector(length=32, dtype=wp.float32)


    @wp.kernel
    def indexed_local_array(out: wp.array(dtype=float), n: int):
        buf = Floats32()
        for i in range(n):
            buf[(i * 7) % 32] = buf[(i * 5) % 32] + float(i)
        out[wp.tid()] = buf[n % 32]


    @wp.kernel
    def no_local_array(a: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = a[i] * 2.0 + 1.0
    """
)


def test_registers_and_stack_frames_are_read_per_kernel_from_a_cuda_build(tmp_path: Path) -> None:
    wp = pytest.importorskip("warp")
    reader = load_benchmark("warp_cuda_kernels")
    source = tmp_path / "rocketrl_cuda_probe_kernels.py"
    source.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("rocketrl_cuda_probe_kernels", source)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        wp.init()
        try:
            paths = wp.compile_aot_module(module, arch=90, module_dir=tmp_path / "build", use_ptx=False)
        except Exception as error:  # a Warp build without NVRTC
            pytest.skip(f"Warp cannot build CUDA code here: {error}")
    finally:
        del sys.modules[spec.name]
    resources = reader.cubin_kernel_resources(Path(paths[0]).read_bytes())
    by_name = {reader.kernel_name(symbol): values for symbol, values in resources.items()}
    assert set(by_name) == {"indexed_local_array", "no_local_array"}
    for values in by_name.values():
        assert 0 < values["registers_per_thread"] <= 255
        assert values["code_bytes"] > 0
    assert by_name["no_local_array"]["stack_bytes_per_thread"] == 0
    assert by_name["indexed_local_array"]["stack_bytes_per_thread"] >= 32 * 4


def test_a_file_that_is_not_a_cubin_is_refused() -> None:
    with pytest.raises(ValueError, match="not a 64-bit ELF"):
        load_benchmark("warp_cuda_kernels").cubin_kernel_resources(b"PK\x03\x04 a zip file")
