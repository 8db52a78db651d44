"""The communication warp of examples/epilogue_comm.py: a GEMM whose finished tiles are shipped while it runs.

The flags, credits, tile copy, step counts, copy-engine shipper, receivers and host consumer are the comm
library's (``pipes.cute.comm``, ``pipes.comm``; docs/comm.md). What is here is specific to this GEMM and
its measurements. Modules, one job each:

* :mod:`.config`   — transports (host / local / none / peer) and their memory scopes.
* :mod:`.args`     — the run-time arguments (destination, flags, credits, epoch, timestamps) and layouts.
* :mod:`.ship`     — one tile in the GEMM's comm warp: the library's ship plus the trace stamps and CTA flags.
* :mod:`.role`     — the GEMM's comm role (a ``pipes.cute.comm.CommHook``) for ``GemmKernel(comm=...)``.
* :mod:`.alone`    — the same communication warps without the GEMM (the T_comm baseline).
* :mod:`.build`    — compiling every variant (with or without a GPU) and its resources.
* :mod:`.receiver` — receive buffers, ready flags, per-CTA flags, credits, timestamps (host or device).
* :mod:`.consumer` — checksums each tile as it lands (on ``pipes.comm.TileConsumer``), watches the CTAs.
* :mod:`.peer`     — the reduce-scatter over 2+ GPUs (examples/tp_gemm_rs.py); :mod:`.await_flags` its owner's wait.
* :mod:`.protocol_peer` — the GPUs' launch protocol across launches, run through ``pipes.check``.
* :mod:`.launcher` — ``EpilogueComm``: validate, compile once, launch with a fresh epoch per launch.
* :mod:`.measure`  — E, S, R against the baselines in one interleaved run (benchmarks/comm_overlap.py).
* :mod:`.protocol` — the pipeline protocol of the kernel, run through ``pipes.check``.
* :mod:`.timeline` — the ``--trace`` picture.
"""

from .config import CommConfig, Transport

__all__ = ["CommConfig", "Transport"]
