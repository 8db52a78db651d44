"""gemm()'s launch cache on the GPU: one conversion per call signature, every call on its own tensors.

Each call's output is poisoned with NaN first; a launch that still pointed at an earlier call's
tensors would leave NaN or the earlier result behind.
"""

from __future__ import annotations

import gc
import weakref

import pytest

pytestmark = pytest.mark.gpu


from test_gpu_gemm import _check, _inputs, _reference, _torch  # noqa: E402


def _builds():
    from gemm_modes.launch import LAUNCHES

    return LAUNCHES.builds


@pytest.mark.parametrize("b_layout", ["nk", "kn"])
@pytest.mark.parametrize("schedule", ["cooperative", "pingpong"])
def test_one_conversion_per_signature_and_each_call_on_its_own_tensors(schedule, b_layout):
    torch = _torch()
    from hopper_gemm.api import gemm

    before = _builds()
    for seed in range(3):  # same shape, new tensors every call
        a, b = _inputs(384, 640, 256, "bf16", b_layout, seed=seed)
        out = torch.full((384, 640), float("nan"), device="cuda", dtype=a.dtype)
        gemm(a, b, out=out, b_layout=b_layout, schedule=schedule)
        torch.cuda.synchronize()
        _check(out, _reference(a, b, b_layout), "bf16")
    assert _builds() - before == 1


def test_bias_alpha_and_shapes_each_get_their_own_signature():
    torch = _torch()
    from hopper_gemm.api import gemm

    a, b = _inputs(300, 1000, 512, "fp16", "nk", seed=4)
    bias = torch.randn(1000, device="cuda", dtype=a.dtype)
    before = _builds()
    calls = [dict(), dict(bias=bias), dict(alpha=0.5), dict(bias=bias, alpha=0.5)] * 2
    for kwargs in calls:
        result = gemm(a, b, **kwargs)  # out=None and N = 1000: a padded result every call
        torch.cuda.synchronize()
        _check(result, _reference(a, b, "nk", kwargs.get("bias"), kwargs.get("alpha", 1.0)), "fp16")
    assert _builds() - before == 4
    small = gemm(a[:7], b)  # another M: another signature
    torch.cuda.synchronize()
    _check(small, _reference(a[:7], b, "nk"), "fp16")
    assert _builds() - before == 5


def test_stream_k_gets_one_signature_per_stream():
    torch = _torch()
    from hopper_gemm.api import gemm

    a, b = _inputs(1024, 1024, 2048, "bf16", "nk", seed=5)
    ref = _reference(a, b, "nk")
    side = torch.cuda.Stream()
    before = _builds()
    for stream in (torch.cuda.current_stream(), side, torch.cuda.current_stream(), side):
        with torch.cuda.stream(stream):
            out = torch.full((1024, 1024), float("nan"), device="cuda", dtype=a.dtype)
            gemm(a, b, out=out, schedule="cooperative", stream_k=True)
            stream.synchronize()
        _check(out, ref, "bf16")
    assert _builds() - before == 2


def test_the_cache_keeps_no_callers_tensor_alive():
    torch = _torch()
    from hopper_gemm.api import gemm

    a, b = _inputs(256, 256, 128, "bf16", "nk", seed=6)
    out = torch.empty(256, 256, device="cuda", dtype=a.dtype)
    gemm(a, b, out=out)
    torch.cuda.synchronize()
    watch = [weakref.ref(t) for t in (a, b, out)]
    del a, b, out
    gc.collect()
    assert all(w() is None for w in watch)


def test_a_cached_key_still_refuses_misaligned_pointers_and_bad_values():
    torch = _torch()
    from hopper_gemm.api import gemm

    a, b = _inputs(128, 256, 64, "bf16", "nk", seed=7)
    bias = torch.randn(256, device="cuda", dtype=a.dtype)
    gemm(a, b, bias=bias)  # the key is now cached
    shifted = torch.empty(128 * 64 + 8, device="cuda", dtype=a.dtype)[1 : 1 + 128 * 64].view(128, 64)
    shifted.copy_(a)  # same shape and strides as a, data 2 bytes off 16-byte alignment
    with pytest.raises(ValueError, match=r"a\.data_ptr\(\) is not 16-byte aligned"):
        gemm(shifted, b, bias=bias)
    bias_shifted = torch.empty(256 + 8, device="cuda", dtype=a.dtype)[1:257]
    with pytest.raises(ValueError, match=r"bias\.data_ptr\(\) is not 16-byte aligned"):
        gemm(a, b, bias=bias_shifted)
    with pytest.raises(ValueError, match="alpha = True is invalid"):
        gemm(a, b, bias=bias, alpha=True)  # True == 1.0, but its own key: checked, and refused


def test_tensors_off_the_current_device_are_refused_even_for_a_cached_key(monkeypatch):
    torch = _torch()
    import gemm_modes.call_cache as call_cache
    from hopper_gemm.api import gemm

    a, b = _inputs(128, 128, 64, "bf16", "nk", seed=8)
    gemm(a, b)  # cached on the current device
    torch.cuda.synchronize()
    here = torch.cuda.current_device()
    # as if the current device were another one (a single-GPU runner has no second device to switch to)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: here + 1)
    monkeypatch.setattr(call_cache, "current_device_and_stream", lambda: (here + 1, 0))
    with pytest.raises(ValueError, match=rf"on cuda:{here} but the current CUDA device is cuda:{here + 1}"):
        gemm(a, b)


@pytest.mark.parametrize(
    "shape,with_out",
    [((4104, 4104, 4104), True), ((4104, 4104, 4104), False), ((1000, 1003, 256), False)],
    ids=["auto-swaps-into-out", "auto-swaps", "forced-odd-n"],
)
def test_a_swapped_call_points_each_launch_at_its_own_tensors(shape, with_out):
    """A swapped launch (Cᵀ = B·Aᵀ: its first operand is b, its second a) through the cache: 4104³, where
    the table swaps by itself, and an odd N forced (``swap_ab=True``; without ``out`` the result is a
    view of padded rows). Each call on new tensors, one build, every result right."""
    torch = _torch()
    from gemm_modes.choice import choose_config
    from hopper_gemm.api import gemm, validate

    m, n, k = shape
    forced = None if shape == (4104, 4104, 4104) else True
    a, b = _inputs(m, n, k, "bf16", "nk", seed=7)
    assert choose_config(validate(a, b).problem, shape, "auto", None, None, swap_ab=forced, sms=132).swap_ab
    before = _builds()
    for seed in range(3):
        a, b = _inputs(m, n, k, "bf16", "nk", seed=seed)
        out = torch.full((m, n), float("nan"), device="cuda", dtype=a.dtype) if with_out else None
        result = gemm(a, b, out=out, swap_ab=forced)
        torch.cuda.synchronize()
        _check(result, _reference(a, b, "nk"), "bf16")
    assert _builds() - before == 1
