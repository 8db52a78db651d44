"""The simulator's front door: declare GM tensors and cores, record a kernel, explore schedules."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import SpecError
from ..events import EventIdRules, Keying
from ..pairs import CoreType, Pipe, Space
from .buffers import Tensor
from .diagnosis import Diagnoses, Diagnosis, Kind, Report, RunResult, Severity
from .machine import Machine
from .program import CoreProgram, Op
from .schedule import ProgramOrder, Schedule, default_schedules

#: Pipes whose consecutive instructions may overlap, so a same-pipe dependency needs ``pipe_barrier``.
#: The cube's M, MTE1 and FIX pipes and the scalar unit are modelled as finishing one instruction
#: before starting the next.
DEFAULT_OVERLAP = frozenset({Pipe.V, Pipe.MTE2, Pipe.MTE3})


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


class Simulator:
    """A CPU model of one AI core group (a cube core and its vector cores) running one kernel.

    Record the kernel by running its body on :meth:`cube` / :meth:`vector` (each a
    :class:`~pipes.ascend.sim.program.CoreProgram`), state what GM must hold with :meth:`expect`, then
    :meth:`run` one schedule or :meth:`explore` many.
    """

    def __init__(
        self,
        rules: EventIdRules | None = None,
        *,
        vector_cores: int = 2,
        overlap: Iterable[Pipe] = DEFAULT_OVERLAP,
        overlap_depth: int = 2,
        flag_keying: Keying | None = None,
        cross_core_capacity: int | None = None,
    ) -> None:
        if vector_cores not in (1, 2):
            raise SpecError(f"Simulator.vector_cores = {vector_cores!r} is invalid: allowed 1 or 2")
        rules = rules if rules is not None else EventIdRules()
        # The rules are the one place hardware assumptions live (the allocator reads them too): an override
        # here is folded into them, so every part of the simulator sees the same assumption.
        if flag_keying is not None:
            rules = dataclasses.replace(rules, keying=flag_keying)
        if cross_core_capacity is not None:
            rules = dataclasses.replace(rules, cross_core_capacity=cross_core_capacity)
        self.rules = rules
        self.overlap = frozenset(overlap)
        self.overlap_depth = overlap_depth
        self.tensors: list[Tensor] = []
        self.programs: list[CoreProgram] = []
        self.static = Diagnoses()
        self.expectations: list[Expectation] = []
        self.cube_program = self._add_program(CoreType.AIC, "aic", 0)
        self.vector_programs = [self._add_program(CoreType.AIV, f"aiv{i}", i) for i in range(vector_cores)]
        self._checked_static = False

    @property
    def keying(self) -> Keying:
        """How flags are keyed when executing (``rules.keying``): SOURCE_PIPE (src, id) or PIPE_PAIR (src, dst, id)."""
        return self.rules.keying

    flag_keying = keying

    @property
    def cross_core_capacity(self) -> int:
        """How many untaken sets a cross-core flag id counts (``rules.cross_core_capacity``)."""
        return self.rules.cross_core_capacity

    def _add_program(self, core: CoreType, name: str, subblock: int) -> CoreProgram:
        program = CoreProgram(self, core, len(self.programs), name, subblock)
        self.programs.append(program)
        return program

    def _register(self, tensor: Tensor) -> Tensor:
        if any(t.name == tensor.name and t.core == tensor.core for t in self.tensors):
            raise SpecError(f"tensor name {tensor.name!r} is already used on this core")
        tensor.tid = len(self.tensors)
        self.tensors.append(tensor)
        return tensor

    # -- declaring -----------------------------------------------------------------------------------
    def gm(self, name: str, array: np.ndarray) -> Tensor:
        """A global-memory tensor holding ``array`` at kernel start (copied for every run)."""
        array = np.ascontiguousarray(array)
        return self._register(Tensor(name, Space.GM, array.shape, array.dtype, None, array.copy()))

    def gm_zeros(self, name: str, shape: tuple[int, ...], dtype: Any = np.float16) -> Tensor:
        return self.gm(name, np.zeros(shape, dtype=dtype))

    def cube(self) -> CoreProgram:
        return self.cube_program

    def vector(self, index: int = 0) -> CoreProgram:
        return self.vector_programs[index]

    def expect(self, tensor: Tensor | str, expected: np.ndarray, *, rtol: float = 1e-2, atol: float = 1e-2) -> None:
        """After every run, ``tensor`` must be close to ``expected`` (else a WRONG_RESULT diagnosis)."""
        if isinstance(tensor, str):
            tensor = next((t for t in self.tensors if t.name == tensor and t.core is None), None)
            if tensor is None:
                raise SpecError(f"expect: no GM tensor named {tensor!r}")
        if tuple(np.shape(expected)) != tensor.shape:
            raise SpecError(f"expect {tensor.name}: expected shape {np.shape(expected)} != tensor shape {tensor.shape}")
        self.expectations.append(Expectation(tensor, np.asarray(expected), rtol, atol))

    # -- running -------------------------------------------------------------------------------------
    def _static_checks(self) -> None:
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

    def run(self, schedule: Schedule | None = None) -> RunResult:
        """Run the recorded program once; static findings are included in the result."""
        self._static_checks()
        result = Machine(self, schedule or ProgramOrder()).run()
        for diagnosis in self.static:
            result.diagnoses.add(diagnosis)
        return result

    def prove(self, *, max_states: int = 200_000, max_findings: int = 8) -> Any:
        """Every schedule of the recorded program, through ``pipes.check``'s exploration engine (a
        :class:`pipes.check.Report`; exhaustive and ok is a proof for this program). See :mod:`.exhaustive`."""
        from .exhaustive import prove

        return prove(self, max_states=max_states, max_findings=max_findings)

    def explore(self, schedules: list[Schedule] | None = None, *, seeds: int = 4) -> Report:
        """Run every schedule (by default program order, random seeds, and each pipe delayed and rushed)."""
        schedules = schedules if schedules is not None else default_schedules(self.pipes_in_use(), seeds)
        merged = Diagnoses()
        runs = []
        start = time.perf_counter()
        for schedule in schedules:
            result = self.run(schedule)
            runs.append(result)
            for diagnosis in result.diagnoses:
                merged.add(diagnosis, schedule.name)
        return Report(runs, merged, time.perf_counter() - start)
