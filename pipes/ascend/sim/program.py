"""Recording a kernel: each core's instructions in program order, as the scalar unit would issue them.

:class:`CoreProgram` is the simulator's :class:`~pipes.ascend.backend.KernelBuilder`. A kernel body runs
on it once, in Python (loops unrolled over Python ints); every call becomes an :class:`Instr` queued on
the pipe that would execute it. Problems visible without running — illegal pairs, ids out of range or
reserved — are recorded as diagnoses here; everything else is found by :mod:`pipes.ascend.sim.machine`.

:class:`Recording` is what the cores' programs belong to: the configuration, the tensors, the programs, the
static diagnoses and the expected GM contents. The :class:`~pipes.ascend.sim.simulator.Simulator` is one (it
adds the declaring and running front door); the machine and the exhaustive explorer read one.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import SpecError
from ..events import EventIdRules, Keying
from ..pairs import SPACES_OF, CoreType, Pipe, Space, copy_route, pair_problem
from .buffers import Tensor, View, as_view
from .config import SimConfig
from .diagnosis import Diagnoses, Diagnosis, Kind, Severity


class Op(enum.IntEnum):
    DATA = 0
    SET = 1
    WAIT = 2
    BARRIER = 3
    XSET = 4
    XWAIT = 5
    BARRIER_ALL = 6


@dataclass(eq=False)
class Instr:
    """One instruction in one pipe's queue."""

    seq: int
    core: int
    pipe: Pipe
    op: Op
    text: str
    iteration: tuple[int, ...]
    reads: tuple[View, ...] = ()
    writes: tuple[View, ...] = ()
    compute: Callable[[list[np.ndarray]], list[np.ndarray]] | None = None
    src: Pipe | None = None
    dst: Pipe | None = None
    event_id: int = -1
    mode: int = 2
    fence: bool = False
    """Blocks every later instruction of its core until it completes (a cross-core wait does)."""
    fences_before: int = 0

    def where(self, core_name: str) -> str:
        it = ""
        if self.iteration:
            it = f", iteration {self.iteration[0] if len(self.iteration) == 1 else self.iteration}"
        return f"{core_name} {self.pipe.name} #{self.seq} {self.text}{it}"


