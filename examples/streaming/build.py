"""Compile a plan's kernel (no GPU needed) and read what the compiler made of it.

:func:`compile_kernel` traces and compiles for sm_90a with placeholder pointers (the tensors are
run-time pointers plus a run-time row count, so one compilation serves every M); :func:`kernel_for`
caches by the plan. ``report=True`` keeps the PTX and cubin and reads registers and spills from
ptxas' remarks, and ``NANOSLEEP`` from the SASS when ``nvdisasm`` is installed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass import Float32, Int32  # noqa: E402

from . import tiles  # noqa: E402
from .axpby_kernel import build_axpby  # noqa: E402
from .launch import ARG_TYPES, ArgPack, executor_for  # noqa: E402
from .plan import Op, Plan  # noqa: E402
from .rmsnorm_kernel import build_rmsnorm  # noqa: E402
from .roles import Declarations  # noqa: E402

ARCH_OPTIONS = "--gpu-arch sm_90a"


@dataclass(frozen=True)
class KernelReport:
    """Facts read from one compiled kernel."""

    registers: int
    spill_stores: int
    spill_loads: int
    tma_loads: int
    tma_stores: int
    mbarrier_waits: int
    nanosleeps: int | None  # None: no nvdisasm to read the SASS with
    ld_shared_v4: int
    # SASS TMA instructions: uniform-datapath, one per warp that reaches them (a whole warp "issuing" the
    # PTX store is still one store).
    sass_tma_loads: int | None = None
    sass_tma_stores: int | None = None

    @property
    def spills(self) -> int:
        return self.spill_stores + self.spill_loads


@dataclass
class Kernel:
    plan: Plan
    decl: Declarations
    compiled: Any
    compile_seconds: float
    ptx: str | None = None
    report: KernelReport | None = None
    #: Where argument packs get their executor (default: ``compiled.to()``). The host-path measurement on
    #: a CPU puts an executor with a stand-in host function here.
    executor_factory: Callable[[], Any] | None = None

    def pack(self) -> ArgPack:
        """A new argument pack of this kernel (:mod:`.launch`): cells in the launcher's argument order."""
        factory = self.executor_factory
        executor = factory() if factory is not None else executor_for(self.compiled)
        return ArgPack(executor, ARG_TYPES[self.plan.op])


def _placeholder_args(plan: Plan) -> tuple:
    from cutlass.cute.runtime import make_fake_stream, make_ptr

    dtype = tiles.cute_dtype(plan)

    def ptr() -> Any:
        return make_ptr(dtype, 0, cute.AddressSpace.gmem, assumed_align=16)

    if plan.op is Op.RMSNORM:
        return (ptr(), ptr(), ptr(), Int32(1), Float32(1e-6), Int32(1), make_fake_stream())
    return (ptr(), ptr(), ptr(), Int32(1), Float32(1.0), Float32(1.0), Int32(1), make_fake_stream())


def build_launcher(plan: Plan, *, debug: bool | None = None) -> tuple[Any, Declarations]:
    builder = build_rmsnorm if plan.op is Op.RMSNORM else build_axpby
    return builder(plan, debug=debug)


def compile_kernel(plan: Plan, *, report: bool = False, debug: bool | None = None) -> Kernel:
    """Trace and compile ``plan``'s kernel for sm_90a; with ``report``, also read its PTX, ptxas remarks, SASS."""
    launcher, decl = build_launcher(plan, debug=debug)
    args = _placeholder_args(plan)
    with tempfile.TemporaryDirectory(prefix="streaming-") as tmp:
        remarks = Path(tmp) / "remarks.txt"
        options = ARCH_OPTIONS
        if report:
            # --dump-dir: the kept PTX and cubin go to the temporary directory, not the working directory.
            options += f" --keep-ptx --keep-cubin --dump-dir {tmp} remarks{{ptx}} --remark-output {remarks}"
        start = time.perf_counter()
        compiled = cute.compile(launcher, *args, options=options)
        seconds = time.perf_counter() - start
        kernel = Kernel(plan, decl, compiled, seconds)
        if report:
            kernel.ptx = _text(compiled.artifacts.PTX)
            cubin = compiled.artifacts.CUBIN
            kernel.report = read_report(kernel.ptx, remarks.read_text(), cubin if isinstance(cubin, bytes) else None)
    return kernel


