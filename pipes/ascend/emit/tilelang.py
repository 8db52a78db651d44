"""The TileLang-Ascend back-end: a :class:`~pipes.ascend.backend.KernelBuilder` that calls the ``T``
module it is given.

With real tilelang-ascend, call the kernel body from inside a ``@T.prim_func`` (for example from a
helper invoked in the function body): the calls below then build TIR through TVM's IR builder — each
intrinsic call is wrapped in ``T.evaluate`` so it lands in the body even though the helper discards
it, loops are ``with T.serial(n) as i`` frames and traced conditions ``T.If``/``T.Then`` frames.
With :class:`~pipes.ascend.emit.standin.StandInT` the same calls print TileLang source, and with the
simulator's :meth:`~pipes.ascend.sim.CoreProgram.tilelang` shim they execute on CPU.

Priming and draining in a TVMScript-parsed function: its ``with`` statement only accepts IR frames,
so call ``pipeline.prime()`` / ``pipeline.drain()`` there (or let a helper function use ``with``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ..events import EventIdRules
from ..pairs import CoreType, Pipe, check_pair

_SCALAR_ALIASES = {"muls": "mul", "adds": "add"}


class TileLangBuilder:
    """Kernel builder over a TileLang-Ascend ``T`` module for one core type."""

    def __init__(self, T: Any, core: CoreType | str = CoreType.AIC, rules: EventIdRules | None = None) -> None:  # noqa: N803
        self.T = T
        self.core = CoreType.parse(core)
        #: The target (``rules.target``): a flag pair it lacks is refused when emitted. None: not checked.
        self.rules = rules
        self._evaluate = getattr(T, "evaluate", None)
        self._named = getattr(T, "named_constant", None)
        wait = getattr(T, "wait_cross_flag", None)
        self._wait_cross_takes_pipe = wait is not None and _accepts(wait, "pipe")

    def _emit(self, stmt: Any) -> None:
        # Real TileLang returns a TIR call: inside a helper it must be evaluated to become a statement.
        if stmt is not None and self._evaluate is not None:
            self._evaluate(stmt)

    # -- flags ---------------------------------------------------------------------------------------
    def set_flag(self, src: Pipe, dst: Pipe, event_id: Any) -> None:
        self._check(src, dst)
        self._emit(self.T.set_flag(src.name, dst.name, event_id))

    def wait_flag(self, src: Pipe, dst: Pipe, event_id: Any) -> None:
        self._check(src, dst)
        self._emit(self.T.wait_flag(src.name, dst.name, event_id))

    def pipe_barrier(self, pipe: Pipe) -> None:
        """``T.pipe_barrier("V")``; ``Pipe.ALL`` gives ``T.pipe_barrier("ALL")`` (PIPE_ALL)."""
        self._emit(self.T.pipe_barrier(pipe.name))

    def _check(self, src: Pipe, dst: Pipe) -> None:
        if self.rules is not None:
            check_pair(self.core, src, dst, self.rules.target)

    def set_cross_flag(self, pipe: Pipe, flag_id: Any, mode: int = 2) -> None:
        # tilelang-ascend's mode defaults to 2; older versions take no mode at all.
        args = (pipe.name, flag_id) if mode == 2 else (pipe.name, flag_id, mode)
        self._emit(self.T.set_cross_flag(*args))

    def wait_cross_flag(self, pipe: Pipe, flag_id: Any) -> None:
        if self._wait_cross_takes_pipe:
            self._emit(self.T.wait_cross_flag(flag_id, pipe.name))
        else:
            self._emit(self.T.wait_cross_flag(flag_id))

    def constant(self, name: str, value: int) -> Any:
        return self._named(name, value) if self._named is not None else value

    # -- structure and data --------------------------------------------------------------------------
    def loop(self, count: Any, body: Callable[[Any], None]) -> None:
        frame = self.T.serial(count)
        if hasattr(frame, "__enter__"):
            with frame as i:
                body(i)
        else:
            for i in frame:
                body(i)

    def when(self, cond: Any, body: Callable[[], None]) -> None:
        if isinstance(cond, bool):
            if cond:
                body()
            return
        with self.T.If(cond), self.T.Then():
            body()

    def copy(self, src: Any, dst: Any, *, transpose: bool = False) -> None:
        if transpose:
            self._emit(self.T.copy(src, dst, transpose=True))
        else:
            self._emit(self.T.copy(src, dst))

    def mma(self, a: Any, b: Any, c: Any, *, init: bool) -> None:
        mma = getattr(self.T, "mma", None)
        if mma is not None:
            self._emit(mma(a, b, c, init=init))
        else:
            self._emit(self.T.gemm_v0(a, b, c, init=init))

    def vector(self, op: str, dst: Any, *srcs: Any) -> None:
        # TileLang-Ascend spells tensor-scalar ops like tensor-tensor ones (T.mul(dst, src, 0.5) is Muls).
        fn = getattr(self.T, op, None) or getattr(self.T, _SCALAR_ALIASES.get(op, op))
        self._emit(fn(dst, *srcs))


def _accepts(fn: Any, name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
