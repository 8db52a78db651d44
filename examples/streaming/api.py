"""Torch entry points: ``rmsnorm(x, weight, eps, out)`` and ``axpby(x, y, alpha, beta, out)``, and their bound
forms ``bind_rmsnorm`` / ``bind_axpby`` for launching on the same tensors again and again.

Inputs are checked before anything is compiled or launched (:mod:`.validate`: every problem is a
``ValueError`` naming the argument, what it is and what is allowed). A kernel is compiled once per
(op, dtype, N, config); a call signature (shapes, dtypes, devices, layouts, ``eps``, config) is
validated once per thread and remembered as a :class:`.prepared.PreparedCall`, so a repeated call
reads a few tensor attributes, looks up one dict entry, writes three pointers and the stream into
fixed ctypes cells and calls the compiled host function (the small-M latency target depends on it).
"""

from __future__ import annotations

from typing import Any

from . import validate as v
from .build import kernel_for
from .device import active
from .launch import ArgPack
from .plan import Op, StreamConfig
from .prepared import BoundCall, GraphCall, PreparedCall, calls, remember


def _signature(t: Any) -> tuple:
    """What validation concluded from about one tensor (its type too: a look-alike is validated anew)."""
    return (type(t), t.shape, t.dtype, t.device, t.is_contiguous())


def _pack(kernel: Any, values: tuple) -> ArgPack:
    """An argument pack of ``kernel`` with cells 3.. (everything but the pointers and the stream) written."""
    pack = kernel.pack()
    for cell, value in zip(pack.cells[3:-1], values, strict=True):
        cell.value = value
    return pack


def _prepare_rmsnorm(x: Any, weight: Any, eps: Any, out: Any, config: StreamConfig | None) -> PreparedCall:
    layer = active()
    v.check_tensor("rmsnorm", "x", x)
    m, n = v.rows("rmsnorm", x)
    v.check_tensor("rmsnorm", "weight", weight, dtype=x.dtype, shape=(n,))
    if out is not None:
        v.check_tensor("rmsnorm", "out", out, dtype=x.dtype, shape=x.shape)
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or not eps >= 0:
        raise ValueError(f"rmsnorm: eps = {eps!r}: allowed a float >= 0")
    plan = v.plan_for(Op.RMSNORM, v.dtype_name(x.dtype), n, config)
    v.check_st_global("rmsnorm", plan, m)
    tensors = (("x", x), ("weight", weight)) + ((("out", out),) if out is not None else ())
    v.check_placement("rmsnorm", layer, *tensors)
    sms = v.check_device("rmsnorm", layer, x.device)
    if m == 0:
        return PreparedCall(None, v.device_index(x.device), layer)
    pack = _pack(kernel_for(plan), (m, float(eps), plan.grid(m, sms)))
    return PreparedCall(pack, v.device_index(x.device), layer)


def _prepare_axpby(x: Any, y: Any, out: Any, config: StreamConfig | None) -> PreparedCall:
    layer = active()
    v.check_tensor("axpby", "x", x)
    m, n = v.rows("axpby", x)
    v.check_tensor("axpby", "y", y, dtype=x.dtype, shape=x.shape)
    if out is not None:
        v.check_tensor("axpby", "out", out, dtype=x.dtype, shape=x.shape)
    plan = v.plan_for(Op.AXPBY, v.dtype_name(x.dtype), n, config)
    v.check_st_global("axpby", plan, m)
    tensors = (("x", x), ("y", y)) + ((("out", out),) if out is not None else ())
    v.check_placement("axpby", layer, *tensors)
    sms = v.check_device("axpby", layer, x.device)
    if m == 0:
        return PreparedCall(None, v.device_index(x.device), layer)
    pack = _pack(kernel_for(plan), (m, 1.0, 1.0, plan.grid(m, sms)))  # alpha, beta: written per call
    return PreparedCall(pack, v.device_index(x.device), layer)


def _aligned_or_raise(op: str, names: tuple[str, str, str], tensors: tuple[Any, Any, Any], pointers: int) -> None:
    """Every call: the data pointers' 16-byte alignment (TMA), the one fact a signature does not fix."""
    if pointers & 15:
        v.check_placement(op, active(), *zip(names, tensors, strict=True))


