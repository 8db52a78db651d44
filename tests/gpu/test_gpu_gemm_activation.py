"""The GEMM's fused GELU and its rotated reads of A on the GPU: GELU(tanh) on the fp32 accumulator against
torch's in fp32, through every kind of pick auto makes (whole tiles, ping-pong, swapped, split-K, stream-K,
a bias and a scale); a GEMM whose load warp rotates A's rows bitwise equal to the same kernel on A rolled
by torch."""

from __future__ import annotations

import pytest
from test_gpu_gemm import _check, _inputs

pytestmark = pytest.mark.gpu


def _gelu_reference(a, b, bias=None, alpha=1.0):
    torch = pytest.importorskip("torch")
    ref = alpha * (a.float() @ b.float().t())
    if bias is not None:
        ref = ref + bias.float()
    return torch.nn.functional.gelu(ref, approximate="tanh")


@pytest.mark.parametrize(
    "mnk",
    [(4096, 4096, 4096), (1000, 1000, 1000), (272, 8192, 8192), (1024, 1024, 16384), (8192, 8192, 8192)],
    ids=["whole-tiles", "fill-the-sms", "swapped", "split-k", "stream-k"],
)
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_gelu_in_the_epilogue_matches_torch_for_every_kind_of_pick(mnk, dtype):
    torch = pytest.importorskip("torch")
    from hopper_gemm.api import gemm

    m, n, k = mnk
    a, b = _inputs(m, n, k, dtype, "nk", seed=3)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=a.dtype)
    first = gemm(a, b, out=out, activation="gelu_tanh").clone()
    _check(first, _gelu_reference(a, b), dtype)
    assert torch.equal(gemm(a, b, out=out, activation="gelu_tanh"), first)  # bitwise on a repeat


@pytest.mark.parametrize("schedule", ["cooperative", "pingpong"])
def test_gelu_follows_the_scale_and_the_bias(schedule):
    torch = pytest.importorskip("torch")
    from hopper_gemm.api import gemm

    a, b = _inputs(1000, 1032, 512, "bf16", "nk", seed=5)
    bias = torch.randn(1032, device="cuda", dtype=a.dtype)
    got = gemm(a, b, bias=bias, alpha=0.5, schedule=schedule, activation="gelu_tanh")
    _check(got, _gelu_reference(a, b, bias, alpha=0.5), "bf16")


@pytest.mark.parametrize("rotation", [256, 2048, 6144])
def test_rotated_reads_equal_the_kernel_on_a_rolled_copy(rotation):
    torch = pytest.importorskip("torch")
    from dataclasses import replace

    from gemm_modes.launch import launcher
    from gemm_modes.modes import tuned_config
    from hopper_gemm.api import validate

    config = tuned_config(128, 256, 2, 1, "cooperative")
    a, b = _inputs(8192, 2048, 1024, "bf16", "nk", seed=7)
    rotated = torch.full((8192, 2048), float("nan"), device="cuda", dtype=a.dtype)
    ops = validate(a, b, out=rotated)
    launcher(config, replace(ops, problem=replace(ops.problem, a_rows_rotated_by=rotation)), rotated)()
    rolled = torch.roll(a, -rotation, dims=0).contiguous()
    plain = torch.empty_like(rotated)
    launcher(config, validate(rolled, b, out=plain), plain)()
    torch.cuda.synchronize()
    assert torch.equal(rotated, plain)
