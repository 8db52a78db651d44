"""mbarrier rings in shared memory: init, wait (plain or debug-bounded), arrive, transaction bytes.

Use::

    from pipes.cute.barriers import MbarrierRing, WaitSite, arrive_as_unit

    full = MbarrierRing(base_ptr, stages)          # base_ptr: cute.Pointer to `stages` Int64 in smem
    full.init(arrivals)                            # ONE thread (pipes.cute.storage.init does this for you)
    full.wait(index, phase)                        # blocks until that phase of full[index] completed
    full.wait(index, phase, site=WaitSite("load", "mma", "wait"), debug=cfg)  # bounded, reports, traps
    ok = full.try_wait(index, phase)               # Boolean, non-blocking poll (a "token")
    full.arrive(index)                             # this thread arrives (release, CTA scope)
    full.arrive(index, peer=rank)                  # on the same barrier of cluster CTA `rank`
    full.arrive_expect_tx(index, nbytes)           # arm with transaction bytes (call from one thread)
    arrive_as_unit(empty, index, ArrivalUnit.ELECTED_PER_WARP)  # the arrival a role's unit makes

A ring is a view (pointer + stage count); it holds no state of its own, so it is free to capture in
any loop or branch. The pipelines in pipes.cute are built from two rings each (full, empty).
:func:`bounded_wait` is the debug-mode wait (see :mod:`pipes.cute.debug`); :func:`trap` aborts the
kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Boolean, Int32, Int64
from cutlass._mlir.dialects import llvm, nvvm

from ..spec import ArrivalUnit
from .debug import DebugConfig

__all__ = [
    "MbarrierRing",
    "WaitSite",
    "arrive_as_unit",
    "bounded_wait",
    "trap",
    "wait_parity",
    "warp_uniform_index",
]

#: Bytes one mbarrier occupies in shared memory.
MBARRIER_BYTES = 8


@dataclass(frozen=True)
class WaitSite:
    """Who waits where: printed by a debug-mode wait that timed out."""

    pipeline: str
    role: str
    op: str

    def message(self) -> str:
        # cute.printf uses {} placeholders: escape braces a user might put in a name.
        def esc(text: str) -> str:
            return text.replace("{", "{{").replace("}", "}}")

        return (
            f"pipes: wait timed out: pipeline={esc(self.pipeline)} role={esc(self.role)} op={esc(self.op)} "
            "slot={} phase={} block={} thread={}"
        )


def trap() -> None:
    """Abort the kernel (PTX ``trap``): the launch fails with an illegal-instruction error."""
    llvm.inline_asm(None, [], "trap;", "~{memory}", has_side_effects=True, asm_dialect=llvm.AsmDialect.AD_ATT)


@cute.jit
def wait_parity(barrier: cute.Pointer, phase: Int32) -> None:
    """Wait for ``phase`` of an mbarrier: ``mbarrier.try_wait.parity`` retried, no suspend-time hint.

    ``cute.arch.mbarrier_wait`` passes a 10 ms suspend-time hint; ptxas then follows a failed first
    try with ``NANOSLEEP.SYNCS``, whose wake-up cost 15-40 ns per hand-off on the H100 (benchmarks/
    RESULTS.md, "Hand-off round trip"). Without the hint (the CUTLASS C++ ``ClusterBarrier::wait``
    form) a failed try is simply retried; ``try_wait`` itself blocks in hardware for a while, so this
    is not a hot spin.
    """
    done = cute.arch.mbarrier_try_wait(barrier, phase)
    while not done:
        done = cute.arch.mbarrier_try_wait(barrier, phase)


@cute.jit
def _spin_until(ptr: cute.Pointer, phase: Int32, timeout_ns: cutlass.Constexpr[int]) -> Boolean:
    done = cute.arch.mbarrier_try_wait(ptr, phase)
    if not done:
        start = cute.arch.globaltimer()
        expired = Boolean(False)
        while not done and not expired:
            done = cute.arch.mbarrier_try_wait(ptr, phase)
            expired = cute.arch.globaltimer() - start > Int64(timeout_ns)
    return done


@cute.jit
def bounded_wait(ptr: cute.Pointer, phase: Any, slot: Any, debug: cutlass.Constexpr, site: cutlass.Constexpr) -> None:
    """Wait for ``phase`` of the barrier at ``ptr`` for at most ``debug.timeout_ns``; then report and trap."""
    done = _spin_until(ptr, Int32(phase), debug.timeout_ns)
    if not done:
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        cute.printf(site.message(), Int32(slot), Int32(phase), bidx, tidx)
        trap()


class MbarrierRing:
    """``stages`` mbarriers at consecutive 8-byte words of shared memory, starting at ``base``."""

    def __init__(self, base: cute.Pointer, stages: int) -> None:
        if isinstance(stages, bool) or not isinstance(stages, int) or stages < 1:
            raise ValueError(f"MbarrierRing.stages = {stages!r} is invalid: allowed an int >= 1")
        self.base = base
        self.stages = stages

    @property
    def smem_bytes(self) -> int:
        return self.stages * MBARRIER_BYTES

    # DSL protocol: a ring used inside a dynamic branch or loop is rebuilt around the same pointer.
    def __extract_mlir_values__(self) -> list[Any]:
        return [self.base]

    def __new_from_mlir_values__(self, values: list[Any]) -> MbarrierRing:
        return MbarrierRing(values[0], self.stages)

    def ptr(self, index: Any) -> cute.Pointer:
        return self.base + index

    def init(self, arrivals: int) -> None:
        """Initialize every barrier for ``arrivals`` arrivals per phase. Execute in ONE thread."""
        for index in range(self.stages):
            cute.arch.mbarrier_init(self.ptr(index), arrivals)

    def wait(
        self,
        index: Any,
        phase: Any,
        *,
        site: WaitSite | None = None,
        debug: DebugConfig | None = None,
        suspend: bool = False,
    ) -> None:
        """Block until phase ``phase`` of barrier ``index`` has completed (parity wait).

        ``suspend``: a failed try suspends the thread (``try_wait`` with a suspend-time hint) instead
        of retrying at once — better where the wait is long (a TMA store's round trip to global
        memory), worse for short hand-offs (benchmarks/RESULTS.md).
        """
        if debug is None and suspend:
            cute.arch.mbarrier_wait(self.ptr(index), phase)
        elif debug is None:
            wait_parity(self.ptr(index), Int32(phase))
        else:
            bounded_wait(self.ptr(index), phase, index, debug, site or WaitSite("?", "?", "wait"))

    def try_wait(self, index: Any, phase: Any) -> Boolean:
        """Poll: true when phase ``phase`` of barrier ``index`` has completed (may suspend briefly)."""
        return cute.arch.mbarrier_try_wait(self.ptr(index), phase)

    def test_wait(self, index: Any, phase: Any) -> Boolean:
        """Poll without suspending."""
        return cute.arch.mbarrier_test_wait(self.ptr(index), phase)

    def arrive(self, index: Any, *, peer: Any = None, cluster_scope: bool = False) -> None:
        """This thread arrives (release semantics) on barrier ``index`` of this CTA or of CTA ``peer``."""
        scope = nvvm.MemScopeKind.CLUSTER if cluster_scope else None
        cute.arch.mbarrier_arrive(self.ptr(index), peer, scope=scope)

    def arrive_expect_tx(self, index: Any, tx_bytes: Any, *, peer: Any = None) -> None:
        """Arrive and add ``tx_bytes`` expected transaction bytes (one thread per arrival)."""
        cute.arch.mbarrier_arrive_and_expect_tx(self.ptr(index), tx_bytes, peer)

    def expect_tx(self, index: Any, tx_bytes: Any) -> None:
        """Add ``tx_bytes`` expected transaction bytes without arriving."""
        cute.arch.mbarrier_expect_tx(self.ptr(index), tx_bytes)


def warp_uniform_index() -> Int32:
    """This thread's warp index, warp-uniform (``cute.arch.warp_idx`` marks it so)."""
    return cute.arch.warp_idx()


