"""The raw synchronisation an agent context offers: mbarriers, flags, counters, bulk groups, grid launches.

A mixin of :class:`pipes.check.context.Ctx`; every call becomes one operation record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import ProtocolError
from .ops import (
    Arrive,
    BulkCommit,
    BulkWait,
    CounterSignal,
    CounterStore,
    CounterTake,
    CounterWait,
    FlagSet,
    FlagWait,
    GridDependencyWait,
    LaunchDependents,
    TryWait,
    Wait,
)
from .scope import Place, Scope, default_release

if TYPE_CHECKING:
    from .layout import Layout


class SyncOps:
    """Hand-written synchronisation, as a kernel writes it without pipeline objects."""

    name: str
    layout: Layout
    place: Place
    emit: Callable[[Any], Any]

    # -- mbarriers ------------------------------------------------------------------------------
    def arrive(
        self,
        barrier: str,
        count: int = 1,
        completion: int | None = None,
        tx: int = 0,
        scope: Scope = Scope.CTA,
    ) -> None:
        """``mbarrier.arrive`` (``tx`` > 0: ``arrive.expect_tx``) meant for round ``completion``.

        ``scope``: the release's scope — ``Scope.CLUSTER`` for a barrier in a peer CTA of the cluster
        (``mbarrier.arrive.release.cluster.shared::cluster``); a CTA-scoped release does not order this
        agent's writes for that CTA's threads.
        """
        index = self._barrier(barrier)
        self.emit(Arrive(index, barrier, count, completion, self.name, "arrive", tx, self._scope(scope)))

    def wait(self, barrier: str, parity: int, completion: int | None = None, scope: Scope = Scope.CTA) -> None:
        """Block until the phase with ``parity`` has completed (meant to observe round ``completion``).

        ``scope``: the acquire's scope, ``mbarrier.try_wait.parity.acquire.cta`` (the default, as PTX's and the
        library's waits) or ``Scope.CLUSTER`` (``.acquire.cluster``). A CTA-scoped wait does not synchronise
        with an arrive another CTA released at cluster scope: what that CTA wrote is not visible after it
        (its reads are still ordered before what follows). Reading data a peer CTA published needs
        ``Scope.CLUSTER`` here.
        """
        index = self._own_barrier(barrier)
        self.emit(Wait(index, barrier, parity, completion, self.name, "wait", self._acquire(scope)))

    def try_wait(self, barrier: str, parity: int, completion: int | None = None, scope: Scope = Scope.CTA) -> bool:
        """One probe of :meth:`wait`: True when the phase has completed (then it acquires at ``scope``)."""
        index = self._own_barrier(barrier)
        return self.emit(TryWait(index, barrier, parity, completion, self.name, "try_wait", self._acquire(scope)))

    # -- Ascend binary flags ------------------------------------------------------------------------
    def set_flag(self, flag: str) -> None:
        self.emit(FlagSet(self._flag(flag), flag, self.name, "set_flag"))

    def wait_flag(self, flag: str) -> None:
        self.emit(FlagWait(self._flag(flag), flag, self.name, "wait_flag"))

    # -- counters -----------------------------------------------------------------------------------
    def signal(self, counter: str, by: int = 1, scope: Scope | None = None, relaxed: bool = False) -> None:
        """Add ``by`` to ``counter`` with release semantics (Ascend ``set_cross_flag``; ``red.release.add``).

        ``scope`` defaults to the device's (``.gpu``; system scope for a host agent). ``relaxed``: a relaxed
        add (``red.relaxed``, no fence before it): it counts, but a waiter that sees it learns nothing.
        """
        index = self._counter(counter)
        scope = self._release(scope)
        by = self._count(by, "by")
        self.emit(CounterSignal(index, counter, by, self.name, "signal", scope, self._relaxed(relaxed)))

    def store_counter(self, counter: str, value: int, scope: Scope | None = None, relaxed: bool = False) -> None:
        """Store ``value`` into ``counter`` with release semantics (``st.release`` of an epoch or ready flag).

        ``relaxed``: a relaxed store instead — a flag written without the fence (or a copy engine's memory
        barrier) before it. Readers see the value, but it publishes nothing: a reader that acquires it and
        reads the data the flag stands for is not ordered after that data's write.
        """
        index = self._counter(counter)
        value = self._count(value, "value", 0)
        scope = self._release(scope)
        self.emit(CounterStore(index, counter, value, self.name, "store_counter", scope, self._relaxed(relaxed)))

    def take(self, counter: str, scope: Scope | None = None) -> None:
        """Block while ``counter`` is 0, then take one (Ascend ``wait_cross_flag``; a semaphore acquire)."""
        self.emit(CounterTake(self._counter(counter), counter, self.name, "take", self._release(scope)))

    def wait_counter(self, counter: str, at_least: int | None = None, scope: Scope | None = None) -> None:
        """Block until ``counter`` >= ``at_least`` (default: its ``quorum``, else 1) — an acquire load of a
        ready flag (``ld.acquire``), or a threshold quorum. ``scope``: the acquire's scope."""
        index = self._counter(counter)
        if at_least is None:
            at_least = self.layout.counters[index].quorum or 1
        at_least = self._count(at_least, "at_least")
        self.emit(CounterWait(index, counter, at_least, self.name, "wait_counter", self._release(scope)))

    def wait_value(self, counter: str, value: int, scope: Scope | None = None) -> None:
        """Block until ``counter`` == ``value``: an acquire load polled for one exact token (flags whose
        values alternate, e.g. by launch parity, where ``>=`` would not mean "this launch's")."""
        index = self._counter(counter)
        value = self._count(value, "value", 0)
        self.emit(CounterWait(index, counter, value, self.name, "wait_value", self._release(scope), exact=True))

    # -- bulk (TMA store) groups --------------------------------------------------------------------
    def bulk_commit_group(self) -> None:
        self.emit(BulkCommit(self.name))

    def bulk_wait_group(self, pending: int, read: bool = False) -> None:
        self.emit(BulkWait(pending, read, self.name))

    # -- programmatic dependent launch -------------------------------------------------------------
    def launch_dependents(self) -> None:
        """``griddepcontrol.launch_dependents``: the next grid may start before this one finishes."""
        self.emit(LaunchDependents(self.name))

    def grid_dependency_wait(self) -> None:
        """``griddepcontrol.wait``: block until every earlier grid has completed; its writes are then visible."""
        self.emit(GridDependencyWait(self.name))

    # -- names → numbers ----------------------------------------------------------------------------
    def _barrier(self, name: str) -> int:
        if name not in self.layout.barrier_ids:
            raise ProtocolError(f"no barrier named {name!r}; declared: {self.layout.barrier_names}")
        return self.layout.barrier_ids[name]

    def _own_barrier(self, name: str) -> int:
        index = self._barrier(name)
        home = self.layout.barrier_places[index]
        if home != self.place:
            raise ProtocolError(
                f"{self.name} waits on {name}, which lives in the shared memory of CTA {home.cta} (cluster "
                f"{home.cluster}, device {home.device}); a thread can wait only on its own CTA's mbarriers — it runs "
                f"{self.place}"
            )
        return index

    def _flag(self, name: str) -> int:
        if name not in self.layout.flag_ids:
            raise ProtocolError(f"no flag named {name!r}; declared: {self.layout.flag_names}")
        return self.layout.flag_ids[name]

    def _counter(self, name: str) -> int:
        if name not in self.layout.counter_ids:
            raise ProtocolError(f"no counter named {name!r}; declared: {[c.name for c in self.layout.counters]}")
        return self.layout.counter_ids[name]

    def _count(self, value: Any, what: str, low: int = 1) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ProtocolError(f"{self.name}: {what} = {value!r} is invalid: allowed an int >= {low}")
        return value

    def _scope(self, scope: Any) -> Scope:
        if not isinstance(scope, Scope):
            raise ProtocolError(f"{self.name}: scope = {scope!r} is invalid: allowed a pipes.check.Scope")
        return scope

    def _acquire(self, scope: Any) -> Scope:
        """An mbarrier wait's scope: PTX ``mbarrier.try_wait`` has ``.cta`` and ``.cluster`` only."""
        if scope is not Scope.CTA and scope is not Scope.CLUSTER:
            raise ProtocolError(
                f"{self.name}: an mbarrier wait's scope = {scope!r} is invalid: allowed Scope.CTA or Scope.CLUSTER "
                "(mbarrier.try_wait.acquire.cta / .acquire.cluster)"
            )
        return scope

    def _relaxed(self, relaxed: Any) -> bool:
        if not isinstance(relaxed, bool):
            raise ProtocolError(f"{self.name}: relaxed = {relaxed!r} is invalid: allowed True or False")
        return relaxed

    def _release(self, scope: Scope | None) -> Scope:
        return default_release(self.place) if scope is None else self._scope(scope)
