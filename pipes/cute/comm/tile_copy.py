"""The tile copy a comm warp does itself (``engine="sm"``): one output tile, 16-byte vectors per lane.

Each lane moves 16-byte vectors and keeps its column inside the tile, so the loop only adds a row
stride; ``unroll`` loads are in flight per lane before their stores (4 registers each: a comm warp
sharing a warpgroup under ``setmaxnreg 40`` fits 4). Loads are ``ld.global.cg`` (L2 only): the tile
was written by TMA stores, which go to L2, and an L1 line filled earlier from a neighbouring tile could
be stale. Rows and columns past the source's edge are never written (their loads read inside the tile).
``pace_ns`` adds a ``nanosleep`` after each unrolled step: measured on an H100, 132 warps pushing into
pinned host memory at full speed back PCIe writes up into the memory system and slow the GEMM beside
them; pacing spreads a tile's push over the next tile's mainloop.

The copy orders nothing: publish the tile afterwards (:meth:`pipes.cute.comm.ReadyFlags.publish`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Int64
from cutlass._mlir import ir
from cutlass.experimental.primitives.nvvm_wrapper import nanosleep

WARP = 32
#: 16-byte vectors: 8 bf16/fp16 values per lane per access.
VECTOR_BYTES = 16


@dataclass(frozen=True)
class TileCopy:
    """Copy ``tile_m × tile_n`` tiles of 2-byte elements with one warp.

    ``unroll``: 16-byte loads in flight per lane (must divide the tile's warp steps); ``pace_ns``: a
    ``nanosleep`` after each unrolled step (0: none).
    """

    tile_m: int
    tile_n: int
    unroll: int = 4
    pace_ns: int = 0
    element_bytes: int = 2

    def __post_init__(self) -> None:
        for name, low, high in (("unroll", 1, 8), ("pace_ns", 0, 1_000_000), ("tile_m", 1, 1024)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f"TileCopy.{name} = {value!r} is invalid: allowed an int in [{low}, {high}]")
        per_row, rows_per_step, steps = self.geometry
        if self.tile_m % rows_per_step:
            raise ValueError(f"TileCopy.tile_m = {self.tile_m} must be a multiple of {rows_per_step} rows per step")
        if steps % self.unroll:
            raise ValueError(f"TileCopy.unroll = {self.unroll} must divide the {steps} copy steps per tile")

    @property
    def vector(self) -> int:
        """Elements per 16-byte vector."""
        return VECTOR_BYTES // self.element_bytes

    @property
    def geometry(self) -> tuple[int, int, int]:
        """``(vectors per row, rows per warp step, steps per tile)``."""
        if self.tile_n % self.vector:
            raise ValueError(f"TileCopy.tile_n = {self.tile_n} must be a multiple of {self.vector} (16-byte vectors)")
        per_row = self.tile_n // self.vector
        if per_row > WARP or WARP % per_row:
            allowed = [self.vector * d for d in (1, 2, 4, 8, 16, 32)]
            raise ValueError(
                f"TileCopy.tile_n = {self.tile_n} is invalid: allowed {allowed} "
                "(a warp's 32 16-byte vectors must cover whole rows)"
            )
        rows_per_step = WARP // per_row
        return per_row, rows_per_step, self.tile_m // rows_per_step

    @cute.jit
    def copy(self, src: cute.Tensor, tm: Any, tn: Any, dst: cute.Pointer, dst_ld: Any = None) -> None:
        """Copy tile ``(tm, tn)`` of ``src`` (2-D, row-major) to ``dst``, the tile's first element, rows
        ``dst_ld`` elements apart (default ``tile_n``: a contiguous tile). Call from the whole warp."""
        per_row, rows_per_step, steps = self.geometry
        vec = ir.VectorType.get([4], Int32.mlir_type)
        ld = self.tile_n if cutlass.const_expr(dst_ld is None) else dst_ld
        lane = cute.arch.lane_idx()
        row0 = lane // per_row
        col = (lane % per_row) * self.vector
        rows = src.shape[0] - tm * self.tile_m  # rows of this tile inside src (the predicate caps at tile_m)
        cols = src.shape[1] - tn * self.tile_n
        col_ok = col < cols
        lds = Int64(src.stride[0])
        origin = src.iterator + (Int64(tm * self.tile_m) * lds + Int64(tn * self.tile_n))  # always inside src
        # Element offset of this lane's next row from the tile origin; columns past src read the last vector.
        offset = Int64(row0) * lds + Int64(cutlass.min(col, cols - self.vector))
        step_offset = Int64(rows_per_step) * lds
        out = dst + (Int64(row0) * ld + Int64(col))
        for step in cutlass.range(0, steps, self.unroll, unroll=1):
            values = []
            for u in cutlass.range_constexpr(self.unroll):
                # Rows past src's last row read the tile origin instead (never stored).
                inside = row0 + (step + u) * rows_per_step < rows
                values.append(cute.arch.load(origin + cutlass.select_(inside, offset, Int64(0)), vec, cop="cg"))
                offset = offset + step_offset
            for u in cutlass.range_constexpr(self.unroll):
                if col_ok & (row0 + (step + u) * rows_per_step < rows):
                    cute.arch.store(out + Int64((step + u) * rows_per_step) * ld, values[u])
            if cutlass.const_expr(self.pace_ns > 0):
                nanosleep(self.pace_ns)


__all__ = ["VECTOR_BYTES", "WARP", "TileCopy"]
