"""The communication warp of examples/epilogue_comm.py: a GEMM whose finished tiles are shipped while it runs.

Modules, one job each:

* :mod:`.config`   — transports (host / local / none; peer reserved) and their memory scopes.
* :mod:`.args`     — the run-time arguments (destination, flags, credits, epoch, timestamps) and layouts.
* :mod:`.ship`     — device code of one tile: the copy, the release-published ready flag, credits.
* :mod:`.role`     — the comm role hooked into ``hopper_gemm.kernel.GemmKernel(comm=...)``.
* :mod:`.alone`    — the same communication warps without the GEMM (the T_comm baseline).
* :mod:`.build`    — compiling every variant (with or without a GPU) and its resources.
* :mod:`.receiver` — receive buffers, ready flags, per-CTA flags, credits, timestamps (host or device).
* :mod:`.consumer` — the host thread that checksums tiles as they land (and hands back credits).
* :mod:`.launcher` — ``EpilogueComm``: validate, compile once, launch with a fresh epoch per launch.
* :mod:`.measure`  — E, S, R against the baselines in one interleaved run (benchmarks/comm_overlap.py).
* :mod:`.protocol` — the pipeline protocol of the kernel, run through ``pipes.check``.
* :mod:`.timeline` — the ``--trace`` picture.
"""

from .config import CommConfig, Transport

__all__ = ["CommConfig", "Transport"]
