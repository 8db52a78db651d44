"""fp32/fp64 references and per-dtype error bounds, shared by the CLI check, the GPU tests and the benchmark.

Bounds: the kernel accumulates in fp32 and rounds once to the output type, so an output may differ from
the float64 reference by one unit in the last place of its type (``ULP``) plus fp32 noise; the fp32
noise term grows with the terms summed (``N`` for rmsnorm, 2 for axpby).
"""

from __future__ import annotations

from typing import Any

#: One unit in the last place, relative (bf16 8 bits of mantissa, fp16 11, fp32 24).
ULP = {"bf16": 2.0**-7, "fp16": 2.0**-10, "fp32": 2.0**-22}
#: The spacing of subnormals: below the smallest normal a rounding error is absolute, not relative
#: (fp16 outputs of randn-based inputs land there now and then; bf16 and fp32 practically never).
SUBNORMAL = {"bf16": 2.0**-133, "fp16": 2.0**-24, "fp32": 2.0**-149}
TORCH_NAMES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}


def torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, TORCH_NAMES[name])


def rmsnorm_reference(x: Any, weight: Any, eps: float) -> Any:
    """float64 ``x * rsqrt(mean(x²) + eps) * weight`` (not rounded to x's dtype)."""
    import torch

    xd = x.double()
    return xd * torch.rsqrt(xd.square().mean(-1, keepdim=True) + eps) * weight.double()


def axpby_reference(x: Any, y: Any, alpha: float, beta: float) -> Any:
    return alpha * x.double() + beta * y.double()


def excess_error(out: Any, ref: Any, dtype: str, scale: Any = None) -> tuple[float, int]:
    """(worst |out - ref| / bound, elements over the bound); NaN/inf outputs count as over.

    bound = ULP[dtype] · |ref| + 2^-18 · scale + SUBNORMAL[dtype] (scale: the magnitude of the terms that
    cancelled; default |ref|).
    """
    import torch

    outd = out.double()
    scale = ref.abs() if scale is None else scale
    bound = ULP[dtype] * ref.abs() + 2.0**-18 * scale + SUBNORMAL[dtype]
    err = (outd - ref).abs() / bound
    err = torch.where(torch.isfinite(outd), err, torch.full_like(err, float("inf")))
    return float(err.max()) if err.numel() else 0.0, int((err > 1).sum())
