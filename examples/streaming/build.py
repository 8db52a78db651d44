"""Compile a plan's kernel (no GPU needed) and read what the compiler made of it.

:func:`compile_kernel` traces and compiles for sm_90a with placeholder pointers (the tensors are
run-time pointers plus a run-time row count, so one compilation serves every M); :func:`kernel_for`
caches by the plan. ``report=True`` keeps the PTX and cubin and reads registers and spills from
ptxas' remarks, and ``NANOSLEEP`` from the SASS when ``nvdisasm`` is installed.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass import Float32, Int32  # noqa: E402

from . import tiles  # noqa: E402
from .axpby_kernel import build_axpby  # noqa: E402
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


class _Slot:
    """One launch argument held in ctypes storage that is rewritten in place for every call.

    The CuTe DSL executor takes any object with ``__c_pointers__`` (its JIT-argument protocol) as the
    address of the argument's bytes; converting Python ints and floats instead costs about 17 µs per
    call (7 arguments), which alone would miss the small-M latency target.
    """

    __slots__ = ("pointers", "store")

    def __init__(self, ctype: Any) -> None:
        self.store = ctype()
        self.pointers = [ctypes.c_void_p(ctypes.addressof(self.store))]

    def __c_pointers__(self) -> list:
        return self.pointers


#: ctypes storage of each launcher argument: pointers and the stream handle are 8 bytes, Int32 and Float32 4.
_ARG_TYPES = {
    Op.RMSNORM: (ctypes.c_uint64,) * 3 + (ctypes.c_int32, ctypes.c_float, ctypes.c_int32, ctypes.c_uint64),
    Op.AXPBY: (ctypes.c_uint64,) * 3
    + (ctypes.c_int32, ctypes.c_float, ctypes.c_float, ctypes.c_int32, ctypes.c_uint64),
}


@dataclass
class Kernel:
    plan: Plan
    decl: Declarations
    compiled: Any
    compile_seconds: float
    ptx: str | None = None
    report: KernelReport | None = None

    def __post_init__(self) -> None:
        self._local = threading.local()

    def __call__(self, *values: Any) -> Any:
        """Launch with the launcher's arguments as plain values: pointers and the stream as ints.

        The argument storage and the list of its addresses are built once per thread; a call writes
        the values into it and hands the same list to the compiled program (about 1 µs of Python
        instead of the executor's per-argument conversion).
        """
        local = self._local
        slots = getattr(local, "slots", None)
        if slots is None:
            slots = local.slots = tuple(_Slot(t) for t in _ARG_TYPES[self.plan.op])
            local.addresses = [slot.pointers[0] for slot in slots]
        if len(values) != len(slots):
            raise TypeError(f"{self.plan.op.value} kernel takes {len(slots)} arguments, got {len(values)}")
        for slot, value in zip(slots, values, strict=True):
            slot.store.value = value
        run = getattr(self.compiled, "run_compiled_program", None)
        if run is None:  # another DSL version: the executor's own conversion of the same slots
            return self.compiled(*slots)
        return run(local.addresses)


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
