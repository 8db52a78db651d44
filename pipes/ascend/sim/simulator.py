"""The simulator's front door: declare GM tensors and cores, record a kernel, explore schedules."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import numpy as np

from ...errors import SpecError
from ..events import EventIdRules, Keying
from ..pairs import Pipe, Space
from .buffers import Tensor
from .config import SimConfig
from .diagnosis import Diagnoses, Report, RunResult
from .machine import Machine
from .program import CoreProgram, Expectation, Recording
from .schedule import ProgramOrder, Schedule, default_schedules


class Simulator(Recording):
    """A CPU model of one AI core group (a cube core and its vector cores) running one kernel.

    Record the kernel by running its body on :meth:`cube` / :meth:`vector` (each a
    :class:`~pipes.ascend.sim.program.CoreProgram`), state what GM must hold with :meth:`expect`, then
    :meth:`run` one schedule or :meth:`explore` many. The arguments make its
    :class:`~pipes.ascend.sim.config.SimConfig` (``config``); what is recorded is a
    :class:`~pipes.ascend.sim.program.Recording`.

    The hardware facts come from ``rules.target`` (:mod:`pipes.ascend.targets`): which flag pairs exist,
    which pipes run their own instructions in order (``overlap`` None: the pipes the target does not run in
    order; pass a set to assume otherwise) and the cross-core counters' capacity.
    """

    def __init__(
        self,
        rules: EventIdRules | None = None,
        *,
        vector_cores: int = 2,
        overlap: Iterable[Pipe] | None = None,
        overlap_depth: int = 2,
        flag_keying: Keying | None = None,
        cross_core_capacity: int | None = None,
    ) -> None:
        config = SimConfig.build(
            rules,
            vector_cores=vector_cores,
            overlap=overlap,
            overlap_depth=overlap_depth,
            flag_keying=flag_keying,
            cross_core_capacity=cross_core_capacity,
        )
        super().__init__(config)

    # -- declaring -----------------------------------------------------------------------------------
    def gm(self, name: str, array: np.ndarray) -> Tensor:
        """A global-memory tensor holding ``array`` at kernel start (copied for every run)."""
        array = np.ascontiguousarray(array)
        return self.register(Tensor(name, Space.GM, array.shape, array.dtype, None, array.copy()))

    def gm_zeros(self, name: str, shape: tuple[int, ...], dtype: Any = np.float16) -> Tensor:
        return self.gm(name, np.zeros(shape, dtype=dtype))

    def cube(self) -> CoreProgram:
        return self.cube_program

    def vector(self, index: int = 0) -> CoreProgram:
        return self.vector_programs[index]

    def expect(self, tensor: Tensor | str, expected: np.ndarray, *, rtol: float = 1e-2, atol: float = 1e-2) -> None:
        """After every run, ``tensor`` must be close to ``expected`` (else a WRONG_RESULT diagnosis)."""
        if isinstance(tensor, str):
            tensor = self._gm_tensor(tensor)
        if tuple(np.shape(expected)) != tensor.shape:
            raise SpecError(f"expect {tensor.name}: expected shape {np.shape(expected)} != tensor shape {tensor.shape}")
        self.expectations.append(Expectation(tensor, np.asarray(expected), rtol, atol))

    def _gm_tensor(self, name: str) -> Tensor:
        """The GM tensor declared as ``name`` (an error naming the declared ones when there is none)."""
        gm = [t for t in self.tensors if t.core is None]
        found = next((t for t in gm if t.name == name), None)
        if found is None:
            declared = ", ".join(repr(t.name) for t in gm) or "none"
            raise SpecError(f"expect: no GM tensor named {name!r}; the GM tensors declared: {declared}")
        return found

    # -- running -------------------------------------------------------------------------------------
    def run(self, schedule: Schedule | None = None) -> RunResult:
        """Run the recorded program once; static findings are included in the result."""
        self.static_checks()
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
