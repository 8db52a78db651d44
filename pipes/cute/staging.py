"""TMA-store staging: the epilogue's ring of shared-memory buffers that feed TMA stores.

The epilogue writes a tile of results into a shared-memory *staging buffer*, one thread TMA-stores it
to global memory, and the buffer may be rewritten once that store has *read* it. With ``stages``
buffers, ``stages - 1`` stores can be in flight while the threads fill the next buffer. This is what
``cutlass.pipeline.PipelineTmaStore`` does; here it is a pipes object with the pipes vocabulary::

    staging = TmaStoreStaging(epi_stages)           # or TmaStoreStaging(spec): its .stages
    ...
    # in the kernel, in EVERY epilogue thread (all threads that write the staging buffers):
    st = staging.producer(sync=epi_barrier)         # a NamedBarrier over those threads (or None)
    for tile in cutlass.range(...):
        slot = st.acquire()      # wait_group.read (stages-1), then epi_barrier.sync()
        ...registers -> sC[..., slot]...
        st.publish()             # fence.proxy.async.shared::cta, then epi_barrier.sync()
        if storing_warp:
            cute.copy(tma_store_atom, sC_part[(None, slot)], gC_part[...])
        st.commit()              # cp.async.bulk.commit_group; the cursor moves on
    st.tail()                    # wait_group.read 0: no store still reads the staging buffers

    # or several buffers per barrier pair: one wait and one barrier for ``n`` buffers, one publish
    first = st.acquire(slots=n)  # wait_group.read (stages-n), then epi_barrier.sync()
    ...registers -> sC[..., st.slot(j)] for j in range(n)...
    st.publish()
    for j in range(n):           # one TMA store and one commit per buffer, in ring order
        if storing_warp:
            cute.copy(tma_store_atom, sC_part[(None, st.index)], gC_part[...])
        st.commit()

Why each step:

* ``acquire``: bulk async-groups are per thread, so only the storing thread's ``wait_group`` can tell
  whether the store that used this buffer ``stages`` commits ago has read it; the other threads' groups
  are empty and their wait returns at once. The barrier after it makes every thread wait for the
  storing thread before overwriting the buffer. ``.read`` is enough: only the shared-memory source
  matters here (a consumer of the *global* tile needs :class:`~pipes.cute.StoreNotifyPipeline`).
* ``publish``: the threads wrote the buffer with ordinary stores (generic proxy) and the TMA store
  reads it through the async proxy; each writing thread needs ``fence.proxy.async.shared::cta`` before
  the barrier that hands the buffer to the storing thread.
* ``commit``: every thread commits (an empty group where no store was issued: it costs nothing and
  keeps the cursor identical in all threads, so ``acquire`` returns the same slot everywhere).
* When the stores are handed on by a :class:`~pipes.cute.StoreNotifyPipeline`, the storing thread's
  ``commit(meta)`` already closes each tile's bulk group: declare
  ``TmaStoreStaging(stages, committed_by=out_pipe)`` and the staging ``commit()`` only moves the cursor.
  (A second, empty group per tile would be correct but would count against both the staging depth and
  the pipeline's ``lag``: wait_group counts groups, so each would keep fewer stores in flight.)
* ``tail``: before the CTA exits or reuses the staging memory for something else. Other threads that
  reuse the memory must synchronize with the storing thread after its tail (a barrier).

The object holds no shared memory and no barriers: nothing to allocate or initialize. Its handle is a
loop-carried value (the cursor crosses ``cutlass.range`` / ``while`` loops and dynamic branches); the
cursor's slot arithmetic is the core ring arithmetic (:mod:`pipes.state`). A
:class:`~pipes.cute.StoreNotifyPipeline` producer that stores from the same buffers uses this staging
object for the buffers and the pipeline for the hand-off; the two rings are independent.
"""

from __future__ import annotations

from typing import Any

import cutlass.cute as cute

from ..errors import SpecError, invalid
from ..spec import Completion
from ..state import advance_position, staging_in_flight
from .state import CuteState, TraceStatic, _CarriesCursors, make_state

__all__ = ["TmaStoreStaging", "TmaStoreStagingProducer", "WarpSync"]

MAX_STAGES = 64  # as PipelineSpec.stages; cp.async.bulk.wait_group takes an immediate in [0, 63]


def _stages_of(source: object) -> int:
    """``stages`` from an int or from an object that has an int ``stages`` (a PipelineSpec, a declaration)."""
    if isinstance(source, int) and not isinstance(source, bool):
        stages = source
    elif isinstance(getattr(source, "stages", None), int):
        stages = source.stages  # type: ignore[attr-defined]
    else:
        raise invalid(
            "TmaStoreStaging",
            "stages",
            source,
            f"an int in [1, {MAX_STAGES}], or an object with an int .stages (a PipelineSpec, a pipeline declaration)",
        )
    if isinstance(stages, bool) or not 1 <= stages <= MAX_STAGES:
        raise invalid("TmaStoreStaging", "stages", stages, f"an int in [1, {MAX_STAGES}]")
    return stages


def _check_sync(sync: object) -> None:
    if sync is not None and not callable(getattr(sync, "sync", None)):
        raise SpecError(
            f"TmaStoreStaging.producer(sync={sync!r}) is invalid: allowed None or a barrier with a sync() method "
            "spanning every epilogue thread (a pipes.cute.NamedBarrier from NamedBarrierAllocator.allocate)"
        )


class WarpSync(TraceStatic):
    """``sync`` for an epilogue of one warp: ``bar.warp.sync`` (which also orders the lanes' memory accesses)."""

    def sync(self) -> None:
        cute.arch.sync_warp()

    def __repr__(self) -> str:
        return "WarpSync()"


