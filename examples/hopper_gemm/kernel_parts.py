"""The plain containers the GEMM kernel passes between its roles: copy operands, shared memory and
registers as the roles see them, and where a CTA stands in the persistent walk."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple


class MathRegisters(NamedTuple):
    """One math thread's MMA slice, A/B fragments, fp32 accumulators, their (row, col) in the tile, and
    its index among the math threads."""

    thr_mma: Any
    a_frag: Any
    b_frag: Any
    acc: Any
    coords: Any
    math_tidx: Any


class Copies(NamedTuple):
    """The host-built tiled MMA, and the TMA atom and tensor of A, B (loads) and C (stores)."""

    tiled_mma: Any
    atom_a: Any
    tma_a: Any
    atom_b: Any
    tma_b: Any
    atom_c: Any
    tma_c: Any


class LoadSources(NamedTuple):
    """The load warp's TMA atom, partitioned tensors, multicast mask and L2 policy of A and of B."""

    atom_a: Any
    ga: Any
    sa: Any
    a_mask: Any
    atom_b: Any
    gb: Any
    sb: Any
    b_mask: Any
    a_policy: Any  # Int64 L2 cache policy of A's loads (pipes.cute.read_once_policy)
    b_policy: Any


class SmemLayouts(NamedTuple):
    """The swizzled smem layouts of the A/B rings and the staging buffers, and the staging memory as the
    TMA store sees it (``stored``: a mode's smaller pieces, else ``epi``)."""

    a: Any
    b: Any
    epi: Any
    stored: Any


@dataclass
class Shared:
    """This CTA's shared memory as the roles use it (``c_stored``: the staging as ``SmemLayouts.stored``)."""

    a: Any
    b: Any
    c: Any
    order: Any
    epilogue_barrier: Any
    c_stored: Any


@dataclass
class TileGrid:
    """Where this CTA stands in the persistent walk (run-time values shared by every role)."""

    clusters_m: Any
    clusters_n: Any
    cta_m: Any
    cta_n: Any
    cluster_id: Any
    clusters: Any
    cluster_tiles: Any
    k_tiles: Any
    whole_tiles: Any  # the cluster-tiles walked whole, first (all of them unless a mode splits some)
    plan: Any = None  # a mode's plan of the work after the whole tiles (None without one)


def rows_first(gate: Any, tile_m: int, tm: Any, gate_args: Any) -> Any:
    """Tile row ``tm`` of the walk as the tile row computed: with a ``gate``, this rank's own rows first
    (``ChunkPlan.own_rows_first``). Every role maps its rows through it (a plain call: a method call inside
    a run-time loop would make the DSL carry the object through it)."""
    if gate is None:
        return tm
    return gate.plan.own_rows_first(tm, tile_m, gate_args.rank)