def _binary(fn: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    return lambda a, b: fn(a, b)


VECTOR_OPS: dict[str, Callable[..., Any]] = {
    "add": _binary(np.add),
    "sub": _binary(np.subtract),
    "mul": _binary(np.multiply),
    "div": _binary(np.divide),
    "max": _binary(np.maximum),
    "min": _binary(np.minimum),
    "muls": _binary(np.multiply),
    "adds": _binary(np.add),
    "exp": np.exp,
    "ln": np.log,
    "abs": np.abs,
    "sqrt": np.sqrt,
    "relu": lambda a: np.maximum(a, 0),
    "reciprocal": lambda a: 1.0 / a,
    "copy": lambda a: a,
}


class CoreProgram:
    """One simulated core's program, built by running a kernel body against it."""

    def __init__(self, sim: Recording, core: CoreType, index: int, name: str, subblock: int = 0) -> None:
        self.sim = sim
        self.core = core
        self.index = index
        self.name = name
        self.subblock_id = subblock
        """Which vector core of the group this is (0 or 1 on A2/A3); 0 on the cube core."""
        self.instrs: list[Instr] = []
        self._iteration: list[int] = []
        self._fences = 0

    # -- recording -----------------------------------------------------------------------------------
    def _add(self, pipe: Pipe, op: Op, text: str, **fields: Any) -> Instr:
        instr = Instr(len(self.instrs), self.index, pipe, op, text, tuple(self._iteration), **fields)
        instr.fences_before = self._fences
        if instr.fence:
            self._fences += 1
        self.instrs.append(instr)
        return instr

    def _static(self, kind: Kind, message: str, signature: tuple, severity: Severity = Severity.ERROR) -> None:
        self.sim.static.add(Diagnosis(kind, message, signature, severity))

    def _here(self) -> str:
        it = f", iteration {self._iteration[0] if len(self._iteration) == 1 else tuple(self._iteration)}"
        return f"{self.name} #{len(self.instrs)}{it if self._iteration else ''}"

    def buffer(self, name: str, space: Space | str, shape: tuple[int, ...], dtype: Any = np.float16) -> Tensor:
        """A buffer in this core's on-chip memory (L1/L0A/L0B/L0C on the cube core, UB on a vector core)."""
        space = space if isinstance(space, Space) else Space[str(space).upper()]
        if space is Space.GM or space not in SPACES_OF[self.core]:
            allowed = sorted(s.name for s in SPACES_OF[self.core] if s is not Space.GM)
            raise SpecError(
                f"buffer {name!r}: space = {space.name} is invalid on the {self.core.name} core: allowed {allowed}"
            )
        return self.sim.register(Tensor(name, space, shape, dtype, self.index, None))

    # -- flags (FlagSink) ----------------------------------------------------------------------------
    def _check_id(self, event_id: Any, flag: str) -> int:
        event_id = int(event_id) if isinstance(event_id, np.integer) else event_id
        self._judge_id(self.sim.rules.id_problem(event_id), self.sim.rules.id_caution(event_id), flag)
        return event_id if isinstance(event_id, int) and not isinstance(event_id, bool) else -1

    def _judge_id(self, problem: str | None, caution: str | None, what: str) -> None:
        """An unusable id is an error; a reserved one used explicitly only a warning (shipped kernels use 6)."""
        if problem is not None:
            self._static(Kind.ID_OUT_OF_RANGE, f"{what} at {self._here()}: {problem}", (self.name, what))
        elif caution is not None:
            self._static(Kind.ID_RESERVED, f"{what} at {self._here()}: {caution}", (self.name, what), Severity.WARNING)

    def _flag(self, op: Op, src: Pipe | str, dst: Pipe | str, event_id: Any) -> None:
        src, dst = Pipe.parse(src), Pipe.parse(dst)
        call = "set_flag" if op is Op.SET else "wait_flag"
        flag = f"{call}({src.name}→{dst.name}, id {event_id})"
        problem = pair_problem(self.core, src, dst, self.sim.rules.target)
        if problem is not None:
            self._static(Kind.ILLEGAL_PAIR, f"{flag} at {self._here()}: {problem}", (self.name, src, dst))
        eid = self._check_id(event_id, flag)
        pipe = src if op is Op.SET else dst
        self._add(pipe, op, flag, src=src, dst=dst, event_id=eid)

    def set_flag(self, src: Pipe | str, dst: Pipe | str, event_id: Any) -> None:
        self._flag(Op.SET, src, dst, event_id)

    def wait_flag(self, src: Pipe | str, dst: Pipe | str, event_id: Any) -> None:
        self._flag(Op.WAIT, src, dst, event_id)

    def pipe_barrier(self, pipe: Pipe | str) -> None:
        pipe = Pipe.parse(pipe)
        if pipe is Pipe.ALL:
            # Every pipe's earlier work finishes before it, and no later instruction of the core starts
            # until it has: a fence over the whole core, issued by the scalar unit.
            self._add(Pipe.S, Op.BARRIER_ALL, "pipe_barrier(PIPE_ALL)", fence=True)
            return
        self._add(pipe, Op.BARRIER, f"pipe_barrier(PIPE_{pipe.name})")

    def _cross_id(self, flag_id: Any, what: str) -> int:
        flag_id = int(flag_id) if isinstance(flag_id, np.integer) else flag_id
        self._judge_id(self.sim.rules.cross_id_problem(flag_id), self.sim.rules.cross_id_caution(flag_id), what)
        return flag_id if isinstance(flag_id, int) and not isinstance(flag_id, bool) else -1

    def set_cross_flag(self, pipe: Pipe | str, flag_id: Any, mode: int = 2) -> None:
        pipe = Pipe.parse(pipe)
        what = f"set_cross_flag({pipe.name}, id {flag_id})"
        if mode != 2:
            raise SpecError(
                f"{what}: mode = {mode} is invalid: the simulator models mode 2 (cube with its vector cores)"
            )
        self._add(pipe, Op.XSET, what, event_id=self._cross_id(flag_id, what), mode=mode)

    def wait_cross_flag(self, pipe: Pipe | str, flag_id: Any) -> None:
        pipe = Pipe.parse(pipe if pipe != "" else Pipe.S)
        what = f"wait_cross_flag({pipe.name}, id {flag_id})"
        self._add(pipe, Op.XWAIT, what, event_id=self._cross_id(flag_id, what), fence=True)

    def constant(self, name: str, value: int) -> int:
        return value

    # -- structure -----------------------------------------------------------------------------------
    def iterations(self, count: int) -> Iterator[int]:
        """``range(count)``, tagging the instructions of each trip with its iteration number."""
        self._iteration.append(0)
        try:
            for i in range(int(count)):
                self._iteration[-1] = i
                yield i
        finally:
            self._iteration.pop()

    def loop(self, count: Any, body: Callable[[Any], None]) -> None:
        for i in self.iterations(count):
            body(i)

    def when(self, cond: Any, body: Callable[[], None]) -> None:
        if cond:
            body()

    # -- data ----------------------------------------------------------------------------------------
    def copy(self, src: Any, dst: Any, *, transpose: bool = False) -> None:
        src, dst = as_view(src), as_view(dst)
        pipe = copy_route(src.space, dst.space, self.core)
        shape = src.shape[::-1] if transpose else src.shape
        if tuple(shape) != tuple(dst.shape):
            t = " transposed" if transpose else ""
            raise SpecError(
                f"copy {src.label} → {dst.label}: source{t} has shape {tuple(shape)}, destination {dst.shape}"
            )
        fn = (lambda xs: [xs[0].T]) if transpose else (lambda xs: [xs[0]])
        text = f"copy {src.label} → {dst.label}" + (" (transposed)" if transpose else "")
        self._add(pipe, Op.DATA, text, reads=(src,), writes=(dst,), compute=fn)

    def mma(self, a: Any, b: Any, c: Any, *, init: bool) -> None:
        a, b, c = as_view(a), as_view(b), as_view(c)
        for view, space in ((a, Space.L0A), (b, Space.L0B), (c, Space.L0C)):
            if view.space is not space:
                raise SpecError(f"mma operand {view.label} lives in {view.space.name}: allowed {space.name}")
        if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0] or c.shape != (a.shape[0], b.shape[1]):
            raise SpecError(
                f"mma shapes {a.shape} × {b.shape} → {c.shape} do not agree: allowed (m, k) × (k, n) → (m, n)"
            )
        if init:
            fn = lambda xs: [xs[0].astype(np.float32) @ xs[1].astype(np.float32)]  # noqa: E731
            reads = (a, b)
        else:
            fn = lambda xs: [xs[2].astype(np.float32) + xs[0].astype(np.float32) @ xs[1].astype(np.float32)]  # noqa: E731
            reads = (a, b, c)
        text = f"mma {a.label} × {b.label} {'→' if init else '+→'} {c.label}"
        self._add(Pipe.M, Op.DATA, text, reads=reads, writes=(c,), compute=fn)

    def vector(self, op: str, dst: Any, *srcs: Any) -> None:
        fn = VECTOR_OPS.get(op)
        if fn is None:
            raise SpecError(f"vector op {op!r} is invalid: allowed {sorted(VECTOR_OPS)}")
        dst = as_view(dst)
        views = tuple(as_view(s) for s in srcs if isinstance(s, (View, Tensor)))
        for view in (dst, *views):
            if view.space is not Space.UB:
                raise SpecError(f"vector op {op!r} operand {view.label} lives in {view.space.name}: allowed UB")
        pattern = [isinstance(s, (View, Tensor)) for s in srcs]
        consts = [s for s in srcs if not isinstance(s, (View, Tensor))]

        def compute(xs: list[np.ndarray]) -> list[np.ndarray]:
            it_x, it_c = iter(xs), iter(consts)
            args = [next(it_x).astype(np.float32) if is_view else next(it_c) for is_view in pattern]
            return [np.broadcast_to(fn(*args), dst.shape)]

        shown = ", ".join(
            v.label if isinstance(v, View) else repr(v)
            for v in (dst, *[as_view(s) if p else s for s, p in zip(srcs, pattern, strict=True)])
        )
        self._add(Pipe.V, Op.DATA, f"{op}({shown})", reads=views, writes=(dst,), compute=compute)

    def tilelang(self) -> TileLangShim:
        """A TileLang-Ascend-style ``T`` whose calls record into this core (run hand-written code as is)."""
        return TileLangShim(self)


