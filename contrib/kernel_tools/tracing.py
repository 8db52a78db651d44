"""Run one traced launch and draw who held which slot when, for a few SMs (``pipes.cute.timeline``)."""

from __future__ import annotations

from typing import Any

from hopper_gemm.config import GemmConfig

#: Records per (block, warp) region: enough for ~(tiles per CTA × k-tiles) mainloop events of the load warp.
CAPACITY = 4096


def traced_run(a: Any, b_nk: Any, config: GemmConfig, clock: str = "globaltimer", modes: Any = None) -> Any:
    """Launch the traced kernel once on torch tensors ``a`` (M, K) and ``b_nk`` (N, K); returns the TraceLog.
    ``modes``: performance modes without a workspace (a :class:`~hopper_gemm.kernel.KernelModes`)."""
    import cutlass
    import cutlass.cute as cute
    import torch
    from cutlass.cute.runtime import from_dlpack
    from hopper_gemm.api import validate
    from hopper_gemm.kernel import GemmKernel
    from hopper_gemm.launch import clusters_to_launch, current_stream, cute_operands
    from hopper_gemm.roles import BLOCK_THREADS, TRACE_NAMES

    from pipes.cute import TraceLayout

    if modes is not None and modes.partial_sums:
        raise ValueError(
            f"a traced run takes no workspace: {modes.describe().strip()} sums partials through one (trace a "
            "configuration without stream-K or split-K)"
        )
    m, n = a.shape[0], b_nk.shape[0]
    out = torch.empty(m, n, device=a.device, dtype=a.dtype)
    ops = validate(a, b_nk, out=out)
    clusters = clusters_to_launch(config, m, n)
    layout = TraceLayout(
        blocks=clusters * config.cluster_size, warps=BLOCK_THREADS // 32, capacity=CAPACITY, clock=clock
    )
    buf = torch.zeros(layout.words, dtype=torch.int32, device=a.device)
    kernel = GemmKernel(config, ops.problem, trace=layout, modes=modes)
    args = (*cute_operands(a, b_nk, out, None), cutlass.Float32(1.0), cutlass.Int32(clusters))
    trace = from_dlpack(buf, assumed_align=16)
    compiled = cute.compile(kernel.launch, *args, trace, current_stream(), options="--gpu-arch sm_90a")
    compiled(*args, trace, current_stream())
    torch.cuda.synchronize()
    return layout.decode(buf.cpu().numpy(), names=TRACE_NAMES)
