"""Device code of one shipped tile: copy it out, publish its ready flag, wait for the receiver's credit.

Every function runs in the whole communication warp (32 lanes) and keeps few registers live: the warp
runs under ``setmaxnreg 40`` (it shares the producer warpgroup with the load warp).

The copy (:func:`ship_tile`): each lane moves 16-byte vectors; a lane's column inside the tile is fixed,
so the loop only adds a row stride. Loads are ``ld.global.cg`` (L2 only): C was written by TMA stores
(the async proxy, to L2); an L1 line filled earlier from a neighbouring tile's columns could be stale.
Rows and columns past the edge of C are not written, and their loads read inside the tile instead.

The publish (:func:`publish`): every lane ``fence.acq_rel.<scope>`` (its own copy stores are ordered
before what follows, at the receiver's scope), ``bar.warp.sync`` (every lane's fence precedes lane 0's
next instruction), then lane 0 stores the flag with ``st.release.<scope>`` — a release pattern whose
cumulativity covers the other lanes' stores it has synchronized with. The receiver acquires the flag at
the same scope (a CPU load for ``host``: x86 does not reorder loads, so a plain load of the flag, then
of the data, is an acquire) and may then read the tile.

The count (:func:`count_tile`, engine ``copy``): lane 0 adds 1 to the tile's step counter with
``red.release.sys``. The tile's TMA stores are complete (the storing warp's ``wait_group`` before its
notify, which this warp acquired), so the release makes them visible before the count; the copy
engine's stream reads the count (``cuStreamWaitValue32``) and only then DMAs the step.
"""

from __future__ import annotations

from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64, Uint32
from cutlass._mlir import ir
from cutlass.experimental.primitives.nvvm_wrapper import nanosleep

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
from .config import VECTOR_ELEMENTS

WARP = 32
CREDIT_POLL_NS = 256


def _fence(scope: str) -> None:
    if scope == "sys":
        cute.arch.fence_acq_rel_sys()
    elif scope == "gpu":
        cute.arch.fence_acq_rel_gpu()
    else:
        raise ValueError(f"scope = {scope!r} is invalid: allowed 'sys' or 'gpu'")


def geometry(tile_m: int, tile_n: int) -> tuple[int, int, int]:
    """``(vectors per row, rows per warp step, steps per tile)`` of the copy (static)."""
    per_row = tile_n // VECTOR_ELEMENTS
    if per_row > WARP or WARP % per_row:
        raise ValueError(
            f"tile_n = {tile_n} is invalid with a communication warp: allowed 64, 128 or 256 "
            "(a warp's 32 16-byte vectors must cover whole rows)"
        )
    rows_per_step = WARP // per_row
    return per_row, rows_per_step, tile_m // rows_per_step


@cute.jit
def ship_tile(
    c: cute.Tensor,
    dst: cute.Pointer,
    tm: Int32,
    tn: Int32,
    tiles_n: Int32,
    tile_m: cutlass.Constexpr,
    tile_n: cutlass.Constexpr,
    unroll: cutlass.Constexpr,
    pace_ns: cutlass.Constexpr = 0,
) -> None:
    """Copy output tile ``(tm, tn)`` of ``c`` to its place in the tile-major ``dst`` (whole warp); with
    ``pace_ns`` each step of ``unroll`` vectors per lane is followed by a ``nanosleep``."""
    per_row, rows_per_step, steps = geometry(tile_m, tile_n)
    vec = ir.VectorType.get([4], Int32.mlir_type)
    lane = cute.arch.lane_idx()
    row0 = lane // per_row
    col = (lane % per_row) * VECTOR_ELEMENTS
    rows = c.shape[0] - tm * tile_m  # rows of this tile inside C (at least 1; the predicate caps at tile_m)
    cols = c.shape[1] - tn * tile_n
    col_ok = col < cols
    ldc = Int64(c.stride[0])
    origin = c.iterator + (Int64(tm * tile_m) * ldc + Int64(tn * tile_n))  # always inside C
    # Element offset of this lane's next row from the tile origin; columns past C read the last vector.
    offset = Int64(row0) * ldc + Int64(cutlass.min(col, cols - VECTOR_ELEMENTS))
    step_offset = Int64(rows_per_step) * ldc
    out = dst + (Int64(tm * tiles_n + tn) * (tile_m * tile_n) + Int64(row0 * tile_n + col))
    for step in cutlass.range(0, steps, unroll, unroll=1):
        values = []
        for u in cutlass.range_constexpr(unroll):
            # Rows past C's last row read the tile origin instead (never stored).
            inside = row0 + (step + u) * rows_per_step < rows
            values.append(cute.arch.load(origin + cutlass.select_(inside, offset, Int64(0)), vec, cop="cg"))
            offset = offset + step_offset
        for u in cutlass.range_constexpr(unroll):
            if col_ok & (row0 + (step + u) * rows_per_step < rows):
                cute.arch.store(out + Int64((step + u) * rows_per_step * tile_n), values[u])
        if cutlass.const_expr(pace_ns > 0):
            nanosleep(pace_ns)


@cute.jit
def publish(flag: cute.Pointer, epoch: Int32, scope: cutlass.Constexpr) -> None:
    """Release ``flag = epoch`` at ``scope`` after every lane's earlier stores (whole warp)."""
    _fence(scope)
    cute.arch.sync_warp()
    if cute.arch.lane_idx() == 0:
        cute.arch.store(flag, Uint32(epoch), sem="release", scope=scope)


@cute.jit
def wait_credit(credit: cute.Pointer, epoch: Int32, scope: cutlass.Constexpr) -> None:
    """Wait until the receiver consumed this tile of launch ``epoch - 1`` (``credit ≥ epoch − 1``, wrapping).

    Every lane polls (one load per warp instruction); the acquire orders each lane's later stores after
    the receiver's reads of the previous contents."""
    want = epoch - 1
    got = Int32(cute.arch.load(credit, Uint32, sem="acquire", scope=scope))
    while got - want < 0:
        nanosleep(CREDIT_POLL_NS)
        got = Int32(cute.arch.load(credit, Uint32, sem="acquire", scope=scope))


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
            wait_credit(args.credits + tile, args.epoch, cfg.scope)
        ship_tile(c, args.dst, tm, tn, tiles_n, tile_m, tile_n, cfg.unroll, cfg.pace_ns)
        publish(args.flags + tile, args.epoch, cfg.scope)
    tile_stamp(args, tile, PUSH_END)


@cute.jit
def count_tile(args: Any, tile: Any, step: Any) -> None:
    """Engine ``copy``: count tile ``tile`` (complete in global memory) into ``counters[step]`` (whole warp)."""
    tile_stamp(args, tile, PUSH_BEGIN)
    sleep_ns(args.delay_ns)
    if cute.arch.lane_idx() == 0:
        cute.arch.atomic_add(args.counters + step, Uint32(1), sem="release", scope="sys")
    cute.arch.sync_warp()
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
        publish(args.ctas + (2 * cta + which), args.epoch, cfg.scope)
