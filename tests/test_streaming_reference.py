"""The GPU checks' error bounds (examples/streaming/reference.py), exercised on the CPU: an fp32 computation
rounded once to the output type passes at every N and at the shape that failed on the first H100 run
(fp16, 300 × 1000), one element past the bound fails, NaN fails, flushed fp16 subnormals fail."""

import pytest

torch = pytest.importorskip("torch")

from streaming.reference import (  # noqa: E402
    ULP,
    axpby_reference,
    error_report,
    excess_error,
    rmsnorm_reference,
    torch_dtype,
)

FP16_SMALLEST_NORMAL = 2.0**-14


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


def kernel_order_rmsnorm(x, w, eps):
    """The kernel's arithmetic as its PTX has it: cvt.f32.f16 (exact), fp32 sum of squares, one rsqrt,
    (x · rstd) · w in fp32 (mul.f32, no .ftz), one cvt.rn to the output type (subnormals kept)."""
    xf = x.float()
    rstd = torch.rsqrt(xf.square().sum(-1, keepdim=True) / x.shape[-1] + eps)
    return ((xf * rstd) * w.float()).to(x.dtype)


@pytest.mark.parametrize("seed", range(4))
def test_the_first_h100_failure_is_the_fp16_subnormal_band(seed):
    """tests/gpu/test_gpu_rmsnorm.py::test_rmsnorm_matches_float64[300-1000-fp16] failed on the H100 with 16
    elements up to 14.2× a purely relative bound (bf16 at the same shape passed). The kernel's own
    arithmetic, replayed here on randn inputs of that shape, does the same to a relative bound, and every
    element it rejects is an fp16 subnormal (|ref| < 2^-14), rounded correctly on the absolute 2^-24 grid.
    The bound with the subnormal floor accepts all of them."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(300, 1000, generator=gen).half()
    w = torch.randn(1000, generator=gen).half()
    ref = rmsnorm_reference(x, w, 1e-6)
    out = kernel_order_rmsnorm(x, w, 1e-6)
    err = (out.double() - ref).abs()
    relative_only = err / ((ULP["fp16"] + 2.0**-18) * ref.abs() + 1e-30)  # the bound of the failed run
    rejected = relative_only > 1
    assert int(rejected.sum()) > 0  # the failure reproduces: 19 to 43 elements for these seeds, 16 on the H100
    assert float(ref.abs()[rejected].max()) < FP16_SMALLEST_NORMAL
    assert float(err[rejected].max()) <= 2.0**-25 * (1 + 2.0**-10)  # half the subnormal spacing: rounded right
    report = error_report(out, ref, "fp16")
    assert report.bad == 0 and report.worst <= 1, report


def test_the_subnormal_floor_still_catches_a_flushed_output():
    """The floor is one subnormal spacing, not a licence to flush: an fp16 output forced to zero where the
    reference is 2^-20 (64 spacings) or more fails, and the report names its magnitude."""
    ref = torch.tensor([[2.0**-20, -(2.0**-16), 0.75], [2.0**-15, 1.5, -(2.0**-19)]], dtype=torch.float64)
    out = ref.half()
    assert error_report(out, ref, "fp16").bad == 0
    flushed = out.clone()
    flushed[ref.abs() < FP16_SMALLEST_NORMAL] = 0.0
    report = error_report(flushed, ref, "fp16")
    assert report.bad == 4
    assert report.bad_ref_max == 2.0**-15 and report.worst_at == (1, 0)
    assert report.worst > 100  # 2^-15 off against a bound of about 1.5 · 2^-24


def test_the_report_points_at_the_worst_element():
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(6, 512, generator=gen).to(torch.bfloat16)
    w = torch.randn(512, generator=gen).to(torch.bfloat16)
    ref = rmsnorm_reference(x, w, 1e-6)
    out = ref.to(torch.bfloat16)
    out[4, 100] = out[4, 100] * 1.25 + 0.5  # a wrong value of ordinary magnitude
    report = error_report(out, ref, "bf16")
    assert report.bad == 1 and report.worst_at == (4, 100)
    assert report.worst_ref == float(ref[4, 100]) and report.bad_ref_max == abs(float(ref[4, 100]))
