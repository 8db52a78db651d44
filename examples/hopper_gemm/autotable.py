"""The configuration ``schedule="auto"`` picks, per shape class, from what ``benchmarks/gemm.py`` measured.

Measured on the H100 (2026-11-23 … 26, bf16 and fp16, randn inputs; benchmarks/RESULTS.md has the
latest tables, ``git show 7119115:benchmarks/RESULTS.md`` the seventh and eighth sessions' runs).
Ratios are throughput over torch.matmul in the same run:

=========================  ====================  ===========================================================
class                      configuration         why (best measured / runner-up)
=========================  ====================  ===========================================================
M ≤ 512 (few row tiles)    ping-pong, the tile   256×8192×8192: 128×128 c2×1, 0.94–0.99 (2026-11-25, launches
                           of 128×192, 128×128,  prepared; cooperative 256×128: 0.62 — too few tiles for 132
                           128×64, 64×128 or     SMs). Where 128×128 leaves SMs idle, the fill rule (below):
                           64×64 of least        128×8192² 0.74 → 0.96, 64×8192² 0.75 → 0.95, 256×4096×8192
                           streamed rows per SM  0.74 → 0.96, 128×4096² 0.57 → 1.05, 128×4096×14336 0.63 →
                           (128×192 not with a   1.00, 32×8192² 0.60 → 0.88 (seventh session); just past a
                           bias); cluster 2×1    wave, 128×192: 384×6144×8192 0.57 → 0.81, 300×6144² 0.73 →
                           for an even number    0.90 (eighth session; benchmarks/gemm_small_m.py).
                           of row tiles; the     One tile per CTA: the staging in the ring (and from
                           staging in the ring   K = 4096 one more stage): 256×8192² 0.953 → 0.972, short
                           where each CTA owns   K −0.5 … −2 % in time (ninth session)
                           one tile
N ≤ 512, M above it        the fill rule turned  8192×256×8192 0.66 → 1.02, 8192×128×8192 0.61 → 1.00,
(small N)                  (small_n): ping-pong  4096×128×8192 0.37 → 0.98, 8192×64×8192 0.61 → 0.99,
                           64/128 × 64/128,      4096×256×4096 0.47 → 1.03, 8192×256×1024 1.30 (2026-11-26,
                           cluster 1×2 for an    benchmarks/gemm_small_m.py); cooperative 128×256 kept
                           even number of        where it streams no more rows per SM (8192×512×8192
                           column tiles          0.97, 16384×256×8192 1.03)
K ≤ 2048 (short K)         ping-pong 128×192     8192²×1024: 1.196 (cooperative 128×256: 1.06): the
                           cluster 2×1           epilogue is a large share, ping-pong hides it (with a
                                                 bias: 128×128, 1.118, as 128×192 then spills)
≥ 4 whole waves and a      cooperative 128×256   H100 (8th session, run 4): 6144³ 1.030 / 1.055 (fp16 /
partial one                cluster 2×1,          bf16; staged epilogue 1.012 / 1.034), 8192³ 1.079 / 1.099
                           stream-K remainder,   (1.064 / 1.082), + bias 1.021 vs F.linear (1.003); H200
                           deferred epilogue     (run 3) alike, +1.0 … +2.7 %. The remainder mode itself
                           in 8 chunks           (2026-11-25, five H100s): 6144³ 1.013–1.051 against
                                                 0.984–1.019 without (the partial wave's tiles split over
                                                 every cluster); 128×256 c2×1 beat 256×128 c1×2 (remainder)
                                                 in 9 of 12 pairs
otherwise                  cooperative 128×256   H100 (8th session, run 4): 4096³ 1.012 / 1.014 (the pick
                           cluster 2×1,          before, 256×128 c1×2 epi_batch 4: 0.997 / 0.985; 256×128
                           deferred epilogue     deferred: 1.010 / 1.011), 1024×8192² 0.997 (0.988); H200
                           in 8 chunks           (run 3): 1.110 / 1.101 (1.079 / 1.071), 1.013 (0.990).
                                                 8 chunks beat 4, 2 and 1 on both cards
=========================  ====================  ===========================================================

Stream-K's wave mode (a whole wave split with the partial one) *loses* where the waves are few: 4096³
0.88–0.97 against 0.97–0.99 (2026-11-25), 6144³ 0.93–0.94 against 0.98–1.00: each cluster's share
computes ~1.9–2.5 tiles at k offsets no other cluster shares at that moment. The remainder mode splits
only the partial wave; every cluster pays the fix-up (128 KiB of fp32 partials written, and read back
by the storing unit) for the k-tiles it saves, which is worth it from 4 whole waves: with 3 (4096³,
7 k-tiles of 64 saved) it was a wash, with 1 (1024×8192², 7 of 128) it lost 3–5 %.

**The fill rule for small M.** With M ≤ 512 the B operand (N × K) is most of the traffic and a long K
makes each tile a long stream of it; 128×128 tiles give ⌈M/128⌉·⌈N/128⌉ of them, which at 128×8192²
is 64 for 132 SMs (and cluster 2×1 then pairs each tile with an empty one: 0.74). Smaller tiles put
more SMs on the stream, but each SM then streams more rows per useful output and a tile count just
past a wave costs a whole wave. :func:`small_m_cost` weighs both: per SM, ⌈tiles / SMs⌉ waves of
(tile_m + tile_n) streamed rows of K, divided by the share of the row tiles' rows that are inside M;
the rule takes the cheapest of 128×192, 128×128, 128×64, 64×128, 64×64 (the larger on a tie; no 128-row tile
for M ≤ 64), with a 2×1 cluster (B multicast to the two row tiles) when M spans an even number of row
tiles and 1×2 (A multicast) when not: an odd count would leave the last cluster row idle
(384×6144×8192, three rows of 128: c2×1 0.45–0.53, c1×2 0.56–0.61).

A first version (the largest tile filling 90 % of the SMs) missed 384×4096² and 130×4096² (H200);
the cost above picks the best there and the same tiles elsewhere. On an H100 (19 shapes) the final rule
was the best on 12 and within 1 % on 5 more, never below the old choice; 384×6144×8192 (1.09 waves of
128×128: 0.56–0.61) was fixed in the eighth session by a sixth candidate, 128×192: one wave, 0.81 (left
out with a bias, where that tile spills).

Ping-pong 128×192 against cooperative 256×128 on long K: 0.91 at 4096³, 1.015 at 8192³ — one warpgroup
per 128×192 tile feeds the tensor cores less steadily than two on 256×128, which the hidden epilogue
only repays when K is short.
"""

