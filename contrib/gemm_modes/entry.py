"""The compile entry of a kernel with modes: for modes that sum partials across clusters, a host function
that takes their workspace before the stream (the stream stays the last argument, as
:class:`~.prepared.PreparedLaunch` needs it)."""

from __future__ import annotations

from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32


class WorkspaceEntry:
    """``GemmKernel.__call__`` with the modes' workspace before the stream: ``flags`` (Int32) and ``partials``
    (Float32), :func:`~.launch.stream_k_workspace` (flags zero before the first launch)."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    @cute.jit
    def __call__(
        self,
        a: cute.Tensor,
        b: cute.Tensor,
        c: cute.Tensor,
        bias: cute.Tensor,
        alpha: Float32,
        clusters: Int32,
        flags: cute.Pointer,
        partials: cute.Pointer,
        stream: Any,
    ) -> None:
        self.kernel.launch(a, b, c, bias, alpha, clusters, bias, stream, (flags, partials))


def compile_entry(
    config: Any, problem: Any, modes: Any = None, gate: Any = None, push: Any = None
) -> tuple[Any, Any, tuple]:
    """:func:`hopper_gemm.launch.compile_entry`, or, where ``modes`` sum partials, :class:`WorkspaceEntry`
    with fake workspace pointers."""
    from cutlass.cute.runtime import make_ptr
    from hopper_gemm.launch import compile_entry as plain

    kernel, entry, args = plain(config, problem, modes, gate, push)
    if modes is None or not modes.partial_sums:
        return kernel, entry, args
    flags = make_ptr(cutlass.Uint32, 1 << 20, cute.AddressSpace.gmem, assumed_align=4)
    partials = make_ptr(cutlass.Float32, 1 << 20, cute.AddressSpace.gmem, assumed_align=16)
    return kernel, WorkspaceEntry(kernel), (*args[:-1], flags, partials, args[-1])
