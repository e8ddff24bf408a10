"""Worker processes that each own an ArenaBlock, sharing the engine's buffers through shared memory.

RocketSim's Python readout holds the GIL, so threads in one process serialise on it; processes do
not. The main process writes controls into shared memory, sends each worker a one-word command over
a pipe, and waits for the replies. Sending (`send`) and waiting (`gather`) are separate so that the
caller can work while the workers step. A worker that dies or raises turns into a clear RuntimeError.

Workers die with their parent, however it dies (SIGKILL and the out-of-memory killer included), without
relying on the parent's cleanup: on Linux the kernel sends each worker SIGKILL when the parent goes
(`PR_SET_PDEATHSIG`); everywhere, a worker holds only its own end of its own pipe (the parent ends of the
other workers' pipes, inherited by fork, are closed), so the parent's death closes the pipe and the
worker's wait for its next command ends; and a worker whose parent process id changes stops.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import traceback
from multiprocessing.connection import Connection
from multiprocessing.shared_memory import SharedMemory

import numpy as np

from rocketrl.infra.proctree import die_with_parent
from rocketrl.sim.rocketsim_block import ArenaBlock


class SharedArray:
    """A numpy array in a named shared-memory segment; the creator unlinks it on close."""

    def __init__(self, shape: tuple[int, ...], name: str | None = None) -> None:
        nbytes = max(1, int(np.prod(shape)) * 4)
        self.owner = name is None
        self.shm = SharedMemory(name=name, create=self.owner, size=nbytes)
        self.array = np.ndarray(shape, dtype=np.float32, buffer=self.shm.buf)
        if self.owner:
            self.array.fill(0.0)

    def close(self) -> None:
        del self.array
        self.shm.close()
        if self.owner:
            self.shm.unlink()


PARENT_POLL_SECONDS = 1.0
"""How often a waiting worker checks that its parent is still the process that started it."""


def _wait_command(conn: Connection, parent_pid: int) -> tuple[str, object] | None:
    """The next command, or None when the parent is gone (pipe closed, or this process re-parented)."""
    while not conn.poll(PARENT_POLL_SECONDS):
        if os.getppid() != parent_pid:
            return None
    try:
        return conn.recv()
    except (EOFError, OSError):
        return None


def _worker_main(conn: Connection, spec: dict, inherited: list[Connection] | None = None) -> None:
    """Entry point of a worker process: build the block, then serve commands until 'close' or the
    parent's death. inherited: pipe ends of the parent's other workers that fork copied here (closed)."""
    die_with_parent(spec["parent_pid"])
    for other in inherited or ():
        other.close()
    arrays = {key: SharedArray(tuple(shape), name) for key, (name, shape) in spec["buffers"].items()}
    try:
        block = ArenaBlock(
            spec["lo"],
            spec["hi"],
            spec["blue_size"],
            spec["orange_size"],
            spec["seed"],
            arrays["state"].array,
            arrays["controls"].array,
            arrays["reset"].array,
        )
        conn.send(("ready", None))
    except Exception:  # report any start-up failure to the parent, then exit
        conn.send(("error", traceback.format_exc()))
        return
    mask = arrays["reset_mask"].array
    lo, hi = spec["lo"], spec["hi"]
    while True:
        message = _wait_command(conn, spec["parent_pid"])
        if message is None:
            break
        command, arg = message
        try:
            if command == "step":
                block.step(arg, use_multi_step=False)
            elif command == "step_raw":
                block.step_raw(arg)
            elif command == "reset":
                block.reset(mask[lo:hi] > 0.5)
            elif command == "kickoff":
                block.reset_kickoff_native(mask[lo:hi] > 0.5, arg)
            elif command == "close":
                conn.send(("ok", None))
                break
            conn.send(("ok", None))
        except Exception:
            conn.send(("error", traceback.format_exc()))
    for array in arrays.values():
        array.close()


def worker_start_method() -> str:
    """fork on Linux: quick to start, and it needs no `if __name__ == "__main__"` guard in user scripts. But not
    once this process has initialised CUDA: a forked child inherits a CUDA context it cannot use, and the first
    CUDA call in it (a CUDA tensor the child's garbage collector frees is enough) aborts the worker (seen on an
    H200: a model moved to the GPU before the env was built killed every worker at start). Then, and where
    there is no fork, spawn: a fresh interpreter that imports only this module's needs."""
    torch = sys.modules.get("torch")
    cuda_live = torch is not None and torch.cuda.is_initialized()
    return "fork" if "fork" in mp.get_all_start_methods() and not cuda_live else "spawn"