from __future__ import annotations

from .config import GemmConfig, Problem, Schedule

COOPERATIVE_128x256 = GemmConfig(tile_m=128, tile_n=256, cluster_m=2, cluster_n=1, schedule=Schedule.COOPERATIVE)
#: Auto's cooperative tile for long K: its epilogue deferred under the next tile, one subtile per k-tile.
COOPERATIVE_DEFERRED = COOPERATIVE_128x256.with_(deferred_chunks=8)
COOPERATIVE_256x128 = GemmConfig(
    tile_m=256, tile_n=128, cluster_m=1, cluster_n=2, schedule=Schedule.COOPERATIVE, epi_batch=4
)
PINGPONG_128x128 = GemmConfig(tile_m=128, tile_n=128, cluster_m=2, cluster_n=1, schedule=Schedule.PINGPONG)
PINGPONG_128x192 = GemmConfig(tile_m=128, tile_n=192, cluster_m=2, cluster_n=1, schedule=Schedule.PINGPONG)

SMALL_M = 512
#: Small-M tiles, largest first (the fill rule above).
SMALL_M_TILES = ((128, 192), (128, 128), (128, 64), (64, 128), (64, 64))
#: With a bias term a 128×192 ping-pong tile spills (48 bytes): left out then.
SMALL_M_BIAS_SPILLS = ((128, 192),)
SHORT_K = 2048
#: Whole waves from which stream-K's remainder mode measured faster (6144³: 8 won; 4096³: 3 a wash).
STREAM_K_MIN_WAVES = 4
#: The table was measured on an H100 SXM: 132 SMs.
H100_SMS = 132


