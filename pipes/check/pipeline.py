"""The model backend: one agent's view of a pipeline, implementing :class:`pipes.PipelineOps`.

Agents drive it through the ordinary :class:`pipes.Producer` / :class:`pipes.Consumer` handles (or the
explicit-state calls). Every call becomes primitive operations on the model's barriers or flags, tagged
with the phase *number* the caller means (from its cursor's ``count``), so the explorer can tell a
correct pass from an aliased one. What each kind does, with the calls ``cutlass.pipeline`` would make:

==================  =========================================  ====================================
kind                producer                                   consumer
==================  =========================================  ====================================
ARRIVAL             acquire: wait empty; commit: arrive full   wait: wait full; release: arrive empty
TRANSACTION_BYTES   acquire: wait empty + arrive.expect_tx     (same)
                    full; the TMA load completes the bytes;
                    commit: nothing
STORE_COMPLETE      acquire: wait empty; commit: record meta,  (same); the consumer stops on
                    commit_group, wait_group ``lag`` (no       END_OF_STREAM
                    ``.read``), arrive full of the slot
                    committed ``lag`` commits earlier; tail:
                    wait_group 0, notify the rest, commit
                    END_OF_STREAM, acquire every slot
FLAG                acquire: wait_flag empty; commit:          wait: wait_flag full; release:
                    set_flag full; tail drains the primed      set_flag empty
                    empty flags
==================  =========================================  ====================================

With ``ModelPipeline.fence_reads`` (the default) a TRANSACTION_BYTES or STORE_COMPLETE release issues
``fence.proxy.async`` before its arrival, as ``pipes.cute`` does for ``SlotReaders.GENERIC``.

On a cluster (``ModelPipeline(ctas=...)``) every agent uses its own CTA's copy; with ``multicast`` a
consumer's release arrives on ``empty[s]`` of every CTA (remotely at cluster scope), because each CTA's
producer multicasts into its slot. Units of a ``silent`` consumer role release nowhere. Every wait acquires
at CTA scope, as ``pipes.cute``'s waits do (``mbarrier.try_wait`` without ``.acquire.cluster``): a peer
CTA's release orders its reads before the producer's next load, and the loaded bytes complete on the
waiter's own barrier.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from ..errors import ProtocolError
from ..participants import acquire_every_slot
from ..spec import Completion, PipelineSpec, Role
from ..state import PRODUCER_START_PHASE, PipelineState
from .declarations import END_OF_STREAM, ModelPipeline
from .ops import Arrive, BulkCommit, BulkWait, Fence, FlagSet, FlagWait, TryWait, Wait, Write
from .scope import Scope

if TYPE_CHECKING:
    from .ctx_base import CtxBase
    from .layout import Layout


def meta_cell(pipe: str, slot: int, at: str = "") -> str:
    return f"{pipe}.meta[{slot}]{at}"


def slot_cell(pipe: str, slot: int, part: Any = None, at: str = "") -> str:
    return f"{pipe}.slot[{slot}]{at}" if part is None else f"{pipe}.slot[{slot}].{part}{at}"


class ModelPipelineOps:
    """One agent's view of a model pipeline (a :class:`pipes.PipelineOps` backend).

    ``consumer_role`` is the consumer role this agent plays (one unit of it); the producer side always
    plays ``spec.producer``. Each arrival counts ``unit.arrivals × peers`` of the role.
    """

    def __init__(self, ctx: CtxBase, model: ModelPipeline, layout: Layout, consumer_role: Role) -> None:
        self.spec: PipelineSpec = model.spec
        self.model = model
        self._ctx = ctx
        self.cta = ctx.place.cta
        self._at = model.cta_suffix(self.cta)
        self._full = layout.full[model.name, self.cta]
        self._empty = layout.empty[model.name, self.cta]
        self._is_flag = model.spec.completion is Completion.FLAG
        self.consumer_role = consumer_role
        producer = model.spec.producer
        cluster = len(model.ctas) > 1
        # One CTA: a role's peers are counted in its arrival (the legacy model of a cluster). A real cluster
        # spreads them: a producer arrives on its own CTA's full barrier, a multicast consumer on every CTA's empty.
        self._producer_arrivals = producer.unit.arrivals * (1 if cluster else producer.peers)
        self._consumer_arrivals = consumer_role.unit.arrivals * (1 if model.multicast else consumer_role.peers)
        self._release_to = [self.cta, *(c for c in model.ctas if c != self.cta)] if model.multicast else [self.cta]
        self._silent = consumer_role.name in model.silent
        self._producer_who = f"{ctx.name} (producer '{producer.name}' of {model.name})"
        self._consumer_who = f"{ctx.name} (consumer '{consumer_role.name}' of {model.name})"
        self.acquired = self.committed = self.waited = self.released = 0
        self._in_tail = False
        self._next_commit: PipelineState | None = None
        self._unnotified: deque[PipelineState] = deque()
        self.armed: dict[int, int] = {}
        """TRANSACTION_BYTES: per slot, the full-barrier phase the last acquire armed (for the TMA load)."""

    # -- the PipelineOps protocol -------------------------------------------------------------
    def make_state(self, start_phase: int) -> PipelineState:
        return PipelineState(self.spec.stages, 0, start_phase, 0)

    def _joins(self, side: str) -> None:
        # What the static count check reads: which agents play which role on which CTA's copy.
        self._ctx.joined.add((self.spec.name, side, self.cta))

    def producer_acquire(self, state: PipelineState, token: Any = None) -> None:
        self._joins("producer")
        if not self._in_tail:
            self.acquired += 1
        call = "producer_tail" if self._in_tail else "producer_acquire"
        if not token:
            self._wait_empty(state, call)
        if self.spec.completion is Completion.TRANSACTION_BYTES and not self._in_tail:
            phase = state.count // self.spec.stages
            self.armed[state.index] = phase
            self._arrive(
                self._full[state.index], self._producer_arrivals, phase, self._producer_who, call, self.spec.tx_bytes
            )

    def producer_try_acquire(self, state: PipelineState) -> Any:
        if self._is_flag:
            raise ProtocolError(f"pipeline {self.spec.name!r} (FLAG) has no try_acquire: wait_flag cannot be polled")
        return self._emit_try(
            self._empty[state.index],
            state,
            state.count // self.spec.stages - 1,
            self._producer_who,
            "producer_try_acquire",
        )

    def producer_commit(self, state: PipelineState, *payload: Any) -> None:
        self.committed += 1
        if self.committed > self.acquired:
            raise ProtocolError(
                f"{self._producer_who} commits slot {state.index} (commit #{self.committed}) but has acquired only "
                f"{self.acquired} slot(s): acquire before commit"
            )
        if payload:
            self._ctx.emit(
                Write(
                    meta_cell(self.spec.name, state.index, self._at),
                    payload[0] if len(payload) == 1 else payload,
                    self._producer_who,
                )
            )
        completion = self.spec.completion
        if completion is Completion.ARRIVAL:
            self._arrive_full(state, "producer_commit")
        elif completion is Completion.FLAG:
            self._ctx.emit(
                FlagSet(
                    self._full[state.index],
                    self._flag_name(self._full, state.index),
                    self._producer_who,
                    "producer_commit",
                )
            )
        elif completion is Completion.STORE_COMPLETE:
            self._commit_store(state)
        # TRANSACTION_BYTES: the TMA load completes the stage; commit is a no-op as in cutlass.
        self._next_commit = state.clone()
        self._next_commit.advance()

    def producer_tail(self, state: PipelineState) -> None:
        if self.spec.completion is Completion.STORE_COMPLETE:
            self._store_tail(state)
        self._in_tail = True
        acquire_every_slot(self, state)

    def consumer_wait(self, state: PipelineState, token: Any = None) -> None:
        self._joins(self.consumer_role.name)
        self.waited += 1
        if token:
            return
        if self._is_flag:
            self._ctx.emit(
                FlagWait(
                    self._full[state.index],
                    self._flag_name(self._full, state.index),
                    self._consumer_who,
                    "consumer_wait",
                )
            )
            return
        barrier = self._full[state.index]
        self._ctx.emit(
            Wait(
                barrier,
                self._barrier_name(barrier),
                state.phase,
                state.count // self.spec.stages,
                self._consumer_who,
                "consumer_wait",
            )
        )

    def consumer_try_wait(self, state: PipelineState) -> Any:
        if self._is_flag:
            raise ProtocolError(f"pipeline {self.spec.name!r} (FLAG) has no try_wait: wait_flag cannot be polled")
        return self._emit_try(
            self._full[state.index], state, state.count // self.spec.stages, self._consumer_who, "consumer_try_wait"
        )

    def consumer_release(self, state: PipelineState) -> None:
        self.released += 1
        if self.released > self.waited:
            raise ProtocolError(
                f"{self._consumer_who} releases slot {state.index} (release #{self.released}) but has waited for only "
                f"{self.waited} slot(s): wait before release"
            )
        if self._is_flag:
            self._ctx.emit(
                FlagSet(
                    self._empty[state.index],
                    self._flag_name(self._empty, state.index),
                    self._consumer_who,
                    "consumer_release",
                )
            )
            return
        if self._silent:
            return  # a declared role whose units do not arrive: empty[s] does not count them
        if self.model.fences_releases:
            # The TMA load / bulk store that reuses the data writes through the async proxy.
            self._ctx.emit(Fence(self._consumer_who, "consumer_release"))
        phase = state.count // self.spec.stages
        for cta in self._release_to:
            barrier = self._ctx.layout.empty[self.spec.name, cta][state.index]
            scope = Scope.CTA if cta == self.cta else Scope.CLUSTER
            self._arrive(barrier, self._consumer_arrivals, phase, self._consumer_who, "consumer_release", scope=scope)

    # -- what the agent left behind ------------------------------------------------------------
    def outstanding(self) -> list[str]:
        """What this agent leaves unbalanced on this pipeline when it returns."""
        problems = []
        if self.acquired != self.committed:
            problems.append(f"{self._producer_who} acquired {self.acquired} slot(s) but committed {self.committed}")
        if self.waited != self.released:
            problems.append(f"{self._consumer_who} waited for {self.waited} slot(s) but released {self.released}")
        if self._unnotified:
            slots = ", ".join(str(s.index) for s in self._unnotified)
            problems.append(f"{self._producer_who} never notified committed slot(s) {slots}: call tail() before exit")
        return problems

    # -- kind details ---------------------------------------------------------------------------
    def _read_only_wait(self) -> bool:
        return self.model.notify_on == "smem_read"

    def _commit_store(self, state: PipelineState) -> None:
        who = self._producer_who
        self._ctx.emit(BulkCommit(who))
        self._ctx.emit(BulkWait(self.model.store_lag, self._read_only_wait(), who))
        self._unnotified.append(state.clone())
        if len(self._unnotified) > self.model.store_lag:
            self._arrive_full(self._unnotified.popleft(), "producer_commit (notify)")

    def _store_tail(self, state: PipelineState) -> None:
        who = self._producer_who
        self._ctx.emit(BulkWait(0, self._read_only_wait(), who))
        while self._unnotified:
            self._arrive_full(self._unnotified.popleft(), "producer_tail (notify)")
        end = self._next_commit if self._next_commit is not None else self.make_state(PRODUCER_START_PHASE)
        if end.count != state.count:
            raise ProtocolError(
                f"{who} calls tail() with {state.count - end.count} acquired slot(s) not committed: "
                "commit every acquired slot first"
            )
        self.acquired += 1
        self._wait_empty(state, "producer_tail (end of stream)")
        state.advance()
        self._ctx.emit(Write(meta_cell(self.spec.name, end.index, self._at), END_OF_STREAM, who))
        self.committed += 1
        self._arrive_full(end, "producer_tail (end of stream)")

    # -- primitives -----------------------------------------------------------------------------
    def _barrier_name(self, barrier: int) -> str:
        return self._ctx.layout.barrier_names[barrier]

    def _flag_name(self, ids: tuple[int, ...], slot: int) -> str:
        return self._ctx.layout.flag_names[ids[slot]]

    def _wait_empty(self, state: PipelineState, call: str) -> None:
        if self._is_flag:
            self._ctx.emit(
                FlagWait(self._empty[state.index], self._flag_name(self._empty, state.index), self._producer_who, call)
            )
            return
        barrier = self._empty[state.index]
        # The producer's k-th use of a slot waits for the consumers' release of use k - 1 (#-1: the fresh barrier).
        completion = state.count // self.spec.stages - 1
        self._ctx.emit(Wait(barrier, self._barrier_name(barrier), state.phase, completion, self._producer_who, call))

    def _arrive_full(self, state: PipelineState, call: str) -> None:
        self._arrive(
            self._full[state.index], self._producer_arrivals, state.count // self.spec.stages, self._producer_who, call
        )

    def _arrive(
        self, barrier: int, count: int, phase: int, who: str, call: str, tx: int = 0, scope: Scope = Scope.CTA
    ) -> None:
        self._ctx.emit(Arrive(barrier, self._barrier_name(barrier), count, phase, who, call, tx, scope))

    def _emit_try(self, barrier: int, state: PipelineState, completion: int, who: str, call: str) -> Any:
        return self._ctx.emit(TryWait(barrier, self._barrier_name(barrier), state.phase, completion, who, call))
