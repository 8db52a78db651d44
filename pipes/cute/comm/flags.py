"""Ready flags in global memory: publish a launch's epoch at a scope, count into a step, wait bounded.

Use (inside a ``@cute.jit`` function; the pointer is ``uint32`` words in global memory)::

    ready = ReadyFlags(flags_ptr, scope="sys", name="tiles")
    ...                                  # every lane of the warp stores its part of tile t
    ready.publish(t, epoch)              # whole warp: fence.acq_rel.sys, bar.warp.sync, lane 0 st.release.sys
    ready.wait(t, epoch)                 # one thread: ld.acquire.sys until reached(flag, epoch), else trap
    if ready.try_wait(t, epoch): ...     # one acquire load, no waiting

    steps = StepCounters(counters_ptr)
    steps.count(step)                    # whole warp: lane 0 red.release.sys.add 1 (a copy engine waits on it)

Why the publish is three instructions: each lane's stores are its own; ``fence.acq_rel.<scope>`` in every
lane orders them at the reader's scope, ``bar.warp.sync`` puts every lane's fence before lane 0's next
instruction, and lane 0's ``st.release`` then carries them all (release cumulativity). Without the fence
a reader may see the flag before the other lanes' data; the CPU model (``pipes.check``) shows the
interleaving.

Why epochs and not 0/1: :mod:`pipes.epoch`. A wait that never sees its value (the sender died, the two
sides' epochs diverged) traps after ``timeout_ns`` with a message naming the flag, its index, what it
holds and the value it waited for, instead of hanging the GPU. ``report=False`` drops the message:
``printf`` is a function call, and in a kernel that issues wgmma ptxas then serializes every wgmma
(warning C7510).
"""

from __future__ import annotations

from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, Uint32
from cutlass.experimental.primitives.nvvm_wrapper import nanosleep

from ...epoch import reached
from ..barriers import trap
from .scope import check_scope, fence

#: A flag not seen after this long traps (the sender died, or the two sides' epochs diverged).
AWAIT_TIMEOUT_NS = 2_000_000_000
#: ``nanosleep`` between polls of a flag.
POLL_NS = 64


class ReadyFlags:
    """``uint32`` flag words at ``flags`` (global memory), published and acquired at ``scope``.

    A view: it holds the pointer and static choices only, so it is free to build anywhere in a kernel.
    ``name`` appears in the timeout message.
    """

    def __init__(self, flags: cute.Pointer, scope: str = "sys", name: str = "flags") -> None:
        self.flags = flags
        self.scope = check_scope(scope, "ReadyFlags.scope")
        self.name = name

    # DSL protocol: a view used inside a dynamic loop or branch is rebuilt around the same pointer.
    def __extract_mlir_values__(self) -> list[Any]:
        return [self.flags]

    def __new_from_mlir_values__(self, values: list[Any]) -> ReadyFlags:
        return ReadyFlags(values[0], self.scope, self.name)

    @cute.jit
    def publish(self, index: Any, epoch: Any) -> None:
        """Release ``flags[index] = epoch`` after every lane's earlier writes (call from the whole warp)."""
        flag = self.flags + index  # the address first: fewer values live across the fence
        fence(self.scope)
        cute.arch.sync_warp()
        if cute.arch.lane_idx() == 0:
            cute.arch.store(flag, Uint32(epoch), sem="release", scope=self.scope)

    @cute.jit
    def load(self, index: Any) -> Int32:
        """``flags[index]`` with an acquire at the flags' scope."""
        return Int32(cute.arch.load(self.flags + index, Uint32, sem="acquire", scope=self.scope))

    @cute.jit
    def try_wait(self, index: Any, value: Any, exact: cutlass.Constexpr[bool] = False) -> Any:
        """One acquire load of ``flags[index]``: whether it has reached ``value`` (``exact``: equals it). On
        True the data released before the flag is visible to this thread, as after :meth:`wait`."""
        return _seen(self.load(index), Int32(value), exact)

    @cute.jit
    def wait(
        self,
        index: Any,
        value: Any,
        start: Any = None,
        timeout_ns: Any = AWAIT_TIMEOUT_NS,
        exact: cutlass.Constexpr[bool] = False,
        report: cutlass.Constexpr[bool] = True,
    ) -> None:
        """Poll ``flags[index]`` (acquire) until it has reached ``value`` (an epoch; ``exact``: until it
        equals ``value``, for a parity token), then return: the data released before it is visible to
        this thread. Traps once ``%globaltimer`` passes ``start + timeout_ns`` (``start``: default now;
        pass one start to give a batch of waits one deadline)."""
        if cutlass.const_expr(start is None):
            start = cute.arch.globaltimer()
        got = self.load(index)
        while not _seen(got, Int32(value), exact):
            if cute.arch.globaltimer() - start > Int64(timeout_ns):
                if cutlass.const_expr(report):
                    cute.printf(self._message(exact), Int32(index), got, Int32(value))
                trap()
            nanosleep(POLL_NS)
            got = self.load(index)

    def _message(self, exact: bool) -> str:
        want = "the token" if exact else "epoch"
        name = self.name.replace("{", "{{").replace("}", "}}")
        return f"pipes: flag wait timed out: {name}[{{}}] = {{}}, waited for {want} {{}} ({self.scope} scope)\n"


def _seen(got: Any, value: Any, exact: bool) -> Any:
    return got == value if exact else reached(got, value)


class StepCounters:
    """``uint32`` counters at ``counters`` (device memory) that a copy engine's stream waits on.

    Each comm warp adds 1 to a step's counter per finished tile with a system-scope release: the
    copy engine sits outside the GPU's threads, so its wait (``cuStreamWaitValue32``) synchronizes only
    with system-scope releases. The tile's data must be complete in global memory first (a
    store→notify pipeline's ``wait`` gives that).
    """

    def __init__(self, counters: cute.Pointer) -> None:
        self.counters = counters

    def __extract_mlir_values__(self) -> list[Any]:
        return [self.counters]

    def __new_from_mlir_values__(self, values: list[Any]) -> StepCounters:
        return StepCounters(values[0])

    @cute.jit
    def count(self, step: Any) -> None:
        """Add 1 to ``counters[step]`` with ``red.release.sys`` (call from the whole warp; lane 0 adds)."""
        if cute.arch.lane_idx() == 0:
            cute.arch.red(self.counters + step, Uint32(1), op="add", dtype=Uint32, sem="release", scope="sys")
        cute.arch.sync_warp()


__all__ = ["AWAIT_TIMEOUT_NS", "POLL_NS", "ReadyFlags", "StepCounters"]
