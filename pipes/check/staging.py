"""CPU model of a TMA-store staging ring (``pipes.cute.TmaStoreStaging``) for the checker.

The kernel side: every epilogue thread ``acquire``s a staging buffer (``wait_group.read stages-1``, then a
barrier), writes its part, ``publish``es it (``fence.proxy.async``, then the barrier), one thread
TMA-stores it, and every thread ``commit``s (``commit_group``). :class:`StagingHandle` makes exactly these
calls on the model: the barrier is a :class:`~pipes.check.ModelBarrier` that every writer arrives on and
waits for (a ``bar.sync``), and the storing agent's bulk engine reads the buffer as late as its waits
allow. So a buffer rewritten before its store read it is reported with the interleaving that shows it:
the store then reads a version of the buffer its issuer never published (READ_UNCOMMITTED), or a writer
overwrites a version the store engine read without the writer knowing (OVERWRITE_UNRELEASED).

:func:`staging_protocol` builds the standard protocol from a kernel's own declaration (anything with an
int ``stages`` and a ``name``): ``writers`` agents, the first of which also stores, ``tiles`` tiles; at the
end the storing agent waits for the global writes (the kernel has ended) and checks every stored tile.
``bug`` plants one of :data:`BUGS` to show what the checker reports. This module imports no backend.
"""

from __future__ import annotations

from typing import Any

from ..errors import invalid
from ..state import PipelineState, advance_position, staging_in_flight
from .context import Ctx, global_cell
from .ops import BulkStore, Write
from .protocol import Agent, ModelBarrier, Protocol

__all__ = ["BUGS", "StagingHandle", "buffer_cell", "staging_protocol"]

#: Planted defects: the acquire's ``.read`` wait left out; the publish's proxy fence left out; the barrier
#: left out of both calls (the writers never wait for the storing thread); a batch acquired with the
#: one-buffer wait depth (``stages - 1`` instead of ``stages - slots``).
BUGS = ("no_wait", "no_fence", "no_sync", "short_wait")


def buffer_cell(name: str, slot: int, part: Any = None) -> str:
    """The data cell of staging buffer ``slot`` (one writer's ``part`` of it)."""
    return f"{name}.buf[{slot}]" if part is None else f"{name}.buf[{slot}].{part}"


class StagingHandle:
    """One agent's staging handle, with the calls of ``pipes.cute.TmaStoreStagingProducer``.

    ``sync``: the name of the protocol's barrier over every writer (None: no barrier). The cursor is the
    core :class:`pipes.state.PipelineState`, as in the kernel.
    """

    def __init__(self, ctx: Ctx, name: str, stages: int, sync: str | None, bug: str | None = None) -> None:
        self.ctx = ctx
        self.name = name
        self.state = PipelineState(stages)
        self.sync_barrier = sync
        self.bug = bug
        self._phase = 0

    @property
    def count(self) -> int:
        return self.state.count

    def _sync(self) -> None:
        if self.sync_barrier is None or self.bug == "no_sync":
            return
        self.ctx.arrive(self.sync_barrier)
        self.ctx.wait(self.sync_barrier, self._phase)
        self._phase ^= 1

    def acquire(self, slots: int = 1) -> int:
        if self.bug != "no_wait":
            depth = staging_in_flight(self.state.stages, 1 if self.bug == "short_wait" else slots)
            self.ctx.bulk_wait_group(depth, read=True)
        self._sync()
        return self.state.index

    def slot(self, ahead: int) -> int:
        """Buffer ``ahead`` of a batch from ``acquire(slots)``."""
        return advance_position(self.state.index, self.state.phase, ahead, self.state.stages)[0]

    def write(self, slot: int, value: Any, part: Any = None) -> None:
        """``st.shared`` of this agent's ``part`` of buffer ``slot``."""
        self.ctx.emit(Write(buffer_cell(self.name, slot, part), value, self.ctx.name))

    def publish(self) -> None:
        if self.bug != "no_fence":
            self.ctx.fence_proxy_async()
        self._sync()

    def store(self, slot: int, key: Any, parts: tuple[Any, ...] = (None,)) -> None:
        """The TMA store of buffer ``slot`` (every writer's part) to the global tile ``key``."""
        for part in parts:
            dst = global_cell(key if part is None else (key, part))
            self.ctx.emit(BulkStore(buffer_cell(self.name, slot, part), dst, self.ctx.name))

    def commit(self) -> int:
        index = self.state.index
        self.ctx.bulk_commit_group()
        self.state.advance()
        return index

    def tail(self) -> None:
        self.ctx.bulk_wait_group(0, read=True)


def staging_protocol(
    staging: Any, tiles: int = 4, writers: int = 2, bug: str | None = None, batch: int = 1
) -> Protocol:
    """``writers`` epilogue agents stage ``tiles`` tiles through ``staging`` (``.stages``, ``.name``),
    ``batch`` tiles per acquire (one wait and one barrier pair for ``batch`` buffers).

    Agent 0 also issues the TMA stores. After its tail it waits for the global writes and checks that
    every tile holds what the writers staged for it.
    """
    stages = getattr(staging, "stages", None)
    name = getattr(staging, "name", "staging")
    owner = "staging_protocol"
    if isinstance(stages, bool) or not isinstance(stages, int) or stages < 1:
        raise invalid(owner, "staging.stages", stages, "an int >= 1 (a pipes.cute.TmaStoreStaging)")
    for field, value, low in (("tiles", tiles, 1), ("writers", writers, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise invalid(owner, field, value, f"an int >= {low}")
    if bug is not None and bug not in BUGS:
        raise invalid(owner, "bug", bug, f"None or one of {BUGS}")
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= stages or tiles % batch:
        raise invalid(owner, "batch", batch, f"an int in [1, {stages}] (the buffers) dividing tiles = {tiles}")
    sync = f"{name}_sync" if writers > 1 else None
    parts = tuple(range(writers))

    def writer(w: int):
        def run(ctx: Ctx) -> None:
            st = StagingHandle(ctx, name, stages, sync, bug)
            for first in range(0, tiles, batch):
                st.acquire(slots=batch)
                for j in range(batch):
                    st.write(st.slot(j), first + j, part=w)
                st.publish()
                for j in range(batch):
                    if w == 0:
                        st.store(st.slot(0), ("C", first + j), parts)
                    st.commit()
            st.tail()
            if w == 0:
                ctx.bulk_wait_group(0)  # the kernel has ended: every global write is complete
                for tile in range(tiles):
                    for part in parts:
                        got = ctx.read_global((("C", tile), part))
                        assert got == tile, f"{ctx.name}: global tile {tile} part {part} holds {got!r}"

        return run

    agents = [Agent(f"epi{w}", writer(w)) for w in range(writers)]
    barriers = [ModelBarrier(sync, writers)] if sync is not None else []
    label = f"{name}_staging" + (f"_batch{batch}" if batch > 1 else "") + (f"_{bug}" if bug else "")
    return Protocol(label, agents, barriers=barriers)
