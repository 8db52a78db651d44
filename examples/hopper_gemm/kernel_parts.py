"""The plain containers the GEMM kernel passes between its roles: host-built copy operands, shared
memory as the roles see it, and where a CTA stands in the persistent walk (no code of their own)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple


class SplitContext(NamedTuple):
    """What the math warpgroups' split work (stream-K's units, split-K's part) reads beside the handles it
    threads through: the copies (for the tiled MMA), the tile grid (stream-K: plain values of it), the
    epilogue terms' arguments, the math registers ``(acc, a_frag, b_frag, coords, math_tidx)``, shared
    memory and the ``(flags, partials)`` workspace."""

    copies: Any
    grid: Any
    args: Any
    regs: Any
    shared: Any
    workspace: Any


class Copies(NamedTuple):
    """The host-built operands of the copies and the MMA: the tiled MMA, and the TMA atom and tensor of
    A, B (loads) and C (stores)."""

    tiled_mma: Any
    atom_a: Any
    tma_a: Any
    atom_b: Any
    tma_b: Any
    atom_c: Any
    tma_c: Any


class LoadSources(NamedTuple):
    """The load warp's TMA atoms, partitioned global and shared tensors, multicast masks and L2 policies of A
    and B."""

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
    """The swizzled shared-memory layouts of the A and B rings and the epilogue staging buffers, and the
    staging memory as the TMA store sees it (the deferred epilogue's 16-row pieces; else ``epi``)."""

    a: Any
    b: Any
    epi: Any
    stored: Any


@dataclass
class Shared:
    """This CTA's shared memory as the roles use it: the A/B rings, the staging buffers, the ordered
    barrier's words, the epilogue's named barrier, the staging buffers as the TMA store sees them."""

    a: Any
    b: Any
    c: Any
    order: Any
    epilogue_barrier: Any
    c_stored: Any  # the staging memory as SmemLayouts.stored


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
    split: Any = None  # StreamKSplit with ``stream_k`` (None otherwise)
    first_split: Any = None  # with ``split_k``: SplitK.first_split, the whole waves' cluster-tiles

    def whole_tiles(self, config: Any) -> Any:
        """The cluster-tiles walked whole, first: stream-K's data-parallel ones, split-K's whole waves (none
        in one wave), else all."""
        if config.stream_k:
            return self.split.dp_tiles
        return self.first_split if config.split_k > 1 else self.cluster_tiles

    def split_tiles(self) -> Any:
        """With ``split_k``: the cluster-tiles split into parts, after the whole ones."""
        return self.cluster_tiles - self.first_split
