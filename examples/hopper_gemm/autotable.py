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
≥ 800 cluster-tiles        cooperative 256×128   2026-11-24, H100 (run 21): 8192³ bf16 1.037 (1.018 without),
(many waves)               cluster 1×2,          fp16 1.040 (1.021); 8192²×4096 + bias 1.027 vs F.linear
                           stream-K              (0.981): the last wave and a half split over every cluster
otherwise                  cooperative 256×128   4096³ 1.046, 6144³ 1.014, 8192³ 1.073, 1024×8192² 1.039
                           cluster 1×2           (bf16); 8192²×4096 + bias 1.010 vs F.linear
=========================  ====================  ===========================================================

Stream-K where the waves are few *loses* (run 21): 4096³ (3.9 waves) 0.907–0.945 against 0.982–1.017,
6144³ (8.7 waves) 0.934–0.943 against 0.983–1.000: each cluster's split share computes ~1.9–2.5 tiles
at k offsets no other cluster shares at that moment, which costs more than the idle part of one wave.

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
#: Cluster-tiles of the cooperative 256×128 cluster 1×2 walk from which stream-K measured faster (8192²: 1024;
#: 6144²: 576 measured slower).
STREAM_K_MIN_CLUSTER_TILES = 800


def pick(problem: Problem, mnk: tuple[int, int, int]) -> GemmConfig:
    """The measured best configuration for a shape (the table above)."""
    m, _, k = mnk
    if m <= SMALL_M:
        return PINGPONG_128x128
    if k <= SHORT_K:
        # With the bias term a 128×192 tile per warpgroup spills (48 bytes): take 128×128 then.
        return PINGPONG_128x128 if problem.bias else PINGPONG_128x192
    n = mnk[1]
    cfg = COOPERATIVE_256x128
    cluster_tiles = -(-m // (cfg.tile_m * cfg.cluster_m)) * -(-n // (cfg.tile_n * cfg.cluster_n))
    return cfg.with_(stream_k=True) if cluster_tiles >= STREAM_K_MIN_CLUSTER_TILES else cfg
