"""RMSNorm and a fused axpby on a multi-stage TMA pipeline, at the copy limit of an H100.

A TMA producer warp streams row tiles through a ``pipes.cute.TmaLoadPipeline`` into consumer warps
that reduce, normalize and TMA-store through a ``pipes.cute.TmaStoreStaging`` ring; persistent over
rows. The code lives in ``examples/streaming/`` (plan, roles, kernels, torch API, CLI); the design and
the measured figures are in ``docs/streaming.md``.

    python examples/rmsnorm_tma.py --check --bench [--json]
    python examples/rmsnorm_tma.py --compile-only          # no GPU needed

From Python (``examples/`` on ``sys.path``, as for ``hopper_gemm``)::

    from streaming import rmsnorm, axpby
    y = rmsnorm(x, weight, eps=1e-6)          # x: (..., N) CUDA fp16/bf16/fp32
    z = axpby(x, y, alpha=2.0, beta=1.0)      # z = 2x + y
"""

import sys

from streaming.cli import main

if __name__ == "__main__":
    sys.exit(main())
