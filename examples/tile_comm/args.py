"""The communication warp's run-time arguments: one tuple of pointers and integers, the same for every transport.

Everything the receiver owns is data: where the tiles go (``dst``), where their ready flags go
(``flags``), the per-CTA start/end flags (``ctas``), the receiver's per-tile credits (``credits``, for
back-pressure from a slow receiver), an optional timestamp buffer (``stamps``), and the launch
``epoch`` every flag is set to. A ``peer`` transport passes other pointers, not other code.

Memory layouts (``tiles = tiles_m × tiles_n`` of the output, tile ``(tm, tn)`` has index ``tm·tiles_n + tn``):

* ``dst``: tile-major, each tile ``tile_m × tile_n`` row-major and contiguous (edge tiles padded; the
  padding is never written), so a receiver reads a tile as one block;
* ``flags[tile]`` (uint32) = the epoch of the launch that shipped the tile;
* ``ctas[2·cta]`` / ``ctas[2·cta + 1]`` (uint32) = epoch when the CTA's communication warp started / finished;
* ``credits[tile]`` (uint32), written by the receiver: the last epoch whose tile it has consumed. With
  :data:`OPT_CREDITS` the warp waits for ``credits[tile] ≥ epoch − 1`` before overwriting the tile;
* ``counters[step]`` (uint32, device memory; engine ``copy``): the communication warps add 1 per finished
  tile of the step (:meth:`pipes.tile_order.TileOrder.step`) with a system-scope release; the copy
  engine's stream waits for the step's tile count and ships the step (the launch resets the counters
  before its kernel);
* ``stamps`` (int64, with :data:`OPT_STAMPS`): ``%globaltimer`` nanoseconds, :data:`CTA_STAMPS` per CTA
  for the first :data:`MAX_TRACED_CTAS` CTAs, then :data:`TILE_STAMPS` per tile;
* ``inbox`` / ``inbox_flags`` (``CommConfig.adds_received`` only: the two-GPU reduce-scatter): *this*
  GPU's receive buffer, the other rank's partial of this rank's row block as rows of C, and its per-step
  ready flags, which the other GPU's copy engine raises. The math warpgroups wait for a step's flag and
  add its rows in the epilogue. Other transports pass ``dst`` / ``flags`` here (never read).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipes.epoch import as_int32

#: ``options`` bits.
OPT_STAMPS = 1
OPT_CREDITS = 2

CTA_STAMPS = 2  # start, end (ns)
MAX_TRACED_CTAS = 1024
#: Per tile: epilogue begins (MMA done), epilogue stores committed, push begins (wait returned), push ends
#: (flag published), CTA index, SM id.
TILE_STAMPS = 6
(EPI_BEGIN, EPI_END, PUSH_BEGIN, PUSH_END, TILE_CTA, TILE_SM) = range(TILE_STAMPS)

_FAKE_ADDRESS = 1 << 20  # any 16-byte-aligned address: compiling does not dereference it


def stamp_words(tiles_m: int, tiles_n: int) -> int:
    """Int64 words of the ``stamps`` buffer for a ``tiles_m × tiles_n`` output (one spare tile row: a
    2-CTA cluster may hang one tile row over C's edge, and the storing warp stamps it without knowing M)."""
    return MAX_TRACED_CTAS * CTA_STAMPS + (tiles_m + 1) * tiles_n * TILE_STAMPS


@dataclass(frozen=True)
class Addresses:
    """Device-visible addresses of the receiver's buffers (ints), as the host side gathers them."""

    dst: int
    flags: int
    ctas: int
    credits: int
    stamps: int
    counters: int
    inbox: int | None = None
    inbox_flags: int | None = None


def launch_options(*, credits: bool = False, stamps: bool = False) -> int:
    """The ``options`` bits of one launch."""
    return (OPT_CREDITS if credits else 0) | (OPT_STAMPS if stamps else 0)


def kernel_args(addresses: Addresses, out_dtype: str, epoch: int, delay_ns: int = 0, options: int = 0) -> tuple:
    """The tuple the compiled kernel takes after the stream: ``(dst, flags, ctas, credits, stamps, counters,
    epoch, delay_ns, options, inbox, inbox_flags)`` as CuTe pointers (global memory) and ``Int32`` values."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    element = {"bf16": cutlass.BFloat16, "fp16": cutlass.Float16}[out_dtype]
    gmem = cute.AddressSpace.gmem
    return (
        make_ptr(element, addresses.dst, gmem, assumed_align=16),
        make_ptr(cutlass.Uint32, addresses.flags, gmem, assumed_align=4),
        make_ptr(cutlass.Uint32, addresses.ctas, gmem, assumed_align=4),
        make_ptr(cutlass.Uint32, addresses.credits, gmem, assumed_align=4),
        make_ptr(cutlass.Int64, addresses.stamps, gmem, assumed_align=8),
        make_ptr(cutlass.Uint32, addresses.counters, gmem, assumed_align=4),
        cutlass.Int32(as_int32(epoch)),
        cutlass.Int32(delay_ns),
        cutlass.Int32(options),
        make_ptr(element, addresses.inbox or addresses.dst, gmem, assumed_align=16),
        make_ptr(cutlass.Uint32, addresses.inbox_flags or addresses.flags, gmem, assumed_align=4),
    )


def fake_kernel_args(out_dtype: str) -> tuple:
    """Arguments for compiling without a GPU (the addresses are never dereferenced)."""
    fake = Addresses(*(_FAKE_ADDRESS,) * 6)
    return kernel_args(fake, out_dtype, epoch=1)


@dataclass
class DeviceArgs:
    """The tuple of :func:`kernel_args` inside the kernel, by name."""

    dst: Any
    flags: Any
    ctas: Any
    credits: Any
    stamps: Any
    counters: Any
    epoch: Any
    delay_ns: Any
    options: Any
    inbox: Any
    inbox_flags: Any

    @classmethod
    def of(cls, packed: tuple) -> DeviceArgs:
        return cls(*packed)
