"""Device code of one tile in our GEMM's comm warp: the library's ship, plus the measurement stamps.

The copy, the flag publish, the credit wait and the step count are :mod:`pipes.cute.comm`
(:class:`~pipes.cute.comm.TileCopy`, :class:`~pipes.cute.comm.ReadyFlags`,
:class:`~pipes.cute.comm.Credits`, :class:`~pipes.cute.comm.StepCounters`); what is here is specific to
this example: the per-CTA start/end flags the host watches, the ``%globaltimer`` stamps of the
``--trace`` picture, and a deliberately slow comm warp (``delay_ns``) for the back-pressure tests.
Every function runs in the whole communication warp (32 lanes) and keeps few registers live: the warp
runs under ``setmaxnreg 40`` (it shares the producer warpgroup with the load warp).
"""

from __future__ import annotations

from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64
from cutlass.experimental.primitives.nvvm_wrapper import nanosleep

from pipes.cute.comm import Credits, ReadyFlags, StepCounters, TileCopy

from .args import (
    CTA_STAMPS,
    MAX_TRACED_CTAS,
    OPT_CREDITS,
    OPT_STAMPS,
    PUSH_BEGIN,
    PUSH_END,
    TILE_CTA,
    TILE_SM,
    TILE_STAMPS,
)

WARP = 32


@cute.jit
def sleep_ns(duration: Int32) -> None:
    """Spin ``duration`` ns on ``%globaltimer`` (nanosleep steps): a deliberately slow communication warp."""
    if duration > 0:
        start = cute.arch.globaltimer()
        while cute.arch.globaltimer() - start < Int64(duration):
            nanosleep(1000)


@cute.jit
def stamp(stamps: cute.Pointer, index: Any, value: Any) -> None:
    """Lane 0 writes ``stamps[index] = value`` (int64; plain store: read after the kernel)."""
    if cute.arch.lane_idx() == 0:
        cute.arch.store(stamps + Int64(index), Int64(value))


def cta_index() -> Any:
    """This CTA's linear index in the launch grid (x fastest)."""
    bx, by, bz = cute.arch.block_idx()
    gx, gy, _ = cute.arch.grid_dim()
    return (bz * gy + by) * gx + bx


# --- one tile, one CTA: what the fused kernel's comm warp and the comm-only kernel both do --------------
@cute.jit
def push_tile(
    c: cute.Tensor,
    args: Any,
    tm: Any,
    tn: Any,
    tiles_n: Any,
    cfg: cutlass.Constexpr,
    tile_m: cutlass.Constexpr,
    tile_n: cutlass.Constexpr,
) -> None:
    """Ship tile (tm, tn) of C (inside C) and publish its ready flag: the whole per-tile job."""
    tile = tm * tiles_n + tn
    tile_stamp(args, tile, PUSH_BEGIN)
    sleep_ns(args.delay_ns)
    if cutlass.const_expr(cfg.pushes):
        if (args.options & OPT_CREDITS) != 0:
            Credits(args.credits, cfg.scope).wait(tile, args.epoch)
        copy = TileCopy(tile_m, tile_n, cfg.unroll, cfg.pace_ns)
        copy.copy(c, tm, tn, args.dst + Int64(tile) * (tile_m * tile_n))
        ReadyFlags(args.flags, cfg.scope, "tiles").publish(tile, args.epoch)
    tile_stamp(args, tile, PUSH_END)


@cute.jit
def count_tile(args: Any, tile: Any, step: Any) -> None:
    """Engine ``copy``: count tile ``tile`` (complete in global memory) into ``counters[step]`` (whole warp)."""
    tile_stamp(args, tile, PUSH_BEGIN)
    sleep_ns(args.delay_ns)
    StepCounters(args.counters).count(step)
    tile_stamp(args, tile, PUSH_END)


@cute.jit
def tile_stamp(args: Any, tile: Any, which: cutlass.Constexpr) -> None:
    """Timestamp ``which`` of a tile (with OPT_STAMPS); the push end also records the CTA and the SM."""
    if (args.options & OPT_STAMPS) != 0:
        base = Int64(MAX_TRACED_CTAS * CTA_STAMPS) + Int64(tile) * TILE_STAMPS
        stamp(args.stamps, base + which, cute.arch.globaltimer())
        if cutlass.const_expr(which == PUSH_END):
            stamp(args.stamps, base + TILE_CTA, cta_index())
            stamp(args.stamps, base + TILE_SM, cute.arch.smid())


@cute.jit
def cta_event(args: Any, cfg: cutlass.Constexpr, which: cutlass.Constexpr) -> None:
    """The CTA's start (0) or end (1): its flag ``ctas[2·cta + which] = epoch`` and its timestamp."""
    cta = cta_index()
    if ((args.options & OPT_STAMPS) != 0) & (cta < MAX_TRACED_CTAS):
        stamp(args.stamps, cta * CTA_STAMPS + which, cute.arch.globaltimer())
    if cutlass.const_expr(cfg.moves_data):
        ReadyFlags(args.ctas, cfg.scope, "ctas").publish(2 * cta + which, args.epoch)
