"""The data accesses an agent context offers: slot buffers, shared and global memory, TMA loads and stores.

A mixin of :class:`pipes.check.context.Ctx`; every call becomes one operation record. Cells are named
by what they are (``out.slot[1]``, ``out.meta[1]``, ``smem['c']``, ``global[('C', 3)]``); a pipeline or
shared buffer of a CTA other than 0 carries ``@ctaN``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import ProtocolError
from ..spec import Completion
from .ops import BulkStore, Fence, Read, TmaLoad, Write
from .pipeline import meta_cell, slot_cell
from .scope import Place

if TYPE_CHECKING:
    from .declarations import ModelPipeline
    from .layout import Layout
    from .pipeline import ModelPipelineOps

PROXIES = ("generic", "async")


def global_cell(key: Any) -> str:
    return f"global[{key!r}]"


def shared_cell(buffer: Any, part: Any = None, cta: int = 0) -> str:
    at = "" if cta == 0 else f"@cta{cta}"
    return f"smem[{buffer!r}]{at}" if part is None else f"smem[{buffer!r}].{part}{at}"


class DataOps:
    """Reads and writes of protected data, and the asynchronous copies that move it."""

    name: str
    layout: Layout
    place: Place
    emit: Callable[[Any], Any]

    # -- pipeline slots -------------------------------------------------------------------------------
    def write(self, pipe: str, slot: int, value: Any, part: Any = None) -> None:
        """Write the buffer of ``slot`` (or one ``part`` of it, when several units each fill their share)."""
        self.emit(Write(self._slot_cell(pipe, slot, part), value, self.name))

    def read(self, pipe: str, slot: int, part: Any = None, proxy: str = "generic") -> Any:
        """Read the buffer of ``slot`` (or one ``part`` of it); returns what was last written there.

        ``proxy="async"``: a read through the async proxy (a wgmma operand, a TMA copy forwarding the
        slot), which later TMA writes need no ``fence.proxy.async`` to be ordered after.
        """
        return self.emit(Read(self._slot_cell(pipe, slot, part), self.name, self._async(proxy)))

    def read_meta(self, pipe: str, slot: int) -> Any:
        """Read the metadata committed with ``slot`` (``commit(payload)``; END_OF_STREAM after a tail)."""
        model = self._model(pipe)
        return self.emit(Read(meta_cell(pipe, self._slot(pipe, slot), model.cta_suffix(self.place.cta)), self.name))

    def load(
        self,
        pipe: str,
        slot: int,
        value: Any,
        nbytes: int | None = None,
        part: Any = None,
        multicast: bool = False,
    ) -> None:
        """Issue a TMA load of ``value`` into ``slot`` (or into one ``part`` of it: an A or a B tile, a
        multicast half); it completes ``nbytes`` on ``full[slot]`` — by default the spec's ``tx_bytes``,
        which a part must give itself (the stage's ``tx_bytes`` is the sum of its parts).
        ``multicast=True``: the load lands in every CTA of the pipeline's ``ctas`` and completes its bytes
        on each one's ``full[slot]``."""
        model = self._model(pipe)
        if model.spec.completion is not Completion.TRANSACTION_BYTES:
            raise ProtocolError(f"load() needs a TRANSACTION_BYTES pipeline; {pipe!r} is {model.spec.completion.name}")
        if part is not None and nbytes is None:
            raise ProtocolError(
                f"{self.name}: a load of part {part!r} of {pipe} slot {slot} needs nbytes (the stage's tx_bytes = "
                f"{model.spec.tx_bytes} is the sum of its parts)"
            )
        if multicast and not model.multicast:
            raise ProtocolError(f"{self.name}: load(multicast=True) needs ModelPipeline({pipe!r}, multicast=True)")
        slot = self._slot(pipe, slot)
        size = model.spec.tx_bytes if nbytes is None else nbytes
        armed = self.pipeline(pipe).armed.get(slot)
        ctas = [self.place.cta, *(c for c in model.ctas if c != self.place.cta)] if multicast else [self.place.cta]
        destinations = []
        for cta in ctas:
            barrier = self.layout.full[pipe, cta][slot]
            destinations.append(
                (slot_cell(pipe, slot, part, model.cta_suffix(cta)), barrier, self.layout.barrier_names[barrier])
            )
        (cell, barrier, name), *also = destinations
        self.emit(TmaLoad(cell, value, barrier, name, size, armed, self.name, tuple(also)))

    def store(self, pipe: str, slot: int, key: Any) -> None:
        """Issue a TMA (bulk) store of ``slot``'s buffer to global tile ``key`` (async; joins the open group)."""
        self.emit(BulkStore(self._slot_cell(pipe, slot), global_cell(key), self.name))

    # -- shared memory by hand ----------------------------------------------------------------------
    def write_shared(self, buffer: Any, value: Any, part: Any = None) -> None:
        """``st.shared`` into a shared-memory buffer of this agent's CTA (a hand-written kernel's smem)."""
        self.emit(Write(shared_cell(buffer, part, self.place.cta), value, self.name))

    def read_shared(self, buffer: Any, part: Any = None, proxy: str = "generic") -> Any:
        """``ld.shared`` of a shared-memory buffer (``proxy="async"``: a wgmma operand, a TMA forwarding it)."""
        return self.emit(Read(shared_cell(buffer, part, self.place.cta), self.name, self._async(proxy)))

    def tma_load(
        self,
        buffer: Any,
        value: Any,
        barrier: str,
        nbytes: int,
        completion: int | None = None,
        part: Any = None,
    ) -> None:
        """A hand-written TMA load (``cp.async.bulk.tensor … mbarrier::complete_tx``) of ``value`` into a
        shared buffer of this CTA, completing ``nbytes`` on the raw barrier ``barrier`` (for round
        ``completion``; arm it with ``ctx.arrive(barrier, tx=...)``)."""
        index = self._barrier(barrier)
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 1:
            raise ProtocolError(f"{self.name}: tma_load nbytes = {nbytes!r} is invalid: allowed an int >= 1")
        cell = shared_cell(buffer, part, self.place.cta)
        self.emit(TmaLoad(cell, value, index, barrier, nbytes, completion, self.name))

    def tma_store(self, buffer: Any, key: Any, part: Any = None) -> None:
        """A hand-written TMA store of a shared buffer to global tile ``key`` (joins the open bulk group)."""
        self.emit(BulkStore(shared_cell(buffer, part, self.place.cta), global_cell(key), self.name))

    # -- global memory -----------------------------------------------------------------------------
    def write_global(self, key: Any, value: Any) -> None:
        """``st.global`` of a tile or word of global (or host-mapped) memory."""
        self.emit(Write(global_cell(key), value, self.name))

    def read_global(self, key: Any, proxy: str = "generic") -> Any:
        """Read a tile of global memory (e.g. one a TMA store wrote); ``proxy`` as for :meth:`read`."""
        return self.emit(Read(global_cell(key), self.name, self._async(proxy)))

    def fence_proxy_async(self) -> None:
        """``fence.proxy.async``: order this agent's reads so far before the async-proxy writes (TMA loads,
        bulk stores) that its later releases let reuse the data, and its writes so far before the
        async-proxy reads (TMA stores) that it issues next or that its later releases let through."""
        self.emit(Fence(self.name, "fence_proxy_async"))

    # -- helpers ------------------------------------------------------------------------------------
    def _slot_cell(self, pipe: str, slot: Any, part: Any = None) -> str:
        model = self._model(pipe)
        return slot_cell(pipe, self._slot(pipe, slot), part, model.cta_suffix(self.place.cta))

    def _model(self, name: str) -> ModelPipeline:
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

    # Provided by the other mixins / Ctx:
    _barrier: Callable[[str], int]
    pipeline: Callable[..., ModelPipelineOps]
