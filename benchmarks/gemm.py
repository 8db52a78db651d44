"""examples/persistent_gemm.py against torch.matmul (and F.linear with a bias), in one process.

For every shape: identical ``torch.randn`` inputs for every contender; each contender warmed up,
then ROUNDS rounds in which torch and every configuration run BATCH launches each, back to back
(interleaved, so clock and power drift hit all of them alike), timed with CUDA events. The figure
is the median over rounds of the per-launch time (ROUNDS × BATCH ≥ 100 timed launches each).
Every configuration's output is also checked against torch once per shape.

    python benchmarks/gemm.py                 # the target table, every candidate configuration
    python benchmarks/gemm.py --quick         # fewer configurations and shapes
    python benchmarks/gemm.py --json out.json
    python benchmarks/gemm.py --sweep [--held-out]        # auto on the any-shape sweep against torch
    python benchmarks/gemm.py --sweep --against-table old.py   # and another autotable.py, same rounds
    python benchmarks/gemm.py --sweep --draw projection:32:20261128   # shapes drawn at random (shape_draws.py)
    python benchmarks/gemm.py --sweep --shapes 272x8192x8192 --configs swappp128xm2c12,swap192x144c21n
                                              # tiles named by their parts (NAMED), widths that follow M

Prints the device name, one row per (shape, configuration), the SM clock and board power ``nvidia-smi``
read over each shape's rounds (the card's state moves every ratio; benchmarks/studies/gemm_sustained.py runs each
contender alone instead), and a summary of the best per shape.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("examples", "contrib")]

from gemm_modes.modes import TunedConfig, tuned_config  # noqa: E402
from gpu_clocks import ClockSampler, smi_id  # noqa: E402
from hopper_gemm.config import Schedule  # noqa: E402
from kernel_tools.timing import graphed, interleaved_samples, kernel_spans, paired_ratio  # noqa: E402
from needs_gpu import cuda_torch  # noqa: E402
from shape_arg import parse_shapes, table_rows  # noqa: E402
from shape_draws import draw  # noqa: E402

#: The target per shape: ours / torch throughput at least this (the bias row against F.linear).
TARGETS = {(4096, 4096, 4096): 1.05, (6144, 6144, 6144): 1.05, (8192, 8192, 8192): 1.02, (8192, 8192, 1024): 1.02}
TARGETS |= {(256, 8192, 8192): 0.98, (1024, 8192, 8192): 0.98, (8192, 8192, 4096): 1.05}

# (M, N, K, dtype, bias): the target table's rows.
SHAPES = [
    (4096, 4096, 4096, "fp16", False),
    (4096, 4096, 4096, "bf16", False),
    (6144, 6144, 6144, "fp16", False),
    (6144, 6144, 6144, "bf16", False),
    (8192, 8192, 8192, "fp16", False),
    (8192, 8192, 8192, "bf16", False),
    (8192, 8192, 1024, "bf16", False),
    (256, 8192, 8192, "bf16", False),
    (1024, 8192, 8192, "bf16", False),
    (8192, 8192, 4096, "bf16", True),
]
QUICK_SHAPES = [SHAPES[1], SHAPES[5], SHAPES[6], SHAPES[7], SHAPES[9]]

#: ``--sweep``: squares (non-multiples of 128 among them), LLM projections of real models' (hidden,
#: intermediate) pairs in both directions (up: T × intermediate × hidden, down: T × hidden × intermediate),
#: and K from 512 to 16384. Auto's pick on each, against torch.
_SQUARES = [(s, s, s, "bf16", False) for s in (1000, 1024, 2048, 3000, 4096, 4104, 6000, 8000, 8192)]
_PROJECTIONS = [
    (tokens, *pair, "bf16", False)
    for (hidden, inter), token_counts in (
        ((4096, 14336), (128, 1024, 4096, 16384)),
        ((5120, 13824), (256, 2048, 8192)),
        ((8192, 28672), (512, 4096)),
        ((7168, 18432), (128, 8192)),
    )
    for tokens in token_counts
    for pair in ((inter, hidden), (hidden, inter))
]
SWEEP = [
    *_SQUARES,
    (4096, 4096, 4096, "fp16", False),
    (8192, 8192, 8192, "fp16", False),
    *_PROJECTIONS,
    (8192, 8192, 512, "bf16", False),
    (4096, 4096, 16384, "bf16", False),
    (1024, 1024, 16384, "bf16", False),
]
#: ``--sweep --held-out``: shapes of the same families that auto's rules were not tuned on, held to the same bar.
HELD_OUT = [
    *[(s, s, s, "bf16", False) for s in (1536, 2560, 3072, 3584, 5000, 7000)],
    (2560, 2560, 8192, "bf16", False),
    (3072, 3584, 8192, "bf16", False),
    (6144, 6144, 6144, "bf16", False),
    (384, 14336, 4096, "bf16", False),
    (384, 4096, 14336, "bf16", False),
    (768, 13824, 5120, "bf16", False),
    (768, 5120, 13824, "bf16", False),
    (3072, 28672, 8192, "bf16", False),
    (3072, 8192, 28672, "bf16", False),
    (6144, 18432, 7168, "bf16", False),
    (6144, 7168, 18432, "bf16", False),
    (256, 28672, 8192, "bf16", False),
    (512, 14336, 4096, "bf16", False),
    (512, 7168, 2048, "bf16", False),
    (256, 14336, 2048, "bf16", False),
    (2048, 18432, 7168, "bf16", False),
    (8192, 8192, 1024, "fp16", False),
    (6144, 6144, 2048, "bf16", False),
    (2048, 2048, 8192, "bf16", False),
    (3072, 3072, 12288, "bf16", False),
    (8192, 4096, 3072, "bf16", False),
]
#: What ``--sweep`` asks of every shape, and of their geometric mean (ours / torch).
SWEEP_FLOOR, SWEEP_GEOMEAN = 0.97, 1.03

C = Schedule.COOPERATIVE
P = Schedule.PINGPONG
CANDIDATES = {
    "coop128x256c21": tuned_config(128, 256, 2, 1, C),
    "coop128x256c21g4": tuned_config(128, 256, 2, 1, C, group=4),
    "coop128x256c21g16": tuned_config(128, 256, 2, 1, C, group=16),
    "coop128x256c21rn": tuned_config(128, 256, 2, 1, C, raster="n"),
    "coop128x256c12": tuned_config(128, 256, 1, 2, C),
    "coop256x128c12": tuned_config(256, 128, 1, 2, C),
    "coop256x128c21": tuned_config(256, 128, 2, 1, C),
    "coop128x128c21": tuned_config(128, 128, 2, 1, C),
    "coop128x128c21d4": tuned_config(128, 128, 2, 1, C, deferred_chunks=4),
    "coop256x128c12s8": tuned_config(256, 128, 1, 2, C, epi_stages=8),
    "coop128x256c21s8": tuned_config(128, 256, 2, 1, C, epi_stages=8),
    "coop256x128c12g4": tuned_config(256, 128, 1, 2, C, group=4),
    "coop256x128c12g16": tuned_config(256, 128, 1, 2, C, group=16),
    "coop256x128c12rn": tuned_config(256, 128, 1, 2, C, raster="n"),
    "coop256x128c12rn4": tuned_config(256, 128, 1, 2, C, raster="n", group=4),
    "coop256x128c12b4": tuned_config(256, 128, 1, 2, C, epi_batch=4),
    "coop256x128c12d1": tuned_config(256, 128, 1, 2, C, deferred_chunks=1),
    "coop256x128c12d2": tuned_config(256, 128, 1, 2, C, deferred_chunks=2),
    "coop256x128c12d4": tuned_config(256, 128, 1, 2, C, deferred_chunks=4),
    "coop256x128c12d8": tuned_config(256, 128, 1, 2, C, deferred_chunks=8),
    "coop128x256c21d4": tuned_config(128, 256, 2, 1, C, deferred_chunks=4),
    "coop128x256c21e64d4": tuned_config(128, 256, 2, 1, C, epi_stages=2, epi_n=64, deferred_chunks=4),
    "coop128x256c21d8": tuned_config(128, 256, 2, 1, C, deferred_chunks=8),
    "coop128x256c21skrd2": tuned_config(128, 256, 2, 1, C, stream_k=True, stream_k_remainder=True, deferred_chunks=2),
    "coop128x256c21skrd4": tuned_config(128, 256, 2, 1, C, stream_k=True, stream_k_remainder=True, deferred_chunks=4),
    "coop128x256c21skrd8": tuned_config(128, 256, 2, 1, C, stream_k=True, stream_k_remainder=True, deferred_chunks=8),
    "coop128x256c21skrb4": tuned_config(128, 256, 2, 1, C, stream_k=True, stream_k_remainder=True, epi_batch=4),
    "coop128x256c21skad8": tuned_config(128, 256, 2, 1, C, stream_k=True, stream_k_aligned=True, deferred_chunks=8),
    # the tile order (raster direction, band width) of auto's cooperative picks
    "coop128x256c21g4d8": tuned_config(128, 256, 2, 1, C, group=4, deferred_chunks=8),
    "coop128x256c21g16d8": tuned_config(128, 256, 2, 1, C, group=16, deferred_chunks=8),
    "coop128x256c21rnd8": tuned_config(128, 256, 2, 1, C, raster="n", deferred_chunks=8),
    "coop128x256c21skrg16d8": tuned_config(
        128, 256, 2, 1, C, group=16, stream_k=True, stream_k_remainder=True, deferred_chunks=8
    ),
    "coop128x256c21skrrnd8": tuned_config(
        128, 256, 2, 1, C, raster="n", stream_k=True, stream_k_remainder=True, deferred_chunks=8
    ),
    "coop256x128c12sk": tuned_config(256, 128, 1, 2, C, stream_k=True),
    "coop128x256c21sk": tuned_config(128, 256, 2, 1, C, stream_k=True),
    "coop256x128c12skr": tuned_config(256, 128, 1, 2, C, stream_k=True, stream_k_remainder=True),
    "coop128x256c21skr": tuned_config(128, 256, 2, 1, C, stream_k=True, stream_k_remainder=True),
    "coop256x192c12": tuned_config(256, 192, 1, 2, C),
    "coop256x192c21": tuned_config(256, 192, 2, 1, C),
    "coop256x128c12e64": tuned_config(256, 128, 1, 2, C, epi_stages=2, epi_n=64),
    "coop128x256c21e64": tuned_config(128, 256, 2, 1, C, epi_stages=2, epi_n=64),
    "coop256x128c22": tuned_config(256, 128, 2, 2, C),
    "coop128x256c22": tuned_config(128, 256, 2, 2, C),
    "coop128x256c22skr": tuned_config(128, 256, 2, 2, C, stream_k=True, stream_k_remainder=True),
    "pp128x128c21": tuned_config(128, 128, 2, 1, P),
    "pp128x128c21r": tuned_config(128, 128, 2, 1, P, staging_in_ring=True),
    "coop128x128c21r": tuned_config(128, 128, 2, 1, C, staging_in_ring=True),
    "pp128x128c22": tuned_config(128, 128, 2, 2, P),
    "pp128x192c22": tuned_config(128, 192, 2, 2, P),
    "pp128x192c21": tuned_config(128, 192, 2, 1, P),
    "pp128x192c21b2": tuned_config(128, 192, 2, 1, P, epi_batch=2),
    "pp64x256c21": tuned_config(64, 256, 2, 1, P),
    "pp128x128c12": tuned_config(128, 128, 1, 2, P),
    "pp128x192c12": tuned_config(128, 192, 1, 2, P),
    "coop128x128c21skad4": tuned_config(128, 128, 2, 1, C, stream_k=True, stream_k_aligned=True, deferred_chunks=4),
    "coop128x128c12skad4": tuned_config(128, 128, 1, 2, C, stream_k=True, stream_k_aligned=True, deferred_chunks=4),
    "coop256x176c12": tuned_config(256, 176, 1, 2, C),
    # one tile per CTA (1024³): both warpgroups on a 128×64 tile instead of one
    "coop128x64c12r": tuned_config(128, 64, 1, 2, C, staging_in_ring=True),
    "coop128x192c21d6": tuned_config(128, 192, 2, 1, C, deferred_chunks=6),
    "coop128x224c21skad7": tuned_config(128, 224, 2, 1, C, stream_k=True, stream_k_aligned=True, deferred_chunks=7),
    # cuBLAS's 128×168 at 384×14336×4096 (an 8-column multiple: 8-column subtiles)
    "pp128x168c12": tuned_config(128, 168, 1, 2, P),
    "pp128x168c21": tuned_config(128, 168, 2, 1, P),
    "coop128x168c21d21": tuned_config(128, 168, 2, 1, C, deferred_chunks=21),
    # 192-row ping-pong tiles (M = 384 in two row tiles; 192×112 fills 1.94 waves at 384×14336)
    "pp192x112c12": tuned_config(192, 112, 1, 2, P),
    "pp192x112c21": tuned_config(192, 112, 2, 1, P),
    "pp192x128c12": tuned_config(192, 128, 1, 2, P),
    "pp192x128c21": tuned_config(192, 128, 2, 1, P),
    "pp192x64c21": tuned_config(192, 64, 2, 1, P),
    "pp192x96c21": tuned_config(192, 96, 2, 1, P),
    "coop128x224c21r": tuned_config(128, 224, 2, 1, C, staging_in_ring=True),
    # warpgroups along N (each every row, half the columns): cuBLAS's 192×192 "coopB" (3000³: 256 tiles)
    "coop192x192c12n": tuned_config(192, 192, 1, 2, C, wg_split="n"),
    "coop192x192c21n": tuned_config(192, 192, 2, 1, C, wg_split="n"),
    "coop192x176c21n": tuned_config(192, 176, 2, 1, C, wg_split="n"),
    "coop192x160c21n": tuned_config(192, 160, 2, 1, C, wg_split="n"),
    # swapped (Cᵀ = W·Aᵀ, swap_ab): the tile's first extent runs along N, the second along M
    "swap192x176c21n": tuned_config(192, 176, 2, 1, C, wg_split="n", swap_ab=True),
    "swap192x176c12n": tuned_config(192, 176, 1, 2, C, wg_split="n", swap_ab=True),
    "swap192x192c21n": tuned_config(192, 192, 2, 1, C, wg_split="n", swap_ab=True),
    "swap128x256c21": tuned_config(128, 256, 2, 1, C, swap_ab=True),
    # M a little past a multiple of 128 (152 rows: two 128-row tiles, 59 % useful): computed as Cᵀ, M is the
    # tile's second extent, 160 or 176 wide
    "swappp128x160c21": tuned_config(128, 160, 2, 1, P, swap_ab=True),
    "swap128x160c21": tuned_config(128, 160, 2, 1, C, swap_ab=True),
    "swappp128x176c21": tuned_config(128, 176, 2, 1, P, swap_ab=True),
    "swap128x176c21": tuned_config(128, 176, 2, 1, C, swap_ab=True),
    "coop128x256c21n": tuned_config(128, 256, 2, 1, C, wg_split="n"),
    "coop192x256c21n": tuned_config(192, 256, 2, 1, C, wg_split="n"),
    # cuBLAS's 64×128 (our M × N) at 1024³: one m64n128 wgmma per k-step instead of two m64n64
    "pp64x128c21": tuned_config(64, 128, 2, 1, P),
    "pp64x128c12": tuned_config(64, 128, 1, 2, P),
    "pp64x128c12r": tuned_config(64, 128, 1, 2, P, staging_in_ring=True),
    "pp64x128c21r": tuned_config(64, 128, 2, 1, P, staging_in_ring=True),
    "pp128x64c12": tuned_config(128, 64, 1, 2, P),
    "pp128x64c12r": tuned_config(128, 64, 1, 2, P, staging_in_ring=True),
    # split-K on a small output with a long K (384×4096×14336: 66 tiles of 128×192 in 2 parts fill one wave)
    "coop128x192c12sk2": tuned_config(128, 192, 1, 2, C, split_k=2),
    "coop128x128c12sk4": tuned_config(128, 128, 1, 2, C, split_k=4),
    "coop128x128c12sk2": tuned_config(128, 128, 1, 2, C, split_k=2),
    "coop128x192c21sk2": tuned_config(128, 192, 2, 1, C, split_k=2),
    "coop128x256c12sk2": tuned_config(128, 256, 1, 2, C, split_k=2),
    "coop128x256c21sk2": tuned_config(128, 256, 2, 1, C, split_k=2),
    "coop128x256c21sk4": tuned_config(128, 256, 2, 1, C, split_k=4),
    # stream-K with the cluster along N (an odd count of row tiles)
    "coop128x256c12skd8": tuned_config(128, 256, 1, 2, C, stream_k=True, deferred_chunks=8),
    "coop128x256c12skad8": tuned_config(128, 256, 1, 2, C, stream_k=True, stream_k_aligned=True, deferred_chunks=8),
}


def width_family() -> dict[str, Any]:
    """The tile widths between the powers of two, every multiple of 16 from 96 to 240 but 128 and 192, in
    both clusters: ping-pong 128×W up to its accumulators' 192 columns (``pp128xWcMN``) and cooperative
    128×W with the epilogue deferred one subtile per chunk (``coop128xWcMNdS``). ``--sweep --widths`` runs
    them all beside auto's pick."""
    family = {}
    for width in (w for w in range(96, 256, 16) if w not in (128, 192)):
        for cm in (2, 1):
            if width <= 192:
                family[f"pp128x{width}c{cm}{3 - cm}"] = tuned_config(128, width, cm, 3 - cm, P)
            coop = tuned_config(128, width, cm, 3 - cm, C)
            family[f"coop128x{width}c{cm}{3 - cm}d{coop.subtiles}"] = coop.with_(deferred_chunks=coop.subtiles)
    return family