def _text(artifact: Any) -> str:
    """The PTX artifact is the text, or a path to it when CUTE_DSL_DUMP_DIR is set."""
    if isinstance(artifact, str) and "\n" not in artifact and os.path.exists(artifact):
        return Path(artifact).read_text()
    return artifact


def read_report(ptx: str, remarks: str, cubin: bytes | None) -> KernelReport:
    used = [int(v) for v in re.findall(r"Used (\d+) registers", remarks)]
    stores = [int(v) for v in re.findall(r"(\d+) bytes spill stores", remarks)]
    loads = [int(v) for v in re.findall(r"(\d+) bytes spill loads", remarks)]
    if not used:
        raise RuntimeError("ptxas remarks name no register count: was the kernel compiled with remarks{ptx}?")
    sass = _count_sass(cubin, ("NANOSLEEP", "UTMALDG", "UTMASTG"))
    return KernelReport(
        registers=max(used),
        spill_stores=max(stores, default=0),
        spill_loads=max(loads, default=0),
        tma_loads=len(re.findall(r"cp\.async\.bulk\.tensor\.\dd\.shared::cta\.global", ptx)),
        tma_stores=len(re.findall(r"cp\.async\.bulk\.tensor\.\dd\.global\.shared::cta", ptx)),
        mbarrier_waits=len(re.findall(r"mbarrier\.try_wait", ptx)),
        nanosleeps=sass.get("NANOSLEEP"),
        ld_shared_v4=len(re.findall(r"ld\.shared\.v4", ptx)),
        sass_tma_loads=sass.get("UTMALDG"),
        sass_tma_stores=sass.get("UTMASTG"),
    )


def nvdisasm() -> str | None:
    """Path of ``nvdisasm`` (PATH, or the ``nvidia-cuda-nvdisasm`` wheel), None when absent."""
    found = shutil.which("nvdisasm")
    if found:
        return found
    try:
        import nvidia
    except ImportError:
        return None
    for root in getattr(nvidia, "__path__", []):
        for candidate in Path(root).glob("cu*/bin/nvdisasm"):
            return str(candidate)
    return None


def _count_sass(cubin: bytes | None, opcodes: tuple[str, ...]) -> dict[str, int]:
    """How often each opcode appears in the SASS (empty when nvdisasm or the cubin is missing)."""
    tool = nvdisasm()
    if tool is None or not cubin:
        return {}
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        sass = subprocess.run([tool, "-c", f.name], check=True, capture_output=True, text=True).stdout
    return {op: len(re.findall(rf"\b{op}(?:\.\w+)*\b", sass)) for op in opcodes}


_CACHE: dict[tuple, Kernel] = {}
_BY_ID: dict[int, tuple[Plan, Kernel]] = {}


def kernel_for(plan: Plan) -> Kernel:
    """The compiled kernel of ``plan`` (compiled once per process and plan).

    The API passes the same (cached) plan object on every call, so the first lookup is by identity:
    hashing the plan's fields costs about as much as the rest of a small launch.
    """
    hit = _BY_ID.get(id(plan))
    if hit is not None and hit[0] is plan:
        return hit[1]
    key = plan.key()
    kernel = _CACHE.get(key)
    if kernel is None:
        kernel = _CACHE[key] = compile_kernel(plan)
    _BY_ID[id(plan)] = (plan, kernel)
    return kernel


__all__ = ["Kernel", "KernelReport", "compile_kernel", "kernel_for", "nvdisasm", "read_report", "cutlass"]