class TileLangShim:
    """The subset of TileLang-Ascend's ``T`` that flag-level kernels use, executing in the simulator.

    ``T.serial(n)`` is a plain range (tagged with iteration numbers), so hand-written loops run unchanged.
    """

    def __init__(self, program: CoreProgram) -> None:
        self._p = program

    def serial(self, count: int) -> Iterator[int]:
        return self._p.iterations(count)

    def set_flag(self, src: str, dst: str, event_id: int) -> None:
        self._p.set_flag(src, dst, event_id)

    def wait_flag(self, src: str, dst: str, event_id: int) -> None:
        self._p.wait_flag(src, dst, event_id)

    def pipe_barrier(self, pipe: str) -> None:
        self._p.pipe_barrier(pipe)

    def set_cross_flag(self, pipe: str, flag: int, mode: int = 2) -> None:
        self._p.set_cross_flag(pipe, flag, mode)

    def wait_cross_flag(self, flag: int, pipe: str = "") -> None:
        self._p.wait_cross_flag(pipe or "S", flag)

    def copy(self, src: Any, dst: Any, transpose: bool = False) -> None:
        self._p.copy(src, dst, transpose=transpose)

    def mma(self, a: Any, b: Any, c: Any, init: bool = False) -> None:
        self._p.mma(a, b, c, init=init)

    def gemm_v0(
        self, a: Any, b: Any, c: Any, transpose_A: bool = False, transpose_B: bool = False, init: bool = False
    ) -> None:  # noqa: N803
        if transpose_A or transpose_B:
            raise SpecError("gemm_v0 with transposed operands is not simulated: copy with transpose=True instead")
        self._p.mma(a, b, c, init=init)

    def __getattr__(self, name: str) -> Any:
        if name in VECTOR_OPS:
            return lambda dst, *srcs: self._p.vector(name, dst, *srcs)
        raise AttributeError(f"the simulator's T has no {name!r}")