WIDTHS = width_family()
CANDIDATES |= WIDTHS
QUICK = ["coop128x256c21d8", "coop128x256c21skrd8", "pp128x192c21", "pp128x128c21", "pp128x128c21r"]
#: Measured and slower everywhere, or within 1 % of a table configuration (H100, 2026-11-24/25): kept for
#: ``--configs``, left out of the full table. 256×192 tiles fit 3 A/B stages (−3 … −7 %); 8 staging buffers
#: leave 3 stages (−4 … −5 %); band width and raster direction move the result less than the card does;
#: 2×2 clusters (A and B multicast) ran 5 … 20 % slower than 2×1 / 1×2 at every shape (2026-11-25): an H100
#: holds 30 clusters of 4 at once, 120 of its 132 SMs (``launch.resident_clusters``).
DIAGNOSTIC = {"coop256x192c12", "coop256x192c21", "coop256x128c12s8", "coop128x256c21s8"}
DIAGNOSTIC |= {"coop128x256c21g4", "coop128x256c21g16", "coop128x256c21rn", "coop256x128c12g4", "coop256x128c12g16"}
DIAGNOSTIC |= {"coop256x128c12rn", "coop256x128c12rn4", "coop128x256c12", "coop256x128c21"}
DIAGNOSTIC |= {"coop256x128c22", "coop128x256c22", "coop128x256c22skr", "pp128x128c22", "pp128x192c22"}
#: The deferred epilogue in fewer, larger chunks: 1.5–3 % behind 8 chunks (H100, 2026-11-25).
DIAGNOSTIC |= {"coop256x128c12d1", "coop256x128c12d2", "coop256x128c12d4", "coop128x256c21d4"}
DIAGNOSTIC |= {"coop128x256c21skrd2", "coop128x256c21skrd4", "coop128x128c21d4"}
#: Cooperative 128×128 with the staging in the ring: within 0.3 % of ping-pong's at 256×8192² (2026-11-26).
DIAGNOSTIC |= {"coop128x128c21r"}
#: Tried on the sweep's shapes that fall behind torch (see ``--sweep --configs``).
DIAGNOSTIC |= {"pp128x128c12", "pp128x192c12", "coop128x128c21skad4", "coop128x128c12skad4"}
DIAGNOSTIC |= {"coop128x256c12skd8", "coop128x256c12skad8", "coop256x176c12"} | set(WIDTHS)
DIAGNOSTIC |= {"coop128x192c21d6", "coop128x224c21skad7", "coop128x64c12r"}
DIAGNOSTIC |= {"pp128x168c12", "pp128x168c21", "coop128x168c21d21", "pp192x112c12", "pp192x112c21", "pp192x128c12"}
DIAGNOSTIC |= {"coop192x192c12n", "coop192x192c21n", "coop192x176c21n", "coop192x160c21n", "coop128x256c21n"}
DIAGNOSTIC |= {"coop192x256c21n"}
DIAGNOSTIC |= {"swap192x176c21n", "swap192x176c12n", "swap192x192c21n", "swap128x256c21"}

