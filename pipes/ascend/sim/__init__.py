"""``pipes.ascend.sim``: a CPU simulator for Ascend kernels written against the adapter.

It runs a kernel's copies (GM, L1, L0A, L0B, L0C, UB), mma and vector ops on numpy data, with one in-order
queue per pipe, binary intra-core flags, cross-core counters and barriers, under many schedules, and
reports deadlocks, double sets, flags left set, unmatched waits, bad ids, illegal pairs, data hazards,
lost cross-core signals and wrong results — each as a readable :class:`Diagnosis`.
"""

from .buffers import Tensor, View
from .config import DEFAULT_OVERLAP
from .diagnosis import Diagnosis, Kind, Report, RunResult, Severity
from .program import CoreProgram, TileLangShim
from .schedule import DelayPipe, ProgramOrder, RandomOrder, RushPipe, default_schedules
from .simulator import Simulator

__all__ = [
    "DEFAULT_OVERLAP",
    "CoreProgram",
    "DelayPipe",
    "Diagnosis",
    "Kind",
    "ProgramOrder",
    "RandomOrder",
    "Report",
    "RunResult",
    "RushPipe",
    "Severity",
    "Simulator",
    "Tensor",
    "TileLangShim",
    "View",
    "default_schedules",
]
