"""What every pipes.cute pipeline kind shares: declaration from a spec, binding to shared memory, waits.

A *declaration* (:class:`PipelineBase` subclass: ``AsyncPipeline``, ``TmaLoadPipeline``,
``StoreNotifyPipeline``) is a Python object built from a :class:`pipes.spec.PipelineSpec`; it emits no
code. :func:`pipes.cute.storage.init_pipelines` binds every declaration of a kernel to its shared
memory and initializes the barriers (all threads, before role dispatch). The result, a
:class:`BoundPipeline` per declaration, implements :class:`pipes.participants.PipelineOps` and hands
out loop-carriable producer/consumer handles; ``declaration.producer()`` / ``.consumer(role)`` find
it too, and raise :class:`~pipes.errors.ProtocolError` when the kernel never ran ``init_pipelines``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import cutlass
import cutlass.cute as cute
from cutlass._mlir import ir

from ..errors import ProtocolError, SpecError
from ..spec import Completion, PipelineSpec, Role
from .barriers import MBARRIER_BYTES, MbarrierRing, WaitSite
from .debug import DebugConfig, TraceEvent, Tracer, resolve_debug
from .state import CuteConsumer, CuteProducer, CuteState, TraceStatic, make_state

__all__ = ["BoundPipeline", "PipelineBase", "current_kernel_key"]


def _owner_chain() -> list[Any]:
    try:
        block = ir.InsertionPoint.current.block
    except (RuntimeError, ValueError):
        return []
    chain = []
    op = block.owner
    while op is not None:
        chain.append(op)
        try:
            op = op.parent
        except (RuntimeError, ValueError, AttributeError):
            break
    return chain


def _op_name(op: Any) -> str:
    return op.operation.name


def current_kernel_key() -> int | None:
    """Identity of the kernel being traced (None outside a kernel)."""
    for op in _owner_chain():
        if _op_name(op) in ("cuda.kernel", "gpu.func"):
            return hash(op.operation)
    return None


def enclosing_region_ops() -> list[str]:
    """Names of the control-flow ops between the insertion point and its kernel (empty at top level)."""
    names = []
    for op in _owner_chain():
        name = _op_name(op)
        if name in ("cuda.kernel", "gpu.func"):
            return names
        names.append(name)
    return names


class PipelineBase(TraceStatic):
    """Declaration of one mbarrier pipeline: a validated spec plus backend options. Emits no code.

    ``suspend_waits``: how every wait of this pipeline (acquire, wait, tail) retries a failed
    ``mbarrier.try_wait``: True suspends the thread between tries (``try_wait`` with a suspend-time
    hint; good when the wait is long, e.g. a TMA store's round trip to global memory), False retries at
    once (good for short hand-offs). None takes the kind's default, :attr:`default_suspend_waits`, which
    is the one the hand-off benchmark measured faster (benchmarks/RESULTS.md).
    ``debug``: True/False, a :class:`~pipes.cute.debug.DebugConfig`, or None (then ``PIPES_DEBUG``).
    ``tracer``: an object with ``record(event, pipeline_id, slot)`` (None: no trace code).
    ``trace_id``: the ``pipeline_id`` passed to the tracer.
    """

    completion: ClassVar[Completion]
    kind: ClassVar[str] = "pipeline"
    #: Polling (False) for the short hand-offs of the async and TMA-load kinds; StoreNotifyPipeline: True.
    default_suspend_waits: ClassVar[bool] = False

    def __init__(
        self,
        spec: PipelineSpec,
        *,
        suspend_waits: bool | None = None,
        debug: bool | DebugConfig | None = None,
        tracer: Tracer | None = None,
        trace_id: int = 0,
    ) -> None:
        if not isinstance(spec, PipelineSpec):
            raise SpecError(f"{type(self).__name__}.spec = {spec!r} is invalid: allowed a pipes.PipelineSpec")
        if spec.completion is not self.completion:
            raise SpecError(
                f"{type(self).__name__}(spec {spec.name!r}): spec.completion = {spec.completion.name} is invalid: "
                f"this kind needs Completion.{self.completion.name}"
            )
        if tracer is not None and not callable(getattr(tracer, "record", None)):
            raise SpecError(f"{type(self).__name__}.tracer = {tracer!r} is invalid: needs a record(event, id, slot)")
        if isinstance(trace_id, bool) or not isinstance(trace_id, int) or trace_id < 0:
            raise SpecError(f"{type(self).__name__}.trace_id = {trace_id!r} is invalid: allowed an int >= 0")
        if suspend_waits is not None and not isinstance(suspend_waits, bool):
            raise SpecError(
                f"{type(self).__name__}.suspend_waits = {suspend_waits!r} is invalid: allowed True, False or None "
                f"(None: the kind's default, {self.default_suspend_waits})"
            )
        self.suspend_waits = self.default_suspend_waits if suspend_waits is None else suspend_waits
        self.spec = spec
        self.debug = resolve_debug(debug)
        self.tracer = tracer
        self.trace_id = trace_id
        self._bindings: dict[int, BoundPipeline] = {}
        self._pending: dict[int, Any] = {}

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def stages(self) -> int:
        return self.spec.stages

    # --- shared memory ---------------------------------------------------------------------------
    def extra_words(self) -> int:
        """8-byte words this kind needs after its 2 × stages barriers (metadata, …)."""
        return 0

    @property
    def smem_words(self) -> int:
        """8-byte words of shared memory this pipeline needs (barriers first, 8-byte aligned)."""
        return 2 * self.stages + self.extra_words()

    @property
    def smem_bytes(self) -> int:
        return self.smem_words * MBARRIER_BYTES

    @property
    def cluster_size(self) -> int:
        """CTAs per cluster this pipeline's signalling spans (1 unless it multicasts)."""
        return 1

    # --- binding ---------------------------------------------------------------------------------
    def full_arrivals(self) -> int:
        """Arrivals that complete a phase of a full barrier (the spec's, unless the kind says otherwise)."""
        return self.spec.full_arrivals

    def empty_arrivals(self) -> int:
        return self.spec.empty_arrivals

    def bind(self, base: cute.Pointer) -> BoundPipeline:
        """The ops over the storage at ``base`` (an Int64 smem pointer). Emits no code."""
        raise NotImplementedError

    def _register(self, key: int, bound: BoundPipeline) -> None:
        self._pending.pop(key, None)
        self._bindings[key] = bound

    def _register_pending(self, key: int, pending: Any) -> None:
        """Bound in kernel ``key`` by ``init_pipelines_arrive``, whose ``wait()`` has not been traced yet."""
        self._bindings.pop(key, None)
        self._pending[key] = pending

    def bound(self) -> BoundPipeline:
        """This pipeline's ops in the kernel being traced; ProtocolError if it was never initialized there."""
        key = current_kernel_key()
        if key is not None and key in self._pending:
            raise ProtocolError(
                f"{self.kind} {self.name!r} is used before the barrier-init wait: init_pipelines_arrive("
                f"{self._pending[key].names}) was traced, but not its .wait(). Call pending.wait() in every "
                "thread, before role dispatch and before any pipeline use (a peer CTA may not have initialized "
                "its barriers yet)"
            )
        bound = self._bindings.get(key) if key is not None else None
        if bound is None:
            raise ProtocolError(
                f"{self.kind} {self.name!r} is used before its barriers exist in this kernel: call "
                f"pipes.cute.init_pipelines([... {self.name} ...], storage) once, in every thread, before role "
                "dispatch, and use its result (or this declaration) afterwards"
            )
        return bound

    def producer(self) -> CuteProducer:
        return self.bound().producer()

    def consumer(self, role: str | None = None) -> CuteConsumer:
        return self.bound().consumer(role)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r})"


