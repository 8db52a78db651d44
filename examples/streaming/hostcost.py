"""The host path of a call, timed on any machine: everything up to the driver's launch.

On a CPU the API runs against a stand-in :class:`.device.DeviceLayer` that accepts CPU tensors (an H100's
132 SMs, compute capability 9.0, stream handle 0), and the kernel's argument packs get an executor of
the DSL's own class whose host function is a C no-op. So validation, the prepared-call lookup, the
argument writes and the ctypes call into a host function are the real code; what is left out is the
compiled host function's own work (TMA descriptors: tens of ns) and ``cudaLaunchKernelEx`` (about 2 µs
on an H100 host), which only the GPU run measures (``benchmarks/streaming_kernels.py --small-m``).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import timeit
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .device import DeviceLayer, use_layer
from .plan import Op, make_plan

#: What a call reports as the current stream under the stand-in layer.
STAND_IN_STREAM = 0x5EED


@functools.cache
def no_op_host_function() -> Any:
    """A C function taking one pointer and returning an int (``getpid`` ignores the pointer): the ctypes
    call costs what the call into a compiled host function costs."""
    libc = ctypes.CDLL(None)
    signature = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)
    return signature(ctypes.cast(libc.getpid, ctypes.c_void_p).value)


def stand_in_executor(host_function: Any = None) -> Any:
    """An executor of the DSL's own class (its address-array layout and result cell) around ``host_function``
    (default: :func:`no_op_host_function`)."""
    from cutlass.base_dsl.jit_executor import JitExecutor

    module = types.SimpleNamespace(capi_func=host_function or no_op_host_function())
    return JitExecutor(module, None, False)


def stand_in_layer() -> DeviceLayer:
    return DeviceLayer(
        "cpu",
        lambda index: (132, (9, 0)),
        lambda: 0,
        lambda index: STAND_IN_STREAM,
        lambda index: contextlib.nullcontext(),
    )


@contextlib.contextmanager
def stand_in(plans: list[Any], host_function: Any = None, layer: DeviceLayer | None = None) -> Iterator[None]:
    """Inside the block the API accepts CPU tensors (``layer``, default :func:`stand_in_layer`) and ``plans``'
    kernels launch ``host_function``."""
    from .build import kernel_for

    kernels = [kernel_for(plan) for plan in plans]  # compiled for sm_90a (no GPU needed)
    saved = [k.executor_factory for k in kernels]
    for k in kernels:
        k.executor_factory = functools.partial(stand_in_executor, host_function)
    try:
        with use_layer(layer or stand_in_layer()):
            yield
    finally:
        for k, factory in zip(kernels, saved, strict=True):
            k.executor_factory = factory


@dataclass(frozen=True)
class HostCost:
    what: str
    us: float  # microseconds of Python per call (best of the repeats)
    note: str = ""


def _best_us(fn: Callable[[], Any], number: int, repeat: int) -> float:
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def measure(m: int = 1, n: int = 8192, dtype: str = "bf16", *, number: int = 20_000, repeat: int = 7) -> list[HostCost]:
    """Per-call host cost of each way to call rmsnorm at ``(m, n)``, and of its parts."""
    import torch

    from . import api, prepared
    from .reference import torch_dtype

    plan = make_plan(Op.RMSNORM, dtype, n)
    x = torch.randn(m, n).to(torch_dtype(dtype))
    w = torch.randn(n).to(torch_dtype(dtype))
    out = torch.empty_like(x)
    rows: list[HostCost] = []
    with stand_in([plan]):
        bound = api.bind_rmsnorm(x, w, 1e-6, out=out)
        call = prepared.PreparedCall(api._pack(api.kernel_for(plan), (m, 1e-6, 1)), 0, stand_in_layer())

        def first_call() -> None:
            prepared.forget()
            api.rmsnorm(x, w, 1e-6, out=out)

        rows += [
            HostCost(
                "rmsnorm(x, w, eps, out=out)",
                _best_us(lambda: api.rmsnorm(x, w, 1e-6, out=out), number, repeat),
                "a signature seen before",
            ),
            HostCost(
                "rmsnorm(x, w, eps)",
                _best_us(lambda: api.rmsnorm(x, w, 1e-6), number, repeat),
                "allocates out (a CPU allocation here)",
            ),
            HostCost("bind_rmsnorm(...)()", _best_us(bound, number, repeat), "same tensors: stream + launch"),
            HostCost(
                "first call of a signature",
                _best_us(first_call, max(1, number // 20), repeat),
                "validation, plan, new argument pack",
            ),
            HostCost(
                "  part: signature key + dict lookup",
                _best_us(lambda: prepared.calls().get((api._signature(x), api._signature(w), None)), number, repeat),
            ),
            HostCost("  part: PreparedCall.launch", _best_us(lambda: call.launch(1, 2, 3), number, repeat)),
            HostCost("  part: ctypes call into the host function", _best_us(call.pack.launch, number, repeat)),
        ]
    return rows


def format_table(rows: list[HostCost], m: int, n: int, dtype: str) -> str:
    lines = [
        f"Host path per call, rmsnorm {dtype} M={m} N={n}, measured up to the driver's launch (stand-in launch)",
        "",
        "| call | µs of Python | note |",
        "|---|---:|---|",
    ]
    lines += [f"| {r.what} | {r.us:.2f} | {r.note} |" for r in rows]
    return "\n".join(lines)
