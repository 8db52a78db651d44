"""The GPU checks' error bounds (examples/streaming/reference.py), exercised on the CPU: an fp32 computation
rounded once to the output type passes at every N, one element past the bound fails, NaN fails."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

torch = pytest.importorskip("torch")

from examples.streaming.reference import (  # noqa: E402
    ULP,
    axpby_reference,
    excess_error,
    rmsnorm_reference,
    torch_dtype,
)


def fp32_rmsnorm(x, w, eps):
    """What the kernel computes: fp32 sums in another order than float64's, one rounding at the end."""
    xf = x.float()
    partial = xf.square().reshape(x.shape[0], -1, 32).sum(-1)  # per-thread partials, then a tree
    rstd = torch.rsqrt(partial.sum(-1, keepdim=True) / x.shape[-1] + eps)
    return (xf * rstd * w.float()).to(x.dtype)


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
@pytest.mark.parametrize("n", [256, 8192, 32768])
def test_an_fp32_computation_passes(dtype, n):
    gen = torch.Generator().manual_seed(n)
    x = torch.randn(64, n, generator=gen).to(torch_dtype(dtype))
    w = torch.randn(n, generator=gen).to(torch_dtype(dtype))
    worst, bad = excess_error(fp32_rmsnorm(x, w, 1e-6), rmsnorm_reference(x, w, 1e-6), dtype)
    assert bad == 0 and worst <= 1, worst
    y = torch.randn(64, n, generator=gen).to(torch_dtype(dtype))
    out = (0.5 * x.float() - 0.75 * y.float()).to(x.dtype)
    scale = (0.5 * x.double()).abs() + (0.75 * y.double()).abs()
    worst, bad = excess_error(out, axpby_reference(x, y, 0.5, -0.75), dtype, scale)
    assert bad == 0, worst


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
def test_an_element_past_the_bound_fails_and_nan_fails(dtype):
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(8, 1024, generator=gen).to(torch_dtype(dtype))
    w = torch.randn(1024, generator=gen).to(torch_dtype(dtype))
    ref = rmsnorm_reference(x, w, 1e-6)
    out = ref.to(torch_dtype(dtype))
    i = int(ref.abs().argmax())
    off = out.clone().view(-1)
    off[i] = off[i] * (1 + 2.5 * (ULP[dtype] + 2.0**-18))  # past the bound: units in the last place + fp32 noise
    assert excess_error(off.view_as(out), ref, dtype)[1] == 1
    nan = out.clone().view(-1)
    nan[3] = float("nan")
    assert excess_error(nan.view_as(out), ref, dtype)[1] == 1
