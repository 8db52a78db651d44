"""A tile narrowed to fill its one wave, or one that holds a pick of more than one wave in one:
``gemm_modes.autotable``'s steps after the clusters of four.

Where every cluster-tile of the pick runs at once (one wave) but part of the clusters idle, the wave
takes as long as one tile. The same kind of tile cut narrower, so that its count fills the wave, does that
work in smaller pieces: 18736×176 in 98 tiles of 192×176 keeps 74 % of an H200's 66 clusters of two busy;
in 131 tiles of 192×144 (N = 176 along the 192 rows, computed as Cᵀ = B·Aᵀ) 99 %, each tile a fifth
smaller. cuBLAS fits its tiles so (torch 2.11 ran nvjet's 144×192 there, 131 tiles).

Two kinds of pick are narrowed, each to tiles of its own kind (``tile_time`` orders tiles of one kind;
across kinds it does not):

* :func:`replaces`: a cooperative 192-row pick with its warpgroups along the width that keeps under
  :data:`MIN_FILL` of the clusters busy takes the tile of the same kind (either way round, in a cluster
  of two either way) that keeps at least :data:`MIN_FILL` busy in one wave, of least ``tile_time``, where
  that is :data:`MARGIN` faster. Both must be compute-bound by ``tile_time``
  (``clusters_of_four.load_bound``): a tile that waits on its loads gains little from being narrower (the
  four load-bound 192×96 picks the first form narrowed to 192×80 ran 2.5–11 % slower: 167×10272×3520
  1.004 → 0.890).
* :func:`narrowed_pingpong`: a ping-pong pick (of 64, 128 or 192 rows, in any cluster) that keeps under
  :data:`MIN_FILL` of the clusters busy takes the ping-pong tile the same way round, its cluster along the
  same side, that keeps at least :data:`MIN_FILL` busy and fetches at most :data:`MAX_FETCH_GROWTH` times
  the pick's operand rows from L2, of least ``tile_time``, where that is :data:`MARGIN` faster. Ping-pong
  tiles are mostly load-bound, so the L2 bound stands in for the compute-bound one: 1032³–1232³ in
  128×80–128×96 where 128×112 and 128×128 left up to a third of the clusters idle, 2128×904 in 192×96.

Either narrowed tile must fill :data:`MIN_ROWS_FILL` of its rows.

* :func:`held_in_one_wave`: a ping-pong pick whose tiles take more than one wave takes the tile
  :func:`narrowed_pingpong` would choose among those that hold the output in one wave, by the same bounds,
  where that is :data:`MARGIN` faster than the pick (``tile_time`` counts the pick's waves). The small-M
  rule's 64-row tiles are what it finds: at M ≤ 64 a wider 64-row tile (63×18136 in 142 tiles of 64×128 on
  132 SMs → 126 of 64×144), at M 171–192 one 192-row tile in place of three 64-row ones (190×10352 in 123
  cluster-tiles of 64×128 → 65 of 192×80, B fetched once instead of three times). About 1 draw in 2,700
  (all from ``small-side``). The small-M rule now swaps most picks of three or more 64-row tile rows before
  this step sees them (``short_side.restreams_long_side``), which leaves it M ≤ 64.

NVIDIA H200, 2026-11-29, ours / torch against the table without the step, in the same rounds.
Cooperative: fitted on 63 shapes drawn at random where a first form of it (no bound on the rows' fill)
changed the pick: on the 47 where it now does, 0.940 → 1.014, 45 faster (9864×360×5072 192×192 →
192×160 0.830 → 0.957, 180×18432×7168 0.997 → 1.135, 18736×176×6592 0.865 → 1.005), 181×22288×7848
0.990 → 0.958 the worst. Drawn after the bounds were set: 26 shapes 0.948 → 1.013, 25 faster
(8712×336×3800 0.850 → 1.019), 178×21416×2336 1.026 → 0.920 the one loss. Tried more widely (every tile
of 128, 192 or 256 rows in place of any one-wave pick) it lost: 39 shapes 0.950 → 0.930, 16 of them over
2 % (142×9128×4976 ping-pong 192×72 0.879 → 0.686, 13864×224×8608 swapped 128×216 1.006 → 0.820).
Ping-pong: fitted on 42 shapes drawn at random: 0.855 → 0.922, 31 faster by more
than 2 % (2128×904×4664 128×192 → 192×96 0.599 → 0.871, 1048³ 128×112 → 128×80 0.738 → 0.875), four
slower (2752×880×3024 128×176 → 128×152 0.993 → 0.923). Drawn after the bounds were set: 20 shapes
0.815 → 0.883, 11 faster by more than 2 % (2080×928×7152 128×192 → 192×80 0.562 → 0.889, 60×12320×6584
64×128 1×4 → 64×96 1×2 0.984 → 1.063), four slower (562×2312×15040 128×128 → 128×96 0.693 → 0.641). The
bounds came from the first forms' losses: in place of a cluster of four, tiles fetching 1.7–2.4 times the
rows from L2 lost 14–38 % on all nine such shapes (241×3184×4208 128×64 1×4 → 64×104 1×2 0.951 → 0.638);
a cluster turned to the other side won on 8 of 17 shapes and lost on 7 by more than 2 % (2888×528×9056
128×136 1×2 → 128×112 2×1 0.834 → 0.753); with the side kept, 10 of them take another tile, 0.790 →
0.881 (2384×896×3112 128×192 → 192×96 0.760 → 1.023; 2896×552×2784 128×144 → 192×72 0.797 → 0.772).
Held in one wave (2026-11-30): the 19 shapes of 45,000 draws where it changes the pick and 63×18136×12880,
0.785 → 0.984, all 20 faster by more than 2 % (192×9784×3592 64×128 → 192×80 0.604 → 0.962, 63×19928×5848
0.811 → 1.007); the 25 of 72,000 further draws, 0.848 → 1.041, all 25 faster (192×10392×10752 0.599 →
0.990).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache
from itertools import chain

from hopper_gemm.config import MAX_ACC_REGISTERS, GemmConfig, Schedule

from .clusters_of_four import fetched_rows, load_bound, resident_clusters
from .modes import TunedConfig
from .tile_time import tile_time

#: The share of the clusters below which a one-wave pick is narrowed, and that the narrowed tile keeps busy.
MIN_FILL = 0.9
#: The share of its rows a narrowed tile must fill along the side its 192 rows cover: where that side is short
#: and padded past a fifth, the estimate's idle rows still cost loads it does not count. NVIDIA H200,
#: 2026-11-29, ours / torch against the pick, on the 63 fitted shapes: filling 0.75–0.80, 10 of 12 ran
#: slower (293×8984×3248 192×144 over 384 rows of M, 1.026 against the swapped 192×160's 1.247;
#: 8560×296×8824 0.968 against 1.040), the other two within 2.2 %; filling 0.82–1.00, 45 of 47 faster.
MIN_ROWS_FILL = 0.8
#: How much faster by ``tile_time`` the narrowed tile must be than the pick.
MARGIN = 1.03
#: The rows of the tiles the step narrows: cooperative, the two warpgroups side by side along the width.
ROWS = 192
#: The rows of the ping-pong tiles :func:`narrowed_pingpong` weighs (each a warpgroup's: 1–3 m64 wgmmas per
#: k-step), their widths in steps of 8 up to 192 or as far as a warpgroup's accumulators reach.
PINGPONG_ROWS = (64, 128, 192)
PINGPONG_WIDEST = 192
#: The most operand rows a narrowed ping-pong tile's clusters may fetch from L2 per k-step
#: (``clusters_of_four.fetched_rows``), as a multiple of the pick's: a narrower tile in more clusters
#: fetches the shared operand more often, and a load-bound tile pays for each fetch. NVIDIA H200,
#: 2026-11-29, ours / torch against the pick: at 0.86–1.20 times, 19 of 20 shapes ran faster (1048³
#: 128×112 → 128×80, 1.15 times, 0.738 → 0.875; 2896×552×2784 5 % slower); at 1.7–2.4 times, in place of
#: clusters of four, all nine ran 14–38 % slower; between them, 1.29–1.44 times, three faster, one slower.
MAX_FETCH_GROWTH = 1.2


@cache
def candidates(swap_ab: bool) -> tuple[TunedConfig, ...]:
    """The compute-bound cooperative 192-row tiles with the warpgroups along the width (16-column steps up
    to 256) in clusters of 1×2 and 2×1."""
    tiles = []
    for width in range(64, 257, 16):
        for cluster_m in (1, 2):
            config = TunedConfig(
                GemmConfig(ROWS, width, cluster_m, 3 - cluster_m, Schedule.COOPERATIVE, wg_split="n"), swap_ab=swap_ab
            )
            if not load_bound(config):
                tiles.append(config)
    return tuple(tiles)


def busy_share(config: TunedConfig, m: int, n: int, sms: int) -> float | None:
    """The share of the clusters ``config``'s cluster-tiles of an M×N output keep busy in one wave (of those
    the GPU holds at once: ``clusters_of_four.resident_clusters``), None where they take more than one."""
    clusters = resident_clusters(config.cluster_size, sms)
    tiles = config.cluster_tiles(*config.launch_shape(m, n))
    return tiles / clusters if tiles <= clusters else None


def rows_fill(config: TunedConfig, m: int, n: int) -> float:
    """The share of its tile rows ``config`` fills along the side of an M×N output its rows cover."""
    rows = config.launch_shape(m, n)[0]
    return rows / (-(-rows // config.tile_m) * config.tile_m)


def least(
    tiles: Iterable[TunedConfig], m: int, n: int, sms: int, accepts: Callable[[TunedConfig], bool]
) -> tuple[TunedConfig, float] | None:
    """The tile of ``tiles`` of least ``tile_time`` (on a tie the busier, then the first) among those that
    hold an M×N output in one wave keeping at least :data:`MIN_FILL` of the clusters busy, fill
    :data:`MIN_ROWS_FILL` of their rows and that ``accepts`` passes, and that time; None where none does."""
    best = None
    for tile in tiles:
        busy = busy_share(tile, m, n, sms)
        if busy is None or busy < MIN_FILL or rows_fill(tile, m, n) < MIN_ROWS_FILL or not accepts(tile):
            continue
        key = (tile_time(tile, *tile.launch_shape(m, n), sms), -busy)
        if best is None or key < best[0]:
            best = (key, tile)
    return None if best is None else (best[1], best[0][0])


def fitted(m: int, n: int, sms: int, swappable: bool) -> tuple[TunedConfig, float] | None:
    """The candidate :func:`least` takes on an M×N output, and its time; swapped ones only where
    ``swappable``."""
    tiles = chain.from_iterable(candidates(swap_ab) for swap_ab in ((False, True) if swappable else (False,)))
    return least(tiles, m, n, sms, lambda _: True)


def replaces(config: TunedConfig, m: int, n: int, sms: int, swappable: bool) -> TunedConfig | None:
    """:func:`fitted` where it takes ``config``'s place (the module's docstring), else None; ``swappable``:
    whether the problem can run as Cᵀ = B·Aᵀ (a pick that already does counts as such)."""
    # A tile whose warpgroups split the width runs on the plain kernel: no split or stream-K to keep.
    if config.tile_m != ROWS or config.wg_split != "n" or load_bound(config):
        return None
    busy = busy_share(config, m, n, sms)
    if busy is None or busy >= MIN_FILL:
        return None
    fit = fitted(m, n, sms, swappable or config.swap_ab)
    if fit is None or fit[1] * MARGIN >= tile_time(config, *config.launch_shape(m, n), sms):
        return None
    return fit[0]


@cache
def pingpong_candidates(swap_ab: bool) -> tuple[TunedConfig, ...]:
    """The ping-pong tiles of :data:`PINGPONG_ROWS` rows (8-column steps from 64, as wide as
    :data:`PINGPONG_WIDEST` and the warpgroup's accumulators allow) in clusters of 1×2 and 2×1."""
    tiles = []
    for rows in PINGPONG_ROWS:
        widest = min(PINGPONG_WIDEST, MAX_ACC_REGISTERS * 128 // rows)  # one warpgroup holds the whole tile
        for width in range(64, widest + 1, 8):
            for cluster_m in (1, 2):
                config = GemmConfig(rows, width, cluster_m, 3 - cluster_m, Schedule.PINGPONG)
                tiles.append(TunedConfig(config, swap_ab=swap_ab))
    return tuple(tiles)


def same_cluster_side(tile: TunedConfig, pick: TunedConfig) -> bool:
    """Whether ``tile``'s cluster pairs CTAs along the side ``pick``'s cluster spans (any, for a pick of one
    CTA): a pick in 1×2 or 1×4 is narrowed to 1×2 tiles, one in 2×1 or 4×1 to 2×1."""
    return pick.cluster_size == 1 or (tile.cluster_m > 1) == (pick.cluster_m > 1)


def narrowed_pingpong(config: TunedConfig, m: int, n: int, sms: int) -> TunedConfig | None:
    """For a ping-pong pick that keeps under :data:`MIN_FILL` of the clusters busy in its one
    wave: the ping-pong tile the same way round with its cluster along the same side
    (:func:`same_cluster_side`) that keeps at least :data:`MIN_FILL` busy, fills :data:`MIN_ROWS_FILL` of
    its rows and fetches at most :data:`MAX_FETCH_GROWTH` times the pick's rows from L2, of least
    ``tile_time`` (on a tie the busier), where :data:`MARGIN` faster than the pick; else None."""
    if config.schedule is not Schedule.PINGPONG:  # (split-K and stream-K split cooperative tiles only)
        return None
    busy = busy_share(config, m, n, sms)
    if busy is None or busy >= MIN_FILL:
        return None
    return _pingpong_in_one_wave(config, m, n, sms)


def held_in_one_wave(config: TunedConfig, m: int, n: int, sms: int) -> TunedConfig | None:
    """For a ping-pong pick whose tiles take more than one wave: the ping-pong tile that holds the output in
    one wave, chosen as :func:`narrowed_pingpong` chooses (the same way round, its cluster along the same
    side, at least :data:`MIN_FILL` of the clusters busy, :data:`MIN_ROWS_FILL` of its rows filled, at most
    :data:`MAX_FETCH_GROWTH` times the pick's rows from L2, least ``tile_time``), where :data:`MARGIN`
    faster than the pick's ``tile_time``, which counts the pick's waves; else None. 64×128 in 142 tiles
    over 132 SMs becomes 64×144 in 126; 190 rows in three 64-row tiles become one of 192 (192×80)."""
    if config.schedule is not Schedule.PINGPONG or busy_share(config, m, n, sms) is not None:
        return None
    return _pingpong_in_one_wave(config, m, n, sms)


def _pingpong_in_one_wave(config: TunedConfig, m: int, n: int, sms: int) -> TunedConfig | None:
    """The ping-pong tile both steps take in place of ``config`` (their docstrings), or None."""
    shape = config.launch_shape(m, n)
    most_rows = MAX_FETCH_GROWTH * fetched_rows(config, *shape)

    def accepts(tile: TunedConfig) -> bool:
        return same_cluster_side(tile, config) and fetched_rows(tile, *shape) <= most_rows

    best = least(pingpong_candidates(config.swap_ab), m, n, sms, accepts)
    if best is None or best[1] * MARGIN >= tile_time(config, *shape, sms):
        return None
    return best[0]


def describe_held(fit: TunedConfig, pick: TunedConfig, m: int, n: int, sms: int) -> str:
    """Why :func:`held_in_one_wave`'s ``fit`` took ``pick``'s place, in one clause (``--explain``)."""
    rows, cols = fit.launch_shape(m, n)
    pick_shape = pick.launch_shape(m, n)
    clusters = resident_clusters(pick.cluster_size, sms)
    return (
        f"more than one wave: {pick.cluster_tiles(*pick_shape)} cluster-tiles of {pick.tile_m}×{pick.tile_n} "
        f"{pick.cluster_m}×{pick.cluster_n} on {clusters} clusters; {fit.tile_m}×{fit.tile_n} "
        f"{fit.cluster_m}×{fit.cluster_n} holds it in one wave of {fit.cluster_tiles(rows, cols)}, "
        f"{busy_share(fit, m, n, sms):.0%} of the clusters: per SM {tile_time(fit, rows, cols, sms):.0f} against "
        f"{tile_time(pick, *pick_shape, sms):.0f} (tile_time); {fetched_rows(fit, rows, cols)} rows from L2 per "
        f"k-step against {fetched_rows(pick, *pick_shape)}"
    )


def describe(fit: TunedConfig, pick: TunedConfig, m: int, n: int, sms: int) -> str:
    """Why ``fit`` took ``pick``'s place, in one clause (``--explain``)."""
    rows, cols = fit.launch_shape(m, n)
    pick_shape = pick.launch_shape(m, n)
    before, after = (busy_share(c, m, n, sms) or 0.0 for c in (pick, fit))
    swapped = " (computed as Cᵀ = B·Aᵀ)" if fit.swap_ab else ""
    fetches = ""
    if fit.schedule is Schedule.PINGPONG:
        fetches = f"; {fetched_rows(fit, rows, cols)} rows from L2 per k-step against {fetched_rows(pick, *pick_shape)}"
    return (
        f"one wave: {pick.tile_m}×{pick.tile_n} {pick.cluster_m}×{pick.cluster_n} keeps {before:.0%} of the "
        f"clusters busy; narrowed to {fit.tile_m}×{fit.tile_n} {fit.cluster_m}×{fit.cluster_n}{swapped} in "
        f"{fit.cluster_tiles(rows, cols)} cluster-tiles, {after:.0%}: per SM {tile_time(fit, rows, cols, sms):.0f} "
        f"against {tile_time(pick, *pick_shape, sms):.0f} (tile_time){fetches}"
    )