def arrive_as_unit(ring: MbarrierRing, index: Any, unit: ArrivalUnit, *, peer: Any = None) -> None:
    """Make the arrival one executing thread owes for a role of arrival unit ``unit``.

    THREAD / WARP / WARPGROUP: every executing thread arrives. ELECTED_PER_WARP: the warp
    synchronizes (``bar.warp.sync`` orders every lane's memory accesses before the arrival), then one
    elected lane arrives. ELECTED_PER_WARPGROUP: one elected lane of the first warp of each warpgroup
    arrives; the caller must have synchronized the warpgroup if other warps' accesses must be covered.
    """
    if unit in (ArrivalUnit.THREAD, ArrivalUnit.WARP, ArrivalUnit.WARPGROUP):
        ring.arrive(index, peer=peer)
    elif unit is ArrivalUnit.ELECTED_PER_WARP:
        cute.arch.sync_warp()
        with cute.arch.elect_one():
            ring.arrive(index, peer=peer)
    elif unit is ArrivalUnit.ELECTED_PER_WARPGROUP:
        _arrive_first_warp_of_group(ring, index, peer)
    else:  # pragma: no cover - ArrivalUnit is closed
        raise ValueError(f"arrival unit {unit!r} is not supported")


@cute.jit
def _arrive_first_warp_of_group(ring: cutlass.Constexpr, index: Any, peer: cutlass.Constexpr) -> None:
    if warp_uniform_index() % 4 == 0:
        with cute.arch.elect_one():
            ring.arrive(index, peer=peer)
