"""The owner's side of the two-GPU reduce-scatter: wait (on the device) until every tile of its row block
has arrived from the peer GPU.

One warp polls ``flags[0 .. tiles)`` (lane ``l`` takes tiles ``l, l+32, …``) with ``ld.acquire.sys``
until each equals the launch's value (``epoch`` for the comm warps' flags; :func:`inbox_token` of it for
the copy engine's): the peer's communication warp wrote the tile, fenced at system
scope and released the flag (``st.release.sys``), so the acquire makes the tile visible here. The
kernel then ends; the reduction that follows on the same stream (a torch add over the tiles) starts
after it, which orders its reads after the acquires. A flag that never arrives traps after
``timeout_ns`` instead of hanging the GPU (the peer died, or the epochs of the two ranks diverged).
:func:`await_flag` is the one poll loop: the fused kernel's epilogue calls it too when it adds what
arrived itself (``CommConfig.adds_received``).
"""

from __future__ import annotations

import functools
from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, Uint32
from cutlass.experimental.primitives.nvvm_wrapper import nanosleep

from pipes.cute import trap

POLL_NS = 64


def inbox_token(epoch: Any) -> Any:
    """The value the copy engine raises a two-GPU inbox flag to in the launch of ``epoch``: 1 or 2 by the
    epoch's parity (a Python int or a DSL ``Int32``; the host's copy work, the owner's epilogue and the
    CPU model all call this). Two values suffice: the sender's next launch takes a credit the owner gives
    only after it saw this launch's flags, so an inbox flag holds this launch's token or the previous one's.
    A constant per parity lets the replayed copy graph raise each flag with a fenced
    ``cuStreamWriteValue32`` of a fixed value (two graphs, one per parity) instead of a 4-byte copy from
    an epoch word behind a memory barrier: 2.2 µs less copy-engine time per step (2×H200, 2026-11-24)."""
    return 1 + (epoch & 1)


#: A flag not raised after this long traps (the other rank died, or the two ranks' epochs diverged).
AWAIT_TIMEOUT_NS = 2_000_000_000
WARP = 32


class AwaitFlags:
    """``(flags, tiles, epoch, timeout_ns, stream)``: one warp waits for every flag to reach ``epoch``."""

    @cute.jit
    def __call__(self, flags: cute.Pointer, tiles: Int32, epoch: Int32, timeout_ns: Int64, stream: Any) -> None:
        self.kernel(flags, tiles, epoch, timeout_ns).launch(grid=(1, 1, 1), block=(WARP, 1, 1), stream=stream)

    @cute.kernel
    def kernel(self, flags: cute.Pointer, tiles: Int32, epoch: Int32, timeout_ns: Int64) -> None:
        lane = cute.arch.lane_idx()
        start = cute.arch.globaltimer()
        for t in cutlass.range(lane, tiles, WARP, unroll=1):
            await_flag(flags, t, epoch, start, timeout_ns, True)


@cute.jit
def await_flag(
    flags: cute.Pointer, index: Int32, epoch: Int32, start: Int64, timeout_ns: Int64, report: cutlass.Constexpr
) -> None:
    """Poll ``flags[index]`` with ``ld.acquire.sys`` (a short ``nanosleep`` between polls) until it equals
    ``epoch``; trap once ``%globaltimer`` passes ``start + timeout_ns``. The owner's wait on a flag another
    GPU (or its copy engine) raises: this kernel's, and the epilogue's with ``CommConfig.adds_received``.

    ``report``: print the flag before trapping. Never inside a kernel with wgmma: ``printf`` is a function
    call, and ptxas serializes every wgmma of a kernel that calls one (C7510; measured on 2×H200: the
    GEMM's mainloop 10 % slower)."""
    got = Int32(cute.arch.load(flags + index, Uint32, sem="acquire", scope="sys"))
    while got != epoch:
        if cute.arch.globaltimer() - start > timeout_ns:
            if cutlass.const_expr(report):
                cute.printf("await_flag: flag %d = %d != epoch %d after the timeout\n", index, got, epoch)
            trap()
        nanosleep(POLL_NS)
        got = Int32(cute.arch.load(flags + index, Uint32, sem="acquire", scope="sys"))


def fake_args() -> tuple[Any, ...]:
    from cutlass.cute.runtime import make_fake_stream, make_ptr

    flags = make_ptr(Uint32, 1 << 20, cute.AddressSpace.gmem, assumed_align=4)
    return (flags, Int32(1), Int32(1), Int64(1), make_fake_stream())


@functools.cache
def compiled(options: str = "--gpu-arch sm_90a") -> Any:
    return cute.compile(AwaitFlags(), *fake_args(), options=options)
