"""The context an agent function receives: pipelines, data accesses and raw synchronisation.

Everything an agent does goes through its :class:`Ctx` and becomes an operation record
(:mod:`pipes.check.ops`); the checker decides the results (tokens, values read) and so controls the
interleaving. An agent is re-run from the start with scripted results to explore each branch, so its
function must be deterministic given those results.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ProtocolError
from ..participants import Consumer, Producer
from ..spec import Completion
from .ops import (
    Arrive,
    BulkCommit,
    BulkStore,
    BulkWait,
    CounterSignal,
    CounterStore,
    CounterTake,
    CounterWait,
    Fence,
    FlagSet,
    FlagWait,
    Read,
    TmaLoad,
    TryWait,
    Wait,
    Write,
)
from .ordered import OrderedTurn
from .pipeline import ModelPipelineOps, meta_cell, slot_cell
from .protocol import Layout

PROXIES = ("generic", "async")


def global_cell(key: Any) -> str:
    return f"global[{key!r}]"


class Ctx:
    """What an agent works with. Pipeline handles are the core ones over the model backend::

    def epilogue(ctx):
        out = ctx.producer("out")
        for tile in range(8):
            slot = out.acquire()
            ctx.write("out", slot, tile)        # fill the slot's buffer
            ctx.fence_proxy_async()             # order the generic write before the TMA store's read
            ctx.store("out", slot, ("C", tile))  # TMA store of the buffer to global memory
            out.commit(tile)                    # metadata the consumer reads with read_meta
        out.tail()
    """

    def __init__(self, name: str, layout: Layout, emit: Callable[[Any], Any]) -> None:
        self.name = name
        self.layout = layout
        #: Low level: hand one operation record (pipes.check.ops) to the checker, get its result.
        self.emit = emit
        self._views: dict[tuple[str, str], ModelPipelineOps] = {}

    # -- pipelines ----------------------------------------------------------------------------
    def pipeline(self, name: str, role: str | None = None) -> ModelPipelineOps:
        """This agent's explicit-state view of pipeline ``name`` (as consumer role ``role`` on that side)."""
        spec = self._model(name).spec
        consumer_role = spec.consumer(role) if role is not None else spec.consumers[0]
        key = (name, consumer_role.name)
        if key not in self._views:
            self._views[key] = ModelPipelineOps(self, self._model(name), self.layout, consumer_role)
        return self._views[key]

    def producer(self, name: str) -> Producer:
        """A core :class:`pipes.Producer` on pipeline ``name``; this agent is one unit of its producer role."""
        return Producer(self.pipeline(name))

    def consumer(self, name: str, role: str | None = None) -> Consumer:
        """A core :class:`pipes.Consumer` on pipeline ``name``; this agent is one unit of consumer ``role``."""
        spec = self._model(name).spec
        view = self.pipeline(name, role if role is not None else spec.consumer().name)
        return Consumer(view, view.consumer_role)

    def order(self, name: str, group: int) -> OrderedTurn:
        """This agent's turn handle on ordered barrier ``name``, as group ``group``."""
        if name not in self.layout.orders:
            raise ProtocolError(f"no ordered barrier named {name!r}; declared: {sorted(self.layout.orders)}")
        order, barriers = self.layout.orders[name]
        return OrderedTurn(self, order, barriers, group)

    # -- data -----------------------------------------------------------------------------------
    def write(self, pipe: str, slot: int, value: Any, part: Any = None) -> None:
        """Write the buffer of ``slot`` (or one ``part`` of it, when several units each fill their share)."""
        self.emit(Write(slot_cell(pipe, self._slot(pipe, slot), part), value, self.name))

    def read(self, pipe: str, slot: int, part: Any = None, proxy: str = "generic") -> Any:
        """Read the buffer of ``slot`` (or one ``part`` of it); returns what was last written there.

        ``proxy="async"``: a read through the async proxy (a wgmma operand, a TMA copy forwarding the
        slot), which later TMA writes need no ``fence.proxy.async`` to be ordered after.
        """
        return self.emit(Read(slot_cell(pipe, self._slot(pipe, slot), part), self.name, self._async(proxy)))

    def read_meta(self, pipe: str, slot: int) -> Any:
        """Read the metadata committed with ``slot`` (``commit(payload)``; END_OF_STREAM after a tail)."""
        return self.emit(Read(meta_cell(pipe, self._slot(pipe, slot)), self.name))

    def write_global(self, key: Any, value: Any) -> None:
        self.emit(Write(global_cell(key), value, self.name))

    def read_global(self, key: Any, proxy: str = "generic") -> Any:
        """Read a tile of global memory (e.g. one a TMA store wrote); ``proxy`` as for :meth:`read`."""
        return self.emit(Read(global_cell(key), self.name, self._async(proxy)))

    def fence_proxy_async(self) -> None:
        """``fence.proxy.async``: order this agent's reads so far before the async-proxy writes (TMA loads,
        bulk stores) that its later releases let reuse the data, and its writes so far before the
        async-proxy reads (TMA stores) that it issues next or that its later releases let through."""
        self.emit(Fence(self.name, "fence_proxy_async"))

    def store(self, pipe: str, slot: int, key: Any) -> None:
        """Issue a TMA (bulk) store of ``slot``'s buffer to global tile ``key`` (async; joins the open group)."""
        self.emit(BulkStore(slot_cell(pipe, self._slot(pipe, slot)), global_cell(key), self.name))

    def load(self, pipe: str, slot: int, value: Any, nbytes: int | None = None) -> None:
        """Issue a TMA load of ``value`` into ``slot``; it completes ``nbytes`` (default: the spec's) on full[slot]."""
        model = self._model(pipe)
        if model.spec.completion is not Completion.TRANSACTION_BYTES:
            raise ProtocolError(f"load() needs a TRANSACTION_BYTES pipeline; {pipe!r} is {model.spec.completion.name}")
        slot = self._slot(pipe, slot)
        view = self.pipeline(pipe)
        barrier = self.layout.full[pipe][slot]
        size = model.spec.tx_bytes if nbytes is None else nbytes
        name = self.layout.barrier_names[barrier]
        self.emit(TmaLoad(slot_cell(pipe, slot), value, barrier, name, size, view.armed.get(slot), self.name))

    # -- raw synchronisation ----------------------------------------------------------------------
    def arrive(self, barrier: str, count: int = 1, completion: int | None = None, tx: int = 0) -> None:
        self.emit(Arrive(self._barrier(barrier), barrier, count, completion, self.name, "arrive", tx))

    def wait(self, barrier: str, parity: int, completion: int | None = None) -> None:
        self.emit(Wait(self._barrier(barrier), barrier, parity, completion, self.name, "wait"))

    def try_wait(self, barrier: str, parity: int, completion: int | None = None) -> bool:
        return self.emit(TryWait(self._barrier(barrier), barrier, parity, completion, self.name, "try_wait"))

    def set_flag(self, flag: str) -> None:
        self.emit(FlagSet(self._flag(flag), flag, self.name, "set_flag"))

    def wait_flag(self, flag: str) -> None:
        self.emit(FlagWait(self._flag(flag), flag, self.name, "wait_flag"))

    def signal(self, counter: str, by: int = 1) -> None:
        """Add ``by`` to ``counter`` with release semantics (Ascend ``set_cross_flag``; ``red.release.add``)."""
        self.emit(CounterSignal(self._counter(counter), counter, self._count(by, "by"), self.name, "signal"))

    def take(self, counter: str) -> None:
        """Block while ``counter`` is 0, then take one (Ascend ``wait_cross_flag``; a semaphore acquire)."""
        self.emit(CounterTake(self._counter(counter), counter, self.name, "take"))

    def wait_counter(self, counter: str, at_least: int = 1) -> None:
        """Block until ``counter`` >= ``at_least`` (an acquire load of a ready flag; a threshold quorum)."""
        index = self._counter(counter)
        self.emit(CounterWait(index, counter, self._count(at_least, "at_least"), self.name, "wait_counter"))

    def store_counter(self, counter: str, value: int) -> None:
        """Store ``value`` into ``counter`` with release semantics (``st.release`` of an epoch/ready flag)."""
        index = self._counter(counter)
        self.emit(CounterStore(index, counter, self._count(value, "value", 0), self.name, "store_counter"))

    def bulk_commit_group(self) -> None:
        self.emit(BulkCommit(self.name))

    def bulk_wait_group(self, pending: int, read: bool = False) -> None:
        self.emit(BulkWait(pending, read, self.name))

    # -- bookkeeping ---------------------------------------------------------------------------
    def outstanding(self) -> tuple[str, ...]:
        """What this agent leaves unbalanced on its pipelines when its function returns."""
        return tuple(problem for view in self._views.values() for problem in view.outstanding())

    def _model(self, name: str):
        if name not in self.layout.pipelines:
            raise ProtocolError(f"no pipeline named {name!r}; declared: {sorted(self.layout.pipelines)}")
        return self.layout.pipelines[name]

    def _slot(self, pipe: str, slot: Any) -> int:
        stages = self._model(pipe).spec.stages
        if isinstance(slot, bool) or not isinstance(slot, int) or not 0 <= slot < stages:
            raise ProtocolError(f"slot {slot!r} of pipeline {pipe!r} is invalid: allowed [0, {stages - 1}]")
        return slot

    def _async(self, proxy: str) -> bool:
        if proxy not in PROXIES:
            raise ProtocolError(f"{self.name}: proxy = {proxy!r} is invalid: allowed one of {PROXIES}")
        return proxy == "async"

    def _barrier(self, name: str) -> int:
        if name not in self.layout.barrier_ids:
            raise ProtocolError(f"no barrier named {name!r}; declared: {self.layout.barrier_names}")
        return self.layout.barrier_ids[name]

    def _counter(self, name: str) -> int:
        if name not in self.layout.counter_ids:
            raise ProtocolError(f"no counter named {name!r}; declared: {[c.name for c in self.layout.counters]}")
        return self.layout.counter_ids[name]

    def _count(self, value: Any, what: str, low: int = 1) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ProtocolError(f"{self.name}: {what} = {value!r} is invalid: allowed an int >= {low}")
        return value

    def _flag(self, name: str) -> int:
        if name not in self.layout.flag_ids:
            raise ProtocolError(f"no flag named {name!r}; declared: {self.layout.flag_names}")
        return self.layout.flag_ids[name]
