"""What the compiler made of a configuration: registers, spills, shared memory, the PTX and the SASS.

Works without a GPU (the kernel compiles for sm_90a on a CPU): the example's compile-only report and
the CPU tests use it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hopper_gemm.config import GemmConfig, Problem

OPTIONS = "--gpu-arch sm_90a --keep-ptx --keep-cubin"


@dataclass(frozen=True)
class CompileReport:
    config: GemmConfig
    problem: Problem
    registers: int
    spill_bytes: int
    smem_bytes: int
    ab_stages: int
    epi_stages: int
    ptx: str
    cubin: bytes
    wgmma_serialized: bool = False  # ptxas C7510/C7512: every wgmma waits for the previous one (a slow mainloop)
    modes: Any = None  # the kernel's performance modes (hopper_gemm.kernel.KernelModes), None without

    def lines(self) -> list[str]:
        modes = self.modes.describe() if self.modes is not None else ""
        shape = self.config.with_(pdl=False).describe() + modes + (" PDL" if self.config.pdl else "")
        return [
            f"configuration : {shape}",
            f"problem       : {self.problem.dtype} in/out, B {'(N, K)' if self.problem.b_major == 'k' else '(K, N)'}"
            f"{', bias' if self.problem.bias else ''}{', alpha' if self.problem.scaled else ''}"
            f"{', C column-major (a swapped launch: Cᵀ = B·Aᵀ)' if self.problem.c_major == 'm' else ''}",
            f"stages        : {self.ab_stages} A/B stages, {self.epi_stages} staging buffers",
            f"shared memory : {self.smem_bytes} bytes per CTA",
            f"registers     : {self.registers} per thread (setmaxnreg: load warps 40, math warpgroups 232)",
            f"spills        : {self.spill_bytes} bytes",
            f"wgmma         : {'SERIALIZED by ptxas (C7510/C7512)' if self.wgmma_serialized else 'pipelined'}",
        ]

    def sass(self) -> str:
        """The cubin disassembled with ``nvdisasm`` (the ``nvidia-cuda-nvdisasm`` wheel or the CUDA toolkit)."""
        tool = nvdisasm_path()
        if tool is None:
            raise FileNotFoundError("nvdisasm not found: pip install nvidia-cuda-nvdisasm")
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp, "kernel.cubin")
            path.write_bytes(self.cubin)
            return subprocess.run([tool, "-c", str(path)], check=True, capture_output=True, text=True).stdout


def nvdisasm_path() -> str | None:
    found = shutil.which("nvdisasm")
    if found:
        return found
    try:
        import nvidia.cu13  # the nvidia-cuda-nvdisasm wheel installs under nvidia/cu13/bin

        candidate = Path(next(iter(nvidia.cu13.__path__)), "bin", "nvdisasm")
        return str(candidate) if candidate.exists() else None
    except Exception:  # noqa: BLE001 - the wheel is optional
        return None


def compile_with_remarks(entry: Any, args: tuple) -> tuple[Any, str]:
    """Compile for sm_90a keeping the PTX and cubin; returns the compiled function and ptxas's remarks."""
    import cutlass.cute as cute

    with tempfile.TemporaryDirectory() as tmp:
        remarks = os.path.join(tmp, "remarks.yaml")
        # --keep-ptx writes into the working directory unless told where: the user's checkout stays clean
        options = f"{OPTIONS} --dump-dir {tmp} remarks{{ptx}} --remark-output {remarks}"
        compiled = cute.compile(entry, *args, options=options)
        return compiled, Path(remarks).read_text()


def compile_report(
    config: GemmConfig, problem: Problem, modes: Any = None, gate: Any = None, push: Any = None
) -> CompileReport:
    """Compile ``config`` (with performance ``modes``, a :class:`~hopper_gemm.kernel.KernelModes`, a load
    ``gate``, a ``pipes.cute.comm.GateSpec``, and its ``push`` warp, a ``pipes.cute.comm.ChunkPushWarp``)
    for sm_90a and read back what ptxas made of it."""
    from gemm_modes.entry import compile_entry

    kernel, entry, args = compile_entry(config, problem, modes, gate, push)
    compiled, text = compile_with_remarks(entry, args)
    registers = int(re.search(r"Used (\d+) registers", text).group(1))
    spills = sum(int(n) for n in re.findall(r"(\d+) bytes spill (?:stores|loads)", text))
    ab, epi = kernel.ab_stages, kernel.epi_stages
    return CompileReport(
        config,
        problem,
        registers,
        spills,
        int(kernel.storage_type.size_in_bytes()),
        ab,
        epi,
        compiled.artifacts.PTX,
        compiled.artifacts.CUBIN,
        wgmma_serialized(text),
        modes,
    )


def wgmma_serialized(remarks: str) -> bool:
    """Whether ptxas serialized the kernel's wgmmas: remark C7510 (e.g. a function call such as ``printf``
    anywhere in the kernel, or accumulators touched between a wgmma and its wait) or C7512 (too few
    registers, e.g. when ptxas ignored ``setmaxnreg`` for want of a register count at entry, C7508)."""
    return "C7510" in remarks or "C7512" in remarks
