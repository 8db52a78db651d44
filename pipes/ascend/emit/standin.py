"""A stand-in for TileLang-Ascend's ``T`` module that writes the calls it receives as TileLang source.

tilelang-ascend ships aarch64 wheels only, so on other machines this records what the real module would
have been asked to build: ``T.set_flag("MTE2", "MTE1", SIG_K_L1)``, ``for i in T.serial(n):`` and so on,
with loop variables and named ids as :class:`~pipes.ascend.sym.Sym` values.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ..sym import Sym, render

_VECTOR_OPS = frozenset(
    {"add", "sub", "mul", "div", "max", "min", "exp", "ln", "abs", "relu", "sqrt", "rsqrt", "reciprocal", "fill"}
)
_LOOP_NAMES = ("i", "j", "k", "m", "n")


class StandInT:
    """Records TileLang-Ascend calls as source lines; ``text()`` returns the kernel body."""

    def __init__(self, indent: str = "    ") -> None:
        self.lines: list[str] = []
        self.constants: dict[str, int] = {}
        self._indent = indent
        self._depth = 0
        self._loops = 0

    # -- structure -----------------------------------------------------------------------------------
    def _line(self, text: str) -> None:
        self.lines.append(self._indent * self._depth + text)

    def serial(self, count: Any) -> Iterator[Sym]:
        """``for i in T.serial(count):`` — iterating yields the loop variable once, indenting the body."""
        name = _LOOP_NAMES[self._loops % len(_LOOP_NAMES)]
        self._line(f"for {name} in T.serial({render(count)}):")
        self._loops += 1
        self._depth += 1
        try:
            yield Sym(name)
        finally:
            self._depth -= 1
            self._loops -= 1

    @contextlib.contextmanager
    def If(self, cond: Any) -> Iterator[None]:  # noqa: N802 - TileLang's spelling
        self._line(f"if {render(cond)}:")
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1

    @contextlib.contextmanager
    def Then(self) -> Iterator[None]:  # noqa: N802
        yield

    def named_constant(self, name: str, value: int) -> Sym:
        """Stand-in extension: ids print by name; ``text()`` lists their values first."""
        self.constants[name] = value
        return Sym(name, value=value)

    def comment(self, text: str) -> None:
        self._line(f"# {text}")

    # -- calls ---------------------------------------------------------------------------------------
    def _call(self, name: str, *args: Any, **kwargs: Any) -> None:
        parts = [f'"{a}"' if isinstance(a, str) else render(a) for a in args]
        parts += [f"{k}={render(v)}" for k, v in kwargs.items()]
        self._line(f"T.{name}({', '.join(parts)})")

    def set_flag(self, src: str, dst: str, event_id: Any) -> None:
        self._call("set_flag", src, dst, event_id)

    def wait_flag(self, src: str, dst: str, event_id: Any) -> None:
        self._call("wait_flag", src, dst, event_id)

    def pipe_barrier(self, pipe: str) -> None:
        self._call("pipe_barrier", pipe)

    def set_cross_flag(self, pipe: str, flag: Any, mode: int = 2) -> None:
        self._call("set_cross_flag", pipe, flag)

    def wait_cross_flag(self, flag: Any, pipe: str = "") -> None:
        self._call("wait_cross_flag", flag, pipe)

    def copy(self, src: Any, dst: Any, transpose: bool = False) -> None:
        if transpose:
            self._call("copy", src, dst, transpose=True)
        else:
            self._call("copy", src, dst)

    def mma(self, a: Any, b: Any, c: Any, init: bool = False) -> None:
        self._call("mma", a, b, c, init=init)

    def __getattr__(self, name: str) -> Any:
        if name in _VECTOR_OPS:
            return lambda *args: self._call(name, *args)
        raise AttributeError(
            f"StandInT has no {name!r} (TileLang calls recorded: flags, copy, mma, {sorted(_VECTOR_OPS)})"
        )

    # -- output --------------------------------------------------------------------------------------
    def text(self, header: bool = True) -> str:
        head = [f"{name} = {value}" for name, value in self.constants.items()] if header else []
        return "\n".join([*head, *self.lines]) + "\n"