def rmsnorm(x: Any, weight: Any, eps: float = 1e-6, out: Any = None, *, config: StreamConfig | None = None) -> Any:
    """``out = x / sqrt(mean(x**2, -1) + eps) * weight`` over the last dimension, fp32 accumulation.

    ``x``: (..., N) CUDA tensor, fp16/bf16/fp32, contiguous; ``weight``: (N,), same dtype and device;
    ``out``: optional, like ``x`` (may be ``x`` itself). Returns ``out``.
    """
    # The key spells out what validation looks at (see _signature), inline: each helper call costs ~0.1 µs.
    try:
        key = (
            type(x),
            x.shape,
            x.dtype,
            x.device,
            x.is_contiguous(),
            type(weight),
            weight.shape,
            weight.dtype,
            weight.device,
            weight.is_contiguous(),
            None if out is None else _signature(out),
            eps,
            type(eps),
            config,
        )
        call = calls().get(key)
    except (AttributeError, TypeError):  # not tensors, or an unhashable argument: validation names it
        key = call = None
    if call is None:
        call = _prepare_rmsnorm(x, weight, eps, out, config)
        if key is not None:
            remember(key, call)
    if out is None:
        out = v.torch_module().empty_like(x)
    xp, wp, op = x.data_ptr(), weight.data_ptr(), out.data_ptr()
    if (xp | wp | op) & 15:
        _aligned_or_raise("rmsnorm", ("x", "weight", "out"), (x, weight, out), xp | wp | op)
    call.launch(xp, wp, op)
    return out


def axpby(
    x: Any, y: Any, alpha: float = 1.0, beta: float = 1.0, out: Any = None, *, config: StreamConfig | None = None
) -> Any:
    """``out = alpha * x + beta * y`` (fp32 arithmetic). ``x``, ``y``, ``out``: same shape, dtype, device."""
    if type(alpha) not in (float, int) or type(beta) not in (float, int):  # bool, str, tensors: named
        v.check_scalar("axpby", "alpha", alpha)
        v.check_scalar("axpby", "beta", beta)
    try:
        key = (_signature(x), _signature(y), None if out is None else _signature(out), config)
        call = calls().get(key)
    except (AttributeError, TypeError):
        key = call = None
    if call is None:
        call = _prepare_axpby(x, y, out, config)
        if key is not None:
            remember(key, call)
    if out is None:
        out = v.torch_module().empty_like(x)
    xp, yp, op = x.data_ptr(), y.data_ptr(), out.data_ptr()
    if (xp | yp | op) & 15:
        _aligned_or_raise("axpby", ("x", "y", "out"), (x, y, out), xp | yp | op)
    if call.cells:
        call.cells[4].value = alpha
        call.cells[5].value = beta
    call.launch(xp, yp, op)
    return out


def bind_rmsnorm(
    x: Any,
    weight: Any,
    eps: float = 1e-6,
    out: Any = None,
    *,
    config: StreamConfig | None = None,
    graph: bool = False,
) -> BoundCall | GraphCall:
    """Validate once and return ``call``: ``call()`` launches ``rmsnorm(x, weight, eps, out)`` on these very
    tensors in torch's current stream and returns ``out`` (allocated here when None).

    For a loop over the same buffers (a decode step): a call costs the stream lookup and the launch. The
    tensors must keep their storage while ``call`` is used. ``graph=True``: the launch is captured once
    into a one-node CUDA graph and each call replays it (``cudaGraphLaunch``), the cheapest launch the
    driver offers; the first call captures (not inside another capture).
    """
    call = _prepare_rmsnorm(x, weight, eps, out, config)  # alignment included: the pointers are fixed
    out = v.torch_module().empty_like(x) if out is None else out
    bound = BoundCall(call, (x, weight, out), out)
    return GraphCall(bound) if graph else bound


def bind_axpby(
    x: Any,
    y: Any,
    alpha: float = 1.0,
    beta: float = 1.0,
    out: Any = None,
    *,
    config: StreamConfig | None = None,
    graph: bool = False,
) -> BoundCall | GraphCall:
    """``call()`` launches ``axpby(x, y, alpha, beta, out)`` on these tensors again (see :func:`bind_rmsnorm`)."""
    call = _prepare_axpby(x, y, out, config)
    v.check_scalar("axpby", "alpha", alpha)
    v.check_scalar("axpby", "beta", beta)
    out = v.torch_module().empty_like(x) if out is None else out
    if call.cells:
        call.cells[4].value = alpha
        call.cells[5].value = beta
    bound = BoundCall(call, (x, y, out), out)
    return GraphCall(bound) if graph else bound


__all__ = ["axpby", "bind_axpby", "bind_rmsnorm", "rmsnorm"]
