"""Turning operands into what the compiled kernel takes: CuTe tensors, the stream, the persistent grid.
Shapes and strides are dynamic: torch tensors are wrapped with ``mark_layout_dynamic``; without a GPU,
symbolic fake tensors of the same kind let the kernel compile for sm_90a."""

from __future__ import annotations

from typing import Any

from .config import GemmConfig, Problem

_ALIGN = 16


def _cutlass_dtype(name: str) -> Any:
    import cutlass

    return {"fp16": cutlass.Float16, "bf16": cutlass.BFloat16}[name]


def fake_operands(problem: Problem) -> tuple[Any, Any, Any, Any]:
    """``(a, b_nk, c, bias)`` as symbolic fake tensors: dynamic extents and row strides."""
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_tensor

    dt = _cutlass_dtype(problem.dtype)
    m, n, k = cute.sym_int32(), cute.sym_int32(), cute.sym_int32()

    def matrix(rows: Any, cols: Any, contiguous_cols: bool) -> Any:
        stride = (cute.sym_int64(), 1) if contiguous_cols else (1, cute.sym_int64())
        return make_fake_tensor(dt, (rows, cols), stride, assumed_align=_ALIGN)

    a = matrix(m, k, True)
    b = matrix(n, k, problem.b_major == "k")
    c = matrix(m, n, problem.c_major == "n")
    bias = make_fake_tensor(dt, (n,), (1,), assumed_align=_ALIGN)
    return a, b, c, bias


def compile_entry(
    config: GemmConfig, problem: Problem, modes: Any = None, gate: Any = None, push: Any = None
) -> tuple[Any, Any, tuple]:
    """(the kernel object, ``__call__`` to compile, fake arguments of its signature): with a ``gate`` (a
    ``pipes.cute.comm.GateSpec``) fake gate arguments, the push warp's too with ``push``. Modes that sum
    partials take a workspace: ``gemm_modes.entry.compile_entry``."""
    import cutlass
    from cutlass.cute.runtime import make_fake_stream

    from .kernel import GemmKernel

    kernel = GemmKernel(config, problem, modes=modes, gate=gate, push=push)
    head = (*fake_operands(problem), cutlass.Float32(1.0), cutlass.Int32(1), make_fake_stream())
    if gate is None:
        return kernel, kernel, head
    from pipes.comm.args import fake_gate_args, fake_push_gate_args

    if push is not None:
        return kernel, kernel, (*head, fake_push_gate_args(gate.plan.world, _cutlass_dtype(problem.dtype)))
    return kernel, kernel, (*head, fake_gate_args())


def cute_operands(a: Any, b_nk: Any, c: Any, bias: Any) -> tuple[Any, Any, Any, Any]:
    """The torch tensors as dynamic-layout CuTe tensors (``bias`` None: a stand-in of 8 zeros); ``c`` row-major,
    or column-major for a ``Problem(c_major="m")``."""
    from cutlass.cute.runtime import from_dlpack

    def wrap(t: Any, leading: int) -> Any:
        return from_dlpack(t, assumed_align=_ALIGN).mark_layout_dynamic(leading_dim=leading)

    b_leading = 1 if b_nk.stride(1) == 1 else 0
    c_leading = 1 if c.stride(1) == 1 else 0  # 0: C column-major (a swapped call's Cᵀ)
    if bias is None:
        bias = c.new_zeros(8)
    return wrap(a, 1), wrap(b_nk, b_leading), wrap(c, c_leading), wrap(bias, 0)


def clusters_to_launch(config: GemmConfig, m: int, n: int, device_index: int = 0) -> int:
    """Persistent grid: one cluster per resident slot, never more than there are cluster-tiles."""
    return max(1, min(config.cluster_tiles(m, n), resident_clusters(config.cluster_size, device_index)))


_RESIDENT: dict[tuple[int, int], int] = {}


def resident_clusters(cluster_size: int, device_index: int = 0) -> int:
    """Clusters of ``cluster_size`` CTAs the GPU keeps resident at once: the driver's occupancy answer, which
    counts how clusters pack into GPCs (a 132-SM H100 holds 66 clusters of 2 but 30 of 4)."""
    key = (cluster_size, device_index)
    if key not in _RESIDENT:
        import torch
        from cutlass.utils import HardwareInfo

        with torch.cuda.device(device_index):
            # The query needs CUDA initialized and this device's context current (else CUDA_ERROR_NOT_INITIALIZED).
            torch.cuda.synchronize()
            count = HardwareInfo(device_index).get_max_active_clusters(cluster_size)
        _RESIDENT[key] = max(1, int(count))
    return _RESIDENT[key]


def current_stream() -> Any:
    import cuda.bindings.driver as cuda
    import torch

    return cuda.CUstream(torch.cuda.current_stream().cuda_stream)
