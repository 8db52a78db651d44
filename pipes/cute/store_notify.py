"""Store-notify pipeline (Completion.STORE_COMPLETE): TMA-stored tiles handed to another warp.

The epilogue's storing thread TMA-stores a tile to global memory and ``commit(meta)``s it; a
different warp ``wait()``s, reads the tile coordinates with ``meta(slot)``, reads the tile from global
memory (``ld.global``; or forwards it, after :func:`fence_before_async_forward`) and ``release()``s.

Protocol (the CPU checker models the same; keep them identical). Stages S, lag L in [0, S-1]:

* producer = the thread that issues the TMA stores (bulk async-groups are per thread). Role unit
  THREAD × 1, or ELECTED_PER_WARP × 1 when the whole warp calls (``cute.copy`` of a TMA store elects
  one lane itself; then every lane commits/waits its own groups and the warp syncs before one lane
  publishes).
* ``acquire()``: wait ``empty[slot]`` (back-pressure when the consumers are S tiles behind).
* the user issues the TMA store(s) of the tile (no ``commit_group`` of their own).
* ``commit(*meta)``: write ``meta[slot]``; ``cp.async.bulk.commit_group``; ``cp.async.bulk.wait_group L``
  WITHOUT ``.read`` (the writes of all but the newest L groups are complete in global memory);
  then ``mbarrier.arrive`` (release, CTA scope) on ``full[]`` of the slot committed L commits ago
  (when there is one). So up to L stores stay in flight while the consumer works.
* ``tail()``: ``wait_group 0``; notify the last ≤ L slots; acquire one more slot and publish an
  end-of-stream meta (so the consumer's loop ends without re-running the tile scheduler); then
  acquire every slot once more (all releases, end-of-stream's included, have landed).
* consumer (one or more roles: fan-out, each releases): ``wait()`` waits ``full[slot]`` (acquire)
  and returns the slot; ``meta(slot).is_end`` says end-of-stream; ``release()`` arrives on
  ``empty[slot]``. The end-of-stream slot is released too.

With ``readers=SlotReaders.GENERIC`` (the default) each release is preceded by
``fence.proxy.async.global``, so a TMA store that later rewrites the same global buffer cannot
overtake the consumer's ``ld.global`` reads (:mod:`pipes.cute.proxy`); pass ``SlotReaders.ASYNC``
when the consumers only forward the tile with TMA / bulk copies or never see the buffer rewritten.

``.read`` waits only free the shared-memory *source* of a store: the epilogue's staging buffers are
recycled by :class:`pipes.cute.TmaStoreStaging` (declare it ``committed_by=`` this pipeline, whose
commit closes each tile's bulk group); that never publishes anything. A consumer in another CTA
(cluster-scope arrive) is not supported.
"""

from __future__ import annotations

import warnings
from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Boolean, Int32

from ..errors import ProtocolError, SpecError
from ..spec import ArrivalUnit, Completion, PipelineSpec
from ..state import stage_index
from .barriers import MbarrierRing, arrive_as_unit
from .base import BoundPipeline, PipelineBase
from .debug import DebugConfig, TraceEvent, Tracer
from .proxy import SlotReaders, check_readers, fence_generic_reads
from .state import CuteConsumer, CuteProducer, CuteState

__all__ = [
    "StoreNotifyConsumer",
    "StoreNotifyOps",
    "StoreNotifyPipeline",
    "StoreNotifyProducer",
    "TileMeta",
    "fence_before_async_forward",
    "staging_wait",
]

MAX_META_FIELDS = 15
_STORING_UNITS = (ArrivalUnit.THREAD, ArrivalUnit.ELECTED_PER_WARP)


def staging_wait(buffers: int) -> None:
    """Deprecated: use :class:`pipes.cute.TmaStoreStaging` (``acquire`` / ``publish`` / ``commit`` / ``tail``).

    ``cp.async.bulk.wait_group.read (buffers-1)`` alone: the stores of all but the newest ``buffers-1``
    groups have *read* their shared-memory source. It neither synchronizes the writing threads with the
    storing thread nor fences their writes, which the staging object does.
    """
    warnings.warn(
        "pipes.cute.staging_wait is deprecated: use pipes.cute.TmaStoreStaging(stages).producer(sync=...) "
        "and its acquire()/publish()/commit()/tail()",
        DeprecationWarning,
        stacklevel=2,
    )
    if isinstance(buffers, bool) or not isinstance(buffers, int) or buffers < 1:
        raise SpecError(f"staging_wait(buffers={buffers!r}) is invalid: allowed an int >= 1")
    cute.arch.cp_async_bulk_wait_group(buffers - 1, read=True)


def fence_before_async_forward() -> None:
    """After ``wait()``, before forwarding the tile with TMA / bulk copies: ``fence.proxy.async.global``.

    The tile became visible to this thread's generic proxy through the barrier; the async proxy
    (TMA reading global memory) needs this fence to observe it too.
    """
    cute.arch.fence_proxy("async.global")


