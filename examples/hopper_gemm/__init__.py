"""A persistent warp-specialized Hopper GEMM written only with pipes (the kernel of examples/persistent_gemm.py).

Start at :mod:`.kernel`: its role/pipeline table names every synchronization; the other modules hold one
job each (config, roles, load warp, mainloop, epilogue terms and store path, comm hooks, launch, the
``gemm()`` API; docs/gemm.md tabulates them). The performance modes and ``schedule="auto"``'s measured
table live in ``contrib/gemm_modes`` and plug in through :class:`~hopper_gemm.kernel.KernelModes`.
"""

from .config import GemmConfig, Problem, Schedule

__all__ = ["GemmConfig", "Problem", "Schedule"]
