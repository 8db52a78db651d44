"""DSL-carried pipeline cursors and handles: the core ring arithmetic, traced into CuTe kernels.

Use::

    from pipes.cute.state import CuteState, make_state

    state = make_state(stages=4, start_phase=1)        # producer cursor: slot 0, parity 1
    for k in cutlass.range(n):                         # a *dynamic* loop
        cute.arch.mbarrier_wait(empty + state.index, state.phase)
        state.advance()                                # phase flips on every wrap, also here

:class:`CuteState` is :class:`pipes.state.PipelineState` (whose ``advance`` calls the core
:func:`pipes.state.advance_position`; nothing here re-implements index/phase arithmetic) plus the DSL
loop-carry protocol (``__extract_mlir_values__`` / ``__new_from_mlir_values__`` /
``__get_mlir_types__``), so the cursor is a loop-carried value of ``cutlass.range`` / ``while`` loops.

Fields are ``Uint32``: the core ring arithmetic is ``%`` and ``//``; on unsigned values a power-of-two
ring compiles to ``and``/``shr`` (3 instructions per advance), on signed ``Int32`` to ~20 (sign
fix-ups). Use ``state.index`` anywhere an ``Int32`` index is accepted.

:class:`CuteProducer` / :class:`CuteConsumer` are the core handles
(:class:`pipes.participants.Producer` / :class:`~pipes.participants.Consumer`) made loop-carriable:
both of their cursors travel through dynamic loops; the ops object (barrier pointers, static config)
is captured by reference. The core handles themselves cannot cross a dynamic loop (the DSL rejects a
plain Python object it must carry), which is why every pipeline here hands out these.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from cutlass import Uint32

try:  # the DSL's value-tree registry (nvidia-cutlass-dsl 4.8; not a public API)
    from cutlass.base_dsl.utils.tree_utils import register_pytree_node
except ImportError:  # pragma: no cover - another DSL version: fall back to the carry-nothing protocol
    register_pytree_node = None

from ..participants import Consumer, Producer
from ..spec import ArrivalUnit, Completion, PipelineSpec, Role
from ..state import PipelineState

__all__ = ["CuteConsumer", "CuteProducer", "CuteState", "TraceStatic", "make_state", "state_at"]

_FIELDS = 3  # index, phase, count


class TraceStatic:
    """Mixin for trace-time Python objects (configs, declarations) used inside ``@cute.jit`` code.

    Two things must work with them, and a plain Python object gets only the first:

    * as a Python condition — ``if multicast:``, ``x if pipe else y``, ``cutlass.const_expr(pipe)`` —
      evaluated at trace time like any Python value;
    * assigned inside a dynamic ``if``/``for``/``while`` body, which the DSL carries out of the body
      (a plain object is rejected there: "a plain Python value ... cannot be turned into a Runtime value").

    The DSL's usual way to carry an object, the ``__extract_mlir_values__`` protocol, would also make
    it a *run-time* value, which a condition then fails to convert ("Cannot convert ... to Boolean").
    So each subclass is instead registered as a leaf of the DSL's value trees that carries no values
    and is rebuilt as the very same object (:func:`_register_static`).
    """

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _register_static(cls)


def _static_to_iterable(obj: Any) -> tuple[Any, list[Any]]:
    return SimpleNamespace(original_obj=obj), []


def _static_from_iterable(metadata: Any, children: Any) -> Any:
    return metadata.original_obj


def _register_static(cls: type) -> None:
    """Let dynamic control flow carry instances of ``cls`` as themselves, holding no DSL values.

    Uses the DSL's value-tree registry (``cutlass.base_dsl.utils.tree_utils.register_pytree_node``,
    nvidia-cutlass-dsl 4.8): keyed by exact type, hence one registration per subclass. Without it (another
    DSL version) the class gets the empty MLIR-values protocol instead: carried in dynamic control flow,
    but then not usable as a trace-time condition.
    """
    if register_pytree_node is not None:
        register_pytree_node(cls, _static_to_iterable, _static_from_iterable)
        return
    cls.__extract_mlir_values__ = lambda self: []  # type: ignore[attr-defined]
    cls.__get_mlir_types__ = lambda self: []  # type: ignore[attr-defined]
    cls.__new_from_mlir_values__ = lambda self, values: self  # type: ignore[attr-defined]


# The backend-neutral declarations and enums (pipes.spec imports no DSL): the same treatment, here.
for _cls in (PipelineSpec, Role, ArrivalUnit, Completion):
    _register_static(_cls)


def _u32(value: Any) -> Any:
    """A Uint32 DSL value (Python ints and other DSL integers are converted)."""
    if isinstance(value, Uint32):
        return value
    return Uint32(value)


class CuteState(PipelineState):
    """A :class:`pipes.state.PipelineState` whose ``index``/``phase``/``count`` are DSL ``Uint32``
    values that dynamic loops carry. ``stages`` stays a Python int (it is part of the code shape).
    """

    __slots__ = ()

    def __init__(self, stages: int, index: Any = 0, phase: Any = 0, count: Any = 0) -> None:
        super().__init__(stages, _u32(index), _u32(phase), _u32(count))

    def advance(self, steps: Any = 1) -> None:
        """Move ``steps`` slots forward using the core arithmetic (on unsigned values)."""
        if not isinstance(steps, int):
            steps = _u32(steps)
        super().advance(steps)

    # --- DSL loop-carry protocol -------------------------------------------------------------
    def __extract_mlir_values__(self) -> list[Any]:
        return [self.index.ir_value(), self.phase.ir_value(), self.count.ir_value()]

    def __get_mlir_types__(self) -> list[Any]:
        return [v.type for v in self.__extract_mlir_values__()]

    def __new_from_mlir_values__(self, values: list[Any]) -> CuteState:
        return CuteState(self.stages, Uint32(values[0]), Uint32(values[1]), Uint32(values[2]))


def make_state(stages: int, start_phase: int) -> CuteState:
    """A cursor at slot 0 waiting for parity ``start_phase`` (1 for producers, 0 for consumers)."""
    return CuteState(stages, 0, start_phase, 0)


def state_at(iteration: Any, stages: int, start_phase: int) -> CuteState:
    """The cursor after ``iteration`` uses (a DSL or Python integer), by the core tile→slot map."""
    return CuteState.at(_u32(iteration), stages, start_phase)


class _CarriesCursors:
    """The DSL loop-carry protocol for a handle: its two cursors travel, everything else is static."""

    _CARRIED: tuple[str, str]

    def __extract_mlir_values__(self) -> list[Any]:
        values: list[Any] = []
        for name in self._CARRIED:
            values.extend(getattr(self, name).__extract_mlir_values__())
        return values

    def __get_mlir_types__(self) -> list[Any]:
        return [v.type for v in self.__extract_mlir_values__()]

    def __new_from_mlir_values__(self, values: list[Any]) -> Any:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        for i, name in enumerate(self._CARRIED):
            old = getattr(self, name)
            setattr(new, name, old.__new_from_mlir_values__(values[i * _FIELDS : (i + 1) * _FIELDS]))
        return new


class CuteProducer(_CarriesCursors, Producer):
    """A core :class:`~pipes.participants.Producer` that dynamic loops can carry.

    Its ``acquire_state`` and ``commit_state`` are :class:`CuteState` values (from ``ops.make_state``);
    everything else it holds (``ops``, ``role``, extra Python attributes of subclasses) is static.
    """

    _CARRIED = ("acquire_state", "commit_state")


class CuteConsumer(_CarriesCursors, Consumer):
    """A core :class:`~pipes.participants.Consumer` that dynamic loops can carry (both cursors)."""

    _CARRIED = ("wait_state", "release_state")
