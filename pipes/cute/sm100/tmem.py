"""The tensor-memory allocation handshake: one warp allocates, the accumulator's users read the address.

``tcgen05.alloc`` is executed by one whole warp and writes the allocated TMEM address into shared memory;
every warp that uses the accumulator (the MMA warp, the epilogue warps) must wait for that write before
reading it, and the memory is freed (``tcgen05.dealloc``, by the allocating warp) only after every user
is done. With ``cta_group::2`` the pair allocates and frees together (the stock allocator's dealloc
handshake, an mbarrier the two CTAs' allocating warps meet on). Use::

    tmem = TmemAllocation(columns=512, allocator="epi", users=("mma", "epi"), cluster=cluster)
    barriers = NamedBarrierAllocator(block_threads=192)
    alloc = tmem.make(layout, barriers, storage.tmem_addr.ptr, storage.tmem_dealloc.ptr)  # all threads
    if layout.is_role("epi"):
        alloc.allocate(tmem.columns)     # the allocating warp runs tcgen05.alloc (others skip it)
    alloc.wait_for_alloc()               # in every user warp: bar.sync over the users' threads
    acc_ptr = alloc.retrieve_ptr(cutlass.Float32)

The named barrier's thread count is derived from the role layout (every warp of every user role), so a
user warp that is added to the layout but not to ``users`` is a trace-time error, not a hang. The
allocation itself is ``cutlass.memory.TmemAllocator``: this object only derives and checks its inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import ProtocolError, SpecError
from ...spec import WARP_THREADS
from ..named_barriers import NamedBarrierAllocator
from ..roles import RoleLayout
from ..state import TraceStatic
from .cluster import UmmaCluster

__all__ = ["TMEM_COLUMNS", "TmemAllocation"]

#: Columns of tensor memory per SM (128 lanes × 512 columns of 32 bits).
TMEM_COLUMNS = 512


@dataclass(frozen=True)
class TmemAllocation(TraceStatic):
    """``columns`` of TMEM allocated by role ``allocator`` (one warp) for the roles in ``users``."""

    columns: int
    allocator: str
    users: tuple[str, ...]
    cluster: UmmaCluster = UmmaCluster()

    def __post_init__(self) -> None:
        c = self.columns
        if isinstance(c, bool) or not isinstance(c, int) or c < 32 or c > TMEM_COLUMNS or c & (c - 1):
            raise SpecError(
                f"TmemAllocation.columns = {c!r} is invalid: allowed a power of two in [32, {TMEM_COLUMNS}] "
                "(tcgen05.alloc's rule)"
            )
        users = tuple(self.users) if not isinstance(self.users, str) else (self.users,)
        object.__setattr__(self, "users", users)
        if not users or not all(isinstance(u, str) and u for u in users) or len(set(users)) != len(users):
            raise SpecError(f"TmemAllocation.users = {self.users!r} is invalid: allowed distinct role names")
        if self.allocator not in users:
            raise SpecError(
                f"TmemAllocation.allocator = {self.allocator!r} is invalid: allowed one of users {list(users)} "
                "(the allocating warp reads the address too, to free it)"
            )
        if not isinstance(self.cluster, UmmaCluster):
            raise SpecError(f"TmemAllocation.cluster = {self.cluster!r} is invalid: allowed a UmmaCluster")

    def threads(self, layout: RoleLayout) -> int:
        """Threads that meet on the retrieve barrier: every warp of every user role, counted once."""
        warps: set[int] = set()
        for role in self.users:
            span = layout.warps(role)
            warps.update(range(span.first, span.last + 1))
        return len(warps) * WARP_THREADS

    def allocator_warp(self, layout: RoleLayout) -> int:
        span = layout.warps(self.allocator)
        return span.first

    def make(
        self,
        layout: RoleLayout,
        barriers: NamedBarrierAllocator,
        address: Any,
        dealloc_barrier: Any = None,
        *,
        name: str = "tmem_alloc",
    ) -> Any:
        """A ``cutlass.memory.TmemAllocator`` over ``address`` (an Int32 smem word) and, with ``cta_group=2``,
        ``dealloc_barrier`` (an Int64 smem word for the pair's dealloc handshake). Call in every thread."""
        import cutlass.memory
        import cutlass.pipeline

        if self.cluster.pair and dealloc_barrier is None:
            raise ProtocolError(
                "TmemAllocation.make: with cta_group=2 the pair frees its TMEM together: pass dealloc_barrier= "
                "(an Int64 shared-memory word)"
            )
        threads = self.threads(layout)
        barrier = barriers.allocate(name, threads)
        return cutlass.memory.TmemAllocator(
            address,
            barrier_for_retrieve=cutlass.pipeline.NamedBarrier(barrier_id=barrier.barrier_id, num_threads=threads),
            allocator_warp_id=self.allocator_warp(layout),
            is_two_cta=self.cluster.pair,
            two_cta_tmem_dealloc_mbar_ptr=dealloc_barrier if self.cluster.pair else None,
        )