#: A configuration named by its parts, for ``--configs`` beside CANDIDATES' names: ``[swap][pp|coop]ROWSx
#: WIDTHcMN[n][kS][eE][rD][gB]`` (swapped, ping-pong or cooperative (the default), tile, cluster, warpgroups
#: along N, split-K in S parts, staged subtiles E columns wide: 8, 16, 32, 64 or an odd multiple of 8 dividing
#: the width, tile order raster D ``m`` or ``n`` in bands of B cluster tiles), WIDTH a number or ``m`` / ``n``
#: and a count
#: (``swappp128xm2c12``: M in two column tiles of the swapped launch, each ⌈M / 2⌉ rows rounded up to 8;
#: ``pp128xn2c12``: N in two column tiles; ``coop128x80c11k7``: 128×80 tiles, each in 7 parts;
#: ``swapcoop256x160c21e16``: 16-column subtiles, whose smaller staging leaves room for a fourth A/B stage).
NAMED = re.compile(
    r"(swap)?(pp|coop)?(\d+)x(\d+|[mn][1-8])c([124])([124])(n)?(?:k([2-8]))?(?:e(\d+))?(?:r([mn]))?(?:g(\d+))?"
)


def named_config(name: str, m: int, n: int = 0) -> TunedConfig | None:
    """The configuration :data:`NAMED` spells out for an M×N problem, None where ``name`` is not of that
    form."""
    parts = NAMED.fullmatch(name)
    if parts is None:
        return None
    swap, schedule, rows, width, cluster_m, cluster_n, along_n, split, subtile, raster, band = parts.groups()
    if width[0] in "mn":
        share = -(-(m if width[0] == "m" else n) // int(width[1:]))
        width = -(-share // 8) * 8
    config = tuned_config(
        int(rows),
        int(width),
        int(cluster_m),
        int(cluster_n),
        P if schedule == "pp" else C,
        swap_ab=bool(swap),
        **({"wg_split": "n"} if along_n else {}),
        **({"raster": raster} if raster else {}),
        **({"group": int(band)} if band else {}),
    )
    config = config.reshaped(epi_n=int(subtile)) if subtile else config
    return config.with_split_k(int(split)) if split else config


ROUNDS = 10
BATCH = 10


@dataclass
class Row:
    shape: tuple[int, int, int]
    dtype: str
    bias: bool
    name: str
    us: float
    torch_us: float
    rel_err: float
    repeat_exact: bool = True
    #: torch's time over ours round by round: (median, first quartile, third quartile) of the rounds' own
    #: ratios (``kernel_tools.timing.paired_ratio``), where drift between rounds cancels; None if not timed so.
    by_round: tuple[float, float, float] | None = None

    @property
    def tflops(self) -> float:
        m, n, k = self.shape
        return 2 * m * n * k / self.us / 1e6

    @property
    def ratio(self) -> float:
        """Throughput of ours over torch's (>1: faster)."""
        return self.torch_us / self.us


def shape_inputs(shape, torch) -> tuple:
    """``(a, w, bias, out, ref, torch_fn)`` of a table row: identical ``torch.randn`` inputs for every
    benchmark, w as (N, K) (a @ w.T, nn.Linear's layout), the fp32 reference, and torch's one-call
    equivalent (``F.linear`` with the bias, ``torch.matmul`` without)."""
    m, n, k, dtype, with_bias = shape
    tdt = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randn(m, k, device="cuda", dtype=tdt, generator=g)
    w = torch.randn(n, k, device="cuda", dtype=tdt, generator=g)
    bias = torch.randn(n, device="cuda", dtype=tdt, generator=g) if with_bias else None
    out = torch.empty(m, n, device="cuda", dtype=tdt)
    ref = torch.nn.functional.linear(a.float(), w.float(), None if bias is None else bias.float())

    def torch_fn():
        if with_bias:
            torch.nn.functional.linear(a, w, bias)
        else:
            torch.matmul(a, w.t())

    return a, w, bias, out, ref, torch_fn


def bench_shape(
    shape, names, torch, skip_invalid: bool = False, graph: bool = False
) -> tuple[list[Row], tuple[float, float]]:
    """The rows of ``shape`` (every configuration of ``names`` and torch, interleaved) and the wall-clock
    span of the timed rounds (``time.time()``), without compiling and checking before them. Each
    configuration's output is checked against the fp32 reference, and a second launch must repeat it
    bit for bit. ``skip_invalid``: leave out, with a line that says why, a configuration whose modes refuse
    the shape (a ``ValueError``). ``graph``: every contender's BATCH launches replayed from one CUDA graph
    (:func:`kernel_tools.timing.graphed`), so no host dispatch is timed; torch's eager call is then
    also timed, in rounds of its own, as the row ``torch eager``."""
    from gemm_modes.launch import launcher, without_unheld_ring_staging
    from hopper_gemm.api import validate

    m, n, k, dtype, with_bias = shape
    a, w, bias, out, ref, torch_fn = shape_inputs(shape, torch)
    ops = validate(a, w, bias=bias, out=out)
    contenders = {}
    errors = {}
    for name in names:
        if without_unheld_ring_staging(CANDIDATES[name], m, n) != CANDIDATES[name]:
            continue  # staging in the ring needs one tile per CTA: not this shape
        try:
            contenders[name] = launcher(CANDIDATES[name], ops, out)
        except ValueError as error:
            if not skip_invalid:
                raise
            print(f"{'':>24}{name} left out: {error}")
            continue
        out.fill_(float("nan"))
        contenders[name]()
        first = out.clone()
        out.fill_(float("nan"))
        contenders[name]()
        torch.cuda.synchronize()
        errors[name] = ((out.float() - ref).abs().max() / ref.abs().max()).item(), torch.equal(first, out)
    t0 = time.time()
    if graph:  # BATCH launches per graph, one replay per round; then torch's eager call in rounds of its own
        replays = {name: graphed(fn, BATCH) for name, fn in {"torch": torch_fn, **contenders}.items()}
        samples = {name: [us / BATCH for us in v] for name, v in interleaved_samples(replays, ROUNDS, 1).items()}
        eager = torch.nn.functional.linear(a, w, bias).float()
        errors["torch eager"] = ((eager - ref).abs().max() / ref.abs().max()).item(), True
        contenders["torch eager"] = torch_fn
        samples |= interleaved_samples({"torch eager": torch_fn}, ROUNDS, BATCH)
    else:
        samples = interleaved_samples({"torch": torch_fn, **contenders}, ROUNDS, BATCH)
    timed = (t0, time.time())
    return shape_rows((m, n, k), dtype, with_bias, samples, errors), timed


def shape_rows(mnk: tuple, dtype: str, bias: bool, samples: dict, errors: dict) -> list[Row]:
    """One row per contender of ``errors`` from the rounds' µs per launch (``samples``, with ``"torch"``'s):
    the median time, and torch's time over it round by round where both ran in the same rounds."""
    torch_us = statistics.median(samples["torch"])
    rows = []
    for name, (err, exact) in errors.items():
        mine = samples[name]
        paired = None
        if len(mine) == len(samples["torch"]) >= 4 and name != "torch eager":  # eager ran in rounds of its own
            r = paired_ratio(samples["torch"], mine)
            paired = (r.median, r.q1, r.q3)
        rows.append(Row(mnk, dtype, bias, name, statistics.median(mine), torch_us, err, exact, paired))
    return rows


def _auto(shape: tuple, rows: list[Row], sms: int | None = None, pdl: bool = False) -> str:
    """What ``schedule="auto"`` picks for ``shape`` on a GPU of ``sms`` SMs (None: an H100's), launched
    with programmatic dependent launch or not (``pdl``), its ratio if it ran, and the target's verdict."""
    from gemm_modes.autotable import H100_SMS, pick
    from hopper_gemm.config import Problem

    m, n, k, dtype, bias = shape
    config = pick(Problem(dtype, bias=bias), (m, n, k), sms or H100_SMS).with_(pdl=pdl)
    name = next((nm for nm, c in CANDIDATES.items() if c == config), config.describe())
    ran = [r for r in rows if r.name == name]
    target = TARGETS.get((m, n, k))
    if not ran:
        return f"; auto = {name} (not in this run)"
    ratio = ran[0].ratio
    verdict = "" if target is None else f", target ≥ {target} {'✓' if ratio >= target else '✗'}"
    return f"; auto = {name} {ratio:.3f}{verdict}"


def _by_round(row: Row) -> str:
    """`` [by round 0.981: 0.975–0.990]``: the median and quartiles of torch / ours within each round."""
    if row.by_round is None:
        return ""
    mid, q1, q3 = row.by_round
    return f" [by round {mid:.3f}: {q1:.3f}–{q3:.3f}]"


def _flags(row: Row, torch_err: float) -> str:
    """What an alternative's output failed of auto's checks: a repeat that differs, an error past twice torch's."""
    wrong = row.rel_err > 2 * torch_err
    return (" (REPEAT DIFFERS)" if not row.repeat_exact else "") + (f" (ERR {row.rel_err:.1e})" if wrong else "")


#: ``--without-widths``' contender: auto's pick with only the power-of-two tile widths.
WITHOUT_WIDTHS = "auto-without-widths"


@dataclass(frozen=True)
class OtherTable:
    """A second table of rules run beside auto's in the same rounds, where it picks otherwise: ``name`` is
    the contender's, ``label`` the summary line's, ``decide`` the table's ``autotable.decide`` (``Problem,
    mnk, sms`` → its ``Decision``)."""

    name: str
    label: str
    decide: Any


def without_widths_table() -> OtherTable:
    """The table without the tile widths between the powers of two (``decide(widths=False)``)."""
    from gemm_modes.autotable import decide

    return OtherTable(
        WITHOUT_WIDTHS,
        "the table without the widths between the powers of two",
        lambda problem, mnk, sms: decide(problem, mnk, sms, widths=False),
    )


def table_from_file(path: str) -> OtherTable:
    """The rules of another ``autotable.py`` (say an older revision's: ``git show REV:contrib/gemm_modes/
    autotable.py > old.py``), loaded as a module of ``gemm_modes`` beside the current one. ``ValueError``
    naming the problem where the file is missing, does not load, or has no ``decide``."""
    import importlib.util

    import gemm_modes

    source = Path(path)
    if not source.is_file():
        raise ValueError(f"--against-table {path}: no such file")
    name = f"{gemm_modes.__name__}._against_{source.stem}"
    spec = importlib.util.spec_from_file_location(name, source)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up by name
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # a user's file: say which and why, not a traceback into it
        del sys.modules[name]
        raise ValueError(f"--against-table {path} does not load as gemm_modes' table: {error!r}") from error
    if not callable(getattr(module, "decide", None)):
        raise ValueError(f"--against-table {path} has no decide(problem, mnk, sms): not an autotable.py")
    return OtherTable(f"table-{source.stem}", f"the table of {source.name}", module.decide)


def sweep(
    torch: Any,
    shapes: list[tuple],
    alternatives: list[str] = (),
    torch_kernels: bool = False,
    other: OtherTable | None = None,
) -> int:
    """Auto's pick (with PDL, as ``gemm()`` launches it) on every shape against torch, interleaved per shape
    with the ``alternatives`` (CANDIDATES' names, also with PDL): one line per shape with the table's
    reason and the error against fp32, the alternatives' ratios under it, then auto's floor and
    geometric mean (and, with alternatives, those of the best contender per shape).

    Every contender runs from CUDA graphs of BATCH launches (ours with PDL inside the graph): called
    eagerly, torch's host dispatch (15–40 µs per call, host-dependent) is longer than the GEMM on the
    small shapes, and the ratio would measure the host. Torch's eager time is printed beside it (what a
    caller of ``torch.matmul`` outside a graph sees), and the ratio against it. ``torch_kernels``: also
    the kernel torch ran and its GPU time as CUPTI sees it (cuBLAS's kernel names encode its tile and
    cluster: ``nvjet_sm90_tst_256x128_64x4_1x2_…`` is 256×128 tiles, 64-deep k-tiles in 4 stages, cluster
    1×2). ``other``: where another table (:func:`without_widths_table`, :func:`table_from_file`) picks
    otherwise, its pick runs too, under its name, and gets a summary line of its own."""
    import math

    from gemm_modes.autotable import decide
    from gemm_modes.choice import device_sms
    from gemm_modes.launch import without_unheld_ring_staging, without_unheld_split_k
    from hopper_gemm.config import Problem

    sms = device_sms(torch.cuda.current_device())
    print(
        f"device: {torch.cuda.get_device_name()} ({sms} SMs); torch {torch.__version__}; every contender replayed "
        f"from CUDA graphs of {BATCH} launches; auto's pick with PDL"
    )
    follows_shape = [name for name in alternatives if name not in CANDIDATES]
    CANDIDATES.update({name: CANDIDATES[name].with_(pdl=True) for name in alternatives if name not in follows_shape})
    ratios, eager_ratios, best_ratios, before_ratios = [], [], [], []
    for shape in shapes:
        m, n, k, dtype, bias = shape
        decision = decide(Problem(dtype, bias=bias), (m, n, k), sms)
        config = without_unheld_split_k(decision.config, m, n)
        CANDIDATES["auto"] = without_unheld_ring_staging(config, m, n).with_(pdl=True)
        names = ["auto", *alternatives]
        for name in follows_shape:  # a tile whose width follows M or N: this shape's
            try:
                CANDIDATES[name] = named_config(name, m, n).with_(pdl=True)
            except ValueError as error:
                print(f"{'':>24}{name} left out: {error}")
                names.remove(name)
        if other is not None:  # the other table's pick, where it differs
            before = other.decide(Problem(dtype, bias=bias), (m, n, k), sms).config
            before = without_unheld_ring_staging(without_unheld_split_k(before, m, n), m, n).with_(pdl=True)
            if before != CANDIDATES["auto"]:
                CANDIDATES[other.name] = before
                names.append(other.name)
        rows, _ = bench_shape(shape, names, torch, skip_invalid=True, graph=True)
        (eager,) = [r for r in rows if r.name == "torch eager"]
        rows = [r for r in rows if r is not eager]
        auto = rows[0]
        ratios.append(auto.ratio)
        eager_ratios.append(eager.us / auto.us)
        other_name = other.name if other is not None else None
        best_ratios.append(max(r.ratio for r in rows if r.name != other_name))
        before_ratios.append(next((r.ratio for r in rows if r.name == other_name), auto.ratio))
        exact = "bit-exact repeat" if auto.repeat_exact else "REPEAT DIFFERS"
        print(
            f"{f'{m}×{n}×{k}':>18} {dtype:>5} {auto.us:9.1f} µs, torch {auto.torch_us:9.1f} µs (eager {eager.us:.1f}), "
            f"ratio {auto.ratio:6.3f}{_by_round(auto)} (eager {eager.us / auto.us:6.3f}), err {auto.rel_err:.1e} "
            f"(torch {eager.rel_err:.1e}) {exact}  {decision.config.describe()} — {decision.rule}: {decision.facts}",
            flush=True,
        )
        if len(rows) > 1:
            others = ", ".join(f"{r.name} {r.ratio:.3f}{_flags(r, eager.rel_err)}" for r in rows[1:])
            if other is not None and other.name in names:  # name the other table's pick: no lookup needed
                others += f" ({CANDIDATES[other.name].describe()})"
            print(f"{'':>24}{others}", flush=True)
        if torch_kernels:
            span = kernel_spans(graphed(shape_inputs(shape, torch)[-1], BATCH))
            print(f"{'':>24}torch ran {', '.join(span.names)}: {span.duration:.1f} µs per kernel", flush=True)

    def summary(label: str, values: list[float]) -> str:
        geomean = math.exp(sum(math.log(r) for r in values) / len(values))
        below = sum(r < SWEEP_FLOOR for r in values)
        verdict = "✓" if geomean >= SWEEP_GEOMEAN else "✗"
        return (
            f"{label}: {len(values)} shapes, lowest {min(values):.3f} (≥ {SWEEP_FLOOR}: {len(values) - below} of "
            f"{len(values)}), geometric mean {geomean:.3f} (≥ {SWEEP_GEOMEAN} {verdict})"
        )

    print(summary("auto against torch's graph", ratios))
    print(summary("auto against torch called eagerly", eager_ratios))
    if alternatives:
        print(summary("best contender per shape", best_ratios))
    if other is not None:
        print(summary(other.label, before_ratios))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer shapes and configurations")
    parser.add_argument(
        "--configs", help="comma-separated names of CANDIDATES or tiles named by their parts (NAMED: swappp128xm2c12)"
    )
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--shapes", help="comma-separated M×N×K (e.g. 6144x6144x6144): only these rows of the table")
    parser.add_argument(
        "--pdl",
        choices=["off", "on", "both"],
        default="off",
        help="programmatic dependent launch for every configuration (on: as gemm() launches; both: each "
        "configuration twice, the PDL one named NAME+pdl, in the same interleaved rounds)",
    )
    parser.add_argument(
        "--sweep",
        action="store_true",
        help="auto's pick on SWEEP's shapes against torch, each with the reason (--configs: also these; "
        "--shapes: these shapes instead, bf16 where SWEEP and HELD_OUT do not hold them)",
    )
    parser.add_argument("--held-out", action="store_true", help="with --sweep: HELD_OUT's shapes instead of SWEEP's")
    parser.add_argument(
        "--draw",
        metavar="FAMILY:COUNT:SEED",
        help="with --sweep: shapes drawn at random instead (benchmarks/shape_draws.py: projection, small-side, "
        "square), e.g. projection:32:20261128",
    )
    parser.add_argument(
        "--widths",
        action="store_true",
        help="with --sweep: also every tile width between the powers of two (WIDTHS), both clusters",
    )
    tables = parser.add_mutually_exclusive_group()
    tables.add_argument(
        "--without-widths",
        action="store_true",
        help="with --sweep: also the table's pick without the tile widths between the powers of two, where it differs",
    )
    tables.add_argument(
        "--against-table",
        metavar="PATH",
        help="with --sweep: also the pick of the rules in another autotable.py (e.g. `git show "
        "REV:contrib/gemm_modes/autotable.py > old.py`), where it differs, in the same rounds",
    )
    parser.add_argument(
        "--torch-kernels", action="store_true", help="with --sweep: also the kernel torch ran per shape (CUPTI)"
    )
    args = parser.parse_args(argv)
    configs = [name for name in (args.configs or "").split(",") if name]
    unknown = [name for name in configs if name not in CANDIDATES and not NAMED.fullmatch(name)]
    if unknown:
        parser.error(
            f"--configs: {', '.join(unknown)} neither in CANDIDATES nor of the form {NAMED.pattern} "
            f"(CANDIDATES: {', '.join(CANDIDATES)})"
        )
    follows_shape = [name for name in configs if name not in CANDIDATES and ("xm" in name or "xn" in name)]
    if follows_shape and not args.sweep:
        parser.error(f"--configs: {', '.join(follows_shape)}: a width that follows M or N needs --sweep")
    try:  # a tile named by its parts, fixed: one configuration for every shape
        fixed = [name for name in configs if name not in CANDIDATES and name not in follows_shape]
        CANDIDATES.update({name: named_config(name, 0) for name in fixed})
    except ValueError as error:
        parser.error(f"--configs: {error}")
    other = without_widths_table() if args.without_widths else None
    if args.against_table:
        if not args.sweep:
            parser.error("--against-table needs --sweep")
        try:
            other = table_from_file(args.against_table)
        except ValueError as error:
            parser.error(str(error))
    if args.draw and (not args.sweep or args.shapes or args.held_out):
        parser.error("--draw needs --sweep, without --shapes or --held-out")
    if args.sweep:
        shapes = HELD_OUT if args.held_out else SWEEP
        if args.shapes or args.draw:  # rows of the tables as they are; other shapes bf16 without bias
            known = {row[:3]: row for row in reversed(SWEEP + HELD_OUT)}  # bf16 before fp16
            try:
                parsed = draw(args.draw) if args.draw else parse_shapes(parser, args.shapes)
            except ValueError as error:
                parser.error(str(error))
            # every contender writes into one preallocated C, whose rows TMA stores 16 bytes at a time
            ragged = [f"{m}x{n}x{k}" for m, n, k in parsed if n % 8 or k % 8]
            if ragged:
                parser.error(f"--sweep --shapes: {', '.join(ragged)}: N and K must be multiples of 8 here")
            shapes = [known.get(mnk, (*mnk, "bf16", False)) for mnk in parsed]
    elif args.shapes:
        shapes = table_rows(parser, args.shapes, SHAPES)
    else:
        shapes = QUICK_SHAPES if args.quick else SHAPES
    torch = cuda_torch("gemm.py", "the CPU tests compile the kernels")
    if torch is None:
        return 0
    if args.sweep:
        alternatives = args.configs.split(",") if args.configs else []
        alternatives += [name for name in WIDTHS if args.widths and name not in alternatives]
        return sweep(torch, shapes, alternatives, args.torch_kernels, other)
    default = QUICK if args.quick else [n for n in CANDIDATES if n not in DIAGNOSTIC]
    names = args.configs.split(",") if args.configs else default
    # With PDL, back-to-back launches of one configuration overlap one's set-up with the other's tail.
    if args.pdl == "on":
        CANDIDATES.update({name: CANDIDATES[name].with_(pdl=True) for name in names})
    elif args.pdl == "both":
        CANDIDATES.update({f"{name}+pdl": CANDIDATES[name].with_(pdl=True) for name in names})
        names = [variant for name in names for variant in (name, f"{name}+pdl")]
    device = torch.cuda.get_device_name()
    pdl = {"off": "without", "on": "with", "both": "with (+pdl) and without"}[args.pdl]
    print(
        f"device: {device}; torch {torch.__version__}; {ROUNDS}×{BATCH} timed launches each, median of rounds; "
        f"ours {pdl} programmatic dependent launch"
    )
    rows: list[Row] = []
    columns = [("M×N×K", 18), ("dtype", 5), ("bias", 4), ("config", 16), ("µs", 9), ("TFLOP/s", 8)]
    columns += [("torch µs", 9), ("ratio", 6), ("rel err", 8)]
    header = " ".join(f"{name:>{width}}" for name, width in columns)
    print(header)
    # The card's state moves every ratio (benchmarks/RESULTS.md): each shape's rounds report the clock.
    with ClockSampler(smi_id(torch, torch.cuda.current_device())) as sampler:
        for shape in shapes:
            shape_rows, timed = bench_shape(shape, names, torch)
            for row in shape_rows:
                rows.append(row)
                m, n, k = row.shape
                print(
                    f"{f'{m}×{n}×{k}':>18} {row.dtype:>5} {'yes' if row.bias else 'no':>4} {row.name:>16} "
                    f"{row.us:9.1f} {row.tflops:8.0f} {row.torch_us:9.1f} {row.ratio:6.3f} {row.rel_err:8.1e}",
                    flush=True,
                )
            window = sampler.window(*timed)
            # nvidia-smi's power.draw is a one-second average: short rounds read low, the clock does not.
            print(
                f"{'':>18} (SM clock over these rounds {window.sm_mhz:.0f} MHz; power.draw {window.watts:.0f} W; "
                f"SW power cap active in {window.capped:.0%} of the samples)"
            )
    from gemm_modes.choice import device_sms

    sms = device_sms(torch.cuda.current_device())
    launches = {"off": [False], "on": [True], "both": [False, True]}[args.pdl]  # auto's, with or without PDL
    print("\nbest configuration per shape (ratio = ours / torch throughput; torch = F.linear when bias):")
    for shape in shapes:
        mine = [r for r in rows if (r.shape, r.dtype, r.bias) == (shape[:3], shape[3], shape[4])]
        best = max(mine, key=lambda r: r.ratio)
        m, n, k = best.shape
        label = f"{m}×{n}×{k} {best.dtype}{' +bias' if best.bias else ''}"
        auto = "".join(_auto(shape, mine, sms, pdl) for pdl in launches)
        print(f"  {label}: {best.name} {best.tflops:.0f} TFLOP/s, ratio {best.ratio:.3f}{auto}")
    if args.json:
        Path(args.json).write_text(
            json.dumps([r.__dict__ | {"ratio": r.ratio, "tflops": r.tflops} for r in rows], indent=1)
        )
    out_dir = os.environ.get("OUT")
    if out_dir:
        Path(out_dir, "gemm.json").write_text(json.dumps([r.__dict__ | {"ratio": r.ratio} for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