class TmaStoreStaging(TraceStatic):
    """The staging ring of a TMA-store epilogue: ``stages`` shared-memory buffers, no barriers of its own.

    ``stages``: an int in [1, 64], or an object with an int ``stages`` (a :class:`pipes.PipelineSpec`).
    ``name``: used in messages and by the CPU checker's model (:mod:`pipes.check.staging`).
    ``committed_by``: the :class:`~pipes.cute.StoreNotifyPipeline` whose producer ``commit`` closes each
    tile's bulk group (then this object's ``commit`` emits no ``commit_group``); None: it closes them.
    """

    kind = "TmaStoreStaging"

    def __init__(self, stages: Any, *, name: str = "staging", committed_by: Any = None) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise invalid("TmaStoreStaging", "name", name, "a non-empty identifier")
        if committed_by is not None and getattr(getattr(committed_by, "spec", None), "completion", None) is not (
            Completion.STORE_COMPLETE
        ):
            raise invalid(
                "TmaStoreStaging",
                "committed_by",
                committed_by,
                "None or a StoreNotifyPipeline (whose producer commit closes each tile's bulk group)",
            )
        self.stages = _stages_of(stages)
        self.name = name
        self.committed_by = committed_by

    @property
    def in_flight(self) -> int:
        """Stores that may still be reading their source when ``acquire`` returns: ``stages - 1``."""
        return self.in_flight_for(1)

    def in_flight_for(self, slots: int) -> int:
        """Stores that may still be reading their source when ``acquire(slots)`` returns: ``stages - slots``
        (:func:`pipes.state.staging_in_flight`); a ``SpecError`` for ``slots`` outside ``[1, stages]``."""
        try:
            return staging_in_flight(self.stages, slots)
        except ValueError:
            allowed = f"an int in [1, {self.stages}]"
            raise invalid(f"{self.kind} {self.name!r}", "acquire slots", slots, allowed) from None

    def producer(self, sync: Any = None) -> TmaStoreStagingProducer:
        """The handle of one epilogue thread. Call it in every thread that writes the staging buffers.

        ``sync``: a barrier over exactly those threads (``pipes.cute.NamedBarrier``), synchronized after
        ``acquire``'s wait and after ``publish``'s fence; :class:`WarpSync` when one warp writes and
        stores; None when the caller synchronizes itself.
        """
        _check_sync(sync)
        return TmaStoreStagingProducer(self, sync)

    def __repr__(self) -> str:
        extra = f", committed_by={self.committed_by.name!r}" if self.committed_by is not None else ""
        return f"TmaStoreStaging(stages={self.stages}, name={self.name!r}{extra})"


class TmaStoreStagingProducer(_CarriesCursors):
    """One thread's cursor into the staging ring: ``acquire`` → slot, write, ``publish``, store, ``commit``.

    ``count`` is the number of stores committed so far; ``index`` the slot the next ``acquire`` returns.
    """

    _CARRIED = ("state",)

    def __init__(self, staging: TmaStoreStaging, sync: Any = None) -> None:
        self.staging = staging
        self.sync = sync
        # The phase of a staging cursor is never waited on (bulk groups have no phase); the ring's
        # index and count are the core arithmetic's (CuteState.advance → pipes.state.advance_position).
        self.state: CuteState = make_state(staging.stages, 0)

    @property
    def stages(self) -> int:
        return self.staging.stages

    @property
    def index(self) -> Any:
        """The slot the next :meth:`acquire` returns (a ``Uint32``)."""
        return self.state.index

    @property
    def count(self) -> Any:
        """Stores committed so far through this handle (a ``Uint32``)."""
        return self.state.count

    def acquire(self, slots: int = 1) -> Any:
        """Wait until the next ``slots`` staging buffers may be overwritten; returns the first one's index
        (:meth:`slot` gives the others).

        ``cp.async.bulk.wait_group.read (stages - slots)``: every group but the newest ``stages - slots``
        has read its source, so the stores that used these buffers are done with them. Then the barrier,
        so that no thread overwrites one before the storing thread's wait returned. With ``slots`` > 1 the
        caller fills the buffers, publishes once, then stores and commits each in ring order.
        """
        cute.arch.cp_async_bulk_wait_group(self.staging.in_flight_for(slots), read=True)
        if self.sync is not None:
            self.sync.sync()
        return self.state.index

    def slot(self, ahead: int) -> Any:
        """The buffer ``ahead`` commits past the cursor: buffer ``ahead`` of a batch from ``acquire(slots)``."""
        if isinstance(ahead, int) and ahead == 0:
            return self.state.index  # the cursor itself: no ring arithmetic to emit
        return advance_position(self.state.index, self.state.phase, ahead, self.stages)[0]

    def publish(self) -> None:
        """After writing the slot with ordinary stores: make them visible to the TMA store.

        ``fence.proxy.async.shared::cta`` in this (writing) thread, then the barrier, after which the
        storing thread may issue the TMA store of the slot.
        """
        cute.arch.fence_proxy("async.shared", space="cta")
        if self.sync is not None:
            self.sync.sync()

    def commit(self) -> Any:
        """``cp.async.bulk.commit_group`` (the store(s) issued since the last commit form one group; an
        empty group in threads that issued none) and move to the next slot. Returns the committed slot.

        With ``committed_by`` only the cursor moves: that pipeline's producer commit closed the group.
        """
        index = self.state.index
        if self.staging.committed_by is None:
            cute.arch.cp_async_bulk_commit_group()
        self.state.advance()
        return index

    def tail(self) -> None:
        """``cp.async.bulk.wait_group.read 0``: no store still reads a staging buffer.

        Call before the CTA exits or reuses the staging memory; threads other than the storing one must
        then synchronize with it (a barrier) before touching that memory.
        """
        cute.arch.cp_async_bulk_wait_group(0, read=True)
