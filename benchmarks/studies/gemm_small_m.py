"""Shapes that large tiles leave the GPU idle on: ping-pong tiles and clusters against torch, and auto's pick.

The measurement behind the fill rules of ``gemm_modes.autotable`` (``small_m``, its turned form
``small_n``, ``fill`` for fewer cooperative tiles than SMs) and its ``split_k`` rule: for each shape every
candidate runs interleaved with torch (``ROUNDS`` rounds of ``BATCH`` launches, rotating order, median),
each checked against torch once. Small M: the ping-pong tiles of ``SMALL_M_TILES`` (and
``TALL_SMALL_M_TILE``) with cluster 2×1 and
1×2; M above 512: ``SMALL_N_TILES`` and 128×192 likewise, and the cooperative 128×256 tile auto takes
otherwise (N above 512 too: cooperative 128×128 in either cluster); split-K's shapes: the whole-tile
pick and 128×128 split-K in 2 or 4 parts, 128×192 in 2, either cluster. One row per shape: torch's
time, the old choice, the rule's pick, the best candidate, and every ratio (ours / torch throughput).

    python benchmarks/studies/gemm_small_m.py [--shapes 128x8192x8192,8192x256x8192,...]
"""

from __future__ import annotations

import argparse

import _paths  # noqa: F401
from gemm_modes.autotable import (
    COOPERATIVE_DEFERRED,
    POWER_OF_TWO_WIDTHS,
    SMALL_M,
    SMALL_M_TILES,
    SMALL_N_TILES,
    TALL_SMALL_M_TILE,
)
from gemm_modes.modes import tuned_config
from hopper_gemm.config import GemmConfig, Schedule
from needs_gpu import cuda_torch, device_with_sms
from shape_arg import parse_shapes

SHAPES = [
    (128, 8192, 8192),
    (64, 8192, 8192),
    (256, 4096, 8192),
    (128, 4096, 4096),
    (128, 4096, 8192),
    (64, 4096, 4096),
    (384, 6144, 8192),
    (200, 8192, 8192),
    (512, 4096, 4096),
    (256, 2048, 8192),
    (32, 8192, 8192),
    (128, 14336, 4096),
    (128, 4096, 14336),
    (256, 8192, 8192),
    (512, 8192, 8192),
    (256, 8192, 1024),
    (130, 4096, 4096),
    (130, 2048, 4096),
    (384, 4096, 4096),
    (384, 6144, 4096),
    (320, 8192, 8192),
    (300, 6144, 6144),
]
#: Small N (M above SMALL_M): the shapes of the turned rule (2026-11-26).
SMALL_N_SHAPES = [
    (8192, 256, 8192),
    (8192, 128, 8192),
    (4096, 128, 8192),
    (8192, 512, 8192),
    (14336, 128, 4096),
    (8192, 64, 8192),
    (4096, 256, 4096),
    (8192, 256, 1024),
    (16384, 256, 8192),
]
#: Both sides above SMALL_M, too few cooperative tiles for the SMs (``autotable.fill``, 2026-11-26).
MID_SHAPES = [
    (1024, 1024, 8192),
    (1024, 2048, 8192),
    (2048, 1024, 8192),
    (1536, 1536, 4096),
    (768, 3072, 4096),
    (1024, 1024, 2048),
    (1024, 4096, 4096),
    (2048, 2048, 8192),
    (1024, 2048, 2048),
    (1024, 2048, 4096),
    (2048, 1024, 4096),
    (2048, 2048, 2048),
    (2048, 2048, 4096),
    (1280, 1280, 8192),
    (1536, 1024, 8192),
    (768, 1536, 4096),
    (1536, 1536, 2048),
]
#: K ≥ 4 × the longer side (``autotable.split_k``, 2026-11-26); old = the whole-tile pick.
SPLIT_K_SHAPES = [
    (1024, 1024, 4096),
    (1024, 1024, 8192),
    (1024, 1024, 16384),
    (512, 1024, 16384),
    (384, 1024, 8192),
    (1024, 384, 8192),
    (2048, 256, 8192),
    (256, 2048, 8192),
    (768, 768, 16384),
    (2048, 512, 4096),
    (768, 1536, 8192),
    (1024, 1536, 16384),
]
WHOLE = "whole"
SPLIT_CANDIDATES = {
    f"{tn}c{cm}{3 - cm}x{parts}": tuned_config(128, tn, cm, 3 - cm, Schedule.COOPERATIVE, split_k=parts)
    for tn, parts in ((128, 2), (128, 4), (192, 2))
    for cm in (2, 1)
}
CANDIDATES = {
    f"{tm}x{tn}c{cm}{3 - cm}": GemmConfig(tm, tn, cm, 3 - cm, Schedule.PINGPONG)
    for tm, tn in (*SMALL_M_TILES, TALL_SMALL_M_TILE)
    for cm in (2, 1)
}
COOP = "coop128x256c21d8"
N_CANDIDATES = {
    f"{tm}x{tn}c{cm}{3 - cm}": GemmConfig(tm, tn, cm, 3 - cm, Schedule.PINGPONG)
    for tm, tn in SMALL_N_TILES
    for cm in (2, 1)
} | {
    "128x192c21": GemmConfig(128, 192, 2, 1, Schedule.PINGPONG),
    "128x192c12": GemmConfig(128, 192, 1, 2, Schedule.PINGPONG),
    COOP: COOPERATIVE_DEFERRED,
}
#: Both sides above SMALL_M: the cooperative 128×128 tile too (two warpgroups on one tile, either cluster),
#: and the ping-pong widths between the powers of two that the fill rule weighs.
MID_CANDIDATES = (
    N_CANDIDATES
    | {f"coop128x128c{cm}{3 - cm}": GemmConfig(128, 128, cm, 3 - cm, Schedule.COOPERATIVE) for cm in (2, 1)}
    | {name: config for name, config in CANDIDATES.items() if config.tile_n not in POWER_OF_TWO_WIDTHS}
)
OLD = "128x128c21"  # small M before the fill rule; small N: COOP
ROUNDS = 10
BATCH = 10