class TileMeta:
    """A slot's metadata: ``fields`` (Int32 values given to ``commit``) and ``is_end`` (end-of-stream)."""

    def __init__(self, valid: Any, fields: tuple[Any, ...]) -> None:
        self.valid = valid
        self.fields = tuple(fields)

    @property
    def is_end(self) -> Any:
        return self.valid == 0

    def __getitem__(self, i: int) -> Any:
        return self.fields[i]

    def __len__(self) -> int:
        return len(self.fields)

    def __extract_mlir_values__(self) -> list[Any]:
        return [Int32(self.valid).ir_value(), *(Int32(f).ir_value() for f in self.fields)]

    def __get_mlir_types__(self) -> list[Any]:
        return [v.type for v in self.__extract_mlir_values__()]

    def __new_from_mlir_values__(self, values: list[Any]) -> TileMeta:
        return TileMeta(Int32(values[0]), tuple(Int32(v) for v in values[1:]))


class StoreNotifyPipeline(PipelineBase):
    """Declaration of a TMA-store → consumer-warp hand-off with ``lag`` stores left in flight."""

    completion = Completion.STORE_COMPLETE
    kind = "StoreNotifyPipeline"
    # Both sides wait for a TMA store's round trip to global memory (hundreds of ns or more):
    # suspending between tries beats polling there (benchmarks/RESULTS.md).
    default_suspend_waits = True

    def __init__(
        self,
        spec: PipelineSpec,
        *,
        lag: int,
        meta_fields: int = 3,
        readers: SlotReaders = SlotReaders.GENERIC,
        suspend_waits: bool | None = None,
        debug: bool | DebugConfig | None = None,
        tracer: Tracer | None = None,
        trace_id: int = 0,
    ) -> None:
        super().__init__(spec, suspend_waits=suspend_waits, debug=debug, tracer=tracer, trace_id=trace_id)
        owner = f"StoreNotifyPipeline({spec.name!r})"
        if isinstance(lag, bool) or not isinstance(lag, int) or not 0 <= lag <= spec.stages - 1:
            raise SpecError(
                f"{owner}.lag = {lag!r} is invalid: allowed an int in [0, stages-1] = [0, {spec.stages - 1}] "
                "(lag = stages would wait for a release that needs a notify still held back: deadlock)"
            )
        if isinstance(meta_fields, bool) or not isinstance(meta_fields, int) or not 0 <= meta_fields <= MAX_META_FIELDS:
            raise SpecError(
                f"{owner}.meta_fields = {meta_fields!r} is invalid: allowed an int in [0, {MAX_META_FIELDS}]"
            )
        producer = spec.producer
        if producer.unit not in _STORING_UNITS or producer.count != 1:
            raise SpecError(
                f"{owner}: producer role {producer.name!r} = count={producer.count} × {producer.unit.name} is invalid: "
                "allowed count=1 × THREAD or count=1 × ELECTED_PER_WARP (bulk async-groups are per thread: the "
                "thread that issued the TMA stores must wait for them and publish)"
            )
        for role in spec.consumers:
            if role.peers != 1:
                raise SpecError(
                    f"{owner}: consumer role {role.name!r} has peers={role.peers}: allowed 1 "
                    "(cluster-scope notification of another CTA is not implemented)"
                )
        self.lag = lag
        self.meta_fields = meta_fields
        self.readers = check_readers(owner, readers)

    def extra_words(self) -> int:
        # One Int32 "valid" word plus the fields per slot, rounded up to 8-byte words.
        return (self.stages * (self.meta_fields + 1) + 1) // 2

    def bind(self, base: cute.Pointer) -> StoreNotifyOps:
        return StoreNotifyOps(self, base)


class StoreNotifyProducer(CuteProducer):
    """Producer handle: ``acquire()`` → slot, TMA-store, ``commit(*meta)``; ``tail()`` before exit."""


class StoreNotifyConsumer(CuteConsumer):
    """Consumer handle: ``wait()`` → slot, ``meta(slot)``, read the tile, ``release()``."""

    def meta(self, slot: Any) -> TileMeta:
        return self.ops.meta(slot)


