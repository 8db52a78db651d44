"""Torch entry points: ``rmsnorm(x, weight, eps, out)`` and ``axpby(x, y, alpha, beta, out)``.

Inputs are checked before anything is compiled or launched; every problem is a ``ValueError`` that names
the argument, what it is and what is allowed. A kernel is compiled once per (op, dtype, N, config) and
called with raw pointers, the row count and torch's current stream written into fixed argument slots
(:class:`.build.Kernel`), so a call costs a few µs of Python and one launch (the small-M latency target
depends on it).
"""

from __future__ import annotations

import functools
from typing import Any

from .build import kernel_for
from .plan import Op, Plan, Store, StreamConfig, make_plan

TORCH_DTYPES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}
MAX_ROWS = (1 << 31) - 1


@functools.cache
def _torch() -> Any:
    import torch

    return torch


@functools.cache
def _dtype_names() -> dict[Any, str]:
    """torch dtype object → plan dtype name (a dict lookup per call instead of formatting the dtype)."""
    torch = _torch()
    return {getattr(torch, name): short for name, short in TORCH_DTYPES.items()}


def _dtype_name(torch_dtype: Any) -> str | None:
    return _dtype_names().get(torch_dtype)


def _check_tensor(op: str, name: str, t: Any, *, dtype: Any = None, shape: Any = None) -> None:
    """Type, dtype, shape and layout: everything that does not need the tensor's device."""
    if not isinstance(t, _torch().Tensor):
        raise ValueError(f"{op}: {name} is a {type(t).__name__}: allowed a torch.Tensor")
    if dtype is not None:
        if t.dtype != dtype:
            raise ValueError(f"{op}: {name}.dtype = {t.dtype}: allowed the dtype of x ({dtype})")
    elif t.dtype not in _dtype_names():
        raise ValueError(f"{op}: {name}.dtype = {t.dtype}: allowed torch.float16, torch.bfloat16 or torch.float32")
    if shape is not None and t.shape != shape:
        raise ValueError(f"{op}: {name}.shape = {tuple(t.shape)}: allowed {tuple(shape)}")
    if not t.is_contiguous():
        raise ValueError(
            f"{op}: {name} is not contiguous (strides {t.stride()}): allowed a contiguous tensor; "
            "call .contiguous() first"
        )


def _check_placement(op: str, *tensors: tuple[str, Any]) -> None:
    """Every ``(name, tensor)`` on the device of the first, a CUDA device, 16-byte aligned."""
    device = tensors[0][1].device
    for name, t in tensors:
        if t.device.type != "cuda":
            raise ValueError(f"{op}: {name} is on {t.device}: allowed a CUDA tensor (the kernel uses TMA on sm_90a)")
        if t.device != device:
            raise ValueError(f"{op}: {name} is on {t.device}: allowed the device of x ({device})")
        if t.data_ptr() % 16:
            raise ValueError(
                f"{op}: {name}.data_ptr() = {t.data_ptr():#x} is not 16-byte aligned: allowed a "
                "16-byte aligned tensor (TMA); slice on a row boundary or copy"
            )


@functools.cache
def _device_facts(index: int) -> tuple[int, tuple[int, int]]:
    import torch

    props = torch.cuda.get_device_properties(index)
    return props.multi_processor_count, (props.major, props.minor)


def _check_device(op: str, device: Any) -> int:
    sms, (major, minor) = _device_facts(device.index if device.index is not None else 0)
    if major != 9:
        raise ValueError(f"{op}: {device} has compute capability {major}.{minor}: allowed 9.x (Hopper, sm_90a)")
    return sms


def _rows(op: str, x: Any) -> tuple[int, int]:
    if x.dim() < 1:
        raise ValueError(f"{op}: x is a 0-d tensor: allowed (..., N) with N the normalized dimension")
    n = x.shape[-1]
    m = x.numel() // n if n else 0
    if m > MAX_ROWS:
        raise ValueError(f"{op}: x has {m} rows: allowed at most {MAX_ROWS}")
    return m, n