def small_m_cost(mnk: tuple[int, int, int], tile: tuple[int, int], sms: int = H100_SMS) -> float:
    """The fill rule's estimate of a small-M tile's time (arbitrary units): each SM streams (tile_m +
    tile_n) rows of K per tile, for ⌈tiles / SMs⌉ waves, and only M of the row tiles' rows are useful."""
    m, n, _ = mnk
    tile_m, tile_n = tile
    rows = -(-m // tile_m)
    waves = -(-(rows * -(-n // tile_n)) // sms)
    return waves * (tile_m + tile_n) * rows * tile_m / m


def small_m(mnk: tuple[int, int, int], sms: int = H100_SMS, bias: bool = False) -> GemmConfig:
    """Ping-pong for M ≤ ``SMALL_M``: the tile of :data:`SMALL_M_TILES` of least :func:`small_m_cost` (the
    larger on a tie), cluster 2×1 when M spans an even number of row tiles, else 1×2 (the fill rule above)."""
    m = mnk[0]
    tiles = [t for t in SMALL_M_TILES if not (t[0] == 128 and m <= 64)]  # no wgmma half on padding
    tiles = [t for t in tiles if not (bias and t in SMALL_M_BIAS_SPILLS)]
    tile_m, tile_n = min(tiles, key=lambda t: small_m_cost(mnk, t, sms))  # min keeps the first of equals
    rows = -(-m // tile_m)
    cluster_m = 2 if rows % 2 == 0 else 1  # an odd row count would pad a cluster row with idle CTAs
    return PINGPONG_128x128.with_(tile_m=tile_m, tile_n=tile_n, cluster_m=cluster_m, cluster_n=3 - cluster_m)


#: Small-N tiles: :data:`SMALL_M_TILES` turned (N's side first) where the turned tile is one a ping-pong
#: warpgroup takes (64 or 128 rows).
SMALL_N_TILES = tuple((tn, tm) for tm, tn in SMALL_M_TILES if tn in (64, 128))


def small_n(mnk: tuple[int, int, int], sms: int = H100_SMS) -> GemmConfig:
    """The fill rule turned for N ≤ ``SMALL_M`` (and M above it): A is then the operand every tile
    streams, so the tile of :data:`SMALL_N_TILES` of least :func:`small_m_cost` on the turned problem,
    cluster 1×2 (A multicast) when N spans an even number of column tiles, else 2×1."""
    m, n, k = mnk
    tiles = [t for t in SMALL_N_TILES if not (t[1] == 128 and n <= 64)]
    tile_m, tile_n = min(tiles, key=lambda t: small_m_cost((n, m, k), (t[1], t[0]), sms))
    cluster_n = 2 if -(-n // tile_n) % 2 == 0 else 1
    return PINGPONG_128x128.with_(tile_m=tile_m, tile_n=tile_n, cluster_m=3 - cluster_n, cluster_n=cluster_n)


def fill(mnk: tuple[int, int, int], sms: int = H100_SMS, bias: bool = False) -> GemmConfig | None:
    """Both sides above ``SMALL_M`` but too few cooperative 128×256 tiles for the SMs (under one each): the
    ping-pong tile of :data:`SMALL_M_TILES` of least :func:`small_m_cost` if it streams fewer rows per SM
    than the cooperative tile, else None. The cluster multicasts the larger operand (2×1: B, when N ≥ M)
    unless that pairs an odd number of tiles and the other way does not."""
    m, n, _ = mnk
    if -(-m // 128) * -(-n // 256) >= sms:
        return None
    tiles = [t for t in SMALL_M_TILES if not (bias and t in SMALL_M_BIAS_SPILLS)]
    tile_m, tile_n = min(tiles, key=lambda t: small_m_cost(mnk, t, sms))
    if small_m_cost(mnk, (tile_m, tile_n), sms) >= small_m_cost(mnk, (128, 256), sms):
        return None
    rows, cols = -(-m // tile_m), -(-n // tile_n)
    cluster_m = 2 if n >= m else 1
    if (rows if cluster_m == 2 else cols) % 2 and (cols if cluster_m == 2 else rows) % 2 == 0:
        cluster_m = 3 - cluster_m
    return PINGPONG_128x128.with_(tile_m=tile_m, tile_n=tile_n, cluster_m=cluster_m, cluster_n=3 - cluster_m)


#: The K from which the A/B stage that the ring staging frees pays off. Below it the extra stage ran
#: 0.5–2 % slower than the plain stage count (128×128 at K = 1024 and 2048); from it, 0.7 % faster
#: (K = 4096) and 2 % faster (K = 8192). H100, 2026-11-26.
RING_EXTRA_STAGE_MIN_K = 4096


def single_wave_staging(config: GemmConfig, problem: Problem, mnk: tuple[int, int, int], sms: int) -> GemmConfig:
    """``config`` with ``staging_in_ring`` on where every CTA owns at most one tile (cluster-tiles ≤ the
    ``sms // cluster size`` clusters that fit at once), off otherwise; the stage that frees is taken only
    for K ≥ :data:`RING_EXTRA_STAGE_MIN_K` (below it the plain stage count is kept).

    Measured with PDL on an H100 (2026-11-26), time against staging buffers of their own: ping-pong
    128×128 −0.5 … −2 % with the plain stage count at K ≤ 4096, and 7 stages instead of 6 at 256×8192²
    −1.7 … −2.3 %; 64×64 −0.4 … −1.5 % at 64×8192×{1024, 2048, 8192}."""
    plain = config.with_(staging_in_ring=False)
    m, n, k = mnk
    if config.stream_k or config.deferred_chunks or config.cluster_tiles(m, n) > sms // config.cluster_size:
        return plain
    ring = plain.with_(staging_in_ring=True)
    try:
        plain_stages, ring_stages = plain.stages(problem)[0], ring.stages(problem)[0]
    except ValueError:
        return plain
    if ring_stages > plain_stages and k < RING_EXTRA_STAGE_MIN_K:
        return ring.with_(ab_stages=plain_stages)
    return ring


def pick(problem: Problem, mnk: tuple[int, int, int], sms: int = H100_SMS) -> GemmConfig:
    """The measured best configuration for a shape (the table above) on a GPU with ``sms`` SMs."""
    m, n, k = mnk
    if m <= SMALL_M:
        return single_wave_staging(small_m(mnk, sms, problem.bias), problem, mnk, sms)
    if n <= SMALL_M:
        narrow = small_n(mnk, sms)
        # Where M is long enough to fill the SMs with cooperative 128×256 tiles, those stream less.
        if small_m_cost((n, m, k), (narrow.tile_n, narrow.tile_m), sms) < small_m_cost((n, m, k), (256, 128), sms):
            return single_wave_staging(narrow, problem, mnk, sms)
    filled = fill(mnk, sms, problem.bias)
    if filled is not None:
        return single_wave_staging(filled, problem, mnk, sms)
    if k <= SHORT_K:
        # With the bias term a 128×192 tile per warpgroup spills (48 bytes): take 128×128 then.
        return single_wave_staging(PINGPONG_128x128 if problem.bias else PINGPONG_128x192, problem, mnk, sms)
    cfg = COOPERATIVE_DEFERRED
    waves, partial = divmod(cfg.cluster_tiles(m, n), max(1, sms // cfg.cluster_size))
    if waves >= STREAM_K_MIN_WAVES and partial:
        return cfg.with_(stream_k=True, stream_k_remainder=True)
    return cfg
