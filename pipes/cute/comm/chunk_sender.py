"""SM copies for the all-gather: a warp pushes this rank's chunks of A to a peer itself.

The copy engines are the default pusher (:class:`pipes.comm.ChunkPusher`); a warp can do the same job
with stores over NVLink — a spare warp of the GEMM, or a small kernel of its own. Per peer and launch
(inside ``@cute.jit``, the whole warp)::

    sender = ChunkSender(ChunkPlan(rows=m, world=2, chunk_rows=256), columns=k)
    Credits(peer_credits, "sys").wait(rank, epoch)        # the peer consumed the launch before
    for chunk in cutlass.range(first_own, first_own + plan.chunks_per_rank):
        sender.send(a_block, chunk, peer_a, ReadyFlags(peer_flags, "sys"), epoch)

``send`` is :class:`TileCopy` over the chunk's tiles (16-byte ``ld.global.cg`` / ``st.global`` per lane),
then :meth:`ReadyFlags.publish` of the chunk's flag at the flags' scope: every lane's
``fence.acq_rel.sys``, ``bar.warp.sync``, lane 0's ``st.release.sys`` — the chunk's bytes before its flag
for the peer's load warp, whose :class:`ChunkGate` acquires at system scope (a ``.gpu`` release would
order nothing for another GPU). Flags hold epochs here (``GateSpec(exact=False)``), and the credit word
holds the last epoch the peer consumed (it grants with ``pipes.comm.grant_credits(buffers, epoch)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Int64

from ...chunks import ChunkPlan
from ..state import TraceStatic
from .flags import ReadyFlags
from .tile_copy import TileCopy


@dataclass(frozen=True)
class ChunkSender(TraceStatic):
    """Pushes chunks of ``plan`` (rows of ``columns`` 2-byte elements) with one warp.

    ``copy``: the tile copy the chunk is cut into (default 128 rows × 128 columns, 4 loads in flight per
    lane, or the chunk's rows if fewer); its ``tile_m`` must divide ``plan.chunk_rows`` and its ``tile_n``
    ``columns``."""

    plan: ChunkPlan
    columns: int
    copy: TileCopy | None = None

    def __post_init__(self) -> None:
        if isinstance(self.columns, bool) or not isinstance(self.columns, int) or self.columns < 1:
            raise ValueError(f"ChunkSender.columns = {self.columns!r} is invalid: allowed an int >= 1")
        if self.copy is None:
            object.__setattr__(self, "copy", TileCopy(min(128, self.plan.chunk_rows), 128))
        tile = self.copy
        if self.plan.chunk_rows % tile.tile_m or self.columns % tile.tile_n:
            raise ValueError(
                f"ChunkSender: {tile.tile_m}×{tile.tile_n} tiles do not tile a chunk of {self.plan.chunk_rows} "
                f"rows × {self.columns} columns ({self.plan.chunk_rows} % {tile.tile_m} = "
                f"{self.plan.chunk_rows % tile.tile_m}, {self.columns} % {tile.tile_n} = {self.columns % tile.tile_n})"
            )

    @cute.jit
    def send(self, src: cute.Tensor, chunk: Any, dst: cute.Pointer, flags: ReadyFlags, epoch: Any) -> None:
        """Copy ``chunk`` (a chunk of this rank's block ``src``, ``rows_per_rank × columns`` row-major) into
        the same rows of ``dst`` (the peer's gathered A, ``columns`` elements per row), then publish its
        flag (``flags[chunk] = epoch``). The whole warp; after the peer's credit for this launch."""
        plan, tile = self.plan, self.copy
        rows_tiles = plan.chunk_rows // tile.tile_m
        first_own = plan.owner(chunk) * plan.chunks_per_rank
        for rt in cutlass.range(rows_tiles, unroll=1):
            tm = (chunk - first_own) * rows_tiles + rt
            row = Int64(chunk * plan.chunk_rows + rt * tile.tile_m)
            for tn in cutlass.range(self.columns // tile.tile_n, unroll=1):
                origin = dst + (row * Int64(self.columns) + Int64(tn * tile.tile_n))
                tile.copy(src, tm, tn, origin, dst_ld=self.columns)
        flags.publish(chunk, epoch)


__all__ = ["ChunkSender"]
