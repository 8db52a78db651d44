"""A persistent warp-specialized Hopper GEMM written only with pipes (the kernel of examples/persistent_gemm.py).

Modules, one job each:

* :mod:`.config`    — what is compiled: tile, cluster, schedule, stages from the shared-memory budget.
* :mod:`.roles`     — the pipes objects and the role layout, declared once per configuration.
* :mod:`.kernel`    — the CuTe DSL kernel: its role/pipeline table, barrier init, the math warpgroups' loop.
* :mod:`.load_warp` — the load warp: one stream of (tile, k) A/B k-tiles into the mainloop ring.
* :mod:`.mainloop`  — one tile's k-loop of wgmmas over the mainloop pipeline.
* :mod:`.epilogue`  — the fused epilogue terms (alpha scale, per-column bias) applied to the accumulators.
* :mod:`.epilogue_store` — accumulators → staging buffer → TMA store, subtile by subtile.
* :mod:`.comm_hook` — what a communication warp may do with the GEMM's tiles.
* :mod:`.launch`, :mod:`.api` — operands, the persistent grid; ``gemm(a, b, ...)`` on torch tensors.

The performance modes (stream-K, split-K, the deferred epilogue, staging in the A/B ring) and the measured
table ``schedule="auto"`` picks from live in ``contrib/gemm_modes`` and plug in through
:class:`~hopper_gemm.kernel.KernelModes`.
"""

from .config import GemmConfig, Problem, Schedule

__all__ = ["GemmConfig", "Problem", "Schedule"]