class BoundPipeline:
    """A declaration bound to its shared memory: implements :class:`pipes.participants.PipelineOps`.

    ``role`` is the role whose calls this view makes (the producer role for producer calls; the
    consumer role chosen by :meth:`consumer`). The DSL loop-carry protocol rebuilds a view around
    the same pointers, so bound pipelines and their handles may be used in dynamic loops/branches.
    """

    producer_handle: ClassVar[type[CuteProducer]] = CuteProducer
    consumer_handle: ClassVar[type[CuteConsumer]] = CuteConsumer

    def __init__(self, decl: PipelineBase, base: cute.Pointer, consumer_role: Role | None = None) -> None:
        self.decl = decl
        self.base = base
        self.full = MbarrierRing(base, decl.stages)
        self.empty = MbarrierRing(base + decl.stages, decl.stages)
        self.consumer_role = consumer_role

    # --- PipelineOps basics ----------------------------------------------------------------------
    @property
    def spec(self) -> PipelineSpec:
        return self.decl.spec

    @property
    def stages(self) -> int:
        return self.decl.stages

    def make_state(self, start_phase: int) -> CuteState:
        return make_state(self.decl.stages, start_phase)

    def init_barriers(self) -> None:
        """Initialize this pipeline's barriers. ONE thread (``init_pipelines`` arranges it)."""
        self.full.init(self.decl.full_arrivals())
        self.empty.init(self.decl.empty_arrivals())

    # --- handles ---------------------------------------------------------------------------------
    def producer(self) -> CuteProducer:
        return self.producer_handle(self, self.spec.producer)

    def consumer(self, role: str | None = None) -> CuteConsumer:
        chosen = self.spec.consumer(role) if role is not None or len(self.spec.consumers) == 1 else None
        if chosen is None:
            raise ProtocolError(
                f"{self.decl.kind} {self.spec.name!r} has consumer roles "
                f"{[c.name for c in self.spec.consumers]}: name one, pipeline.consumer('<role>')"
            )
        return self.consumer_handle(self.with_consumer_role(chosen), chosen)

    def with_consumer_role(self, role: Role) -> BoundPipeline:
        view = object.__new__(type(self))
        view.__dict__.update(self.__dict__)
        view.consumer_role = role
        return view

    def _consumer(self) -> Role:
        if self.consumer_role is not None:
            return self.consumer_role
        if len(self.spec.consumers) == 1:
            return self.spec.consumers[0]
        raise ProtocolError(
            f"{self.decl.kind} {self.spec.name!r}: consumer calls need a role (the spec has "
            f"{[c.name for c in self.spec.consumers]}); use pipeline.consumer('<role>')"
        )

    # --- calls every kind makes the same way ----------------------------------------------------
    def producer_try_acquire(self, state: CuteState) -> Any:
        return self.empty.try_wait(state.index, state.phase)

    def consumer_try_wait(self, state: CuteState) -> Any:
        return self.full.try_wait(state.index, state.phase)

    def wait_full(self, state: CuteState, token: Any = None, suspend: bool | None = None) -> None:
        """The consumer's wait (skipped when ``token`` is true), then its trace record."""
        self.wait_unless(token, self.full, state, self._consumer(), "wait", suspend)
        self.record(TraceEvent.WAIT, state.index)

    def consumer_wait(self, state: CuteState, token: Any = None) -> None:
        self.wait_full(state, token)

    def producer_tail(self, state: CuteState) -> None:
        self.wait_every_empty(state)

    def wait_every_empty(self, state: CuteState) -> None:
        """The producer's tail: wait for each slot's release from ``state`` on, walking a copy of the
        cursor (releases may land in any order; nothing is re-armed)."""
        cursor = state.clone()
        for _ in range(self.stages):
            self.wait_on(self.empty, cursor, self.spec.producer, "tail")
            cursor.advance()

    # --- shared pieces for the kinds ------------------------------------------------------------
    def wait_on(self, ring: MbarrierRing, state: CuteState, role: Role, op: str, suspend: bool | None = None) -> None:
        """Wait on ``ring`` at ``state``; ``suspend`` None: the declaration's ``suspend_waits``."""
        if suspend is None:
            suspend = self.decl.suspend_waits
        site = WaitSite(self.spec.name, role.name, op)
        ring.wait(state.index, state.phase, site=site, debug=self.decl.debug, suspend=suspend)

    def wait_unless(
        self, token: Any, ring: MbarrierRing, state: CuteState, role: Role, op: str, suspend: bool | None = None
    ) -> None:
        if token is None:
            self.wait_on(ring, state, role, op, suspend)
        else:
            _wait_unless(token, self, ring, state, role, op, suspend)

    def record(self, event: TraceEvent, slot: Any) -> None:
        tracer = self.decl.tracer
        if tracer is not None:
            tracer.record(int(event), self.decl.trace_id, slot)

    # --- DSL protocol ----------------------------------------------------------------------------
    def __extract_mlir_values__(self) -> list[Any]:
        return [self.base]

    def __get_mlir_types__(self) -> list[Any]:
        return [self.base.type]

    def __new_from_mlir_values__(self, values: list[Any]) -> BoundPipeline:
        return type(self)(self.decl, values[0], self.consumer_role)


@cute.jit
def _wait_unless(
    token: Any,
    ops: cutlass.Constexpr,
    ring: cutlass.Constexpr,
    state: CuteState,
    role: cutlass.Constexpr,
    op: cutlass.Constexpr,
    suspend: cutlass.Constexpr,
) -> None:
    if not token:
        ops.wait_on(ring, state, role, op, suspend)
