"""Compiling the fused kernel and the comm-only kernel, with or without a GPU, and what ptxas made of them.

Shapes are dynamic (symbolic fake tensors): one compile per (GEMM configuration, problem kind,
:class:`~tile_comm.config.CommConfig`) serves every M, N, K. The transport's scope is compiled in, the
receiver's pointers and the epoch are run-time arguments.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from hopper_gemm.config import GemmConfig, Problem
from kernel_tools.report import compile_with_remarks

from .config import CommConfig

OPTIONS = "--gpu-arch sm_90a"


def _fused_args(problem: Problem) -> tuple:
    import cutlass
    from cutlass.cute.runtime import make_fake_stream
    from hopper_gemm.launch import fake_operands

    from .args import fake_kernel_args

    return (
        *fake_operands(problem),
        cutlass.Float32(1.0),
        cutlass.Int32(1),
        make_fake_stream(),
        fake_kernel_args(problem.out_dtype),
    )


def _alone_args(out_dtype: str) -> tuple:
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_stream, make_fake_tensor

    from .args import fake_kernel_args

    element = {"bf16": cutlass.BFloat16, "fp16": cutlass.Float16}[out_dtype]
    c = make_fake_tensor(element, (cute.sym_int32(), cute.sym_int32()), (cute.sym_int64(), 1), assumed_align=16)
    return (c, cutlass.Int32(1), make_fake_stream(), fake_kernel_args(out_dtype))


def fused_kernel_object(gemm: GemmConfig, problem: Problem, comm: CommConfig) -> Any:
    """The GEMM with the communication warp (``GemmKernel(comm=CommRole(comm, gemm))``), not compiled."""
    from hopper_gemm.kernel import GemmKernel

    from .role import CommRole

    return GemmKernel(gemm, problem, comm=CommRole(comm, gemm))


@functools.cache
def fused(gemm: GemmConfig, problem: Problem, comm: CommConfig, options: str = OPTIONS) -> Any:
    """The compiled fused kernel: ``(a, b, c, bias, alpha, clusters, stream, comm_args)``."""
    import cutlass.cute as cute

    return cute.compile(fused_kernel_object(gemm, problem, comm), *_fused_args(problem), options=options)


@functools.cache
def alone(gemm: GemmConfig, comm: CommConfig, out_dtype: str, options: str = OPTIONS) -> Any:
    """The compiled comm-only kernel: ``(c, clusters, stream, comm_args)``."""
    import cutlass.cute as cute

    from .alone import CommAlone

    return cute.compile(CommAlone(gemm, comm), *_alone_args(out_dtype), options=options)


@dataclass(frozen=True)
class Resources:
    """What ptxas reports for one kernel."""

    name: str
    registers: int
    spill_bytes: int
    smem_bytes: int
    ptx: str
    cubin: bytes
    wgmma_serialized: bool = False  # ptxas C7510 (kernel_tools.report.wgmma_serialized)

    def line(self) -> str:
        return (
            f"{self.name:<34} registers {self.registers:>3}/thread, spills {self.spill_bytes} B, "
            f"shared memory {self.smem_bytes} B"
        )


def _resources(name: str, compiled: Any, remarks: str, smem: int) -> Resources:
    registers = int(re.search(r"Used (\d+) registers", remarks).group(1))
    spills = sum(int(n) for n in re.findall(r"(\d+) bytes spill (?:stores|loads)", remarks))
    from kernel_tools.report import wgmma_serialized

    serialized = wgmma_serialized(remarks)
    return Resources(name, registers, spills, smem, compiled.artifacts.PTX, compiled.artifacts.CUBIN, serialized)


def fused_resources(gemm: GemmConfig, problem: Problem, comm: CommConfig) -> Resources:
    """Compile the fused kernel for sm_90a (no GPU needed) and read registers, spills, shared memory."""
    kernel = fused_kernel_object(gemm, problem, comm)
    compiled, remarks = compile_with_remarks(kernel, _fused_args(problem))
    smem = int(kernel.storage_type.size_in_bytes())
    return _resources(f"GEMM + comm warp ({comm.transport.value})", compiled, remarks, smem)


def alone_resources(gemm: GemmConfig, comm: CommConfig, out_dtype: str) -> Resources:
    """Compile the comm-only kernel for sm_90a and read its resources."""
    from .alone import CommAlone

    compiled, remarks = compile_with_remarks(CommAlone(gemm, comm), _alone_args(out_dtype))
    return _resources(f"comm warps alone ({comm.transport.value})", compiled, remarks, 0)
