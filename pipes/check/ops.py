"""The primitive operations an agent performs, as the checker sees them.

Agents never touch the model state directly: every pipeline call, data access and raw barrier or flag
operation becomes one of these immutable records, emitted through the agent's context. The explorer
replays them against the model (:mod:`pipes.check.machine`, :mod:`pipes.check.move`).

Two properties of an operation drive the exploration:

* ``sync`` — it synchronises with other agents (an mbarrier or flag operation). Only these are
  interleaving points; the local operations after one (data reads and writes, bulk-copy bookkeeping)
  run with it as one step, because hazards are judged by happens-before, not by wall-clock order.
* ``branching`` — its result depends on the interleaving (``try_wait`` tokens, data reads), so the
  agent's later operations may differ per result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import ProtocolError
from .scope import Scope


def _require_hashable(value: Any, what: str) -> None:
    # Values live in the model state, which is hashed for the visited set.
    try:
        hash(value)
    except TypeError:
        raise ProtocolError(f"{what} {value!r} is not hashable: use a tuple, number or string") from None


def _acquire(scope: Scope) -> str:
    """A wait's acquire scope in its trace line (the default, ``.cta``, is not shown)."""
    return "" if scope is Scope.CTA else f" [acquire{scope.ptx}]"


def _ordering(scope: Scope, relaxed: bool) -> str:
    return f"relaxed{scope.ptx}: publishes nothing" if relaxed else f"release{scope.ptx}"


def _completion(completion: int | None) -> str:
    return "" if completion is None else f", completion #{completion}"


@dataclass(frozen=True, slots=True)
class Start:
    """The agent has not run yet; its first step runs the operations before its first sync."""

    sync: ClassVar[bool] = True
    branching: ClassVar[bool] = False

    def describe(self) -> str:
        return "starts"


@dataclass(frozen=True, slots=True)
class Wait:
    """``mbarrier.try_wait.parity`` in a loop: blocks until the phase with ``parity`` has completed.

    ``completion`` is the phase number the agent means to observe (from its cursor's ``count``), or
    None for raw waits the checker cannot judge.
    """

    barrier: int
    barrier_name: str
    parity: int
    completion: int | None
    who: str
    call: str
    scope: Scope = Scope.CTA
    """The acquire's scope (``mbarrier.try_wait...acquire.cta`` by default, as the library's waits;
    ``.cluster`` to synchronise with an arrive released by a peer CTA)."""

    sync: ClassVar[bool] = True
    branching: ClassVar[bool] = False

    def describe(self) -> str:
        where = f"{self.barrier_name} parity {self.parity}{_completion(self.completion)}{_acquire(self.scope)}"
        return f"{self.call}: wait {where}"


@dataclass(frozen=True, slots=True)
class TryWait:
    """One ``mbarrier.try_wait.parity`` probe; the result (a token) is True when the phase completed."""

    barrier: int
    barrier_name: str
    parity: int
    completion: int | None
    who: str
    call: str
    scope: Scope = Scope.CTA
    """The acquire's scope, as :attr:`Wait.scope`."""

    sync: ClassVar[bool] = True
    branching: ClassVar[bool] = True

    def describe(self) -> str:
        where = f"{self.barrier_name} parity {self.parity}{_completion(self.completion)}{_acquire(self.scope)}"
        return f"{self.call}: try_wait {where}"


@dataclass(frozen=True, slots=True)
class Arrive:
    """``count`` arrivals on a barrier (``tx`` > 0: ``arrive.expect_tx`` of that many bytes too)."""

    barrier: int
    barrier_name: str
    count: int
    completion: int | None
    who: str
    call: str
    tx: int = 0
    scope: Scope = Scope.CTA
    """The release's scope (``mbarrier.arrive.release.cta`` by default; ``.cluster`` for a peer CTA's barrier)."""

    sync: ClassVar[bool] = True
    branching: ClassVar[bool] = False

    def describe(self) -> str:
        expect = f" + expect_tx {self.tx} B" if self.tx else ""
        into = "" if self.completion is None else f" (for completion #{self.completion})"
        scoped = "" if self.scope is Scope.CTA else f" [release{self.scope.ptx}]"
        return f"{self.call}: arrive on {self.barrier_name} ×{self.count}{expect}{into}{scoped}"