def name_of(config: GemmConfig) -> str:
    if config.split_k > 1:
        return f"{config.tile_n}c{config.cluster_m}{config.cluster_n}x{config.split_k}"
    if config.schedule is Schedule.COOPERATIVE:
        if (config.tile_m, config.tile_n) == (128, 128):
            return f"coop128x128c{config.cluster_m}{config.cluster_n}"
        return COOP
    return f"{config.tile_m}x{config.tile_n}c{config.cluster_m}{config.cluster_n}"


def candidates_for(shape: tuple[int, int, int], sms: int = 132) -> dict[str, GemmConfig]:
    from gemm_modes.autotable import split_k, whole_tiles
    from hopper_gemm.config import Problem

    if split_k(shape, sms) is not None or shape in SPLIT_K_SHAPES:
        fits = {name: c for name, c in SPLIT_CANDIDATES.items() if c.cluster_tiles(*shape[:2]) * c.split_k <= sms // 2}
        return {WHOLE: whole_tiles(Problem("bf16"), shape, sms).with_(staging_in_ring=False)} | fits
    if shape[0] <= SMALL_M:
        return CANDIDATES
    return N_CANDIDATES if shape[1] <= SMALL_M else MID_CANDIDATES


def bench_shape(shape: tuple[int, int, int], torch, candidates: dict[str, GemmConfig]) -> dict[str, float]:
    """Ratio (torch time / ours) per candidate, and torch's µs under "torch"."""
    from checked_launch import checked_launcher
    from kernel_tools.timing import time_interleaved

    m, n, k = shape
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g)
    ref = a.float() @ w.float().t()
    contenders = {"torch": lambda: torch.matmul(a, w.t())}
    for name, config in candidates.items():
        contenders[name] = checked_launcher(config, (a, w, None), ref, f"{name} at {shape}")
    times = time_interleaved(contenders, ROUNDS, BATCH, rotate=True)
    return {"torch": times["torch"]} | {name: times["torch"] / times[name] for name in candidates}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", help="comma-separated MxNxK (default: the rules' tables)")
    args = parser.parse_args(argv)
    shapes = parse_shapes(parser, args.shapes) if args.shapes else SHAPES + SMALL_N_SHAPES + MID_SHAPES + SPLIT_K_SHAPES
    torch = cuda_torch("studies/gemm_small_m.py", "tests/test_gemm_schedule.py checks the rule")
    if torch is None:
        return 0
    from gemm_modes.autotable import table_decision
    from hopper_gemm.config import Problem

    device, sms = device_with_sms(torch)
    print(f"device: {device}; bf16 randn; {ROUNDS}×{BATCH} launches, median")
    print(f"ratio = ours / torch.matmul throughput; old = {OLD} for small M (before the fill rule), {COOP} else")
    print("(auto before the turned and mid-size rules), whole for split-K's shapes (auto without split-K); the")
    print("rule's pick: its tile and cluster, not the ring staging")
    header = None
    for shape in shapes:
        candidates = candidates_for(shape, sms)
        if header != list(candidates):
            header = list(candidates)
            print(f"{'M×N×K':>16} {'torch µs':>8} {'old':>6} {'rule pick':>23} {'best':>23}  " + " ".join(candidates))
        r = bench_shape(shape, torch, candidates)
        chosen = name_of(table_decision(Problem("bf16"), shape, sms).config)  # before clusters of four
        chosen = chosen if chosen in candidates else WHOLE
        best = max(candidates, key=r.get)
        old = r[WHOLE if WHOLE in candidates else OLD if shape[0] <= SMALL_M else COOP]
        print(
            f"{'×'.join(map(str, shape)):>16} {r['torch']:8.1f} {old:6.3f} {chosen:>17} {r[chosen]:5.3f} "
            f"{best:>17} {r[best]:5.3f}  " + " ".join(f"{r[name]:.3f}".rjust(len(name)) for name in candidates)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
