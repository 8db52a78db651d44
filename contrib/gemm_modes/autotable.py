"""The configuration ``schedule="auto"`` picks, per shape class, from what the benchmarks measured.

H100, bf16 and fp16 randn, ratios over torch.matmul in the same run (the measurements and their
history: docs/gemm-auto.md, benchmarks/RESULTS.md and ``git log`` of that file). First match wins:

=========================  ======================================  ==========================================
class                      configuration                           measured (ours / torch)
=========================  ======================================  ==========================================
K ≥ 4 × max(M, N), both    :func:`split_k`: cooperative 128×128,    1024²×8192 0.73 → 0.89, 512×1024×16384
sides ≥ 256                4 or 2 parts per tile in one wave (else  0.67 → 0.95, 256×2048×8192 1.05 → 1.21,
                           128×192 in 2); cluster along the         768²×16384 0.55 → 0.76, 1024×1536×8192
                           shorter side                             0.69 → 0.82
M ≤ 512, unless the        :func:`small_m`: ping-pong, the tile of  128×8192² 0.74 → 0.96, 128×4096² 0.57 →
cooperative 128×256 tile   least :func:`small_m_cost` (widths        1.05, 384×6144×8192 0.57 → 0.81;
streams fewer rows         between the powers of two where they     256×8192² 0.97–0.99 (benchmarks/
                           pair evenly); cluster 2×1 for an even    studies/gemm_small_m.py); the split at
                           number of row tiles; where it idles      256×5120×13824 +11 … +15 %; 128×176 at
                           clusters at K ≥ 8192, 128×128 split at   384×14336×4096 0.85 → 0.89, 128×144 at
                           one k (:func:`small_m_split`)            128×18432×7168 0.96 → 1.03
                           or, for an odd row count past one,       split-K in one wave (H200): 384×4096×
                           split-K in 2 parts in one wave           14336 0.88 → 1.00, ×8192 0.84 → 0.94
                           (:func:`one_wave_split_k`); where the    swapped (H200): 272×8192² 0.56 → 1.02,
                           row tiles pad M (M ≤ 1024, K > 2048):    320×4096×8192 0.71 → 0.99, 552×5248×
                           Cᵀ = B·Aᵀ, M in column tiles of 8-row    7168 0.77 → 0.94, 136×18432×7168 0.73
                           steps (:func:`small_m_swapped`)          → 0.92 (51 shapes: 0.74–0.81 → 0.97–0.98)
N ≤ 512                    :func:`small_n`: the same rule turned    8192×256×8192 0.66 → 1.02, 4096×128×8192
                           (cluster 1×2), unless the cooperative    0.37 → 0.98, 8192×256×1024 0.98 → 1.30
                           tile streams no more rows per SM; for    (H200): 8192×272×8192 0.53 → 0.98,
                           N ≤ 1024, K > 2048: N in column tiles    4096×320×8192 0.54 → 1.00 (20 shapes:
                           of 8-row steps where 3 % faster by       0.71 → 0.96; 2 × 16 more where the
                           tile_time (:func:`narrow_n`), checked    other tiles do not pad N: 0.75 → 0.92,
                           first; in one wave past K = 2048,        0.79 → 0.91); 192×192 (H200):
                           cooperative 192×192                      11992×384×12440 0.65 → 1.00,
                           (:func:`tall_small_n`)                   24744×192×7552 0.68 → 0.99 (20 shapes:
                                                                    0.76 → 0.93)
fewer cooperative 128×256  :func:`fill`: the ping-pong tile of      1024²×8192 0.41 → 0.85, 1024×2048×8192
tiles than SMs             least cost if it beats the cooperative   0.57 → 0.93, 1536²×4096 0.72 → 0.87 →
                           one; cluster 1×2                         0.98 (128×144), 1024²×2048 0.62 → 1.03
                           (64×128 before 128×64 where M ≥ N,       64×128 (H200): 1024³ 0.91 → 1.01,
                           K ≤ 2048 and K's rows fill sectors)      1024²×2048 0.85 → 0.92
K > 2048 and               cooperative 128×256 c2×1, stream-K       8192³ 1.07–1.09, 5120²×8192 0.92 →
stream_k_pays(): ≥ 6       remainder mode, deferred epilogue        1.02; before 6 whole waves or past 0.6
whole waves (10 past K =   (8 chunks); 1×2 where                    the aligned split ran level or ahead
16384) and a partial one   paired_along_n takes it                  (512×28672×8192 +5 … +8 %,
≤ 0.6 full, or any partial                                          8192×5120×13824 +6 %); past K = 16384 at
one too thin to split                                               6–9 waves the wave balance's picks
alone; where N > M, tiles                                           (H200): 3099×8192×28672 0.89 → 1.00;
filled ≥ 0.93                                                       swapped where M pads its row tiles
                                                                    (H200): 1026×28672×8192 0.95 → 1.01
otherwise                  :func:`wave_balance`: cooperative        4096³ 1.02, 1024×8192² 1.00–1.02,
                           128×256 c2×1 (deferred epilogue) or      8192²×1024 1.11–1.14 (128×192: a tie),
                           128×224 / 128×208, ping-pong 128×192 /   3072²×2048 0.80 → 1.00, 2048×5120×2048
                           128×128 c2×1,                            0.88 → 0.98, 2048³ 0.70 → 0.93 (was
                           :func:`split_tail` (split-K on the last  ping-pong at K ≤ 2048), 2560³ 0.93 →
                           wave) or :func:`aligned_split`,          0.97 (128×208); split-K on the last
                           whichever fills the waves best,          wave: 1536×3072×8192 0.75 → 0.95,
                           weighed by ping-pong's merit at this K   3840²×8192 0.95 → 0.975; aligned:
                           and the splits' fix-ups; past K = 2048   3072×1024×8192 0.78 → 0.88, 2304×3328×
                           without a bias, swapped 192×176          8192 1.02 → 1.07, 4352²×8192 1.00 → 1.02;
                           (:data:`SWAPPED_MERIT`: Cᵀ = B·Aᵀ)       swapped (H200): 4104³ 0.93 → 0.975,
                                                                    808×4776×4096 0.79 → 0.98
                           and cooperative 192×192                  192×192 (H200): 3000³ 0.94 → 0.98,
                           (:data:`TALL_MERIT`); ping-pong pays     2104²×4096 0.76 → 0.94, 1536×3072×
                           for rows of K off a 32-byte sector       4096 0.85 → 1.00
                           (:data:`PINGPONG_UNSECTORED_K_COST`);    ping-pong widths (H200): 4304×2152×
                           from K = 1024 without a bias, ping-pong  4992 0.86 → 0.98 (128×144), 1056×
                           128×176 / 160 / 144 in 2×1 or 1×2        17896×4800 0.87 → 0.99 (128×176 1×2),
                           (:func:`between_width_pingpong`), by     848×9048×1072 0.87 → 1.01; random
                           their :func:`area_score`; every score    shapes: 14 at K > 2048 0.950 → 0.981,
                           weighs the CTAs an odd tile count        14 at K 1024–2048 0.942 → 0.998
                           idles in clusters of two
                           (:func:`cta_share`)
=========================  ======================================  ==========================================

After the table, :func:`decide` widens a load-bound pick's cluster of two to four along the long side where the
output takes one wave of them, and where that tile pads the short side, may take a short-side tile in fours instead
(``gemm_modes.clusters_of_four``; H200: small-side draws 0.86–0.89 → 0.93–0.96). A cooperative 192-row pick that
leaves over a tenth of the clusters idle in its one wave is narrowed until its tiles fill it
(``gemm_modes.one_wave``; H200: 26 drawn shapes 0.948 → 1.013). Then, for a narrow N over a long K, split-K in up to
8 parts of a cooperative 128-row tile may take its place, and for a short M the same on Cᵀ (``gemm_modes.long_k``;
H200: 0.81–0.87 → 1.10–1.11 and, swapped, 0.89–0.90 → 1.12–1.16 on the small-side shapes they take); without a bias,
that split runs on 192-row tiles whose warpgroups split N, in 1×2 pairs and as many parts or fewer, where each CTA
then does fewer multiply-adds (``gemm_modes.long_k_halves``; H200: 38 drawn shapes 1.030 → 1.123). Last, without a
bias, a ping-pong pick that leaves over a tenth of the clusters idle in its one wave is narrowed the same way, its
cluster along the same side, within 1.2 times its L2 fetches (``gemm_modes.one_wave``; H200: 20 drawn shapes 0.815 →
0.883), and the width is cut to the fewest columns in 8-column steps (16 where an odd multiple of 8 does not pay)
that keep its count of column tiles (``gemm_modes.tight_width``; H200: 11 drawn squares 0.825 → 0.890 in 16-column
steps, then 24 drawn shapes 0.939 → 0.981 in 8-column ones). A ping-pong 128-row pick that then takes one wave (one
tile per CTA) runs as 64-row tiles of 144–256 columns in clusters of four along M, of two on a square-ish output
(``gemm_modes.half_rows``; H200: 26 drawn shapes 0.926 → 1.073 to 192 columns in fours, then 30 drawn 0.939 → 1.066
past them). One that stays 128 rows in a pair over a long K, a 64-row pair, or a cooperative 192-row pick at most 96
wide (C or Cᵀ), or a stream-K pick of less than a wave, runs as 192-row tiles whose warpgroups split N, split-K in
2–4 parts to fill the wave (``gemm_modes.split_halves``; H200: 34 drawn shapes 0.935 → 1.001, 22 with 64-row picks
0.861 → 1.114, 24 with narrow 192-row ones 0.934 → 1.051, 24 with stream-K ones 0.936 → 1.066). Where none of them
splits, a side of at most 128 whose pick idles a quarter of the SMs runs across one wave of 64-row ping-pong tiles,
on Cᵀ where N is the thin side (``gemm_modes.thin_side_one_wave``; H200: 26 drawn shapes 0.931 → 1.033). Last, a
short side a little under 192, 384 or 576 against a long one runs in whole 192-row tiles (a short N as Cᵀ = B·Aᵀ),
as wide along the long side as one wave needs (``gemm_modes.short_side_one_wave``; H200: 20 drawn shapes with a
short N 0.944 → 1.029, 32 with a short M 0.903 → 1.008); before it, a pick that is not one nearly full wave takes
the cooperative 192- or 256-row tile, on C or Cᵀ, of least area that is (``gemm_modes.tall_one_wave``; H200: 23
drawn shapes 0.928 → 0.981).

Every ping-pong pick gets the staging in the ring where each CTA owns one tile (:func:`single_wave_staging`), and so
does every cooperative one, its deferred epilogue dropped (no next tile to hide it under); the last tile steps'
picks (64 rows twice as wide, both kinds of split halves, tall tiles, a short side's 192-row tiles) keep staging
buffers of their own, as they were measured. Stream-K's wave mode (a whole wave split with the partial one) lost
where the waves are few (4096³ 0.88–0.97 against 0.97–0.99, 4352²×8192 0.84 against 0.92): each share computes tiles
at k offsets no other cluster shares. The remainder mode splits only the partial wave and pays a fix-up (128 KiB of
fp32 partials per CTA, written and read back) that a nearly full partial wave does not repay
(:data:`STREAM_K_MAX_FILL`).

**The fill rule.** With M ≤ 512 B is most of the traffic and a long K makes each tile a long stream
of it; 128×128 tiles at 128×8192² are 64 for 132 SMs. Smaller tiles put more SMs on the stream but
each streams more rows per useful output, and a tile count just past a wave costs a whole wave.
:func:`small_m_cost` weighs both: ⌈tiles / SMs⌉ waves of (tile_m + tile_n) streamed rows, divided by
the useful share of the row tiles' rows; the cheapest of :data:`SMALL_M_TILES` wins (the larger on a
tie; no 128-row tile for M ≤ 64). Cluster 2×1 multicasts B to two row tiles; an odd row count would
leave a cluster row idle, so 1×2 then (384×6144×8192: 0.45–0.53 against 0.56–0.61). At M = 384 a
192-row tile (:data:`TALL_SMALL_M_TILE`) joins them: two row tiles in a 2×1 cluster load each B tile
once, where three 128-row tiles load it three times. The same cost, on the turned problem, picks small
N's tile, and, on the problem as it is, :func:`fill`'s.

**Wave balance.** Past the fill rules every SM has a tile; what is left is how full the last wave is.
Ping-pong 128×192 ran 0.91 of the cooperative 128×256 tile at 4096³, about their wave fills' ratio
(0.889 against 0.970), and 1.26 of it at 3072²×8192 (0.970 against 0.727: 144 cluster-tiles are 2.2
waves of 66 clusters). :func:`wave_balance` weighs the fill by what each tile does at equal fill.
"""

from __future__ import annotations

from dataclasses import dataclass

from hopper_gemm.config import GemmConfig, Problem, Schedule

from . import (
    clusters_of_eight,
    clusters_of_four,
    half_rows,
    long_k,
    long_k_halves,
    one_wave,
    paired_rows,
    pingpong_192,
    short_side,
    short_side_one_wave,
    split_halves,
    tall_one_wave,
    thin_side_one_wave,
    tight_width,
    wide_subtiles,
)
from .modes import TunedConfig
from .splits import ALIGNED_ADD_K_TILES, AlignedSplit, StreamKSplit
from .tile_time import tile_time

