"""The context an agent function receives: pipelines, data accesses and raw synchronisation.

Everything an agent does goes through its :class:`Ctx` and becomes an operation record
(:mod:`pipes.check.ops`); the checker decides the results (tokens, values read) and so controls the
interleaving. An agent is re-run from the start with scripted results to explore each branch, so its
function must be deterministic given those results. Data accesses live in :mod:`pipes.check.ctx_data`,
hand-written synchronisation in :mod:`pipes.check.ctx_sync`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ProtocolError
from ..participants import Consumer, Producer
from .ctx_base import CtxBase
from .ctx_data import PROXIES, DataOps, global_cell, shared_cell
from .ctx_sync import SyncOps
from .layout import Layout
from .ordered import OrderedTurn
from .pipeline import ModelPipelineOps
from .scope import Place

__all__ = ["PROXIES", "Ctx", "global_cell", "shared_cell"]


class Ctx(CtxBase, DataOps, SyncOps):
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

    def __init__(self, name: str, layout: Layout, emit: Callable[[Any], Any], place: Place | None = None) -> None:
        super().__init__(name, layout, emit, place)
        self._views: dict[tuple[str, str], ModelPipelineOps] = {}

    # -- pipelines ----------------------------------------------------------------------------
    def pipeline(self, name: str, role: str | None = None) -> ModelPipelineOps:
        """This agent's explicit-state view of pipeline ``name`` (as consumer role ``role`` on that side)."""
        model = self._model(name)
        spec = model.spec
        consumer_role = spec.consumer(role) if role is not None else spec.consumers[0]
        key = (name, consumer_role.name)
        if key not in self._views:
            if self.place.cta not in model.ctas or (model.ctas != (0,) and self.place.device != 0):
                raise ProtocolError(
                    f"{self.name} runs {self.place} but pipeline {name!r} has copies only in CTAs {list(model.ctas)} "
                    "(of cluster 0 on device 0): ModelPipeline(..., ctas=...)"
                )
            self._views[key] = ModelPipelineOps(self, model, self.layout, consumer_role)
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
        turn = OrderedTurn(self, order, barriers, group)
        self.turns.add((name, group))
        return turn

    # -- bookkeeping ---------------------------------------------------------------------------
    def outstanding(self) -> tuple[str, ...]:
        """What this agent leaves unbalanced on its pipelines when its function returns."""
        return tuple(problem for view in self._views.values() for problem in view.outstanding())
