"""A persistent warp-specialized Hopper GEMM written only with pipes (the kernel of examples/persistent_gemm.py).

Modules, one job each:

* :mod:`.config`    — what is compiled: tile, cluster, schedule, stages from the shared-memory budget.
* :mod:`.schedule`  — persistent tile order (grouped rasterization), the same arithmetic on ints and DSL ints.
* :mod:`.epilogue`  — the fused epilogue hook (alpha scale, per-column bias) applied to the accumulators.
* :mod:`.kernel`    — the CuTe DSL kernel: roles, pipelines, the persistent loops of each role.
* :mod:`.mainloop`  — one tile's k-loop of wgmmas over the mainloop pipeline.
* :mod:`.epilogue_store` — accumulators → staging buffer → TMA store, subtile by subtile.
* :mod:`.api`       — ``gemm(a, b, ...)`` on torch tensors: validation, compile cache, launch.
* :mod:`.autotable` — the measured table ``schedule="auto"`` picks from.
"""

from .config import GemmConfig, Problem, Schedule

__all__ = ["GemmConfig", "Problem", "Schedule"]
