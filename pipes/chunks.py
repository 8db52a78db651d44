"""Which chunks of a gathered matrix a tile's rows need: the all-gather's arithmetic, in one place.

An all-gather GEMM on ``world`` ranks multiplies the *gathered* A — every rank's row block stacked in
rank order, ``rows`` rows in all — by this rank's B. Each rank holds its own block; the others arrive
while the GEMM runs, pushed in *chunks* of ``chunk_rows`` consecutive rows, each with a ready flag::

    rank 0's block  | chunk 0 | chunk 1 |        rows_per_rank = rows / world
    rank 1's block  | chunk 2 | chunk 3 |        chunks_per_rank = rows_per_rank / chunk_rows
                                                 chunk c is rows [c·chunk_rows, (c+1)·chunk_rows)

Before the GEMM's load warp TMA-loads the first k-tile of an output tile, it waits for the flags of the
chunks the tile's rows touch (:meth:`ChunkPlan.chunk_span`). The same function runs on Python ints (the
host's push plan, the CPU tests, :mod:`pipes.check`) and on CuTe DSL integers (the load warp's
:class:`pipes.cute.comm.ChunkGate`), so the three agree on which flag guards which rows by construction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .tile_order import ceil_div, minimum


def _count(owner: str, name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{owner}.{name} = {value!r} is invalid: allowed an int >= {low}")


@dataclass(frozen=True)
class ChunkPlan:
    """The gathered matrix's ``rows`` rows: ``world`` equal row blocks (rank ``r``'s first), each cut into
    chunks of ``chunk_rows`` rows. Chunks are numbered across the whole matrix."""

    rows: int
    world: int
    chunk_rows: int

    def __post_init__(self) -> None:
        _count("ChunkPlan", "rows", self.rows, 1)
        _count("ChunkPlan", "chunk_rows", self.chunk_rows, 1)
        if isinstance(self.world, bool) or not isinstance(self.world, int) or self.world < 2:
            raise ValueError(
                f"ChunkPlan.world = {self.world!r} is invalid: an all-gather needs at least two ranks "
                "(with one there is nothing to gather)"
            )
        block, left = divmod(self.rows, self.world)
        if left:
            raise ValueError(
                f"ChunkPlan.rows = {self.rows} does not split into {self.world} equal row blocks: "
                f"{self.rows} = {self.world} × {block} + {left}"
            )
        chunks, left = divmod(block, self.chunk_rows)
        if left:
            raise ValueError(
                f"ChunkPlan.chunk_rows = {self.chunk_rows} does not divide a rank's {block} rows "
                f"({self.rows} / {self.world}): {block} = {chunks} × {self.chunk_rows} + {left}"
            )

    # --- sizes ----------------------------------------------------------------------------------
    @property
    def rows_per_rank(self) -> int:
        return self.rows // self.world

    @property
    def chunks_per_rank(self) -> int:
        return self.rows_per_rank // self.chunk_rows

    @property
    def chunks(self) -> int:
        """Chunks (and ready flags) of the whole gathered matrix."""
        return self.world * self.chunks_per_rank

    # --- the arithmetic: Python ints and DSL integers alike -------------------------------------
    def chunk_span(self, row_begin: Any, row_end: Any) -> tuple[Any, Any]:
        """``(first, end)``: the chunks ``first … end − 1`` that rows ``[row_begin, row_end)`` touch.
        Rows past the matrix (a tile over its edge, which TMA fills with zeros) need no chunk: the span
        is clipped to :attr:`chunks` and is empty for a tile wholly outside."""
        first = row_begin // self.chunk_rows
        end = minimum(ceil_div(row_end, self.chunk_rows), self.chunks)
        return first, end

    def tile_span(self, tm: Any, tile_m: int) -> tuple[Any, Any]:
        """:meth:`chunk_span` of output tile row ``tm`` (rows ``[tm·tile_m, (tm+1)·tile_m)``)."""
        return self.chunk_span(tm * tile_m, tm * tile_m + tile_m)

    def own_rows_first(self, tm: Any, tile_m: int, rank: Any) -> Any:
        """The tile row a walk's ``tm``-th tile row maps to so that ``rank``'s own rows come first (then the
        next rank's, …, wrapping): its first waves need no chunk from elsewhere. Every role of the kernel
        maps its tile rows the same way (the walk changes, not where a tile lands)."""
        tiles_m = ceil_div(self.rows, tile_m)
        return (tm + rank * (self.rows_per_rank // tile_m)) % tiles_m

    def owner(self, chunk: Any) -> Any:
        """The rank whose row block holds ``chunk`` (the rank that pushes it)."""
        return chunk // self.chunks_per_rank

    # --- host side -------------------------------------------------------------------------------
    def max_span(self, tile_m: int) -> int:
        """The most chunks one ``tile_m``-row tile touches (the load warp's static bound per tile)."""
        _count("ChunkPlan.max_span", "tile_m", tile_m, 1)
        spans = []
        for tm in range(ceil_div(self.rows, tile_m)):
            first, end = self.tile_span(tm, tile_m)
            spans.append(end - first)
        return max(spans)

    def chunks_of(self, rank: int) -> range:
        """The chunks of ``rank``'s row block."""
        self.check_rank(rank)
        return range(rank * self.chunks_per_rank, (rank + 1) * self.chunks_per_rank)

    def pushes(self, rank: int) -> list[tuple[int, int]]:
        """``(chunk, peer)`` for every push of ``rank``'s chunks, in push order: peer by peer, the one that needs
        this block soonest first, and each peer's chunks first rows first. A receiver walks its own rows first,
        then the next rank's, and so on (:meth:`own_rows_first`): rank ``rank``'s block is the next one of
        rank ``rank − 1``, the one after that of ``rank − 2``, … — so, with every rank pushing this way, each
        receiver gets first, at the full rate of its link, the block it reads right after its own rows. The
        host queues them in this order (:func:`pipes.comm.push_plan`); the checker's model pushes in it too."""
        self.check_rank(rank)
        peers = [(rank - i) % self.world for i in range(1, self.world)]
        return [(chunk, peer) for peer in peers for chunk in self.chunks_of(rank)]

    def push_peers(self, rank: int) -> list[int]:
        """The peers of :meth:`pushes`, in its order (each once)."""
        return list(dict.fromkeys(peer for _, peer in self.pushes(rank)))

    def rows_of(self, chunk: int) -> range:
        """The rows of the gathered matrix that ``chunk`` holds."""
        if isinstance(chunk, bool) or not isinstance(chunk, int) or not 0 <= chunk < self.chunks:
            raise ValueError(f"chunk = {chunk!r} is invalid: allowed an int in [0, {self.chunks - 1}]")
        return range(chunk * self.chunk_rows, (chunk + 1) * self.chunk_rows)

    def check_rank(self, rank: Any) -> None:
        """``ValueError`` unless ``rank`` is one of the plan's ranks."""
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < self.world:
            raise ValueError(f"rank = {rank!r} is invalid: allowed an int in [0, {self.world - 1}]")


__all__ = ["ChunkPlan"]
