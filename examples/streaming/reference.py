"""fp32/fp64 references and per-dtype error bounds, shared by the CLI check, the GPU tests and the benchmark.

Bounds: the kernel accumulates in fp32 and rounds once to the output type, so an output may differ from
the float64 reference by one unit in the last place of its type (``ULP``, relative), plus fp32 noise
(2^-18 of the magnitude of the terms), plus the spacing of the type's subnormals (``SUBNORMAL``,
absolute): below the smallest normal the rounding grid is fixed, and a relative bound alone rejects
correctly rounded values there (the fp16 failure of the first H100 run, see :func:`error_report`).
"""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class ErrorReport:
    """How far an output is from its float64 reference, with what a failure log needs to name the cause.

    ``bad_ref_max``: the largest |reference| among the elements over the bound. An fp16 run whose bad
    elements all sit below 2^-14 (the smallest normal) is a rounding question in the subnormal band, not a
    kernel bug; a bad element of ordinary magnitude is a wrong value.
    """

    worst: float  # worst |out - ref| / bound (<= 1 passes)
    bad: int  # elements over the bound, NaN/inf included
    worst_at: tuple[int, ...] | None  # index of the worst element
    worst_ref: float  # its reference value
    bad_ref_max: float  # largest |ref| among the bad elements (0 when none)


def error_report(out: Any, ref: Any, dtype: str, scale: Any = None) -> ErrorReport:
    """Compare ``out`` with ``ref`` element by element.

    bound = ULP[dtype] · |ref| + 2^-18 · scale + SUBNORMAL[dtype] (scale: the magnitude of the terms that
    cancelled; default |ref|). The SUBNORMAL floor is what the fp16 check at 300 × 1000 lacked on the
    first H100 run: fp16 outputs below 2^-14 are rounded on an absolute grid of 2^-24, so a correctly
    rounded one can be 2^-25 off, many times a purely relative bound there (16 elements, up to 14×).
    """
    import torch

    outd = out.double()
    scale = ref.abs() if scale is None else scale
    bound = ULP[dtype] * ref.abs() + 2.0**-18 * scale + SUBNORMAL[dtype]
    err = (outd - ref).abs() / bound
    err = torch.where(torch.isfinite(outd), err, torch.full_like(err, float("inf")))
    if not err.numel():
        return ErrorReport(0.0, 0, None, 0.0, 0.0)
    flat = int(err.argmax())
    at = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), err.shape))
    over = err > 1
    bad_refs = ref.abs()[over]
    return ErrorReport(
        float(err.max()),
        int(over.sum()),
        at,
        float(ref.reshape(-1)[flat]),
        float(bad_refs.max()) if bad_refs.numel() else 0.0,
    )


def excess_error(out: Any, ref: Any, dtype: str, scale: Any = None) -> tuple[float, int]:
    """(worst |out - ref| / bound, elements over the bound) of :func:`error_report`."""
    report = error_report(out, ref, dtype, scale)
    return report.worst, report.bad
