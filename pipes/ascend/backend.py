"""What a pipeline needs from a back-end (:class:`FlagSink`) and what a kernel body is written against
(:class:`KernelBuilder`).

Three back-ends implement both: :class:`pipes.ascend.emit.tilelang.TileLangBuilder` (calls on a TileLang
``T`` module, real or stand-in), :class:`pipes.ascend.emit.ascendc.AscendCBuilder` (AscendC source text)
and :class:`pipes.ascend.sim.CoreProgram` (the CPU simulator). A kernel body written once against
``KernelBuilder`` therefore prints as TileLang, prints as AscendC and runs in the simulator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from .pairs import CoreType, Pipe


@runtime_checkable
class FlagSink(Protocol):
    """Where a pipeline's synchronization goes. Ids may be Python ints or traced expressions."""

    core: CoreType

    def set_flag(self, src: Pipe, dst: Pipe, event_id: Any) -> None: ...

    def wait_flag(self, src: Pipe, dst: Pipe, event_id: Any) -> None: ...

    def pipe_barrier(self, pipe: Pipe) -> None: ...

    def set_cross_flag(self, pipe: Pipe, flag_id: Any, mode: int = 2) -> None: ...

    def wait_cross_flag(self, pipe: Pipe, flag_id: Any) -> None: ...

    def constant(self, name: str, value: int) -> Any:
        """``value`` as the back-end wants to see a named id (a symbol in printed code, the int elsewhere)."""
        ...


@runtime_checkable
class KernelBuilder(FlagSink, Protocol):
    """A kernel body's vocabulary: loops, conditions, copies, mma and vector ops, plus flags."""

    def loop(self, count: Any, body: Callable[[Any], None]) -> None:
        """Run ``body(i)`` for ``i`` in ``range(count)`` (traced once with a symbolic ``i`` by code emitters)."""
        ...

    def when(self, cond: Any, body: Callable[[], None]) -> None:
        """Run ``body()`` if ``cond`` (a Python bool, or a traced condition that becomes an ``if``)."""
        ...

    def copy(self, src: Any, dst: Any, *, transpose: bool = False) -> None: ...

    def mma(self, a: Any, b: Any, c: Any, *, init: bool) -> None: ...

    def vector(self, op: str, dst: Any, *srcs: Any) -> None: ...