@dataclass(frozen=True, slots=True)
class FlagSet:
    """Set a binary flag (Ascend ``set_flag``): an error if it is already set."""

    flag: int
    flag_name: str
    who: str
    call: str

    sync: ClassVar[bool] = True
    branching: ClassVar[bool] = False

    def describe(self) -> str:
        return f"{self.call}: set_flag {self.flag_name}"


@dataclass(frozen=True, slots=True)
class FlagWait:
    """Wait for a binary flag (Ascend ``wait_flag``): blocks until it is set, then clears it."""

    flag: int
    flag_name: str
    who: str
    call: str

    sync: ClassVar[bool] = True
    branching: ClassVar[bool] = False

    def describe(self) -> str:
        return f"{self.call}: wait_flag {self.flag_name}"


@dataclass(frozen=True, slots=True)
class CounterSignal:
    """Add ``by`` to a counter with release semantics (``set_cross_flag``, ``red.release.add``)."""

    counter: int
    counter_name: str
    by: int
    who: str
    call: str
    scope: Scope = Scope.GPU
    relaxed: bool = False
    """A relaxed add (no fence or memory barrier before it): it counts, but publishes nothing."""

    sync: ClassVar[bool] = True
    branching: ClassVar[bool] = False

    def describe(self) -> str:
        return f"{self.call}: signal {self.counter_name} +{self.by} [{_ordering(self.scope, self.relaxed)}]"


@dataclass(frozen=True, slots=True)
class CounterStore:
    """Store ``value`` into a counter with release semantics (``st.release`` of an epoch or ready flag)."""

    counter: int
    counter_name: str
    value: int
    who: str
    call: str
    scope: Scope = Scope.GPU
    relaxed: bool = False
    """A relaxed store (no fence or memory barrier before it): readers see the value, but it publishes nothing."""

    sync: ClassVar[bool] = True
    branching: ClassVar[bool] = False

    def describe(self) -> str:
        return f"{self.call}: store {self.counter_name} = {self.value} [{_ordering(self.scope, self.relaxed)}]"


@dataclass(frozen=True, slots=True)
class CounterTake:
    """Block while the counter is 0, then take one (``wait_cross_flag``; a semaphore acquire)."""

    counter: int
    counter_name: str
    who: str
    call: str
    scope: Scope = Scope.GPU

    sync: ClassVar[bool] = True
    branching: ClassVar[bool] = False

    def describe(self) -> str:
        return f"{self.call}: take one from {self.counter_name}"


@dataclass(frozen=True, slots=True)
class CounterWait:
    """Block until the counter is at least ``at_least`` (an acquire load of a ready flag; a quorum), or,
    with ``exact``, until it equals ``at_least`` (a flag polled for one token of a few that alternate)."""

    counter: int
    counter_name: str
    at_least: int
    who: str
    call: str
    scope: Scope = Scope.GPU
    exact: bool = False

    sync: ClassVar[bool] = True
    branching: ClassVar[bool] = False

    @property
    def relation(self) -> str:
        return "==" if self.exact else ">="

    def passes(self, value: int) -> bool:
        return value == self.at_least if self.exact else value >= self.at_least

    def describe(self) -> str:
        return f"{self.call}: wait until {self.counter_name} {self.relation} {self.at_least} [acquire{self.scope.ptx}]"


@dataclass(frozen=True, slots=True)
class LaunchDependents:
    """``griddepcontrol.launch_dependents``: the next grid may start (programmatic dependent launch)."""

    who: str

    sync: ClassVar[bool] = True
    branching: ClassVar[bool] = False

    def describe(self) -> str:
        return "griddepcontrol.launch_dependents"


@dataclass(frozen=True, slots=True)
class GridDependencyWait:
    """``griddepcontrol.wait`` (``cudaGridDependencySynchronize``): blocks until every earlier grid has
    completed, and its memory operations are visible."""

    who: str

    sync: ClassVar[bool] = True
    branching: ClassVar[bool] = False

    def describe(self) -> str:
        return "griddepcontrol.wait: the earlier grids have completed"


@dataclass(frozen=True, slots=True)
class Write:
    """The agent writes ``value`` into a data cell (a slot's buffer, its metadata, a global tile)."""

    cell: str
    value: Any
    who: str

    sync: ClassVar[bool] = False
    branching: ClassVar[bool] = False

    def __post_init__(self) -> None:
        _require_hashable(self.value, f"the value written to {self.cell}")

    def describe(self) -> str:
        return f"write {self.cell} = {self.value!r}"