@dataclass
class Expectation:
    """What a GM tensor must hold when the kernel ends."""

    tensor: Tensor
    expected: np.ndarray
    rtol: float
    atol: float

    def check(self, actual: np.ndarray, found: Diagnoses) -> None:
        got = actual.astype(np.float64)
        want = self.expected.astype(np.float64)
        bad = ~np.isclose(got, want, rtol=self.rtol, atol=self.atol) | np.isnan(got)
        if not bad.any():
            return
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        finite = bad & ~np.isnan(got)
        err = float(np.abs(got - want)[finite].max()) if finite.any() else 0.0
        nans = int(np.isnan(got).sum())
        found.add(
            Diagnosis(
                Kind.WRONG_RESULT,
                f"{self.tensor.name}: {int(bad.sum())} of {bad.size} elements differ from the expected values "
                f"(rtol={self.rtol}, atol={self.atol}); first at index {first}: got {got[first]:.6g}, expected "
                f"{want[first]:.6g}"
                + (f"; max |error| {err:.4g}" if finite.any() else "")
                + (f"; {nans} element(s) NaN (never written or read uninitialized on-chip memory)" if nans else ""),
                ("result", self.tensor.name),
            )
        )


class Recording:
    """One AI core group's recorded kernel: a cube core and its vector cores, each a :class:`CoreProgram`,
    the tensors they touch, what recording found and what GM must hold at the end, under one
    :class:`~pipes.ascend.sim.config.SimConfig`."""

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.tensors: list[Tensor] = []
        self.programs: list[CoreProgram] = []
        self.static = Diagnoses()
        self.expectations: list[Expectation] = []
        self.cube_program = self._add_program(CoreType.AIC, "aic", 0)
        self.vector_programs = [self._add_program(CoreType.AIV, f"aiv{i}", i) for i in range(config.vector_cores)]
        self._checked_static = False

    @property
    def rules(self) -> EventIdRules:
        return self.config.rules

    @property
    def overlap(self) -> frozenset[Pipe]:
        return self.config.overlap

    @property
    def overlap_depth(self) -> int:
        return self.config.overlap_depth

    @property
    def keying(self) -> Keying:
        """How flags are keyed when executing (``rules.keying``): SOURCE_PIPE (src, id) or PIPE_PAIR (src, dst, id)."""
        return self.config.keying

    flag_keying = keying

    @property
    def cross_core_capacity(self) -> int:
        """How many untaken sets a cross-core flag id counts (``rules.cross_core_capacity``)."""
        return self.config.cross_core_capacity

    def _add_program(self, core: CoreType, name: str, subblock: int) -> CoreProgram:
        program = CoreProgram(self, core, len(self.programs), name, subblock)
        self.programs.append(program)
        return program

    def register(self, tensor: Tensor) -> Tensor:
        """Give ``tensor`` its id in this recording (names are unique per core)."""
        if any(t.name == tensor.name and t.core == tensor.core for t in self.tensors):
            raise SpecError(f"tensor name {tensor.name!r} is already used on this core")
        tensor.tid = len(self.tensors)
        self.tensors.append(tensor)
        return tensor

    def static_checks(self) -> None:
        """The checks over the whole recording (once): a source pipe setting one id toward several pipes."""
        if self._checked_static:
            return
        self._checked_static = True
        destinations: dict[tuple, set] = {}
        for program in self.programs:
            for instr in program.instrs:
                if instr.op is Op.SET:
                    destinations.setdefault((program.name, instr.src, instr.event_id), set()).add(instr.dst)
        for (name, src, event_id), dsts in destinations.items():
            if len(dsts) > 1:
                names = ", ".join(f"{src.name}→{d.name}" for d in sorted(dsts, key=lambda p: list(Pipe).index(p)))
                if self.keying is Keying.SOURCE_PIPE:
                    then = (
                        "They are executed here as one flag (keyed by (source pipe, id), the default reading): any "
                        "collision shows as a double set or a hang; EventIdRules(keying=Keying.PIPE_PAIR) if your "
                        "hardware keys flags by pair."
                    )
                else:
                    then = (
                        "If the hardware keys flags by (source pipe, id) these are one flag and the signals collide; "
                        "run with EventIdRules(keying=Keying.SOURCE_PIPE) (the default) to see what happens then."
                    )
                self.static.add(
                    Diagnosis(
                        Kind.SHARED_SOURCE_ID,
                        f"{name}: source pipe {src.name} sets id {event_id} toward more than one pipe ({names}). "
                        + then,
                        ("shared", name, src, event_id),
                        Severity.WARNING,
                    )
                )

    def pipes_in_use(self) -> list[Pipe]:
        used = {i.pipe for p in self.programs for i in p.instrs}
        return [p for p in Pipe if p in used]