class StoreNotifyOps(BoundPipeline):
    """:class:`pipes.participants.PipelineOps` of a :class:`StoreNotifyPipeline` bound to shared memory."""

    decl: StoreNotifyPipeline
    producer_handle = StoreNotifyProducer
    consumer_handle = StoreNotifyConsumer

    def __init__(self, decl: StoreNotifyPipeline, base: cute.Pointer, consumer_role: Any = None) -> None:
        super().__init__(decl, base, consumer_role)
        meta_ptr = cute.recast_ptr(base + 2 * decl.stages, dtype=Int32)
        self.meta_table = cute.make_tensor(meta_ptr, cute.make_layout((decl.meta_fields + 1, decl.stages)))

    @property
    def lag(self) -> int:
        return self.decl.lag

    # --- producer --------------------------------------------------------------------------------
    def producer_acquire(self, state: CuteState, token: Any = None) -> None:
        self.wait_unless(token, self.empty, state, self.spec.producer, "acquire", self.decl.suspend_waits)
        self.record(TraceEvent.ACQUIRE, state.index)

    def producer_commit(self, state: CuteState, *meta: Any) -> None:
        if len(meta) != self.decl.meta_fields:
            raise ProtocolError(
                f"StoreNotifyPipeline {self.spec.name!r}: commit() got {len(meta)} meta value(s), "
                f"the pipeline declares meta_fields={self.decl.meta_fields}"
            )
        self.record(TraceEvent.COMMIT, state.index)
        cute.arch.cp_async_bulk_commit_group()
        # Without .read: the global writes of every group but the newest `lag` are complete.
        cute.arch.cp_async_bulk_wait_group(self.lag, read=False)
        elected = self.spec.producer.unit is ArrivalUnit.ELECTED_PER_WARP
        if elected:
            cute.arch.sync_warp()
        _publish(self, state, tuple(Int32(v) for v in meta), elected)

    def write_meta(self, slot: Any, valid: int, meta: tuple[Any, ...]) -> None:
        self.meta_table[0, slot] = Int32(valid)
        for i, value in enumerate(meta):
            self.meta_table[i + 1, slot] = value

    def notify_lagged(self, state: CuteState) -> None:
        """Arrive on full[] of the commit ``lag`` before ``state`` (if that commit exists)."""
        if self.lag == 0:
            self.full.arrive(state.index)
        else:
            older = stage_index(state.index + (self.stages - self.lag), self.stages)
            _arrive_if(state.count >= self.lag, self.full, older)

    def producer_tail(self, state: CuteState) -> None:
        role = self.spec.producer
        elected = role.unit is ArrivalUnit.ELECTED_PER_WARP
        cute.arch.cp_async_bulk_wait_group(0, read=False)
        if elected:
            cute.arch.sync_warp()
        _flush_and_end(self, state, elected)
        after_end = state.clone()
        after_end.advance()
        self.wait_every_empty(after_end)

    # --- consumer --------------------------------------------------------------------------------
    def consumer_wait(self, state: CuteState, token: Any = None) -> None:
        self.wait_full(state, token, self.decl.suspend_waits)

    def consumer_release(self, state: CuteState) -> None:
        self.record(TraceEvent.RELEASE, state.index)
        # A later TMA store may rewrite what this consumer read with ld.global (a reused buffer).
        fence_generic_reads(self.decl.readers, "global")
        arrive_as_unit(self.empty, state.index, self._consumer().unit)

    def meta(self, slot: Any) -> TileMeta:
        """The metadata of a slot this consumer has waited for (read from shared memory)."""
        fields = tuple(self.meta_table[i + 1, slot] for i in range(self.decl.meta_fields))
        return TileMeta(self.meta_table[0, slot], fields)

    def __new_from_mlir_values__(self, values: list[Any]) -> StoreNotifyOps:
        return StoreNotifyOps(self.decl, values[0], self.consumer_role)


@cute.jit
def _arrive_if(cond: Boolean, ring: MbarrierRing, index: Any) -> None:
    if cond:
        ring.arrive(index)


@cute.jit
def _publish(ops: cutlass.Constexpr, state: CuteState, meta: cutlass.Constexpr, elected: cutlass.Constexpr) -> None:
    if cutlass.const_expr(elected):
        with cute.arch.elect_one():
            ops.write_meta(state.index, 1, meta)
            ops.notify_lagged(state)
    else:
        ops.write_meta(state.index, 1, meta)
        ops.notify_lagged(state)


@cute.jit
def _flush_and_end(ops: cutlass.Constexpr, state: CuteState, elected: cutlass.Constexpr) -> None:
    stages = ops.stages
    lag = ops.lag
    # The last `lag` commits were never notified: their stores are complete now (wait_group 0).
    for j in cutlass.range_constexpr(lag):
        if state.count + j >= lag:
            slot = stage_index(state.index + (stages - lag + j), stages)
            if cutlass.const_expr(elected):
                with cute.arch.elect_one():
                    ops.full.arrive(slot)
            else:
                ops.full.arrive(slot)
    # End of stream: one more slot whose meta says so; the consumers release it like any other.
    ops.wait_on(ops.empty, state, ops.spec.producer, "end-of-stream", ops.decl.suspend_waits)
    if cutlass.const_expr(elected):
        with cute.arch.elect_one():
            ops.write_meta(state.index, 0, (Int32(0),) * ops.decl.meta_fields)
            ops.full.arrive(state.index)
    else:
        ops.write_meta(state.index, 0, (Int32(0),) * ops.decl.meta_fields)
        ops.full.arrive(state.index)