class WorkerPool:
    """One process per arena block; `state`, `controls`, `reset` and `reset_mask` are shared arrays."""

    def __init__(
        self,
        bounds: list[tuple[int, int]],
        blue_size: int,
        orange_size: int,
        seed: int,
        shapes: dict[str, tuple[int, ...]],
    ) -> None:
        self.buffers = {key: SharedArray(shape) for key, shape in shapes.items()}
        ctx = mp.get_context(worker_start_method())
        self.conns: list[Connection] = []
        self.procs: list[mp.process.BaseProcess] = []
        self.pending = False
        """True while a command was sent and its replies are not gathered yet."""
        spec_buffers = {key: (buf.shm.name, shape) for (key, buf), shape in zip(self.buffers.items(), shapes.values())}
        for lo, hi in bounds:
            parent, child = ctx.Pipe()
            spec = {
                "lo": lo,
                "hi": hi,
                "blue_size": blue_size,
                "orange_size": orange_size,
                "seed": seed,
                "buffers": spec_buffers,
                "parent_pid": os.getpid(),
            }
            # With fork the child inherits every pipe end this process holds, its own pipe's parent end
            # included; it closes them so that this process's death closes its pipe (spawn inherits none).
            inherited = [*self.conns, parent] if ctx.get_start_method() == "fork" else None
            proc = ctx.Process(target=_worker_main, args=(child, spec, inherited), daemon=True, name=f"rocketsim-{lo}")
            proc.start()
            child.close()
            self.conns.append(parent)
            self.procs.append(proc)
        self.pending = True
        self.gather()

    def array(self, key: str) -> np.ndarray:
        return self.buffers[key].array

    def command(self, command: str, arg: object = None) -> None:
        """Send a command to every worker and wait until all have done it."""
        self.send(command, arg)
        self.gather()

    def send(self, command: str, arg: object = None) -> None:
        """Send a command to every worker and return at once; `gather` waits for the replies."""
        if self.pending:
            raise RuntimeError(f"cannot send {command!r}: the previous command's replies were not gathered yet")
        for conn in self.conns:
            conn.send((command, arg))
        self.pending = True

    def gather(self) -> None:
        """Wait for every worker's reply to the command in flight; raise RuntimeError if one failed."""
        if not self.pending:
            raise RuntimeError("no command in flight to gather")
        self.pending = False
        errors = []
        for proc, conn in zip(self.procs, self.conns):
            try:
                status, detail = conn.recv()
            except (EOFError, ConnectionResetError):
                raise RuntimeError(
                    f"RocketSim worker {proc.name} died (exit code {proc.exitcode}); "
                    "try engine.stepping='threads' to see the error in this process"
                ) from None
            if status == "error":
                errors.append(f"{proc.name}:\n{detail}")
        if errors:
            raise RuntimeError("RocketSim worker failed:\n" + "\n".join(errors))

    def close(self) -> None:
        """Stop the workers (after the command in flight, if any, has finished) and free shared memory."""
        if self.pending:
            try:
                self.gather()
            except RuntimeError:
                pass
        for conn in self.conns:
            try:
                conn.send(("close", None))
                conn.recv()
            except (OSError, EOFError, BrokenPipeError):
                pass
        for proc in self.procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
        for buf in self.buffers.values():
            buf.close()
        self.buffers = {}
