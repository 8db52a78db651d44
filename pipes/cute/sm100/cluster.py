"""The Blackwell MMA cluster: CTA shape, ``cta_group`` (1 or 2), and who signals whom.

A ``tcgen05.mma`` with ``cta_group::2`` spans a *CTA pair* (two CTAs adjacent along m, ranks 2i and
2i+1); only the pair's *leader* (the even rank) issues the MMAs and the commits, and the pair shares one
accumulator tile (each CTA holds half of it in its own tensor memory). With clusters larger than a pair,
TMA multicast shares the A tile along a cluster row (the ``cluster_n`` CTAs of one m) and the B tile
along a column (the ``cluster_m / cta_group`` MMA tiles of one n).

From that one shape this module derives every count and mask the sm100 pipelines use::

    cluster = UmmaCluster(cluster_m=2, cluster_n=1, cta_group=2)
    cluster.mma_peers     # 1: MMA issuers whose commits release each CTA's mainloop stage
    cluster.size          # 2 CTAs
    cluster.commit_mask(...)      # kernel: which CTAs one tcgen05.commit of this CTA arrives on

The ranks follow the cluster layout CuTe uses for Blackwell GEMMs (``tiled_divide`` of the
``(cluster_m, cluster_n)`` cluster by the pair): ``rank = v + cta_group × m' + cluster_m × n`` for the
CTA at position ``v`` of MMA tile row ``m'`` and column ``n``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Int32, Uint32

from ...errors import SpecError
from ..state import TraceStatic

__all__ = ["MAX_CLUSTER_CTAS", "UmmaCluster"]

#: The portable cluster size limit (16 with the non-portable opt-in; tcgen05.commit masks are 16 bits).
MAX_CLUSTER_CTAS = 16


@dataclass(frozen=True)
class UmmaCluster(TraceStatic):
    """A Blackwell GEMM's cluster: ``cluster_m × cluster_n`` CTAs, MMAs of ``cta_group`` CTAs each.

    ``multicast``: whether the mainloop's TMA loads multicast (A along a row, B along a column) when the
    cluster has more than one MMA tile in that direction. False keeps every load in its own CTA pair.
    """

    cluster_m: int = 1
    cluster_n: int = 1
    cta_group: int = 1
    multicast: bool = True

    def __post_init__(self) -> None:
        for name in ("cluster_m", "cluster_n"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_CLUSTER_CTAS:
                raise SpecError(f"UmmaCluster.{name} = {value!r} is invalid: allowed an int in [1, {MAX_CLUSTER_CTAS}]")
        if self.cta_group not in (1, 2) or isinstance(self.cta_group, bool):
            raise SpecError(
                f"UmmaCluster.cta_group = {self.cta_group!r} is invalid: allowed 1 (cta_group::1) or 2 (a CTA pair)"
            )
        if self.cluster_m % self.cta_group:
            raise SpecError(
                f"UmmaCluster.cluster_m = {self.cluster_m} is invalid with cta_group=2: allowed a multiple of 2 "
                "(a 2-CTA MMA spans two CTAs along m)"
            )
        if self.size > MAX_CLUSTER_CTAS:
            raise SpecError(
                f"UmmaCluster {self.cluster_m}×{self.cluster_n} = {self.size} CTAs is invalid: allowed at most "
                f"{MAX_CLUSTER_CTAS} (tcgen05.commit multicast masks have 16 bits)"
            )
        if not isinstance(self.multicast, bool):
            raise SpecError(f"UmmaCluster.multicast = {self.multicast!r} is invalid: allowed True or False")

    # --- static arithmetic --------------------------------------------------------------------------
    @property
    def size(self) -> int:
        """CTAs in the cluster."""
        return self.cluster_m * self.cluster_n

    @property
    def pair(self) -> bool:
        """Whether MMAs span a CTA pair (``cta_group::2``)."""
        return self.cta_group == 2

    @property
    def mma_tiles_m(self) -> int:
        """MMA tiles along m in the cluster: ``cluster_m / cta_group``."""
        return self.cluster_m // self.cta_group

    @property
    def a_sharers(self) -> int:
        """MMA tiles that share one A tile (multicast along the row): ``cluster_n`` (1 without multicast)."""
        return self.cluster_n if self.multicast else 1

    @property
    def b_sharers(self) -> int:
        """MMA tiles that share one B tile (multicast along the column): ``cluster_m / cta_group``."""
        return self.mma_tiles_m if self.multicast else 1

    @property
    def mma_peers(self) -> int:
        """Leaders whose ``tcgen05.commit`` arrives on each CTA's mainloop empty barrier per stage.

        A CTA's stage is written by the loads of every MMA tile that shares its A tile (``a_sharers``) or its
        B tile (``b_sharers``); its own MMA tile is in both sets: ``a_sharers + b_sharers − 1``.
        """
        return self.a_sharers + self.b_sharers - 1

    def describe(self) -> str:
        return (
            f"UmmaCluster({self.cluster_m}×{self.cluster_n}, cta_group={self.cta_group}"
            f"{'' if self.multicast else ', no multicast'})"
        )

    def static_commit_mask(self, rank: int) -> int:
        """Host-side: the CTAs (bit per rank) one commit issued by CTA ``rank``'s leader arrives on."""
        if not 0 <= rank < self.size:
            raise SpecError(f"{self.describe()}: rank = {rank!r} is invalid: allowed [0, {self.size - 1}]")
        m, n = rank % self.cluster_m, rank // self.cluster_m
        m_tile = m // self.cta_group
        return (self._row_pattern() << (self.cta_group * m_tile)) | (self._column_pattern() << (self.cluster_m * n))

    def _row_pattern(self) -> int:
        # The CTAs of MMA tile row 0 that share an A tile: both halves of each pair, every shared column.
        bits = 0
        for n in range(self.a_sharers):
            for v in range(self.cta_group):
                bits |= 1 << (v + self.cluster_m * n)
        return bits

    def _column_pattern(self) -> int:
        # The CTAs of column 0 that share a B tile: both halves of each pair, every shared MMA tile row.
        bits = 0
        for m_tile in range(self.b_sharers):
            for v in range(self.cta_group):
                bits |= 1 << (v + self.cta_group * m_tile)
        return bits

    # --- kernel code ------------------------------------------------------------------------------------
    def rank(self) -> Int32:
        """This CTA's rank in the cluster (warp-uniform)."""
        return cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())

    def is_leader(self) -> Any:
        """True in the CTA that issues its pair's MMAs (every CTA with ``cta_group=1``)."""
        if not self.pair:
            return cutlass.Boolean(True)
        return Uint32(self.rank()) % 2 == 0

    def leader_rank(self) -> Any:
        """The rank of this CTA's pair leader (itself with ``cta_group=1``)."""
        rank = Uint32(self.rank())
        return Int32(rank - rank % Uint32(self.cta_group))

    def commit_mask(self) -> Any:
        """The multicast mask of a commit issued in this CTA, or None when it signals only this CTA.

        Kernel code; the same bits as :meth:`static_commit_mask` for this CTA's rank.
        """
        if self.size == 1:
            return None
        rank = Uint32(self.rank())
        m = rank % Uint32(self.cluster_m)
        n = rank // Uint32(self.cluster_m)
        m_tile = m // Uint32(self.cta_group)
        row = Uint32(self._row_pattern()) << (Uint32(self.cta_group) * m_tile)
        column = Uint32(self._column_pattern()) << (Uint32(self.cluster_m) * n)
        return cutlass.Int16(row | column)

    def pair_mask(self) -> Any:
        """The mask of this CTA's pair (both CTAs), or None when a commit signals only this CTA."""
        if not self.pair:
            return None
        leader = Uint32(self.leader_rank())
        return cutlass.Int16(Uint32(3) << leader)

    def tcgen05_group(self) -> Any:
        """The ``cute.nvgpu.tcgen05.CtaGroup`` of this cluster's MMAs and commits."""
        from cutlass.cute.nvgpu import tcgen05

        return tcgen05.CtaGroup.TWO if self.pair else tcgen05.CtaGroup.ONE