def _check_st_global(op: str, plan: Plan, m: int) -> None:
    # The st.global path indexes elements with 32-bit offsets; TMA takes coordinates and has no such limit.
    if plan.config.store is Store.ST_GLOBAL and m * plan.n >= 1 << 31:
        raise ValueError(f"{op}: x has {m} × {plan.n} elements: allowed fewer than 2^31 with store='st_global'")


@functools.lru_cache(maxsize=256)
def _plan(op: Op, dtype: str, n: int, config: StreamConfig | None) -> Plan:
    try:
        return make_plan(op, dtype, n, config)
    except ValueError as exc:
        raise ValueError(f"{op.value}: {exc}") from None


@functools.cache
def _torch_cuda() -> tuple[Any, Any]:
    """(current device index, raw current-stream handle of a device index): torch's own fast entry points
    (what Triton's launcher uses), with the public ones where a torch build lacks them."""
    import torch

    get_device = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)
    raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw_stream is None:

        def raw_stream(index: int) -> int:
            return torch.cuda.current_stream(index).cuda_stream

    return get_device, raw_stream


def _launch(kernel: Any, device: Any, *values: Any) -> None:
    """Launch on ``device`` in torch's current stream there (ordered with the caller's other work)."""
    get_device, raw_stream = _torch_cuda()
    index = device.index
    if index == get_device():
        kernel(*values, raw_stream(index))
        return
    import torch

    with torch.cuda.device(index):
        kernel(*values, raw_stream(index))


def rmsnorm(x: Any, weight: Any, eps: float = 1e-6, out: Any = None, *, config: StreamConfig | None = None) -> Any:
    """``out = x / sqrt(mean(x**2, -1) + eps) * weight`` over the last dimension, fp32 accumulation.

    ``x``: (..., N) CUDA tensor, fp16/bf16/fp32, contiguous; ``weight``: (N,), same dtype and device;
    ``out``: optional, like ``x`` (may be ``x`` itself). Returns ``out``.
    """
    _check_tensor("rmsnorm", "x", x)
    m, n = _rows("rmsnorm", x)
    _check_tensor("rmsnorm", "weight", weight, dtype=x.dtype, shape=(n,))
    if out is not None:
        _check_tensor("rmsnorm", "out", out, dtype=x.dtype, shape=x.shape)
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or not eps >= 0:
        raise ValueError(f"rmsnorm: eps = {eps!r}: allowed a float >= 0")
    plan = _plan(Op.RMSNORM, _dtype_name(x.dtype), n, config)
    _check_st_global("rmsnorm", plan, m)
    out = _torch().empty_like(x) if out is None else out
    _check_placement("rmsnorm", ("x", x), ("weight", weight), ("out", out))
    sms = _check_device("rmsnorm", x.device)
    if m == 0:
        return out
    _launch(
        kernel_for(plan), x.device, x.data_ptr(), weight.data_ptr(), out.data_ptr(), m, float(eps), plan.grid(m, sms)
    )
    return out


def axpby(
    x: Any, y: Any, alpha: float = 1.0, beta: float = 1.0, out: Any = None, *, config: StreamConfig | None = None
) -> Any:
    """``out = alpha * x + beta * y`` (fp32 arithmetic). ``x``, ``y``, ``out``: same shape, dtype, device."""
    _check_tensor("axpby", "x", x)
    m, n = _rows("axpby", x)
    _check_tensor("axpby", "y", y, dtype=x.dtype, shape=x.shape)
    if out is not None:
        _check_tensor("axpby", "out", out, dtype=x.dtype, shape=x.shape)
    for name, value in (("alpha", alpha), ("beta", beta)):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ValueError(f"axpby: {name} = {value!r}: allowed a Python float")
    plan = _plan(Op.AXPBY, _dtype_name(x.dtype), n, config)
    _check_st_global("axpby", plan, m)
    out = _torch().empty_like(x) if out is None else out
    _check_placement("axpby", ("x", x), ("y", y), ("out", out))
    sms = _check_device("axpby", x.device)
    if m == 0:
        return out
    _launch(
        kernel_for(plan),
        x.device,
        x.data_ptr(),
        y.data_ptr(),
        out.data_ptr(),
        m,
        float(alpha),
        float(beta),
        plan.grid(m, sms),
    )
    return out
