"""GPU test of examples/blackwell_gemm.py (needs a Blackwell GPU, sm_100a): C = A·B against torch.

It lives outside tests/gpu/, whose tests are the Hopper runner's (the ``gpu`` keyword skips them elsewhere).

Not run here (no Blackwell GPU): the ``blackwell`` marker skips it with the reason. On a B200/GB200 it runs
the single-CTA and the 2-CTA pair configurations on random normal fp16 inputs over several launches (a
synchronization fault shows up as wrong tiles, a hang as a failed bounded wait).
"""

from __future__ import annotations

import pytest
from gpu.bounded import synchronize

pytestmark = pytest.mark.blackwell

CONFIGS = {"cta1": ((128, 128), (1, 1), 1), "cta2_cluster2x1": ((256, 128), (2, 1), 2)}
M, N, K, L = 2048, 1536, 1024, 2
LAUNCHES = 4


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_port_matches_torch(name: str) -> None:
    torch = pytest.importorskip("torch")
    import blackwell_gemm
    import cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack
    from cutlass.torch import current_stream

    tiler, cluster, cta_group = CONFIGS[name]
    gen = torch.Generator(device="cuda").manual_seed(0)
    # (L, M, K) / (L, N, K) / (L, M, N) in memory, viewed as (M, K, L), (N, K, L), (M, N, L): K-major A and B.
    a = torch.randn((L, M, K), generator=gen, device="cuda", dtype=torch.float16)
    b = torch.randn((L, N, K), generator=gen, device="cuda", dtype=torch.float16)
    c = torch.zeros((L, M, N), device="cuda", dtype=torch.float16)
    views = [from_dlpack(t.permute(1, 2, 0), assumed_align=16) for t in (a, b, c)]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    gemm = blackwell_gemm.BlackwellGemm(blackwell_gemm.GemmConfig(tiler, cluster, cta_group))
    stream = current_stream()
    compiled = cute.compile(gemm, *views, sms // (cluster[0] * cluster[1]), stream)
    expected = torch.einsum("lmk,lnk->lmn", a.float(), b.float())
    for launch in range(LAUNCHES):
        c.zero_()
        compiled(*views, stream)
        synchronize()
        error = (c.float() - expected).abs().max().item()
        assert error < 0.5, f"{name} launch {launch}: max |C - A·B| = {error}"
