"""Named (hardware) barriers with an id allocator, so kernels stop hard-coding ``bar.sync 3, 256``.

A CTA has 16 named barriers, ids 0–15; id 0 is the one ``__syncthreads`` / ``cute.arch.sync_threads``
uses. A :class:`NamedBarrierAllocator` hands out ids 1–15 while the kernel is traced, remembers who
holds each one, and refuses exhaustion, double allocation and double release with an error that lists
the holders. Thread counts are checked against the PTX rules (a multiple of 32, at most the block).

Use::

    barriers = NamedBarrierAllocator(block_threads=384)      # in the kernel body, at trace time
    epi = barriers.allocate("epilogue", threads=256)         # both math warpgroups
    ...
    epi.sync()                                               # bar.sync <id>, 256

Create the allocator inside the kernel function (one per trace): its bookkeeping is Python state of
one compilation. Allocate before a run-time ``if`` that splits roles: both branches are traced, so a
barrier allocated inside each branch under one name is a double allocation.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import cutlass.cute as cute

from ..errors import ProtocolError, SpecError
from ..spec import WARP_THREADS
from .state import TraceStatic

__all__ = ["HARDWARE_BARRIERS", "SYNCTHREADS_ID", "NamedBarrier", "NamedBarrierAllocator"]

HARDWARE_BARRIERS = 16
SYNCTHREADS_ID = 0
MAX_BLOCK_THREADS = 1024


@dataclass(frozen=True)
class NamedBarrier(TraceStatic):
    """One hardware named barrier: ``threads`` threads (whole warps) meet at barrier ``barrier_id``.

    Frozen, so dynamic loops treat it as a constant. ``sync`` is ``bar.sync id, threads`` (all
    participants wait); ``arrive`` is ``bar.arrive id, threads`` (a producer signals without
    waiting; the consumers' ``sync`` completes once ``threads`` threads arrived or synced in all).
    """

    barrier_id: int
    threads: int
    name: str

    def sync(self) -> None:
        """Arrive and wait until ``threads`` threads have arrived (``bar.sync``)."""
        cute.arch.barrier(barrier_id=self.barrier_id, number_of_threads=self.threads)

    def arrive(self) -> None:
        """Arrive without waiting (``bar.arrive``); every thread of a warp must execute it."""
        cute.arch.barrier_arrive(barrier_id=self.barrier_id, number_of_threads=self.threads, aligned=True)

    def arrive_unaligned(self) -> None:
        """Arrive without waiting from divergent code (``barrier.arrive``, without ``.aligned``)."""
        cute.arch.barrier_arrive(barrier_id=self.barrier_id, number_of_threads=self.threads, aligned=False)


def _check_threads(what: str, threads: object, block_threads: int) -> None:
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise SpecError(f"{what} = {threads!r} is invalid: allowed an int, a multiple of 32 in [32, {block_threads}]")
    if threads < WARP_THREADS or threads % WARP_THREADS or threads > block_threads:
        why = (
            f"not a multiple of {WARP_THREADS} (bar.sync counts whole warps; {threads} = "
            f"{threads // WARP_THREADS}×32 + {threads % WARP_THREADS})"
            if threads % WARP_THREADS
            else f"more than the block's {block_threads} threads"
            if threads > block_threads
            else "fewer than one warp"
        )
        raise SpecError(
            f"{what} = {threads} is invalid: allowed a multiple of 32 in [32, {block_threads}] (the block size); {why}"
        )


class NamedBarrierAllocator(TraceStatic):
    """Hands out named-barrier ids 1–15 of one CTA at trace time and names who holds each.

    ``reserved`` maps ids that other code uses (a library epilogue that hard-codes ``bar.sync 1``)
    to a description; id 0 is always reserved for ``__syncthreads``.
    """

    def __init__(self, block_threads: int, reserved: Mapping[int, str] | None = None) -> None:
        if isinstance(block_threads, bool) or not isinstance(block_threads, int):
            raise SpecError(f"NamedBarrierAllocator.block_threads = {block_threads!r} is invalid: allowed an int")
        if not 1 <= block_threads <= MAX_BLOCK_THREADS:
            raise SpecError(
                f"NamedBarrierAllocator.block_threads = {block_threads} is invalid: allowed [1, {MAX_BLOCK_THREADS}]"
            )
        self.block_threads = block_threads
        self._reserved: dict[int, str] = {SYNCTHREADS_ID: "__syncthreads (bar.sync 0)"}
        for barrier_id, why in (reserved or {}).items():
            self._check_id(barrier_id)
            if barrier_id in self._reserved:
                raise ProtocolError(
                    f"named barrier id {barrier_id} is already reserved for {self._reserved[barrier_id]}"
                )
            self._reserved[barrier_id] = why
        self._held: dict[int, NamedBarrier] = {}

    # --- queries --------------------------------------------------------------------------------
    @property
    def holders(self) -> dict[int, str]:
        """Every id in use, reserved or allocated, with who holds it."""
        table = {i: f"reserved: {why}" for i, why in self._reserved.items()}
        table.update({i: f"{b.name!r} ({b.threads} threads)" for i, b in self._held.items()})
        return dict(sorted(table.items()))

    @property
    def free_ids(self) -> list[int]:
        return [i for i in range(HARDWARE_BARRIERS) if i not in self._reserved and i not in self._held]

    def describe(self) -> str:
        """The holders table as one line per id (used in error messages)."""
        return "; ".join(f"{i}: {who}" for i, who in self.holders.items())

    # --- allocation -----------------------------------------------------------------------------
    def allocate(self, name: str, threads: int) -> NamedBarrier:
        """The lowest free id, held by ``name`` for ``threads`` threads."""
        self._check_new(name, threads)
        free = self.free_ids
        if not free:
            raise ProtocolError(
                f"cannot allocate named barrier {name!r}: all {HARDWARE_BARRIERS} hardware ids are taken "
                f"({len(self._held)} allocated, {len(self._reserved)} reserved). Holders: {self.describe()}. "
                "Release one (allocator.release(...)) or let roles share a barrier."
            )
        return self._take(free[0], name, threads)

    def allocate_id(self, barrier_id: int, name: str, threads: int) -> NamedBarrier:
        """A specific id (interop with code that expects it); fails if reserved or held."""
        self._check_id(barrier_id)
        self._check_new(name, threads)
        if barrier_id in self._reserved:
            raise ProtocolError(
                f"cannot allocate named barrier {name!r} at id {barrier_id}: reserved for "
                f"{self._reserved[barrier_id]}. Holders: {self.describe()}"
            )
        if barrier_id in self._held:
            raise ProtocolError(
                f"cannot allocate named barrier {name!r} at id {barrier_id}: held by "
                f"{self._held[barrier_id].name!r}. Holders: {self.describe()}"
            )
        return self._take(barrier_id, name, threads)

    def release(self, barrier: NamedBarrier | str) -> None:
        """Give an id back (by barrier or by name) so a later phase of the kernel may reuse it."""
        name = barrier if isinstance(barrier, str) else barrier.name
        for barrier_id, held in self._held.items():
            if held.name == name and (isinstance(barrier, str) or held == barrier):
                del self._held[barrier_id]
                return
        raise ProtocolError(
            f"cannot release named barrier {name!r}: it is not held (released twice, or never allocated "
            f"by this allocator). Holders: {self.describe()}"
        )

    @contextmanager
    def scoped(self, name: str, threads: int) -> Iterator[NamedBarrier]:
        """Allocate for the duration of a ``with`` block (a phase of the kernel), then release."""
        barrier = self.allocate(name, threads)
        try:
            yield barrier
        finally:
            self.release(barrier)

    # --- internals ------------------------------------------------------------------------------
    def _check_id(self, barrier_id: object) -> None:
        if isinstance(barrier_id, bool) or not isinstance(barrier_id, int) or not 0 <= barrier_id < HARDWARE_BARRIERS:
            raise SpecError(
                f"named barrier id = {barrier_id!r} is invalid: allowed an int in [0, {HARDWARE_BARRIERS - 1}]"
            )

    def _check_new(self, name: str, threads: int) -> None:
        if not isinstance(name, str) or not name:
            raise SpecError(f"named barrier name = {name!r} is invalid: allowed a non-empty string")
        _check_threads(f"NamedBarrier({name!r}).threads", threads, self.block_threads)
        for barrier_id, held in self._held.items():
            if held.name == name:
                raise ProtocolError(
                    f"named barrier {name!r} is already allocated (id {barrier_id}, {held.threads} threads): "
                    "allocate it once before the role branches and share the object. "
                    f"Holders: {self.describe()}"
                )

    def _take(self, barrier_id: int, name: str, threads: int) -> NamedBarrier:
        barrier = NamedBarrier(barrier_id, threads, name)
        self._held[barrier_id] = barrier
        return barrier