COOPERATIVE_128x256 = TunedConfig(
    GemmConfig(tile_m=128, tile_n=256, cluster_m=2, cluster_n=1, schedule=Schedule.COOPERATIVE)
)
#: Auto's cooperative tile for long K: its epilogue deferred under the next tile, one subtile per k-tile.
COOPERATIVE_DEFERRED = COOPERATIVE_128x256.with_(deferred_chunks=8)
#: The same with the partial wave's tiles split at one k (:class:`~gemm_modes.splits.AlignedSplit`).
COOPERATIVE_ALIGNED = COOPERATIVE_DEFERRED.with_(stream_k=True, stream_k_aligned=True)
#: The small-M rule's split for a long K: cooperative 128×128 (its four subtiles deferred), aligned split.
COOPERATIVE_128_ALIGNED = COOPERATIVE_ALIGNED.with_(tile_n=128, deferred_chunks=4)
PINGPONG_128x128 = TunedConfig(GemmConfig(tile_m=128, tile_n=128, cluster_m=2, cluster_n=1, schedule=Schedule.PINGPONG))
PINGPONG_128x192 = PINGPONG_128x128.with_(tile_n=192)

SMALL_M = 512
#: Small-M tiles, largest first (the fill rule above).
SMALL_M_TILES = ((128, 192), (128, 176), (128, 144), (128, 128), (128, 112), (128, 64), (64, 128), (64, 64))
#: A ping-pong tile of 192 rows (three m64 wgmmas of one warpgroup), weighed by the small-M rule only where
#: M is one pair of such tiles and three of 128 rows (256 < M ≤ 384), and they are more than one wave.
#: H100, with PDL, 2026-11-28, ours / torch (``benchmarks/gemm.py --sweep --configs pp192x112c21``):
#: 384×14336×4096 1.002 against 128×176's 0.880, 384×28672×8192 0.984 against 128×192's 0.852; cluster
#: 1×2 0.943 / 0.984, 192×128 0.911 / 0.867. NVIDIA H200, 2026-11-28: 320×14336×4096 (the second tile 128
#: rows of 192) 0.860 against 128×176 c1×2's 0.765.
TALL_SMALL_M_TILE = (192, 112)
#: The tile widths of the table without the ones between them (``decide(widths=False)``).
POWER_OF_TWO_WIDTHS = (64, 128, 192, 256)
#: With a bias term a 128×192 ping-pong tile spills (48 bytes): left out then.
SMALL_M_BIAS_SPILLS = ((128, 192),)
#: Up to this K stream-K is never taken (not measured there); :func:`wave_balance`'s unit of K.
SHORT_K = 2048
#: Whole waves from which stream-K is taken: its wave mode (where the partial wave is too thin to split alone,
#: a whole wave is split with it) pays, and so does its remainder mode on a partial wave. H100, 2026-11-26,
#: ours / torch, unsplit → wave mode: 5120²×8192 (6 + 4/66 waves) 0.92 → 1.02, 5632²×8192 (7 + 22/66)
#: 0.95 → 1.03, 6144×7168×8192 (10 + 12/66) +2 %; 4352²×8192 (4 + 25/66) 0.92 → 0.84, 3840²×8192 (3 +
#: 27/66) 0.85 → 0.77, 3072²×8192 (2 + 12/66) 0.76 → 0.68: each cluster's share of the split waves
#: starts at a k-tile no other cluster is at, and its loads miss the L2 that a wave's share.
STREAM_K_MIN_WAVES = 6
#: Past this K stream-K takes :data:`STREAM_K_MIN_WAVES_LONG_K` whole waves: the longer each cluster's share of the
#: split k-loop, the longer its loads run out of step with the L2 its neighbours fill. NVIDIA H200, with PDL,
#: 2026-11-29, ours / torch, the remainder mode against the wave balance's pick (split-K on the last wave, the
#: aligned split, a swapped 256-row tile) in the same rounds, 6–9 whole waves: at K = 18432 and 28672 the
#: wave balance's 0.966 → 1.001, ahead on 12 of 15 (3099×8192×28672 0.891 → 0.996, 3656×7168×18432 0.948 →
#: 1.016; 5551×7168×18432 1.054 → 1.032 the worst); at K = 13824 and 14336 level (30 shapes, 0.992 against
#: 0.990, 5996×5120×13824 1.027 → 0.982 the worst); at K = 4096–7168 stream-K ahead on 11 of 14 (1.012
#: against 1.002; 5000³ 0.984 against 0.946, 1986×13824×5120 1.049 against 1.016). With the bound set, on 24
#: projections drawn after where it changes the pick: 0.991 → 1.019, 20 faster, all 24 at 0.97 of torch or
#: more (16 before); 5604×7168×18432 1.055 → 1.030 the worst.
STREAM_K_LONG_K = 16384
STREAM_K_MIN_WAVES_LONG_K = 10
#: Where N is the longer side, the least share of its tiles' area the output fills for stream-K to be taken; below
#: it the wave balance weighs the swapped 256-row tiles, whose columns run along M in steps of 8. NVIDIA H200, with
#: PDL, 2026-11-29, ours / torch, against stream-K in the same rounds: M's row tiles filled 0.905–0.927 (1042,
#: 1054, 1068, 1182, 1288 rows against N = 18432 and 28672) 1.9–5.5 % faster on 7 of 7 (1054×28672×8192 0.945 →
#: 0.997); 0.933–0.959 within ±1 % on 9, 1.7–2.6 % slower on 3 (1836×28672×8192 1.008 → 0.982). With the bound
#: set, on 15 projections drawn after where it changes the pick: 0.960 → 0.991, 13 faster, none slower by 1 %
#: (1026×28672×8192 0.951 → 1.008, 1160×28672×8192 0.972 → 1.034).
STREAM_K_MIN_USEFUL = 0.93
#: The fullest partial wave the remainder mode (its tiles alone split, at least half a tile per cluster) pays on:
#: STREAM_K_MAX_FILL from STREAM_K_MIN_WAVES whole waves (before them the wave balance weighs the aligned split,
#: which ran level or ahead there: 2560²×8192 −0.2 %, 3072×3584×8192 −1.2 %, 512×28672×8192 +5 … +8 %, 6144³ +0.4 %,
#: 8192×5120×13824 (9 + 46/66) +6 %; H100, 2026-11-27). Fuller, it saves too
#: little of a tile for its fix-up. Unsplit → remainder mode: 2560²×8192 (1 + 34/66) 0.84 → 0.92 / 0.97, 3072×3584×8192
#: (2 + 36/66) 0.88 → 0.97, 3328²×8192 (2 + 37/66) a tie, ×4096 +7 %, 6144³ (8 + 48/66) +1 … +3.5 %, 8192×6144×4096 (11
#: + 42/66) +0.8 %; 2304×3328×8192 (1 + 51/66) 1.01 → 0.85, 2816²×8192 (1 + 55/66) 1.00 → 0.82, 4096×5120×8192 (4 +
#: 56/66) 1.02 → 0.95, 4096³ (3 + 58/66) −3 %, 4608²×8192 (4 + 60/66) 1.03 → 0.97, 7168²×8192 (10 + 58/66) 1.01 → 1.00.
STREAM_K_MAX_FILL = 0.6
#: The table was measured on an H100 SXM: 132 SMs.
H100_SMS = 132


