"""Input checks of the torch API: every problem is a ``ValueError`` that names the argument, what it is and
what is allowed, raised before anything compiles or launches.

These run once per call signature (:mod:`.prepared` caches what they conclude); only the 16-byte
alignment of the data pointers is checked on every call.
"""

from __future__ import annotations

import functools
from typing import Any

from .device import DeviceLayer
from .plan import Op, Plan, Store, StreamConfig, make_plan

TORCH_DTYPES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}
MAX_ROWS = (1 << 31) - 1


@functools.cache
def torch_module() -> Any:
    import torch

    return torch


@functools.cache
def _dtype_names() -> dict[Any, str]:
    """torch dtype object → plan dtype name."""
    torch = torch_module()
    return {getattr(torch, name): short for name, short in TORCH_DTYPES.items()}


def dtype_name(torch_dtype: Any) -> str | None:
    return _dtype_names().get(torch_dtype)


def check_tensor(op: str, name: str, t: Any, *, dtype: Any = None, shape: Any = None) -> None:
    """Type, dtype, shape and layout: everything that does not need the tensor's device."""
    if not isinstance(t, torch_module().Tensor):
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


def check_placement(op: str, layer: DeviceLayer, *tensors: tuple[str, Any]) -> None:
    """Every ``(name, tensor)`` on the device of the first, a device of the layer's type, 16-byte aligned."""
    device = tensors[0][1].device
    for name, t in tensors:
        if t.device.type != layer.device_type:
            raise ValueError(f"{op}: {name} is on {t.device}: allowed a CUDA tensor (the kernel uses TMA on sm_90a)")
        if t.device != device:
            raise ValueError(f"{op}: {name} is on {t.device}: allowed the device of x ({device})")
        if t.data_ptr() % 16:
            raise ValueError(
                f"{op}: {name}.data_ptr() = {t.data_ptr():#x} is not 16-byte aligned: allowed a "
                "16-byte aligned tensor (TMA); slice on a row boundary or copy"
            )


def device_index(device: Any) -> int:
    return device.index if device.index is not None else 0


def check_device(op: str, layer: DeviceLayer, device: Any) -> int:
    """The SM count of ``device``, which must be a Hopper GPU."""
    sms, (major, minor) = layer.facts(device_index(device))
    if major != 9:
        raise ValueError(f"{op}: {device} has compute capability {major}.{minor}: allowed 9.x (Hopper, sm_90a)")
    return sms


def rows(op: str, x: Any) -> tuple[int, int]:
    if x.dim() < 1:
        raise ValueError(f"{op}: x is a 0-d tensor: allowed (..., N) with N the normalized dimension")
    n = x.shape[-1]
    m = x.numel() // n if n else 0
    if m > MAX_ROWS:
        raise ValueError(f"{op}: x has {m} rows: allowed at most {MAX_ROWS}")
    return m, n


def check_scalar(op: str, name: str, value: Any) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ValueError(f"{op}: {name} = {value!r}: allowed a Python float")


def check_st_global(op: str, plan: Plan, m: int) -> None:
    # The st.global path indexes elements with 32-bit offsets; TMA takes coordinates and has no such limit.
    if plan.config.store is Store.ST_GLOBAL and m * plan.n >= 1 << 31:
        raise ValueError(f"{op}: x has {m} × {plan.n} elements: allowed fewer than 2^31 with store='st_global'")


@functools.lru_cache(maxsize=256)
def plan_for(op: Op, dtype: str, n: int, config: StreamConfig | None) -> Plan:
    try:
        return make_plan(op, dtype, n, config)
    except ValueError as exc:
        raise ValueError(f"{op.value}: {exc}") from None
