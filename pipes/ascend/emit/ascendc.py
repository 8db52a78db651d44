"""The AscendC back-end: a :class:`~pipes.ascend.backend.KernelBuilder` that writes C++ source text.

Flag, barrier and cross-core calls are exact AscendC (``AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE1>(id)``,
``AscendC::PipeBarrier<PIPE_V>()``, ``AscendC::CrossCoreSetFlag<2, PIPE_FIX>(id)``); data movement and
compute are written schematically (``DataCopy``/``LoadData``/``Mmad``/``Fixpipe`` with their parameter
structs left out), since their arguments depend on layouts this library does not own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..events import EventIdRules
from ..pairs import CoreType, Pipe, Space, check_pair, copy_route
from ..sym import Sym, render

_LOOP_NAMES = ("i", "j", "k", "m", "n")
_COPY_CALL = {
    Pipe.MTE2: "DataCopy",
    Pipe.MTE3: "DataCopy",
    Pipe.MTE1: "LoadData",
    Pipe.FIX: "Fixpipe",
    Pipe.V: "DataCopy",
}
_VECTOR_CALL = {
    "add": "Add",
    "sub": "Sub",
    "mul": "Mul",
    "div": "Div",
    "max": "Max",
    "min": "Min",
    "exp": "Exp",
    "ln": "Ln",
    "abs": "Abs",
    "relu": "Relu",
    "sqrt": "Sqrt",
    "muls": "Muls",
    "adds": "Adds",
}


def _c(value: Any) -> str:
    return render(value, "c")


class AscendCBuilder:
    """Writes one core's kernel body as AscendC; ``text()`` returns it with the id constants first."""

    def __init__(
        self, core: CoreType | str = CoreType.AIC, indent: str = "    ", rules: EventIdRules | None = None
    ) -> None:
        self.core = CoreType.parse(core)
        #: The target (``rules.target``): a flag pair it lacks is refused when emitted. None: not checked.
        self.rules = rules
        self.lines: list[str] = []
        self.constants: dict[str, int] = {}
        self._indent = indent
        self._depth = 0
        self._loops = 0

    def _line(self, text: str) -> None:
        self.lines.append(self._indent * self._depth + text)

    # -- flags ---------------------------------------------------------------------------------------
    def set_flag(self, src: Pipe, dst: Pipe, event_id: Any) -> None:
        self._check(src, dst)
        self._line(f"AscendC::SetFlag<AscendC::HardEvent::{src.name}_{dst.name}>({_c(event_id)});")

    def wait_flag(self, src: Pipe, dst: Pipe, event_id: Any) -> None:
        self._check(src, dst)
        self._line(f"AscendC::WaitFlag<AscendC::HardEvent::{src.name}_{dst.name}>({_c(event_id)});")

    def _check(self, src: Pipe, dst: Pipe) -> None:
        if self.rules is not None:
            check_pair(self.core, src, dst, self.rules.target)

    def pipe_barrier(self, pipe: Pipe) -> None:
        """``AscendC::PipeBarrier<PIPE_V>();`` — ``Pipe.ALL`` gives ``PIPE_ALL``."""
        self._line(f"AscendC::PipeBarrier<PIPE_{pipe.name}>();")

    def set_cross_flag(self, pipe: Pipe, flag_id: Any, mode: int = 2) -> None:
        self._line(f"AscendC::CrossCoreSetFlag<{mode}, PIPE_{pipe.name}>({_c(flag_id)});")

    def wait_cross_flag(self, pipe: Pipe, flag_id: Any) -> None:
        self._line(f"AscendC::CrossCoreWaitFlag<2, PIPE_{pipe.name}>({_c(flag_id)});")

    def constant(self, name: str, value: int) -> Sym:
        self.constants[name] = value
        return Sym(name, value=value)

    def comment(self, text: str) -> None:
        self._line(f"// {text}")

    # -- structure and data --------------------------------------------------------------------------
    def loop(self, count: Any, body: Callable[[Any], None]) -> None:
        name = _LOOP_NAMES[self._loops % len(_LOOP_NAMES)]
        self._line(f"for (int32_t {name} = 0; {name} < {_c(count)}; ++{name}) {{")
        self._loops += 1
        self._depth += 1
        try:
            body(Sym(name))
        finally:
            self._depth -= 1
            self._loops -= 1
        self._line("}")

    def when(self, cond: Any, body: Callable[[], None]) -> None:
        if isinstance(cond, bool):
            if cond:
                body()
            return
        self._line(f"if ({_c(cond)}) {{")
        self._depth += 1
        try:
            body()
        finally:
            self._depth -= 1
        self._line("}")

    def copy(self, src: Any, dst: Any, *, transpose: bool = False) -> None:
        pipe = copy_route(_space(src), _space(dst), self.core)
        extra = ", /*transpose=*/true" if transpose else ""
        self._line(f"AscendC::{_COPY_CALL[pipe]}({_c(dst)}, {_c(src)}{extra});  // {pipe.name}")

    def mma(self, a: Any, b: Any, c: Any, *, init: bool) -> None:
        self._line(f"AscendC::Mmad({_c(c)}, {_c(a)}, {_c(b)}, /*init=*/{'true' if init else 'false'});  // M")

    def vector(self, op: str, dst: Any, *srcs: Any) -> None:
        call = _VECTOR_CALL.get(op, op)
        self._line(f"AscendC::{call}({', '.join(_c(x) for x in (dst, *srcs))});  // V")

    def text(self) -> str:
        head = [f"constexpr int32_t {name} = {value};" for name, value in self.constants.items()]
        return "\n".join([*head, *self.lines]) + "\n"


def _space(operand: Any) -> Space:
    space = getattr(operand, "space", None)
    if not isinstance(space, Space):
        raise TypeError(f"AscendC copy operand {operand!r} has no memory space: use pipes.ascend.sym.SymBuffer")
    return space