def small_m_cost(
    mnk: tuple[int, int, int],
    tile: tuple[int, int],
    sms: int = H100_SMS,
    row_pairs: bool = False,
    col_pairs: bool = False,
) -> float:
    """The fill rule's estimate of a small-M tile's time (arbitrary units): each SM streams (tile_m +
    tile_n) rows of K per tile, for ⌈tiles / SMs⌉ waves, and only M of the row tiles' rows and N of the
    column tiles' columns are useful. ``row_pairs`` / ``col_pairs``: the row / column tiles come in pairs
    (a 2×1 / 1×2 cluster: an odd count pads one with an idle CTA)."""
    m, n, _ = mnk
    tile_m, tile_n = tile
    rows, cols = -(-m // tile_m), -(-n // tile_n)
    rows += rows % 2 if row_pairs else 0
    cols += cols % 2 if col_pairs else 0
    waves = -(-(rows * cols) // sms)
    return waves * (tile_m + tile_n) * rows * tile_m / m * -(-n // tile_n) * tile_n / n


def small_m(
    mnk: tuple[int, int, int], sms: int = H100_SMS, bias: bool = False, widths: bool = True
) -> TunedConfig | None:
    """Ping-pong for M ≤ ``SMALL_M``: the tile of :data:`SMALL_M_TILES` (and :data:`TALL_SMALL_M_TILE` where M
    is whole pairs of its rows) of least :func:`small_m_cost` (the larger on a tie), cluster 2×1 when M
    spans an even number of row tiles, else 1×2 (the fill rule above);
    None where the cooperative 128×256 tile in its 2×1 cluster streams fewer rows (its N-wide tiles fill
    the SMs: the table's other rows then decide)."""
    m, n, k = mnk
    tiles = [t for t in SMALL_M_TILES if not (t[0] == 128 and m <= 64)]  # no wgmma half on padding
    tiles = [t for t in tiles if t[1] in POWER_OF_TWO_WIDTHS or widths and pairs_evenly(mnk, t)]
    tiles = [t for t in tiles if not (bias and t in SMALL_M_BIAS_SPILLS)]
    if widths and 2 * SMALL_M_TILES[0][0] < m <= 2 * TALL_SMALL_M_TILE[0] and _tiles(mnk, TALL_SMALL_M_TILE) > sms:
        # One pair of 192-row tiles where 128-row tiles take three, past one wave, where it was measured (in
        # one wave the staging would move into the A/B ring: a combination not run on a GPU with this tile).
        tiles.insert(0, TALL_SMALL_M_TILE)
    tile_m, tile_n = min(tiles, key=lambda t: small_m_tile_cost(mnk, t, sms))  # min keeps the first of equals
    if small_m_cost(mnk, (128, 256), sms, row_pairs=True) < small_m_tile_cost(mnk, (tile_m, tile_n), sms):
        return None  # the cooperative tile (its 2×1 cluster) streams fewer rows
    rows = -(-m // tile_m)
    cluster_m = 2 if rows % 2 == 0 else 1  # an odd row count would pad a cluster row with idle CTAs
    pingpong = PINGPONG_128x128.with_(tile_m=tile_m, tile_n=tile_n, cluster_m=cluster_m, cluster_n=3 - cluster_m)
    if pingpong.cluster_tiles(m, n) >= max(1, sms // pingpong.cluster_size) or k < SMALL_M_SPLIT_MIN_K:
        return pingpong  # the SMs are full (a split only adds its fix-up: 384×14336×4096 −10 %), or K is short
    split = small_m_split(mnk, sms)
    if split is not None and split[1] * useful_rows(m, 128) > wave_fill(pingpong, m, n, sms) * useful_rows(m, tile_m):
        return split[0]
    return pingpong


def _tiles(mnk: tuple[int, int, int], tile: tuple[int, int]) -> int:
    """Output tiles of ``tile`` over M×N."""
    return -(-mnk[0] // tile[0]) * -(-mnk[1] // tile[1])


def small_m_swapped(
    mnk: tuple[int, int, int], sms: int = H100_SMS, k_rows_in_sectors: bool = True
) -> tuple[TunedConfig, float] | None:
    """For M ≤ ``short_side.SHORT_SIDE_MAX`` and K > ``SHORT_K``: C computed as Cᵀ = B·Aᵀ with M along
    the tile's columns, the tile ``short_side.pick`` takes by ``tile_time`` on the turned
    output (N × M), and that time; None outside that class. :func:`decide` takes it where the unswapped
    pick pads M. NVIDIA H200, 2026-11-28, ours / torch, against the unswapped pick in the same rounds:
    272×8192×8192 128×136 (1×2) 1.005 against 0.575, 320×4096×8192 128×80 (1×2) 1.099 against split-K's
    0.779, 552×5248×7168 128×184 (2×1) 0.936 against 0.759, 144×8192×8192 128×72 (1×2) 1.080 against
    128×144's 0.839, 160×8192×8192 128×80 1.020 against 0.747, 136×18432×7168 192×144 (warpgroups along N)
    0.905 against 128×144's 0.707; where M is whole 128-row tiles the unswapped picks ran ahead (13 shapes,
    M 128–512)."""
    m, n, k = mnk
    if m > short_side.SHORT_SIDE_MAX or k <= SHORT_K:
        return None
    return short_side.pick(m, n, sms, swap_ab=True, k_rows_in_sectors=k_rows_in_sectors)


def narrow_n(
    mnk: tuple[int, int, int], sms: int = H100_SMS, k_rows_in_sectors: bool = True
) -> tuple[TunedConfig, float] | None:
    """:func:`small_m_swapped` for N: for N ≤ ``short_side.SHORT_SIDE_MAX`` and K > ``SHORT_K``, the tile of
    ``short_side.pick`` takes with N along its columns (no swap) by ``tile_time``, and that
    time; None outside that class. NVIDIA H200, 2026-11-28, ours / torch against the pick without it
    (ping-pong 128×64 or 128×128 from :func:`small_n`, cooperative 128×208) in the same rounds:
    8192×272×8192 128×136 (1×2) 0.974 against 0.531, 4096×320×8192 128×80 (1×2) 1.018 against 0.556,
    5248×552×7168 128×184 (2×1) 0.918 against 0.874, 18432×136×7168 128×72 (1×2) 0.842 against 0.518,
    8192×160×8192 128×80 (1×2) 1.012 against 0.562, 8192×144×8192 128×72 (1×2) 1.105 against 0.567,
    4096×240×14336 64×120 (1×2) 1.077 against 64×128's 1.041."""
    m, n, k = mnk
    if n > short_side.SHORT_SIDE_MAX or k <= SHORT_K:
        return None
    return short_side.pick(n, m, sms, swap_ab=False, k_rows_in_sectors=k_rows_in_sectors)


def small_m_tile_cost(mnk: tuple[int, int, int], tile: tuple[int, int], sms: int = H100_SMS) -> float:
    """:func:`small_m_cost` of ``tile`` in the cluster :func:`small_m` gives it: 2×1 for an even number of
    row tiles, else 1×2 (an odd number of column tiles then pads one)."""
    rows = -(-mnk[0] // tile[0])
    return small_m_cost(mnk, tile, sms, col_pairs=rows % 2 == 1)


def fill_tile_cost(mnk: tuple[int, int, int], tile: tuple[int, int], sms: int = H100_SMS) -> float:
    """:func:`small_m_cost` of ``tile`` in the cluster :func:`fill` gives it: 1×2, unless that pairs an odd
    number of column tiles and the row tiles pair evenly (2×1)."""
    rows, cols = -(-mnk[0] // tile[0]), -(-mnk[1] // tile[1])
    return small_m_cost(mnk, tile, sms, col_pairs=not (cols % 2 and rows % 2 == 0))


def pairs_evenly(mnk: tuple[int, int, int], tile: tuple[int, int]) -> bool:
    """Whether the row or the column tiles of ``tile`` come in an even count (a cluster of two pads none):
    the condition for a width between the powers of two in :func:`small_m` and :func:`fill`. H100, with PDL,
    2026-11-28, against the table without those widths: where they pair, 384×14336×4096 128×176 0.892
    against 128×192's 0.846, 128×18432×7168 128×144 1.031 against 0.964, 128×14336×4096 128×112 1.054
    against 128×128's 1.001, 512×28672×8192 128×176 0.975 against 0.943, 1536²×4096 128×144 0.984 against
    0.962; padded (3 row and 43 / 37 column tiles) 384×6144×8192 128×144 0.708 against 0.778, 384×4096²
    128×112 0.648 against 0.736."""
    rows, cols = -(-mnk[0] // tile[0]), -(-mnk[1] // tile[1])
    return rows % 2 == 0 or cols % 2 == 0


def useful_rows(m: int, tile_m: int) -> float:
    """The share of the row tiles' rows that M fills (130 rows in two 128-row tiles: 0.51)."""
    return m / (-(-m // tile_m) * tile_m)


#: The shortest K the small-M rule splits (:func:`small_m_split`; measured at K = 13824 and 14336).
SMALL_M_SPLIT_MIN_K = 8192


def small_m_split(mnk: tuple[int, int, int], sms: int = H100_SMS) -> tuple[TunedConfig, float] | None:
    """:data:`COOPERATIVE_128_ALIGNED` with its cluster along the side whose tile count is even (2×1
    first), and its :func:`aligned_split` score, or where M spans an odd count of row tiles the
    :func:`one_wave_split_k` that keeps more of the clusters' turns busy: the small-M rule takes it over
    its ping-pong tile where that tile leaves clusters idle (fewer cluster-tiles than clusters) and the
    split keeps more of the clusters' turns busy than the tile's :func:`wave_fill`, each weighed by its
    :func:`useful_rows`. H100, with PDL, 2026-11-27, three runs: at 256×5120×13824 (40 cluster-tiles of
    128×128 for 66 clusters) the aligned split ran 11–15 % faster than ping-pong 128×128; at
    384×4096×14336 about 4 %."""
    m, n, _ = mnk
    rows = -(-m // COOPERATIVE_128_ALIGNED.tile_m)
    cols = -(-n // COOPERATIVE_128_ALIGNED.tile_n)
    cluster_m = 1 if rows % 2 and cols % 2 == 0 else 2
    aligned = aligned_split(mnk, sms, COOPERATIVE_128_ALIGNED.with_(cluster_m=cluster_m, cluster_n=3 - cluster_m))
    if aligned is None or rows % 2 == 0 or rows == 1:
        return aligned
    parts = one_wave_split_k(mnk, sms)
    if parts is not None and parts[1] > aligned[1] * useful_cols(n, COOPERATIVE_128_ALIGNED.tile_n):
        return parts
    return aligned


#: The tiles :func:`one_wave_split_k` weighs, in 2 parts each. NVIDIA H200, 2026-11-28, ours / torch: at
#: 384×4096×14336 128×192 (33 cluster-tiles × 2 parts: the 66 clusters) 1.022 / 0.998 against the aligned
#: split's 0.891 / 0.880, at 384×4096×8192 0.918 / 0.926 against 0.836 / 0.841; 128×256 0.887 and 0.746
#: there (24 cluster-tiles × 2). With an even row count the aligned split stayed ahead (256×5120×13824: 1.050
#: against 128×192's 1.026).
ONE_WAVE_SPLIT_K_TILES = ((128, 192), (128, 256))


def one_wave_split_k(mnk: tuple[int, int, int], sms: int = H100_SMS) -> tuple[TunedConfig, float] | None:
    """For M an odd count of 128-row tiles past one: split-K in 2 of a cooperative tile of
    :data:`ONE_WAVE_SPLIT_K_TILES` in a 1×2 cluster (the row tiles cannot pair), where its parts all run in
    one wave, and its score: the share of the clusters its parts keep busy times the share of its columns
    that N fills; the best, None where none fits. With three row tiles the aligned split pairs column tiles
    too, and each of its clusters starts its k-range where no other cluster reads: its loads miss the L2
    that the split-K parts, all at k 0 or K / 2, share (the row tiles of one B column block read it
    together). With one row tile nothing is shared: 128×11008×14336 ran 0.944 against the aligned
    split's 0.958."""
    m, n, k = mnk
    clusters = max(1, sms // 2)
    best = None
    for tile_m, tile_n in ONE_WAVE_SPLIT_K_TILES:
        if -(-n // tile_n) % 2:
            continue  # a 1×2 cluster would pad an idle CTA
        split = SPLIT_K_128.with_(tile_m=tile_m, tile_n=tile_n, cluster_m=1, cluster_n=2, split_k=2)
        k_tiles = -(-k // split.tile_k)
        if split.one_wave_clusters(m, n) > clusters or k_tiles // 2 < SPLIT_K_MIN_PART:
            continue
        score = split.one_wave_clusters(m, n) / clusters * useful_cols(n, tile_n)
        if best is None or score > best[1]:
            best = (split, score)
    return best


#: Small-N tiles: :data:`SMALL_M_TILES` turned (N's side first) where the turned tile is one a ping-pong
#: warpgroup takes (64 or 128 rows).
SMALL_N_TILES = tuple((tn, tm) for tm, tn in SMALL_M_TILES if tn in (64, 128))


def small_n(mnk: tuple[int, int, int], sms: int = H100_SMS) -> TunedConfig:
    """The fill rule turned for N ≤ ``SMALL_M`` (and M above it): A is then the operand every tile
    streams, so the tile of :data:`SMALL_N_TILES` of least :func:`small_m_cost` on the turned problem,
    cluster 1×2 (A multicast) when N spans an even number of column tiles, else 2×1."""
    m, n, k = mnk
    tiles = [t for t in SMALL_N_TILES if not (t[1] == 128 and n <= 64)]
    tile_m, tile_n = min(tiles, key=lambda t: small_m_cost((n, m, k), (t[1], t[0]), sms))
    cluster_n = 2 if -(-n // tile_n) % 2 == 0 else 1
    return PINGPONG_128x128.with_(tile_m=tile_m, tile_n=tile_n, cluster_m=3 - cluster_n, cluster_n=cluster_n)


def tall_small_n(mnk: tuple[int, int, int], sms: int = H100_SMS) -> tuple[TunedConfig, float, float] | None:
    """The cooperative 192×192 tile of :data:`TALL_MERIT` for N ≤ ``SMALL_M`` where its tiles fit one wave
    (each SM then holds one tile, and ping-pong has no next tile to overlap) and its :func:`small_m_cost` on
    the turned problem (its 2×1 cluster pairs the tiles along M), over its merit, is the least of the
    tiles the table would otherwise pick there: :func:`small_n`'s, cooperative 128×256, ping-pong 128×192
    in either cluster. Returns the tile, its cost and :func:`small_n`'s; None elsewhere.

    NVIDIA H200, 2026-11-28, ours / torch, 192×192 against the table without it: in one wave 9808×384×5880
    0.952 against 0.787, 11992×384×12440 1.001 against 0.625, 24744×192×7552 0.999 against 0.677,
    8768×376×9064 0.890 against 0.803, 10008×384×11000 0.878 against 0.805; past one wave it lost
    (19056×384×9776 0.779 against 0.839, 29016×384×8608 0.772 against 0.853, 26592×384×14728 0.788 against
    0.886) or won less (20344×384×4344 0.883 against 0.805). Where ping-pong 128×192 streams less
    (8016×376×5968: 1.015 against 192×192's 0.767) the rest of the table keeps the shape."""
    m, n, k = mnk
    tall, merit = TALL_MERIT[0]
    if tall.cluster_tiles(m, n) > max(1, sms // tall.cluster_size):
        return None
    turned = (n, m, k)
    narrow = small_n(mnk, sms)
    narrow_cost = small_m_cost(turned, (narrow.tile_n, narrow.tile_m), sms)
    rivals = (
        narrow_cost,
        small_m_cost(turned, (256, 128), sms),
        small_m_cost(turned, (192, 128), sms, row_pairs=True),  # ping-pong 128×192, cluster 1×2
        small_m_cost(turned, (192, 128), sms, col_pairs=True),  # and 2×1
    )
    cost = small_m_cost(turned, (tall.tile_n, tall.tile_m), sms, col_pairs=True) / merit
    if cost >= min(rivals):
        return None
    return tall, cost, narrow_cost


def fill(
    mnk: tuple[int, int, int],
    sms: int = H100_SMS,
    bias: bool = False,
    widths: bool = True,
    *,
    k_rows_in_sectors: bool = True,
) -> TunedConfig | None:
    """Both sides above ``SMALL_M`` but too few cooperative 128×256 tiles for the SMs (under one each): the
    ping-pong tile of :data:`SMALL_M_TILES` of least :func:`small_m_cost` if it streams fewer rows per SM
    than the cooperative tile, else None; 64×128 before 128×64 where M ≥ N, K ≤ ``SHORT_K`` and ``k_rows_in_sectors``
    (:data:`WIDE_BEFORE_TALL`, :func:`rows_in_sectors`). Cluster 1×2 (A multicast), 2×1 where that would pair an odd
    number of column tiles and not of row tiles: 1×2 measured the faster on all six such shapes of one
    H100 run, by up to 15 % (1024×1024×8192, 128×64), 2×1 within 1.5 % on one of them in another."""
    m, n, k = mnk
    if -(-m // 128) * -(-n // 256) >= sms:
        return None
    tiles = list(SMALL_M_TILES)
    if k_rows_in_sectors and m >= n and k <= SHORT_K:
        tiles.remove(WIDE_BEFORE_TALL[0])
        tiles.insert(tiles.index(WIDE_BEFORE_TALL[1]), WIDE_BEFORE_TALL[0])
    tiles = [t for t in tiles if not (bias and t in SMALL_M_BIAS_SPILLS)]
    tiles = [t for t in tiles if t[1] in POWER_OF_TWO_WIDTHS or widths and pairs_evenly(mnk, t)]
    tile_m, tile_n = min(tiles, key=lambda t: fill_tile_cost(mnk, t, sms))
    if fill_tile_cost(mnk, (tile_m, tile_n), sms) >= small_m_cost(mnk, (128, 256), sms):
        return None
    rows, cols = -(-m // tile_m), -(-n // tile_n)
    cluster_m = 2 if cols % 2 and rows % 2 == 0 else 1
    return PINGPONG_128x128.with_(tile_m=tile_m, tile_n=tile_n, cluster_m=cluster_m, cluster_n=3 - cluster_m)


#: The fill rule's 64×128 tile, taken before 128×64 at equal cost where M ≥ N, K ≤ ``SHORT_K`` and K's rows
#: fill whole 32-byte sectors: one ping-pong warpgroup issues one m64n128 wgmma per k-step on it where 128×64 takes two
#: m64n64, reading 64×16 + 16×128 elements of shared memory instead of twice 64×16 + 16×64. NVIDIA H200,
#: 2026-11-28, ours / torch, 64×128 against 128×64 (both cluster 1×2, but 896³: 2×1): 1024³ 1.003 / 1.013 /
#: 1.014 against 0.912 / 0.919 / 0.902 (cuBLAS: the same 64×128), 1024²×2048 0.922 / 0.910 against 0.849 /
#: 0.846, 768³ 1.062 against 1.040, 896³ 0.999 against 0.957, 1000²×1024 0.954 against 0.862. Left alone:
#: K = 1000 (2000-byte rows, 0.928 / 0.964 against 1.001 / 1.027), 640×1536×{2048, 4096} (0.786 / 0.683 against
#: 0.817 / 0.753; 640×1024×1024 gained: 0.897 against 0.822), 1024²×4096 (0.738 against 0.758, both c1×2).
WIDE_BEFORE_TALL = ((64, 128), (128, 64))
#: The bytes of an L2 sector: a row of A or B whose pitch is not a multiple of it makes each 128-byte TMA box
#: row touch five sectors instead of four.
SECTOR_BYTES = 32


def rows_in_sectors(k: int, element_bytes: int) -> bool:
    """Whether rows of K elements of ``element_bytes`` each start on a 32-byte sector (:data:`SECTOR_BYTES`)."""
    return k * element_bytes % SECTOR_BYTES == 0


def wave_fill(config: TunedConfig, m: int, n: int, sms: int = H100_SMS) -> float:
    """The share of the persistent clusters' turns that hold a cluster-tile: cluster-tiles over the whole
    waves they take (1.0 when the clusters divide them; 64 of 66 clusters busy in the one wave: 0.97)."""
    clusters = max(1, sms // config.cluster_size)
    tiles = config.cluster_tiles(m, n)
    return tiles / (-(-tiles // clusters) * clusters)


#: Ping-pong's merit against the cooperative 128×256 tile at equal :func:`wave_fill` is
#: ``hidden × SHORT_K / K − reuse``: it hides each tile's epilogue under the other warpgroup's mainloop (a
#: share of a tile's time that shrinks as K grows; a bias makes the epilogue heavier), and a smaller tile
#: reuses less of each operand stage than 128×256. H100, with PDL, 2026-11-26 (two repetitions):
#: 8192²×{512, 1024, 2048} ping-pong 128×192 +2.5 %, ±0 %, −1 … −2 % at fills 0.99 against 0.97; 128×128
#: 3 % below 128×192 at equal fill (six shapes); with a bias, 128×128 at 8192²×{512, 1024, 2048} +5 … +12 %,
#: +0 … +6 %, −0 … −4 % at equal fill.
PINGPONG_HIDDEN_EPILOGUE = 0.03
PINGPONG_HIDDEN_EPILOGUE_BIAS = 0.08
#: The ping-pong tiles :func:`wave_balance` weighs and what each loses in reuse against 128×256 (with a
#: bias a 128×192 ping-pong tile spills: 128×128 then).
PINGPONG_REUSE_COST = ((PINGPONG_128x192, 0.06), (PINGPONG_128x128, 0.09))


def pingpong_reuse_cost(tile_n: int) -> float:
    """A ping-pong 128×``tile_n`` tile's reuse cost against 128×256, linear in 1 / ``tile_n`` between 128×192's
    and 128×128's (:data:`PINGPONG_REUSE_COST`): each k-tile's A stage feeds ``tile_n`` columns."""
    (wide, wide_cost), (narrow, narrow_cost) = ((c.tile_n, cost) for c, cost in PINGPONG_REUSE_COST)
    share = (1 / tile_n - 1 / wide) / (1 / narrow - 1 / wide)
    return round(wide_cost + share * (narrow_cost - wide_cost), 4)


#: Ping-pong tiles between 128 and 192 columns for the wave balance, at :func:`pingpong_reuse_cost`: widths
#: between the powers of two (``decide(widths=False)`` leaves them out). H100, with PDL, 2026-11-28, two runs
#: against the aligned split of 128×256 tiles: 128×176 at 1024×14336×4096 (328 cluster-tiles of 128×176, 4.97
#: waves) 0.989 / 0.987 against 0.984 / 0.954, 1024×13824×5120 1.082 / 1.086 against 1.060 / 1.053. NVIDIA
#: H200, with PDL, 2026-11-28, ten shapes of ragged M and N (K 3712–8128): each width's ratio to torch over
#: the 128×256 tile's, divided by their wave fills' and useful columns' ratio, is 0.986 (0.977–0.995) for
#: 128×192, 0.972 for 128×176, 0.971 for 128×160, 0.961 for 128×144 and 0.962 for 128×128, the widths in the
#: order of their reuse; 128×112 0.911 and 128×96 0.87 fall off it (16-column subtiles, and 96 columns are
#: two wgmma n-steps fewer than a k-tile's loads can feed), and are not weighed.
PINGPONG_BETWEEN_WIDTHS = (176, 160, 144)
#: The shortest K the wave balance weighs them at. Below it a tile's fixed costs (filling the ring, the
#: epilogue: the same per tile whatever its width) outweigh the waves they fill. NVIDIA H200, with PDL,
#: 2026-11-28, against the table without them in the same rounds: at K = 1024–2048 14 of 22 shapes gained (up
#: to +40 %: 7144×544×1840 0.889 against 0.636; 2560²×1024 1.056 against 0.903), 3 level, 5 lost 0.5–4 %
#: (4336×1896×1072 1.063 against 1.111); at K = 544–856 four of six lost up to 23 % (12640×1728×840 0.840
#: against 1.087, 10168×2160×568 0.901 against 1.080).
PINGPONG_BETWEEN_MIN_K = 1024
PINGPONG_BETWEEN_REUSE_COST = tuple(
    (PINGPONG_128x128.with_(tile_n=width), pingpong_reuse_cost(width)) for width in PINGPONG_BETWEEN_WIDTHS
)


#: Cooperative tiles narrower than 128×256 (their epilogue deferred, one subtile per chunk) that
#: :func:`wave_balance` weighs, and their merit against it at equal :func:`wave_fill` and useful columns:
#: a narrower tile reuses each A stage over fewer columns. H100, with PDL, 2026-11-28, from the ratios to
#: torch over the fills: 128×224 0.91–0.92 of 128×256 at 512×7168×2048 and 256×14336×2048 (64 cluster-tiles
#: for 66 clusters against 56); 128×208 at 2560³ level with 128×224 (0.963 / 0.948 of torch).
COOPERATIVE_NARROWER = (
    (COOPERATIVE_128x256.with_(tile_n=224, deferred_chunks=7), 0.92),
    (COOPERATIVE_128x256.with_(tile_n=208, deferred_chunks=13), 0.92),
)


#: Swapped tiles (``swap_ab``: Cᵀ = B·Aᵀ, the tile's 192 rows along N, its columns along M, warpgroups
#: along N, stored column by column) that :func:`wave_balance` weighs past ``SHORT_K`` where the call allows
#: a swap (no bias, B as (N, K)), and their merit against the cooperative 128×256 tile at equal
#: :func:`wave_fill` and useful area. NVIDIA H200, 2026-11-28, ours / torch: at 4096³ (fills 0.94 against
#: 0.97) 192×176 0.936 against 128×256's 1.034; 4104³ 0.969 / 0.974 against the aligned split's 0.920 /
#: 0.929 (528 tiles: 4.0 waves); 4104×8192×4096 0.964 and 8192×4104×4096 0.978 against stream-K's 1.022 /
#: 1.003; 808×4776×4096 0.982 against split-K's 0.785, 2288×1824×4096 0.975 against 0.792, 6728×1824×4096 0.974
#: against the aligned split's 0.889, 1696×12648×4096 0.991 against ping-pong 128×192's 1.001 (a tie the score
#: calls for the swap). The same tile unswapped ran 0.907 at 4104³: a warpgroup's 88 columns make 8-column subtiles,
#: 16-byte rows for a row-major TMA store, where column by column each is 128 bytes. Swapped 192×192
#: (0.896 at 4096³, merit ~0.90; 0.992 at 3000³ against ping-pong 128×192's 0.945) is not weighed: its
#: picks at K ≤ 4096 outside those shapes are unmeasured.
SWAPPED_MERIT = ((TunedConfig(GemmConfig(192, 176, 2, 1, Schedule.COOPERATIVE, wg_split="n"), swap_ab=True), 0.93),)
#: The merit of the swapped 256×96 and 256×104 tiles (:data:`SWAPPED_ALONG_N_MERIT`): a few more loaded rows per
#: multiply-add than 256×112's. NVIDIA H200, 2026-11-29, with PDL, against the table without them in the same
#: rounds: at the wider tiles' 0.94 they changed 183 of 9,000 draws; on 28 of those 0.936 → 0.955, 13 faster
#: by more than 2 %, 5 slower (864×6728×5672 1.159 → 1.041 against cooperative 128×208, 696×4544×6808 0.934 →
#: 0.765). At 0.90 those 28 keep 13 of the changes (1.059 on them, one loss) and 68 of 9,000 draws change:
#: on 26 drawn after, 0.939 → 0.971, 19 faster by more than 2 %, 2 slower (672×13736×11656 split-K 1.133 →
#: 0.941, 922×9400×2616 ping-pong 128×192 1.153 → 0.930); 787×7168×18432 0.788 → 0.913, 656×14336×4096 0.926
#: → 1.055, 1158×5120×13824 0.921 → 1.021.
NARROW_SWAPPED_MERIT = 0.90
#: Swapped 256-row tiles (each warpgroup 128 rows along N, the tile's 112–176 columns along M, four A/B
#: stages: ``GemmConfig.epi_n_default``) that :func:`wave_balance` weighs beside :data:`SWAPPED_MERIT` where
#: N > M > ``SMALL_M``, with their merit against the cooperative 128×256 tile at equal :func:`swapped_score`
#: (cuBLAS runs 256×112, 256×152 and 256×160 on such projections). NVIDIA H200, 2026-11-29, with PDL: on 18
#: projections the ratio to torch over the score agreed within 2 % between 144, 152, 160 and 176 at every
#: shape (on 39 more, 128 and 144 alike). The merit was fitted with 128, 144 and 160 on 20 projections and
#: held on 19 + 24 drawn after; the widths in steps of 8 then ran, against the three, 0.959 → 0.983 of torch
#: on 50 shapes where the pick changed and 0.945 → 0.995 on 33 drawn after (30 faster, none slower by more
#: than 2 %; 1045×13824×5120 0.848 → 0.996, 784×28672×8192 0.883 → 0.999). Where the aligned split keeps
#: 95 % of the turns busy it stays, within 2 % of the best width (2230×7168×18432 0.984 against 256×160's
#: 1.002, 2179×14336×4096 0.989 against 0.998). Where M is the longer side the turn lost (13256×992×12776
#: −19 %; on 28 drawn shapes with M ≥ N, 2026-11-29, 0.989 → 0.894 and none faster); for M ≤ 512 the
#: small-M rules' tiles stay (219×13824×5120 0.987 against 256×112's 0.919); a swapped short-side tile may
#: still take their place (:func:`_keeps_its_swap`).
#: The two narrowest, 96 and 104 (cuBLAS's 256×96 at 854×7168×18432: 0.996 of torch against the pick's
#: 0.875), weigh less (:data:`NARROW_SWAPPED_MERIT`).
SWAPPED_ALONG_N_MERIT = tuple(
    (TunedConfig(GemmConfig(256, width, 2, 1, Schedule.COOPERATIVE), swap_ab=True), 0.94)
    for width in range(112, 177, 8)
) + tuple(
    (TunedConfig(GemmConfig(256, width, 2, 1, Schedule.COOPERATIVE), swap_ab=True), NARROW_SWAPPED_MERIT)
    for width in (96, 104)
)


def swapped_tiles(m: int, n: int) -> tuple[tuple[TunedConfig, float], ...]:
    """The swapped tiles weighed for an M×N output, with their merits: :data:`SWAPPED_MERIT`'s, and
    :data:`SWAPPED_ALONG_N_MERIT`'s where N > M > ``SMALL_M``."""
    return SWAPPED_MERIT + (SWAPPED_ALONG_N_MERIT if n > m > SMALL_M else ())


def swapped_score(config: TunedConfig, m: int, n: int, sms: int = H100_SMS) -> float:
    """A swapped tile's :func:`busy_area` on the turned output (N × M) over the cooperative 128×256 tile's
    useful area on M × N. H200, 2026-11-28: 3768×840×4096 puts 5 tile rows in clusters of two, and ran
    0.778 of torch against 128×256's 0.866."""
    return busy_area(config, n, m, sms) / (useful_rows(m, 128) * useful_cols(n, 256))


def area_score(config: TunedConfig, m: int, n: int, sms: int = H100_SMS) -> float:
    """A tile's :func:`busy_area` on M × N over the cooperative 128×256 tile's useful area there."""
    return busy_area(config, m, n, sms) / (useful_rows(m, 128) * useful_cols(n, 256))


def busy_area(config: TunedConfig, rows: int, cols: int, sms: int = H100_SMS) -> float:
    """The share of the CTAs' turns that hold a tile on a ``rows`` × ``cols`` output (a cluster padding an
    odd count of tiles idles a CTA), times the share of the tiles' area that the output fills."""
    clusters = max(1, sms // config.cluster_size)
    tiles = -(-rows // config.tile_m) * -(-cols // config.tile_n)
    turns = -(-config.cluster_tiles(rows, cols) // clusters) * clusters * config.cluster_size
    return tiles / turns * useful_rows(rows, config.tile_m) * useful_cols(cols, config.tile_n)


#: Cooperative 192×192 (cluster 2×1, each warpgroup all 192 rows and 96 of the columns: cuBLAS's "coopB" tile
#: at 3000³ and 3072²×12288), weighed by :func:`wave_balance` past ``SHORT_K`` where the warpgroups may split N
#: (B as (N, K), no bias), with its merit against the cooperative 128×256 tile at equal :func:`area_score`.
#: NVIDIA H200, 2026-11-28, ours / torch: 3000³ 0.977 / 0.981 against ping-pong 128×192's 0.941 / 0.943
#: (256 tiles: 1.94 waves), 3072²×12288 1.002 against split-K's 0.990; level or behind where 128×256 or
#: ping-pong fill as well: 3072³ 1.009 against 1.028, 4096³ 0.896 against 1.040 (fills 0.92 against 0.97),
#: 6144³ 1.002 against 1.047, 8192³ 0.965 against 1.070: merit 0.94–0.97 from those.
TALL_MERIT = ((TunedConfig(GemmConfig(192, 192, 2, 1, Schedule.COOPERATIVE, wg_split="n")), 0.95),)
#: What rows of K that do not fill whole 32-byte sectors (:func:`rows_in_sectors`) cost ping-pong against its
#: merit in :func:`wave_balance` (two tiles' loads in flight per SM, each box row a fifth sector more).
#: NVIDIA H200, 2026-11-28, ping-pong 128×192 ours / torch: 3000³ 0.941 against 3000²×3072's 1.031
#: (cooperative 192×192: 0.977 against 0.992); H100, 2026-11-28: 3000³ 0.862 against 3072³'s 0.991. What the
#: cost moved (H200, same runs): 3000³ 0.981 against 0.944, 3000²×5000 0.965 against 0.881, 3072²×5000 0.975
#: against 0.890, 3200²×3000 0.924 against 0.774, 3712²×3000 1.051 against 0.980, 3840²×3000 1.017 against
#: 0.983, 2944²×5000 0.942 against 0.908, 4352²×3000 1.025 against 1.029, 3072²×3000 0.998 against 0.995. Rows
#: that fill whole sectors but not 128-byte lines cost nothing: 2432²×6000 ping-pong 1.005 against 128×208's
#: 0.908, 2944²×6000 1.002 against split-K's 0.962.
PINGPONG_UNSECTORED_K_COST = 0.08


def useful_cols(n: int, tile_n: int) -> float:
    """The share of the column tiles' columns that N fills."""
    return n / (-(-n // tile_n) * tile_n)


#: Split-K on the last wave's fix-up (each part posting the others' shares of its partial and adding
#: theirs) as a share of a tile's time at K = SHORT_K; the share falls as K grows. H100, with PDL,
#: 2026-11-26, from the unsplit cooperative tile's time: 0.06–0.17 of a tile at K = 8192 on six shapes
#: (1536×3072, 3072², 2048×3072, 4352², 3840², 2560×4096), about 0.5 at K = 2048 (1536×3072).
SPLIT_K_TAIL_FIXUP = 0.4


def split_tail(mnk: tuple[int, int, int], sms: int = H100_SMS) -> tuple[TunedConfig, float] | None:
    """Split-K on the last wave with the cooperative 128×256 tile (``GemmConfig.split_k`` past one wave),
    and its score for :func:`wave_balance`: the most parts (8, 4, 2) whose last-wave tiles fit the
    clusters and keep ``SPLIT_K_MIN_PART`` k-tiles each, scored as the cluster-tiles over the clusters'
    turns: the whole waves, 1/parts of a tile and the fix-up (:data:`SPLIT_K_TAIL_FIXUP` × SHORT_K / K).
    None under a wave (:func:`split_k`'s class), or where the waves are whole or no part count fits."""
    m, n, k = mnk
    clusters = max(1, sms // COOPERATIVE_128x256.cluster_size)
    tiles = COOPERATIVE_128x256.cluster_tiles(m, n)
    whole, last = divmod(tiles, clusters)
    k_tiles = -(-k // COOPERATIVE_128x256.tile_k)
    if whole and last:
        for parts in (8, 4, 2):
            if last * parts <= clusters and k_tiles // parts >= SPLIT_K_MIN_PART:
                turns = whole + 1 / parts + SPLIT_K_TAIL_FIXUP * SHORT_K / k
                return COOPERATIVE_128x256.with_(split_k=parts), tiles / (turns * clusters)
    return None


#: What the aligned split costs beyond its model (a lead and its addition), in turns of a tile. H100, with PDL,
#: 2026-11-26, measured turns less modelled: 0.02–0.05 after whole waves (2304×3328, 2816², 3840², 4608²,
#: 4096×5120 at K = 8192; 6144³), 0.03–0.09 under a wave (3072×1024×{4096, 8192}, 2048×1536×8192,
#: 2560×1024×8192), where the exposed epilogue and the ring's fill weigh on a one-tile kernel.
ALIGNED_EXTRA_TURNS = 0.05


def aligned_split(
    mnk: tuple[int, int, int], sms: int = H100_SMS, config: TunedConfig = COOPERATIVE_ALIGNED
) -> tuple[TunedConfig, float] | None:
    """``config`` (the cooperative 128×256 tile) with the partial wave's tiles split at one k
    (``stream_k_aligned``), and its score for :func:`wave_balance`: the cluster-tiles over the clusters'
    turns, the whole waves plus a lead and its addition (:data:`~gemm_modes.splits.ALIGNED_ADD_K_TILES`)
    as a share of the tile's k-tiles, plus :data:`ALIGNED_EXTRA_TURNS`. None at K ≤ ``SHORT_K`` (not
    measured there) and where it splits nothing (whole waves, or a lead of every k-tile)."""
    m, n, k = mnk
    if k <= SHORT_K:
        return None
    clusters = max(1, sms // config.cluster_size)
    tiles = config.cluster_tiles(m, n)
    k_tiles = -(-k // config.tile_k)
    split = AlignedSplit.of(tiles, clusters, k_tiles)
    if not split.sk_tiles:
        return None
    turns = split.dp_tiles // clusters + (split.lead + ALIGNED_ADD_K_TILES) / k_tiles + ALIGNED_EXTRA_TURNS
    return config, tiles / (turns * clusters)


#: What a 1×2 pair of split cooperative 128×256 tiles costs against 2×1 where neither idles a CTA, as a share of
#: the CTAs' turns: each CTA of a 1×2 pair loads its own 256 columns of B and half of A's 128 rows (320 rows a
#: k-step against 2×1's 256). NVIDIA H200, with PDL, 2026-11-29, ours / torch, 1×2 against 2×1 in the same
#: rounds, M in an odd count of row tiles and N the longer side: the aligned split over 55–127 row tiles (2×1
#: idles 0.8–1.8 % of its CTAs) level (10 shapes, 1.021 against 1.020), stream-K over 57–115 1.2–2 % slower
#: (7181×8192×28672, 13626×18432×7168, 14613×18432×7168), over 73 level.
PAIR_ALONG_N_COST = 0.02


def paired_along_n(config: TunedConfig, m: int, n: int) -> TunedConfig:
    """A split cooperative 128×256 pick in clusters of two along M (2×1: stream-K, split-K on the last wave, the
    aligned split) in a 1×2 pair where that idles more than :data:`PAIR_ALONG_N_COST` fewer CTAs
    (:func:`cta_share`: a 2×1 pair over an odd count of row tiles idles one CTA in each cluster of the last
    row, so under 50 row tiles where N's column tiles are even), N is the longer side and M longer than
    ``short_side.PADDING_ALONE_MAX`` (the aligned split) or ``short_side.SHORT_SIDE_MAX`` (the others: up to
    there the short-side rules weigh their tiles against this pick, measured against it in 2×1).

    NVIDIA H200, with PDL, 2026-11-29, ours / torch, the paired pick against 2×1 in the same rounds:
    stream-K and split-K on the last wave, 9–45 row tiles, 0.958 → 0.998 on 13 shapes where the rule was set
    (12 faster; 1111×28672×8192 0.891 → 0.990, 3335×13824×5120 0.936 → 0.980) and 0.971 → 1.000 on 24 drawn
    after (20 faster; 1408×18432×7168 0.922 → 1.020, 4199×5120×13824 0.947 → 1.014; 4959×7168×18432 0.965 →
    0.943 the worst); the aligned split, 1392×8192×28672 (11 row tiles) 1.053 against 0.967, 2876×8192×28672
    (23) 1.015 against 0.972, 5935×8192×28672 (47) 1.030 against 0.979. Left in 2×1: whole tiles (1×2 0.4–1.7 %
    slower on six shapes of 21–45 row tiles), N not the longer side (7464³ 0.918 against 0.993 with the
    aligned split, 13177×7168×18432 1.020 against 1.057 with stream-K, 3416³ 0.928 against 0.988), M ≤ 640
    (256×28672×8192 1.064 against 1.088)."""
    own = (config.schedule, config.tile_m, config.tile_n, config.cluster_m, config.cluster_n, config.swap_ab)
    shortest = short_side.PADDING_ALONE_MAX if config.stream_k_aligned else short_side.SHORT_SIDE_MAX
    split = config.stream_k or config.split_k > 1
    if own != (Schedule.COOPERATIVE, 128, 256, 2, 1, False) or not split or n <= m or m <= shortest:
        return config
    pair = config.with_(cluster_m=1, cluster_n=2)
    return pair if cta_share(pair, m, n) > cta_share(config, m, n) * (1 + PAIR_ALONG_N_COST) else config


def describe_pair(config: TunedConfig, m: int, n: int) -> str:
    """The facts behind :func:`paired_along_n`'s 1×2 pair, or "" where the pick is not one."""
    if (config.schedule, config.tile_m, config.tile_n, config.cluster_n) != (Schedule.COOPERATIVE, 128, 256, 2):
        return ""
    rows, tiles = -(-m // config.tile_m), config.cluster_tiles(m, n)
    idle = 1 - cta_share(config.with_(cluster_m=2, cluster_n=1), m, n)
    return f"; paired 1×2 along N ({tiles} cluster-tiles): 2×1 over {rows} row tiles would idle {idle:.1%} of the CTAs"


def cta_share(config: TunedConfig, m: int, n: int) -> float:
    """The share of a configuration's CTAs that hold a tile: a cluster of two over an odd count of row (2×1) or
    column (1×2) tiles idles one CTA in each cluster of the last row or column."""
    tiles = -(-m // config.tile_m) * -(-n // config.tile_n)
    return tiles / (config.cluster_tiles(m, n) * config.cluster_size)


#: What a 1×2 cluster over an odd count of column tiles costs a between-width ping-pong tile beyond its
#: :func:`area_score`. NVIDIA H200, with PDL, 2026-11-28, ten ragged shapes: ratio to torch over the area
#: score 0.93–0.95 (median per width) padded against 0.95–0.98 not.
PADDED_COLUMN_CLUSTER_COST = 0.04


def between_width_pingpong(m: int, n: int) -> list[tuple[TunedConfig, float]]:
    """The ping-pong tiles of :data:`PINGPONG_BETWEEN_REUSE_COST` in cluster 2×1 and 1×2, with their reuse
    costs (1×2 plus :data:`PADDED_COLUMN_CLUSTER_COST` where its column tiles come in an odd count). Where M
    spans an odd count of row tiles, 2×1 idles a CTA in each cluster of the last row and 1×2 may pad less:
    NVIDIA H200, with PDL, 2026-11-28, 128×176 at 1056×17896×4800 (9 row tiles, 102 column tiles) 1.018 of
    torch in 1×2 against 0.884 in 2×1, at 2160×6656×8128 (17, 38) 0.984 against 0.813; 128×160 at
    848×14168×1328 (7 row tiles, 89 column tiles: 1×2 pads 7 CTAs, 2×1 89) 1.099 against 0.784."""
    offered = []
    for pingpong, reuse in PINGPONG_BETWEEN_REUSE_COST:
        offered.append((pingpong.with_(cluster_m=2, cluster_n=1), reuse))
        padded = -(-n // pingpong.tile_n) % 2 * PADDED_COLUMN_CLUSTER_COST
        offered.append((pingpong.with_(cluster_m=1, cluster_n=2), reuse + padded))
    return offered


def wave_balance(
    mnk: tuple[int, int, int],
    sms: int = H100_SMS,
    bias: bool = False,
    widths: bool = True,
    swappable: bool = False,
    *,
    k_rows_in_sectors: bool = True,
) -> TunedConfig:
    """The cooperative 128×256 tile (deferred epilogue), a ping-pong tile of :data:`PINGPONG_REUSE_COST`,
    split-K on the last wave (:func:`split_tail`) or the aligned split (:func:`aligned_split`), whichever
    scores best: its :func:`wave_fill`, ping-pong's times ``1 + hidden × SHORT_K / K − reuse``
    (:data:`PINGPONG_HIDDEN_EPILOGUE`; less :data:`PINGPONG_UNSECTORED_K_COST` unless ``k_rows_in_sectors``:
    :func:`rows_in_sectors`), the splits' own scores, and where ``swappable`` (no bias, B as
    (N, K)) and K > ``SHORT_K`` the 192-row tiles of :data:`TALL_MERIT` (their :func:`area_score`) and the
    swapped ones of :data:`SWAPPED_MERIT`, and of :data:`SWAPPED_ALONG_N_MERIT` where N > M > ``SMALL_M``
    (their :func:`swapped_score`), times their merit; the earlier on a tie.
    For every shape past the fill rules where stream-K does not pay (:func:`stream_k_pays`).

    H100, with PDL, ours / torch, cooperative → ping-pong: 3072²×2048 0.80 → 1.00 (144 cluster-tiles: 2.2
    waves of 66), 3072²×8192 0.75 → 0.96, 2048×5120×2048 0.89 → 0.97 (128×128), 6144×7168×2048 1.03 →
    1.05; the cooperative tile kept: 2048³ 0.93 against 0.70 (176 ping-pong tiles for 132 SMs),
    4096²×2048 1.04 against 0.92, 7168²×2048 1.05 against 0.97 / 1.00."""
    m, n, k = mnk
    hidden = PINGPONG_HIDDEN_EPILOGUE_BIAS if bias else PINGPONG_HIDDEN_EPILOGUE

    def filled(config: TunedConfig) -> float:  # an odd count of tiles in clusters of two idles a CTA in each
        return wave_fill(config, m, n, sms) * cta_share(config, m, n)

    pads = cta_share(COOPERATIVE_DEFERRED, m, n)  # the splits' clusters: the 128×256 tile's
    best, best_score = COOPERATIVE_DEFERRED, filled(COOPERATIVE_DEFERRED)
    between = widths and not bias and k >= PINGPONG_BETWEEN_MIN_K  # measured without a bias only
    unsectored = 0.0 if k_rows_in_sectors else PINGPONG_UNSECTORED_K_COST
    for pingpong, reuse in PINGPONG_REUSE_COST:
        if bias and (pingpong.tile_m, pingpong.tile_n) in SMALL_M_BIAS_SPILLS:
            continue
        score = filled(pingpong) * (1 + hidden * SHORT_K / k - reuse - unsectored)
        if score > best_score:
            best, best_score = pingpong, score
    for pingpong, reuse in between_width_pingpong(m, n) if between else ():
        score = area_score(pingpong, m, n, sms) * (1 + hidden * SHORT_K / k - reuse - unsectored)
        if score > best_score:
            best, best_score = pingpong, score
    for narrower, merit in COOPERATIVE_NARROWER if widths else ():
        score = filled(narrower) * useful_cols(n, narrower.tile_n) / useful_cols(n, 256) * merit
        if score > best_score:
            best, best_score = narrower, score
    for split in (split_tail(mnk, sms), aligned_split(mnk, sms)):
        if split is not None and split[1] * pads > best_score:
            best, best_score = split[0], split[1] * pads
    for tall, merit in TALL_MERIT if swappable and widths and k > SHORT_K else ():
        score = area_score(tall, m, n, sms) * merit
        if score > best_score:
            best, best_score = tall, score
    for swapped, merit in swapped_tiles(m, n) if swappable and widths and k > SHORT_K else ():
        score = swapped_score(swapped, m, n, sms) * merit
        if score > best_score:
            best, best_score = swapped, score
    return paired_along_n(paired_along_the_shorter_side(best, m, n), m, n)


def paired_along_the_shorter_side(config: TunedConfig, m: int, n: int) -> TunedConfig:
    """A ping-pong 128×128 pick with cluster 1×2 where M is the longer side and its column tiles pair
    evenly: A, the larger operand, is then the one multicast (H100, with PDL, 2026-11-26: 6144×1024×2048
    1.007 / 1.031 → 1.048 / 1.076, ×8192 0.970 / 0.974 → 1.000 / 1.006; as split-K's clusters). Other picks
    as they are: 128×192 gained ≤ 1 % so (6144×1536, 3072×1536, 4096×1536) and lost 25–35 % where its
    column count is odd (3072×2048, 6144×2048: 11 column tiles, a padded idle CTA per cluster row), and
    2×1 stays ahead where N is the longer side (2048×6144×2048 1.038 / 1.040 against 0.995 / 1.000)."""
    if (config.schedule, config.tile_m, config.tile_n) != (Schedule.PINGPONG, 128, 128) or m <= n:
        return config
    if -(-n // config.tile_n) % 2:
        return config
    return config.with_(cluster_m=1, cluster_n=2)


#: The K from which the A/B stage that the ring staging frees pays off. Below it the extra stage ran
#: 0.5–2 % slower than the plain stage count (128×128 at K = 1024 and 2048); from it, 0.7 % faster
#: (K = 4096) and 2 % faster (K = 8192). H100, 2026-11-26.
RING_EXTRA_STAGE_MIN_K = 4096


def single_wave_staging(config: TunedConfig, problem: Problem, mnk: tuple[int, int, int], sms: int) -> TunedConfig:
    """``config`` with ``staging_in_ring`` on where every CTA owns at most one tile (cluster-tiles ≤ the
    ``sms // cluster size`` clusters that fit at once; with split-K, cluster-tiles × parts), off otherwise;
    there a deferred epilogue gives way to it: it runs each tile's stores under the next tile's k-loop, and
    one tile per CTA has none (NVIDIA H200, 2026-11-28, ours / torch, cooperative 128×224 in the ring
    against deferred in 7: 512×7168×2048 0.974 against 0.937, 256×14336×2048 1.022 against 0.987);
    the stage that frees is taken only by a ping-pong tile, for K ≥ :data:`RING_EXTRA_STAGE_MIN_K` and
    where one operand streams through once (a single cluster row or column of tiles); elsewhere the plain
    stage count is kept. Cooperative tiles keep it: on an NVIDIA H200 (2026-11-29, ours / torch, the freed
    stage against the plain count in the same rounds) 128×224 in 2×1 at M = 224–246 against N = 13824–14336
    ran 3–5 % slower with it (6 of 6 shapes; 5 stages against 4), split-K's 128×64–232 within ±2 %, while
    ping-pong 64×64–128×128 ran within +0.8 … −0.2 %.

    Measured with PDL on an H100 (2026-11-26), time against staging buffers of their own: ping-pong
    128×128 −0.5 … −2 % with the plain stage count at K ≤ 4096, and 7 stages instead of 6 at 256×8192²
    −1.7 … −2.3 %; 64×64 −0.4 … −1.5 % at 64×8192×{1024, 2048, 8192}. The ring with the plain stage
    count against its own staging: ±1 % on eleven shapes. The freed stage where both operands are re-read
    by several cluster rows and columns: +3.1 … +5.8 % in time at 2048×1024, 1280² and 1536×1024 (×8192,
    ping-pong 128×128 c1×2), ±1.3 % with split-K; where one streams once: −1.6 % at 256×8192², −0.9 % at
    256×4096×8192 (the deeper prefetch hides DRAM; with re-read operands it spreads the CTAs' k
    positions instead, and the L2 serves fewer of their loads)."""
    m, n, k = mnk
    one_wave = config.one_wave_clusters(m, n) <= sms // config.cluster_size
    if config.deferred_chunks and one_wave and not config.stream_k:
        config = config.with_(deferred_chunks=0)  # no next tile to defer the epilogue under
    plain = config.with_(staging_in_ring=False)
    if config.swap_ab:
        return plain  # a swapped launch runs on the plain kernel
    if config.cluster_size > 2:
        return plain  # clusters of four have run with their own staging buffers only
    if config.stream_k or config.deferred_chunks or not one_wave:
        return plain
    if config.tile_m == TALL_SMALL_M_TILE[0] or config.wg_split == "n":
        return plain  # a 192-row tile with the staging in the ring has not run on a GPU; halves: no modes
    k //= config.split_k  # a part's k-loop
    ring = plain.with_(staging_in_ring=True)
    try:
        plain_stages, ring_stages = plain.stages(problem)[0], ring.stages(problem)[0]
    except ValueError:
        return plain
    streamed_once = min(config.cluster_grid(m, n)) == 1
    pingpong = config.schedule is Schedule.PINGPONG
    if ring_stages > plain_stages and (k < RING_EXTRA_STAGE_MIN_K or not streamed_once or not pingpong):
        return ring.with_(ab_stages=plain_stages)
    return ring


#: Split-K's tile: cooperative 128×128 (its four subtiles allow 2 or 4 parts).
SPLIT_K_128 = COOPERATIVE_128x256.with_(tile_n=128)
#: Split-K where K is at least this many times the longer output side, both sides at least
#: SPLIT_K_MIN_SIDE, and each part keeps at least SPLIT_K_MIN_PART k-tiles (H100, 2026-11-26: 39 shapes of
#: 256…2048 × 256…2048 × 4096…16384; it lost only below the ratio, by up to 9 %, and won 1.02–1.50× over
#: the whole-tile pick from it).
SPLIT_K_K_OVER_SIDE = 4
SPLIT_K_MIN_SIDE = 256
SPLIT_K_MIN_PART = 16


#: Split-K's tiles and their part counts, first fit wins: 128×192 in 2 parts where 128×128 tiles are too
#: many to split (768×1536×8192 0.65 → 0.77, 1024×1536×16384 0.68 → 0.92; where 128×128 fits, 128×192
#: measured 0.72–0.85 against its 0.84–1.03).
SPLIT_K_TILES = (((128, 128), (4, 2)), ((128, 192), (2,)))


def split_k(mnk: tuple[int, int, int], sms: int = H100_SMS) -> TunedConfig | None:
    """Split-K for a long K on a small output: the first of :data:`SPLIT_K_TILES` (cooperative) whose
    cluster-tiles × parts fit the ``sms // 2`` clusters at once, the most parts first (None where none
    fits, or the shape is outside the rule's class). The cluster pairs the tiles of the shorter side, so
    the longer side's operand (the larger) is multicast, unless that side has an odd tile count (a padded
    idle CTA); a square's column tiles."""
    m, n, k = mnk
    if min(m, n) < SPLIT_K_MIN_SIDE or k < SPLIT_K_K_OVER_SIDE * max(m, n):
        return None
    for (tile_m, tile_n), part_counts in SPLIT_K_TILES:
        rows, cols = -(-m // tile_m), -(-n // tile_n)
        pair_rows = rows < cols  # a square: 1×2 (2×1 measured the same with PDL, 4–9 % slower without)
        if (rows if pair_rows else cols) % 2:
            pair_rows = not pair_rows
        cluster_m = 2 if pair_rows else 1
        config = SPLIT_K_128.with_(tile_m=tile_m, tile_n=tile_n, cluster_m=cluster_m, cluster_n=3 - cluster_m)
        k_tiles = -(-k // config.tile_k)
        for parts in part_counts:
            split = config.with_(split_k=parts)
            if split.one_wave_clusters(m, n) <= sms // config.cluster_size and k_tiles // parts >= SPLIT_K_MIN_PART:
                return split
    return None


@dataclass(frozen=True)
class Decision:
    """What the table picks for a shape, the row of the table that picked it and the facts it went by."""

    config: TunedConfig
    rule: str
    facts: str

    def line(self) -> str:
        """The decision in one line (``persistent_gemm.py --explain``)."""
        return f"auto: {self.config.describe()} — {self.rule}: {self.facts}"


def pick(problem: Problem, mnk: tuple[int, int, int], sms: int = H100_SMS, swap: bool = True) -> TunedConfig:
    """The measured best configuration for a shape (the table above) on a GPU with ``sms`` SMs (``swap``
    False: only tiles a comm role, gate or mode can join, as :func:`decide`)."""
    return decide(problem, mnk, sms, swap=swap).config


def best_swapped(mnk: tuple[int, int, int], sms: int = H100_SMS) -> TunedConfig:
    """The swapped tile for ``gemm(swap_ab=True)``: up to ``short_side.PADDING_ALONE_MAX`` rows the tile of
    ``short_side.pick`` takes by ``tile_time`` (M along the tile's columns: 128×160 at M = 152
    ran 0.958 of torch where cooperative 128×176 ran 0.857, H200), else the tile of :func:`swapped_tiles`
    that scores best times its merit."""
    m, n, _ = mnk
    if m <= short_side.PADDING_ALONE_MAX:
        return short_side.pick(max(m, 64), n, sms, swap_ab=True)[0]
    return max(swapped_tiles(m, n), key=lambda c: swapped_score(c[0], m, n, sms) * c[1])[0]


def whole_tiles(problem: Problem, mnk: tuple[int, int, int], sms: int = H100_SMS) -> TunedConfig:
    """:func:`pick` without split-K or a swap: the configuration of the table's other rows, which a stream-K
    or split-K override can extend."""
    return decide(problem, mnk, sms, split=False, swap=False).config


def swappable(problem: Problem) -> bool:
    """Whether ``problem`` can be computed as Cᵀ = B·Aᵀ on the swapped launch: no bias (it adds along N,
    Cᵀ's rows), B as (N, K) and C row-major."""
    return not problem.bias and problem.b_major == "k" and problem.c_major == "n"


def decide(
    problem: Problem,
    mnk: tuple[int, int, int],
    sms: int = H100_SMS,
    split: bool = True,
    widths: bool = True,
    swap: bool = True,
    short_sides: bool = True,
) -> Decision:
    """The table's decision for a shape on a GPU with ``sms`` SMs: :func:`table_decision`, its cluster of two
    then widened to four where ``clusters_of_four.widened`` applies, and its tile replaced by a short-side
    one in fours where ``clusters_of_four.tightest`` finds one (with ``swap``: plain ``gemm()`` calls; no
    comm role, gate or mode has run in clusters of four); then, with ``swap``, ``widths`` and K past
    ``SHORT_K``, a 192-row tile narrowed to fill its one wave where ``one_wave.replaces`` takes it; then, with
    ``swap`` and ``split``, split-K where ``long_k.replaces`` takes it (on 192-row halves where
    ``long_k_halves.replaces`` takes those, with ``widths`` and no bias); last, with ``swap``, ``widths``, no
    bias and no split taken, a ping-pong tile narrowed to fill its one wave where
    ``one_wave.narrowed_pingpong`` takes it, the width cut to its column tiles (``tight_width.tightened``),
    and a ping-pong 128-row tile in one wave turned into 64 rows twice as wide (``half_rows.halved``), or
    with ``split`` too, where it stays (or is a 64-row pair, a narrow cooperative 192-row tile or a stream-K
    pick of less than a wave), split over K on 192-row halves (``split_halves.splits``), or else a thin side
    (at most 128) across one wave of 64-row ping-pong tiles (``thin_side_one_wave.replaces``);
    then, with ``swap`` and ``widths``, a ping-pong pick of more than one wave held in one
    (``one_wave.held_in_one_wave``, no bias), a short M's swapped 192-row pick in 256-row tiles
    (``paired_rows.replaces``, no bias), one wave of tall cooperative tiles where ``tall_one_wave.replaces``
    takes it, and a short side in whole 192-row tiles in one wave where ``short_side_one_wave.replaces``
    takes it; then, with ``swap`` and ``widths`` and no bias, a narrow cooperative 192-row pick run ping-pong
    (``pingpong_192.replaces``), a split over a short side of 129–256 as ping-pong 192-row tiles in clusters of
    eight, unsplit, where they fill one wave (``clusters_of_eight.replaces_split``), and a ping-pong 128- or
    192-row pair in clusters of eight where they fit one wave (``clusters_of_eight.widened``);
    after all of them, with ``swap``, a tile an odd multiple of 8 wide staged in wider subtiles
    (``wide_subtiles.widened``)."""
    decision = _tile_decision(problem, mnk, sms, split, widths, swap, short_sides)
    # the next two were measured without a bias (as narrowed_pingpong, whose choice the first shares, was)
    unbiased = swap and widths and not problem.bias
    held = one_wave.held_in_one_wave(decision.config, mnk[0], mnk[1], sms) if unbiased else None
    if held is not None:
        facts = f"{decision.facts}; {one_wave.describe_held(held, decision.config, mnk[0], mnk[1], sms)}"
        held = single_wave_staging(held, problem, mnk, sms)
        decision = Decision(held, f"{decision.rule}, held in one wave", facts)
    paired = paired_rows.replaces(decision.config, mnk[0], mnk[1], sms) if unbiased else None
    if paired is not None:
        facts = f"{decision.facts}; {paired_rows.describe(paired, decision.config, mnk[0], mnk[1], sms)}"
        decision = Decision(paired, f"{decision.rule}, in 256-row tiles", facts)
    tall = tall_one_wave.replaces(decision.config, mnk, sms, swappable(problem)) if swap and widths else None
    if tall is not None:
        facts = f"{decision.facts}; {tall_one_wave.describe(tall, decision.config, mnk[0], mnk[1], sms)}"
        decision = Decision(tall, f"{decision.rule}, one wave of tall tiles", facts)
    turned = short_side_one_wave.replaces(decision.config, mnk, sms, swappable(problem)) if swap and widths else None
    if turned is not None:
        facts = f"{decision.facts}; {short_side_one_wave.describe(turned, decision.config, mnk[0], mnk[1], sms)}"
        decision = Decision(turned, f"{decision.rule}, its short side in one wave of 192-row tiles", facts)
    whole = pingpong_192.replaces(decision.config, mnk[0], mnk[1]) if unbiased else None
    if whole is not None:
        facts = f"{decision.facts}; {pingpong_192.describe(whole, decision.config, mnk[0], mnk[1])}"
        decision = Decision(whole, f"{decision.rule}, in ping-pong 192-row tiles", facts)
    unsplit = (
        clusters_of_eight.replaces_split(decision.config, mnk[0], mnk[1], sms, swappable(problem)) if unbiased else None
    )
    if unsplit is not None:
        facts = f"{decision.facts}; {clusters_of_eight.describe_split(unsplit, decision.config, mnk[0], mnk[1], sms)}"
        decision = Decision(unsplit, f"{decision.rule}, unsplit in ping-pong 192-row tiles", facts)
    eight = clusters_of_eight.widened(decision.config, mnk[0], mnk[1], sms) if unbiased else None
    if eight is not None:
        facts = f"{decision.facts}; {clusters_of_eight.describe(eight, mnk[0], mnk[1], sms)}"
        decision = Decision(eight, decision.rule, facts)
    wide = wide_subtiles.widened(decision.config, problem) if swap else None
    if wide is None:
        return decision
    if wide.staging_in_ring:  # wider staging buffers: the ring's stage count and the plain one weighed again
        wide = single_wave_staging(wide.with_(ab_stages=None), problem, mnk, sms)
    facts = f"{decision.facts}; {wide_subtiles.describe(wide, decision.config)}"
    return Decision(wide, decision.rule, facts)


def _tile_decision(
    problem: Problem,
    mnk: tuple[int, int, int],
    sms: int,
    split: bool,
    widths: bool,
    swap: bool,
    short_sides: bool,
) -> Decision:
    """:func:`decide`'s tile: every step but the subtiles."""
    decision = table_decision(problem, mnk, sms, split, widths, swap, short_sides)
    m, n, k = mnk
    four = clusters_of_four.widened(decision.config, m, n, sms) if swap else None
    if four is not None:
        tight = clusters_of_four.tightest(four, m, n, sms, swappable(problem))
        facts = f"{decision.facts}; {clusters_of_four.describe(four, m, n, sms)}"
        if tight != four:
            facts = f"{decision.facts}; {clusters_of_four.describe_tightest(four, tight, m, n, sms)}"
        decision = Decision(tight, f"{decision.rule} in clusters of four", facts)
    narrows = swap and widths  # the narrowed tiles' widths are mostly between the powers of two
    fit = one_wave.replaces(decision.config, m, n, sms, swappable(problem)) if narrows and k > SHORT_K else None
    if fit is not None:
        facts = f"{decision.facts}; {one_wave.describe(fit, decision.config, m, n, sms)}"
        rule = f"{decision.rule}, narrowed to fill one wave"
        decision = Decision(single_wave_staging(fit, problem, mnk, sms), rule, facts)
    long = long_k.replaces(decision.config, mnk, sms, swappable(problem)) if swap and split else None
    if long is not None:
        facts = long_k.describe(long, decision.config, mnk, sms)
        rule = f"split-K for a {'short M' if long.swap_ab else 'narrow N'} over a long K"
        # measured without a bias, as split_halves' splits were
        halves = long_k_halves.replaces(long, mnk, sms) if narrows and not problem.bias else None
        if halves is not None:
            facts = f"{facts}; {long_k_halves.describe(halves, long, mnk)}"
            return Decision(halves, f"{rule}, on 192-row halves", facts)
        return Decision(single_wave_staging(long, problem, mnk, sms), rule, facts)
    # the last two steps were measured without a bias, as narrow_n's short-side tiles were
    narrow = one_wave.narrowed_pingpong(decision.config, m, n, sms) if narrows and not problem.bias else None
    if narrow is not None:
        facts = f"{decision.facts}; {one_wave.describe(narrow, decision.config, m, n, sms)}"
        rule = f"{decision.rule}, narrowed to fill one wave"
        decision = Decision(single_wave_staging(narrow, problem, mnk, sms), rule, facts)
    cut = tight_width.tightened(decision.config, m, n, problem) if narrows and not problem.bias else None
    if cut is not None:
        facts = f"{decision.facts}; {tight_width.describe(cut, decision.config, m, n)}"
        decision = Decision(cut, f"{decision.rule}, width cut to its column tiles", facts)
    wide = half_rows.halved(decision.config, m, n, sms) if narrows and not problem.bias else None
    if wide is not None:
        facts = f"{decision.facts}; {half_rows.describe(wide, decision.config, m, n, sms)}"
        return Decision(wide, f"{decision.rule}, in 64-row tiles twice as wide", facts)
    halves = split_halves.splits(decision.config, m, n, k, sms) if narrows and split and not problem.bias else None
    if halves is not None:
        facts = f"{decision.facts}; {split_halves.describe(halves, decision.config, m, n, sms)}"
        return Decision(halves, f"{decision.rule}, split over K on 192-row halves", facts)
    thin = thin_side_one_wave.replaces(decision.config, mnk, sms, swappable(problem)) if narrows else None
    if thin is None:
        return decision
    facts = f"{decision.facts}; {thin_side_one_wave.describe(thin, decision.config, m, n, sms)}"
    return Decision(thin, f"{decision.rule}, the thin side in 64-row tiles", facts)


def table_decision(
    problem: Problem,
    mnk: tuple[int, int, int],
    sms: int = H100_SMS,
    split: bool = True,
    widths: bool = True,
    swap: bool = True,
    short_sides: bool = True,
) -> Decision:
    """The table's decision for a shape on a GPU with ``sms`` SMs, first match wins (the table above);
    ``split`` False leaves out the split-K row; ``widths`` False, the tile widths between the powers of
    two, swapped and short-side tiles included (the rest of the table as it is; an A/B in one run:
    ``benchmarks/gemm.py --sweep --without-widths``); ``swap`` False, the tiles that run on the plain
    kernel only: those computing Cᵀ = B·Aᵀ (:data:`SWAPPED_MERIT`, :data:`SWAPPED_ALONG_N_MERIT`,
    :func:`small_m_swapped`), the 192-row ones whose warpgroups split N (:data:`TALL_MERIT`) and the
    short-side tiles of :func:`narrow_n`, which no comm role, gate or mode has run with; ``short_sides``
    False, the rules of :func:`small_m_swapped` and :func:`narrow_n`."""
    m, n, k = mnk
    clusters = max(1, sms // COOPERATIVE_128x256.cluster_size)
    tiles = COOPERATIVE_128x256.cluster_tiles(m, n)
    waves = f"{tiles} cluster-tiles of 128×256 on {clusters} clusters ({tiles / clusters:.2f} waves)"

    def staged(config: TunedConfig) -> TunedConfig:
        return single_wave_staging(config, problem, mnk, sms)

    parts = split_k(mnk, sms) if split else None
    if parts is not None:
        held = sms // parts.cluster_size
        facts = (
            f"K = {k} ≥ {SPLIT_K_K_OVER_SIDE} × max(M, N) = {SPLIT_K_K_OVER_SIDE * max(m, n)} on a small output: "
            f"{parts.cluster_tiles(m, n)} cluster-tiles × {parts.split_k} parts fit {held} clusters"
        )
        return Decision(staged(parts), "split-K", facts)
    swapped_too = swap and swappable(problem)
    if short_sides and widths and swap:
        in_sectors = rows_in_sectors(k, problem.element_bytes)
        turned = small_m_swapped(mnk, sms, in_sectors) if swapped_too else None
        narrow = narrow_n(mnk, sms, in_sectors) if not problem.bias else None  # measured without a bias
        for candidate in (c for c in (turned, narrow) if c is not None):
            decision = _short_side(problem, mnk, sms, split, candidate)
            if decision is not None:
                return decision
    small = small_m(mnk, sms, problem.bias, widths) if m <= SMALL_M else None
    if small is not None and small.stream_k_aligned:
        busy = small_m_split(mnk, sms)[1]
        facts = (
            f"M = {m} ≤ {SMALL_M}, K = {k}: split at one k, 128×128 tiles keep {busy:.0%} of the clusters' turns busy"
        )
        return Decision(small, "small M", facts)
    if small is not None and small.split_k > 1:
        held = small.one_wave_clusters(m, n)
        facts = (
            f"M = {m} ≤ {SMALL_M}, K = {k}: {-(-m // small.tile_m)} row tiles (odd), split-K in {small.split_k} of "
            f"{small.tile_m}×{small.tile_n} tiles holds {held} of {clusters} clusters in one wave, all parts at k 0 "
            f"or K / {small.split_k}"
        )
        return Decision(staged(small), "small M", facts)
    if small is not None:
        cost = small_m_tile_cost(mnk, (small.tile_m, small.tile_n), sms)
        wide = small_m_cost(mnk, (128, 256), sms, row_pairs=True)
        busy = wave_fill(small, m, n, sms)
        facts = (
            f"M = {m} ≤ {SMALL_M}: this tile streams the fewest rows per useful output ({cost:.0f}; 128×256: "
            f"{wide:.0f}) and keeps {busy:.0%} of the clusters' turns busy"
        )
        if (small.tile_m, small.tile_n) == TALL_SMALL_M_TILE:
            facts += f"; {-(-m // small.tile_m)} row tiles of {small.tile_m}, each B tile multicast to a pair"
        return Decision(staged(small), "small M", facts)
    if n <= SMALL_M:
        tall = tall_small_n(mnk, sms) if swapped_too and widths and k > SHORT_K else None
        if tall is not None:
            config, cost, narrow_cost = tall
            facts = (
                f"N = {n} ≤ {SMALL_M}: {config.tile_m}×{config.tile_n} tiles stream {cost:.0f} rows of A per useful "
                f"output over their waves, over its merit {TALL_MERIT[0][1]} (the small-N tile: {narrow_cost:.0f})"
            )
            return Decision(staged(config), "small N", facts)
        narrow = small_n(mnk, sms)
        # Where M is long enough to fill the SMs with cooperative 128×256 tiles, those stream less.
        turned = small_m_cost((n, m, k), (narrow.tile_n, narrow.tile_m), sms)
        if turned < small_m_cost((n, m, k), (256, 128), sms):
            facts = f"N = {n} ≤ {SMALL_M}: this tile streams fewer rows of A ({turned:.0f}) than 256×128"
            return Decision(staged(narrow), "small N", facts)
    in_sectors = rows_in_sectors(k, problem.element_bytes)
    filled = fill(mnk, sms, problem.bias, widths, k_rows_in_sectors=in_sectors)
    if filled is not None:
        facts = f"{waves}: fewer tiles than SMs, and this ping-pong tile streams fewer rows per SM"
        return Decision(staged(filled), "fill the SMs", facts)
    if stream_k_pays(mnk, sms):
        whole, partial = divmod(tiles, clusters)
        facts = f"{waves}, K = {k} > {SHORT_K}: the last wave ({partial} of {clusters} clusters) is split by k"
        streamed = paired_along_n(COOPERATIVE_DEFERRED.with_(stream_k=True, stream_k_remainder=True), m, n)
        return Decision(streamed, "stream-K", facts + describe_pair(streamed, m, n))
    balanced = wave_balance(mnk, sms, problem.bias, widths, swapped_too, k_rows_in_sectors=in_sectors)
    whole = wave_fill(COOPERATIVE_DEFERRED, m, n, sms)
    if balanced.swap_ab:
        turned = balanced.cluster_tiles(n, m)
        facts = (
            f"{waves}: whole tiles keep {whole:.0%} of the clusters' turns busy; computed as Cᵀ = B·Aᵀ, "
            f"{balanced.tile_m}×{balanced.tile_n} tiles along (N, M) make {turned} cluster-tiles and keep "
            f"{wave_fill(balanced, n, m, sms):.0%} busy"
        )
    elif balanced.stream_k_aligned or balanced.split_k > 1:
        split_kind = "aligned split" if balanced.stream_k_aligned else f"split-K in {balanced.split_k}"
        facts = f"{waves}: whole tiles keep {whole:.0%} of the clusters' turns busy; the last wave's {split_kind} more"
    elif balanced.schedule is Schedule.PINGPONG and balanced.tile_n in PINGPONG_BETWEEN_WIDTHS:
        share, wide = (busy_area(c, m, n, sms) for c in (balanced, COOPERATIVE_DEFERRED))
        facts = (
            f"{waves}: this tile's CTAs spend {share:.0%} of their turns on output (128×256: {wide:.0%}; "
            f"idle CTAs and the tiles' columns and rows past M × N count against it), at K = {k}"
        )
    else:
        share = wave_fill(balanced, m, n, sms)
        facts = f"{waves}: this tile keeps {share:.0%} of the clusters' turns busy (128×256: {whole:.0%}), at K = {k}"
    if not in_sectors:
        facts += (
            f"; rows of K ({k * problem.element_bytes} bytes) end off a {SECTOR_BYTES}-byte sector: ping-pong "
            f"weighed {PINGPONG_UNSECTORED_K_COST} lower"
        )
    yields = stream_k_yields(mnk, sms)
    if yields:
        facts += f"; stream-K yields: {yields}"
    return Decision(staged(balanced), "wave balance", facts + describe_pair(balanced, m, n))


def _short_side(
    problem: Problem, mnk: tuple[int, int, int], sms: int, split: bool, candidate: tuple[TunedConfig, float]
) -> Decision | None:
    """The decision for a short-side tile (:func:`small_m_swapped`, :func:`narrow_n`) with its ``tile_time``,
    where the table's pick without it takes ``short_side.MARGIN`` times longer by ``tile_time`` and, for a
    swapped tile (its kernel computes Cᵀ), also pads M (``short_side.pads_short_side``) or loads N's operand
    in three or more ping-pong row tiles where the swapped one is far faster (``short_side.restreams_long_side``);
    None otherwise.
    Along N the pick without it need not pad N where the short-side tile keeps its schedule, replaces a
    cooperative one or a ping-pong tile of 64 or 128 columns: those cover N exactly and still stream A
    once per column tile. A cooperative tile in place of a wider ping-pong one (128×144 … 128×176, which
    the wave balance picked for its fill) lost more often than it won, since ``tile_time`` does not see
    ping-pong's epilogue under the other warpgroup's mainloop. NVIDIA H200, 2026-11-28, ours / torch
    against the pick without the rule: 8320×320×4144 1.052 against 0.590 (ping-pong for ping-pong),
    9504×448×10264 0.927 against 0.507 and 16936×312×2824 1.301 against 0.934 (cooperative for ping-pong
    128×64), 20328×376×9264 0.801 against 0.872 (for ping-pong 128×128); 19128×424×10448 cooperative
    128×216 0.792 against ping-pong 128×144's 0.952, hence the bound.

    Past ``short_side.PADDING_ALONE_MAX`` rows the other pick's padding is at most a fifth of them, and the
    short-side tile must keep its schedule or replace a cooperative one on either side (or be a swapped
    192-row tile: ``short_side.replaces_pingpong_past_padding``), a swapped one also leaves a pick that
    already computes Cᵀ, and the margin is ``short_side.MARGIN_PAST_PADDING_ALONE``
    (``short_side.PADDING_ALONE_MAX`` says what ran)."""
    config, time = candidate
    m, n, _ = mnk
    swapped = config.swap_ab
    plain = table_decision(problem, mnk, sms, split, swap=not swapped, short_sides=False).config
    plain_time = tile_time(plain, m, n, sms)
    side, other, extent = ("M", "N", m) if swapped else ("N", "M", n)
    keeps_schedule = plain.schedule is Schedule.COOPERATIVE or plain.schedule is config.schedule
    past = extent > short_side.PADDING_ALONE_MAX
    replaces = keeps_schedule or short_side.replaces_pingpong_past_padding(config)
    if past and (not replaces or (swapped and _keeps_its_swap(problem, mnk, sms, split, config))):
        return None
    covered = short_side.pads_short_side(plain, extent, along_rows=swapped)
    restreaming = None
    if swapped and covered is None:
        restreaming = short_side.restreams_long_side(plain, extent, time, plain_time)
    if restreaming is not None:
        covered = short_side.covered(plain, extent, along_rows=True)
    if covered is None and not swapped and (keeps_schedule or plain.tile_n <= 128):
        covered = short_side.covered(plain, extent, along_rows=False)
    why = short_side.outruns(time, plain_time, extent, covered, past) if covered is not None else ""
    if not why:
        return None
    columns = -(-extent // config.tile_n)
    bound = short_side.SHORT_SIDE_MAX if past else short_side.PADDING_ALONE_MAX
    facts = (
        f"{side} = {extent} ≤ {bound} in {covered} {'rows' if swapped else 'columns'} of "
        f"{plain.tile_m}×{plain.tile_n} tiles: {'computed as Cᵀ = B·Aᵀ, ' if swapped else ''}{side} in {columns} "
        f"column tile{'s' if columns > 1 else ''} of {config.tile_n} under {config.tile_m} rows of {other}, per SM "
        f"{time:.0f} against {plain_time:.0f} (tile_time)"
    )
    if restreaming is not None:
        facts += (
            f"; the other pick pads M by under {short_side.MIN_PADDING:.0%} but loads all of N's operand in each "
            f"of its {restreaming} row tiles: over {short_side.RESTREAMING_MARGIN - 1:.0%} faster suffices"
        )
    if why == "padded":
        facts += f"; the other pick fills {extent / covered:.0%} of its rows: no slower suffices"
    elif past:
        facts += (
            f"; past {short_side.PADDING_ALONE_MAX} rows: over {short_side.MARGIN_PAST_PADDING_ALONE - 1:.0%} "
            f"faster, in place of a {plain.schedule.value} tile"
        )
    return Decision(config, f"small {side}", facts)


def _keeps_its_swap(problem: Problem, mnk: tuple[int, int, int], sms: int, split: bool, candidate: TunedConfig) -> bool:
    """Whether the table's pick without the short-side rules computes Cᵀ and stays ahead of the swapped
    short-side ``candidate``: any swapped tile but those of :data:`SWAPPED_ALONG_N_MERIT`, and those where
    their :func:`swapped_score` times their merit is at least the candidate's. NVIDIA H200, 2026-11-29,
    ours / torch, the short-side tile against a 256-row one in the same rounds: where the rule keeps the
    256-row tile (its score times its merit against the short-side tile's), 773×5120×13824 256×144 0.949
    against 192×208's 0.868 (1.00 × 0.94 against 0.87 for the 256×136 it now takes), 817×4288×3248 256×128
    0.944 against 0.764 (0.96 × 0.94 against 0.74), 832×5120×13824 256×144 1.627 against 1.491 (0.94 × 0.94
    against 0.87), and 771×5128×8200 256×144 0.732 against 0.917 (0.99 × 0.94 against 0.91) the one it
    misses; where it takes the short-side tile, 823×8192×28672 128×208 (1×2) 1.007 against 256×112's
    0.928 (0.97 × 0.94 against 1.04), 805×4096×14336 0.976 against 0.912, 808×18432×7168 192×208 0.979
    against 256×120's 0.957, and five more within 2 %."""
    m, n, _ = mnk
    config = table_decision(problem, mnk, sms, split, short_sides=False).config
    if not config.swap_ab:
        return False
    merits = {tile.config: merit for tile, merit in SWAPPED_ALONG_N_MERIT}
    merit = merits.get(config.config.with_(cluster_m=2, cluster_n=1))
    return merit is None or swapped_score(config, m, n, sms) * merit >= swapped_score(candidate, m, n, sms)


def stream_k_pays(mnk: tuple[int, int, int], sms: int = H100_SMS) -> bool:
    """Whether the cooperative 128×256 tile with stream-K (remainder mode) measured faster than the other
    rows' picks: K above ``SHORT_K`` (not measured below), at least :data:`STREAM_K_MIN_WAVES` whole waves
    and a partial one, and either the partial wave split alone and at most :data:`STREAM_K_MAX_FILL` full, or
    a whole wave and the partial one split together (the mode :class:`~gemm_modes.splits.StreamKSplit` falls
    back to where the partial wave is too thin to split alone); unless it yields (:func:`stream_k_yields`)."""
    return _stream_k_splits_well(mnk, sms) and not stream_k_yields(mnk, sms)


def stream_k_yields(mnk: tuple[int, int, int], sms: int = H100_SMS) -> str:
    """Why stream-K, where its waves and partial wave would take it, yields to the wave balance ("" where it does
    not or would not be taken): fewer than :data:`STREAM_K_MIN_WAVES_LONG_K` whole waves past
    :data:`STREAM_K_LONG_K`, or, where N is the longer side, tiles that M × N fills to less than
    :data:`STREAM_K_MIN_USEFUL`."""
    if not _stream_k_splits_well(mnk, sms):
        return ""
    m, n, k = mnk
    config = COOPERATIVE_DEFERRED
    waves = config.cluster_tiles(m, n) // max(1, sms // config.cluster_size)
    if k > STREAM_K_LONG_K and waves < STREAM_K_MIN_WAVES_LONG_K:
        return f"K = {k} > {STREAM_K_LONG_K} over {waves} whole waves (< {STREAM_K_MIN_WAVES_LONG_K})"
    filled = useful_rows(m, config.tile_m) * useful_cols(n, config.tile_n)
    if n > m and filled < STREAM_K_MIN_USEFUL:
        return f"M × N fills {filled:.0%} of its {config.tile_m}×{config.tile_n} tiles (< {STREAM_K_MIN_USEFUL:.0%})"
    return ""


def _stream_k_splits_well(mnk: tuple[int, int, int], sms: int) -> bool:
    m, n, k = mnk
    config = COOPERATIVE_DEFERRED.with_(stream_k=True, stream_k_remainder=True)
    clusters = max(1, sms // config.cluster_size)
    tiles = config.cluster_tiles(m, n)
    waves, partial = divmod(tiles, clusters)
    if k <= SHORT_K or waves < STREAM_K_MIN_WAVES or not partial:
        return False
    k_tiles = -(-k // config.tile_k)
    split = StreamKSplit.of(tiles, clusters, k_tiles, remainder=True, partials=config.stream_k_partials)
    if split.sk_tiles == partial:  # the partial wave alone
        return partial <= STREAM_K_MAX_FILL * clusters
    return True