@dataclass(frozen=True, slots=True)
class Read:
    """The agent reads a data cell; the result is the value it holds.

    ``async_proxy``: the read goes through the async proxy (a wgmma operand, a TMA/bulk copy forwarding
    the data), so later async-proxy writes are ordered after it without a ``fence.proxy.async``.
    """

    cell: str
    who: str
    async_proxy: bool = False

    sync: ClassVar[bool] = False
    branching: ClassVar[bool] = True

    def describe(self) -> str:
        return f"read {self.cell}{' (async proxy)' if self.async_proxy else ''}"


@dataclass(frozen=True, slots=True)
class Fence:
    """``fence.proxy.async``: the agent's generic reads so far are ordered before later async-proxy writes
    that its following releases let through (TMA loads, bulk stores refilling what it read), and its
    generic writes so far before later async-proxy reads (the TMA stores it issues, or that its
    following releases let another thread issue)."""

    who: str
    call: str

    sync: ClassVar[bool] = False
    branching: ClassVar[bool] = False

    def describe(self) -> str:
        return f"{self.call}: fence.proxy.async"


@dataclass(frozen=True, slots=True)
class BulkStore:
    """Issue a bulk (TMA) store from shared-memory cell ``src`` to global cell ``dst``.

    It joins the issuing thread's current (uncommitted) bulk async-group; it reads ``src`` and then
    writes ``dst`` asynchronously.
    """

    src: str
    dst: str
    who: str

    sync: ClassVar[bool] = False
    branching: ClassVar[bool] = False

    def describe(self) -> str:
        return f"issue TMA store {self.src} → {self.dst}"


@dataclass(frozen=True, slots=True)
class BulkCommit:
    """``cp.async.bulk.commit_group``: the stores issued since the last commit become one group."""

    who: str

    sync: ClassVar[bool] = False
    branching: ClassVar[bool] = False

    def describe(self) -> str:
        return "bulk commit_group"


@dataclass(frozen=True, slots=True)
class BulkWait:
    """``cp.async.bulk.wait_group[.read] pending``: all but the newest ``pending`` groups are done.

    With ``read`` only the shared-memory sources are known to be read; without it the global writes
    are complete too.
    """

    pending: int
    read: bool
    who: str

    sync: ClassVar[bool] = False
    branching: ClassVar[bool] = False

    def describe(self) -> str:
        return f"bulk wait_group{'.read' if self.read else ''} {self.pending}"


@dataclass(frozen=True, slots=True)
class TmaLoad:
    """Issue a TMA load of ``value`` into cell ``cell`` that completes ``nbytes`` on ``barrier``.

    The data write and the transaction-byte completion happen later, as one asynchronous event.
    ``also``: further ``(cell, barrier, barrier_name)`` destinations of a multicast load (other CTAs of
    the cluster); each lands as an event of its own.
    """

    cell: str
    value: Any
    barrier: int
    barrier_name: str
    nbytes: int
    completion: int | None
    who: str
    also: tuple[tuple[str, int, str], ...] = ()

    sync: ClassVar[bool] = False
    branching: ClassVar[bool] = False

    def __post_init__(self) -> None:
        _require_hashable(self.value, f"the value loaded into {self.cell}")

    @property
    def destinations(self) -> tuple[tuple[str, int, str], ...]:
        return ((self.cell, self.barrier, self.barrier_name), *self.also)

    def describe(self) -> str:
        where = " + ".join(f"{cell} (completes {self.nbytes} B on {bar})" for cell, _, bar in self.destinations)
        return f"issue TMA load {self.value!r} → {where}"


@dataclass(frozen=True, slots=True)
class Done:
    """The agent's function returned. ``problems`` lists what it left unbalanced (empty if nothing)."""

    problems: tuple[str, ...] = ()

    sync: ClassVar[bool] = True
    branching: ClassVar[bool] = False

    def describe(self) -> str:
        return "finished"


@dataclass(frozen=True, slots=True)
class Crash:
    """The agent's function raised (a protocol misuse the handles detected, or the agent's own error)."""

    message: str

    sync: ClassVar[bool] = True
    branching: ClassVar[bool] = False

    def describe(self) -> str:
        return f"raised {self.message}"


TERMINAL = (Done, Crash)
