"""The configuration ``schedule="auto"`` picks, per shape class, from what ``benchmarks/gemm.py`` measured.

Measured on the H100 (2026-11-23, one run, bf16 and fp16, randn inputs; benchmarks/RESULTS.md has the
whole table). Ratios are throughput over torch.matmul in the same run:

=========================  ====================  ===========================================================
class                      configuration         why (best measured / runner-up)
=========================  ====================  ===========================================================
M ≤ 512 (few row tiles)    ping-pong 128×128     256×8192×8192: 0.995 (cooperative 128×256: 0.69 — too few
                           cluster 2×1           tiles for 132 SMs; cooperative 128×128: 0.986)
K ≤ 2048 (short K)         ping-pong 128×192     8192²×1024: 1.196 (cooperative 128×256: 1.06): the
                           cluster 2×1           epilogue is a large share, ping-pong hides it (with a
                                                 bias: 128×128, 1.118, as 128×192 then spills)
otherwise                  cooperative 256×128   4096³ 1.046, 6144³ 1.014, 8192³ 1.073, 1024×8192² 1.039
                           cluster 1×2           (bf16); 8192²×4096 + bias 1.010 vs F.linear
=========================  ====================  ===========================================================

Ping-pong 128×192 against cooperative 256×128 on long K: 0.91 at 4096³, 1.015 at 8192³ — one warpgroup
per 128×192 tile feeds the tensor cores less steadily than two on 256×128, which the hidden epilogue
only repays when K is short.
"""

from __future__ import annotations

from .config import GemmConfig, Problem, Schedule

COOPERATIVE_128x256 = GemmConfig(tile_m=128, tile_n=256, cluster_m=2, cluster_n=1, schedule=Schedule.COOPERATIVE)
COOPERATIVE_256x128 = GemmConfig(tile_m=256, tile_n=128, cluster_m=1, cluster_n=2, schedule=Schedule.COOPERATIVE)
PINGPONG_128x128 = GemmConfig(tile_m=128, tile_n=128, cluster_m=2, cluster_n=1, schedule=Schedule.PINGPONG)
PINGPONG_128x192 = GemmConfig(tile_m=128, tile_n=192, cluster_m=2, cluster_n=1, schedule=Schedule.PINGPONG)

SMALL_M = 512
SHORT_K = 2048


def pick(problem: Problem, mnk: tuple[int, int, int]) -> GemmConfig:
    """The measured best configuration for a shape (the table above)."""
    m, _, k = mnk
    if m <= SMALL_M:
        return PINGPONG_128x128
    if k <= SHORT_K:
        # With the bias term a 128×192 tile per warpgroup spills (48 bytes): take 128×128 then.
        return PINGPONG_128x128 if problem.bias else PINGPONG_128x192
    return COOPERATIVE_256x128
