"""The owner's side of the two-GPU reduce-scatter: wait (on the device) until every tile of its row block
has arrived from the peer GPU.

One warp polls ``flags[0 .. tiles)`` (lane ``l`` takes tiles ``l, l+32, …``) with the library's bounded
wait (:meth:`pipes.cute.comm.ReadyFlags.wait`, ``ld.acquire.sys``) until each equals the launch's value
(``epoch`` for the comm warps' flags; :func:`pipes.epoch.parity_token` of it for the copy engine's):
the peer released the flag at system scope after the tile, so the acquire makes the tile visible here.
The kernel then ends; the reduction that follows on the same stream (a torch add over the tiles) starts
after it, which orders its reads after the acquires. A flag that never arrives traps after
``timeout_ns`` with a message naming it, instead of hanging the GPU (the peer died, or the epochs of the
two ranks diverged).
"""

from __future__ import annotations

import functools
from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, Uint32

from pipes.cute.comm import AWAIT_TIMEOUT_NS, ReadyFlags

WARP = 32


class AwaitFlags:
    """``(flags, tiles, value, timeout_ns, stream)``: one warp waits for every flag to equal ``value``."""

    @cute.jit
    def __call__(self, flags: cute.Pointer, tiles: Int32, value: Int32, timeout_ns: Int64, stream: Any) -> None:
        self.kernel(flags, tiles, value, timeout_ns).launch(grid=(1, 1, 1), block=(WARP, 1, 1), stream=stream)

    @cute.kernel
    def kernel(self, flags: cute.Pointer, tiles: Int32, value: Int32, timeout_ns: Int64) -> None:
        lane = cute.arch.lane_idx()
        start = cute.arch.globaltimer()
        inbox = ReadyFlags(flags, "sys", "inbox")
        for t in cutlass.range(lane, tiles, WARP, unroll=1):
            inbox.wait(t, value, start, timeout_ns, exact=True)


def fake_args() -> tuple[Any, ...]:
    from cutlass.cute.runtime import make_fake_stream, make_ptr

    flags = make_ptr(Uint32, 1 << 20, cute.AddressSpace.gmem, assumed_align=4)
    return (flags, Int32(1), Int32(1), Int64(1), make_fake_stream())


@functools.cache
def compiled(options: str = "--gpu-arch sm_90a") -> Any:
    return cute.compile(AwaitFlags(), *fake_args(), options=options)


__all__ = ["AWAIT_TIMEOUT_NS", "AwaitFlags", "compiled"]
