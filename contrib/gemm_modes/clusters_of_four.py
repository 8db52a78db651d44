"""Clusters of four along the long side of a small output: ``gemm_modes.autotable``'s last rule.

Where an output takes at most one wave of tiles and one side holds many more tiles than the other, every
tile along the long side loads the same few tiles of the short side's operand: in clusters of two, each
of those is fetched from L2 by half the CTAs at once. A cluster of four along the long side multicasts it
to four, halving those fetches again. Its tiles are load-bound (``tile_time``): their wgmmas wait on
loads, so fewer fetches are time saved; a compute-bound tile gains nothing from them.

The rule keeps the table's tile and widens its cluster of two to four along the side of more tiles, where
that side has at least :data:`MIN_LONG_SIDE_TILES` tiles, the cluster-tiles still fit the clusters of four
the GPU holds at once (:func:`resident_clusters`: in a second wave a cluster of four lost) and the
clusters fetch no more operand rows from L2 than the pairs did (:func:`fetched_rows`).

NVIDIA H200, 2026-11-29, ours / torch against the table without the rule, in the same rounds, on the 41
shapes it then touched (drawn at random and the rules' own examples): 37 ran faster, most by 10–44 %
(3240×256×2472 0.716 → 1.025, 68×3264×13304 0.459 → 0.661, 165×8632×15360 0.587 → 0.776, 128×7168×18432
0.980 → 1.147, 640×1536×2048 0.829 → 1.026); tiles near the balance of loads and wgmmas gained 0–2 %
(cooperative 128×208 and ping-pong 128×192). The conditions besides one wave come from the losses:
128×9000×8192 (swapped cooperative 192×64, its pair along the short side sharing the 192-row tile:
0.879 → 0.812) and 2070×648×14832 (128×112, 17 row tiles padded to 20: 0.765 → 0.739) fetch more rows
in fours; 200×1024×16384 (64×64, 16 column tiles: 0.630 → 0.536) has too few tiles along its long side.

Where the widened tile idles at least :data:`MIN_SHORT_SIDE_PADDING` of its short side (3824×96 in two
column tiles of 64: a quarter of them), a short-side tile (``short_side.short_side_tiles``: the short side
in 1–4 column tiles of 8-row steps) in clusters of four may take its place, the one of least
:func:`four_time`, where that is less than the widened tile's (:func:`tightest`). Same card, 2026-11-29,
against the widened tile in the same rounds, on the 10 shapes it then touched: all 10 ran 4–65 % faster
(3824×96×7720 64×96 1.009 against 0.832, 131×4912×12704 swapped 64×136 1.016 against 0.617, 4904×144×9784
64×144 0.951 against 0.637). On two fresh draws of 32 small-side shapes both steps together: 0.933 and
0.955 of torch against 0.886 and 0.860.

A ping-pong pick in fours over an even count of column tiles may then go in clusters of eight, where one wave
holds them (``gemm_modes.clusters_of_eight``).
"""

from __future__ import annotations

from hopper_gemm.config import Schedule

from .modes import TunedConfig
from .short_side import short_side_tiles
from .tile_time import LOAD_BOUND_INTENSITY, tile_time

#: Clusters of four a 132-SM H100 or H200 holds at once: the driver's occupancy answer (30, not 132 / 4,
#: since clusters do not span GPCs, and some GPCs hold 4·k + 2 SMs). Other SM counts are scaled from it.
RESIDENT_FOURS_OF_132 = 30
#: The fewest tiles along the long side for the rule: each tile of the short side's operand then goes to at
#: least six clusters of four. It gained from 24 (640×1536×2048) and lost at 16 (200×1024×16384).
MIN_LONG_SIDE_TILES = 24


#: ``tile_time`` units per operand row fetched from L2 per k-step, over the GPU's SMs (:func:`four_time`):
#: what the whole GPU's L2 takes to serve a row to every SM that multicast does not spare. Fitted on 175
#: measurements of one-wave configurations on 60 shapes (NVIDIA H200, 2026-11-28/29, ours / torch, both
#: cluster sizes, swapped and not): with it the estimate orders 182 of the 213 pairs more than 3 % apart
#: (106 of 161 without), and its first pick is within 3 % of the shape's best on 57 of 60 (48 without);
#: 150 or 300 order 160 and 172.
L2_ROW_COST = 200
#: The share of the short side a widened tile must leave idle before :func:`tightest` weighs short-side
#: tiles: the seven shapes where they ran, measured, idled 17–47 % (3824×96×7720 ping-pong 64×64 0.834,
#: 64×96 1.021; 68×3264×13304 64×64 over M 0.652, swapped 64×72 0.941; 2256×160×7344 64×64 0.818, 64×80
#: 0.853; NVIDIA H200, 2026-11-29); where it idled 1 % (285×5120×13824, swapped 128×96 in three column
#: tiles, 0.938) the estimate's pick, swapped 128×144 in two, ran 0.765. At 3 % it would take 8 more
#: shapes of 11 random draws (3–9 % idle): 4 ran faster (290×2968×3448 swapped 64×152 0.976 against 64×128's
#: 0.830), 4 slower (386×4456×4808 swapped cooperative 128×200 1.005 against 128×136's 1.276).
MIN_SHORT_SIDE_PADDING = 0.10
#: A cooperative 192-row tile (warpgroups along the width) within this share of the load bound widens too: 192×144
#: (27648 multiply-adds per k against 26880 rows' worth, 1.03 of it) waits on its loads often enough that four
#: fetches fewer pay. cuBLAS runs it in fours at 132×18184×3016 (torch 2.11: ``nvjet`` 192×144 4×1, coopB) and at
#: 18872×136×9632 (1×4 on its Cᵀ). NVIDIA H200, 2026-11-30, ours / torch against the table without it, in the same
#: rounds: widening every such 192-row pick (any width) on 32 shapes (30 drawn) 1.014 → 1.024, the 192×144 ones
#: 3–9 % faster (132×18184×3016 0.942 → 1.031), 192×160–224 within 2 %; with a 5 % margin for every tile, on 32
#: drawn: 0.971 → 0.991 (12 faster, 1 slower), the 19 at 192×144 mostly 2–8 % faster (422×7120×3736 0.836 →
#: 0.899, 139×17696×3720 0.883 → 0.943, 19752×144×2136 0.975 → 1.043), 128×216–240 within 2.5 %, and the one loss
#: a 128×232 pick that the one-wave step would have narrowed to 192×144 (4400×680×4224 0.949 → 0.875): so only
#: the 192-row tile takes the margin, and only here. The 18 other 192×144 picks of that draw: 0.959 → 0.994, 11
#: faster, none slower; with the first run's seven, 25 shapes, one slower (10712×280×3312 in 1×2, 0.964 → 0.907).
NEAR_LOAD_BOUND_192 = 1.05


def resident_clusters(cluster_size: int, sms: int) -> int:
    """The clusters of ``cluster_size`` CTAs a GPU of ``sms`` SMs holds at once, as the table counts them:
    ``sms // cluster_size`` for one or two CTAs, :data:`RESIDENT_FOURS_OF_132` scaled for four or more
    (the launch asks the driver: ``hopper_gemm.launch.resident_clusters``)."""
    if cluster_size <= 2:
        return max(1, sms // cluster_size)
    return max(1, sms * RESIDENT_FOURS_OF_132 * 4 // (132 * cluster_size))


def load_bound(config: TunedConfig) -> bool:
    """Whether ``config``'s tile waits on its loads by ``tile_time``'s measure: fewer multiply-adds per
    k than :data:`~gemm_modes.tile_time.LOAD_BOUND_INTENSITY` per loaded row."""
    return config.tile_m * config.tile_n < LOAD_BOUND_INTENSITY * (config.tile_m + config.tile_n)


def waits_on_loads(config: TunedConfig) -> bool:
    """Whether ``config``'s tile gains from fewer fetches (:func:`widened`): :func:`load_bound`, or a cooperative
    192-row tile with its warpgroups along the width within :data:`NEAR_LOAD_BOUND_192` of the bound."""
    if load_bound(config):
        return True
    along_width = config.tile_m == 192 and config.wg_split == "n"
    bound = NEAR_LOAD_BOUND_192 * LOAD_BOUND_INTENSITY * (config.tile_m + config.tile_n)
    return along_width and config.tile_m * config.tile_n < bound


def fetched_rows(config: TunedConfig, rows: int, cols: int) -> int:
    """Rows of K ``config``'s clusters fetch from L2 per k-step on a ``rows`` × ``cols`` output (of the
    launch: Cᵀ for a swapped one): each cluster one A tile per cluster row and one B tile per cluster
    column, multicast to the rest."""
    return config.cluster_tiles(rows, cols) * (config.cluster_m * config.tile_m + config.cluster_n * config.tile_n)


def widened(config: TunedConfig, m: int, n: int, sms: int) -> TunedConfig | None:
    """``config`` in clusters of four along the side of C with more of its tiles (for a swapped
    configuration, of Cᵀ), or None where the rule does not apply: a cluster other than two, a split,
    stream-K, a compute-bound tile, fewer than :data:`MIN_LONG_SIDE_TILES` tiles along the long side,
    more cluster-tiles than :func:`resident_clusters` of four, or more :func:`fetched_rows` than the pairs."""
    if config.cluster_size != 2 or config.split_k > 1 or config.stream_k or not waits_on_loads(config):
        return None
    rows, cols = config.launch_shape(m, n)
    row_tiles, col_tiles = -(-rows // config.tile_m), -(-cols // config.tile_n)
    if max(row_tiles, col_tiles) < MIN_LONG_SIDE_TILES:
        return None
    along_rows = row_tiles >= col_tiles
    # The ring staging with a cluster of four has not run on a GPU: the measured launches staged apart.
    four = config.with_(cluster_m=4 if along_rows else 1, cluster_n=1 if along_rows else 4, staging_in_ring=False)
    if four.cluster_tiles(rows, cols) > resident_clusters(4, sms):
        return None
    if fetched_rows(four, rows, cols) > fetched_rows(config, rows, cols):
        return None
    return four


def four_time(config: TunedConfig, m: int, n: int, sms: int) -> float:
    """``tile_time`` of ``config`` on an M×N output, or the time the L2 takes to serve its
    :func:`fetched_rows` (:data:`L2_ROW_COST` each, over ``sms``), whichever is longer."""
    rows, cols = config.launch_shape(m, n)
    return max(tile_time(config, rows, cols, sms), L2_ROW_COST * fetched_rows(config, rows, cols) / sms)


def _short_side(config: TunedConfig, m: int, n: int) -> tuple[int, int, bool]:
    """(the short side's extent, the rows ``config``'s tiles give it, whether it is M) of a widened
    ``config``: the side across its cluster of four."""
    rows, cols = config.launch_shape(m, n)
    if config.cluster_m == 4:
        return cols, -(-cols // config.tile_n) * config.tile_n, config.swap_ab
    return rows, -(-rows // config.tile_m) * config.tile_m, not config.swap_ab


def tightest(config: TunedConfig, m: int, n: int, sms: int, swappable: bool) -> TunedConfig:
    """``config`` (widened to four, :func:`widened`), or where its tiles idle at least
    :data:`MIN_SHORT_SIDE_PADDING` of the short side, the short-side tile in clusters of four (along the
    long side, at least :data:`MIN_LONG_SIDE_TILES` of them, every cluster-tile held at once) of least
    :func:`four_time`, if less than ``config``'s; swapped tiles (M short) only where ``swappable``."""
    extent, covered, along_m = _short_side(config, m, n)
    if extent > covered * (1 - MIN_SHORT_SIDE_PADDING) or (along_m and not swappable):
        return config
    best, best_time = config, four_time(config, m, n, sms)
    rows, cols = (n, m) if along_m else (m, n)  # the candidates' launch: the short side along its columns
    for tile in short_side_tiles(max(extent, 64), swap_ab=along_m):
        four = tile.with_(cluster_m=4, cluster_n=1)
        if -(-rows // four.tile_m) < MIN_LONG_SIDE_TILES:
            continue
        if four.cluster_tiles(rows, cols) > resident_clusters(4, sms):
            continue
        time = four_time(four, m, n, sms)
        if time < best_time:
            best, best_time = four, time
    return best


def describe(config: TunedConfig, m: int, n: int, sms: int) -> str:
    """The facts of a widened ``config`` in one clause (``--explain``)."""
    rows, cols = config.launch_shape(m, n)
    along_rows = config.cluster_m == 4
    row_tiles, col_tiles = -(-rows // config.tile_m), -(-cols // config.tile_n)
    long_tiles, short_tiles = (row_tiles, col_tiles) if along_rows else (col_tiles, row_tiles)
    side = ("N" if config.swap_ab else "M") if along_rows else ("M" if config.swap_ab else "N")
    across = f" × {short_tiles} across" if short_tiles > 1 else ""
    shared = "B" if along_rows != config.swap_ab else "A"
    kind = "ping-pong" if config.schedule is Schedule.PINGPONG else "cooperative"
    return (
        f"{long_tiles} {kind} tiles along {side}{across} in {config.cluster_tiles(rows, cols)} clusters of four "
        f"(≤ {resident_clusters(4, sms)} at once), each {shared} tile multicast to four of them"
    )


def describe_tightest(widened: TunedConfig, tight: TunedConfig, m: int, n: int, sms: int) -> str:
    """Why :func:`tightest` took ``tight`` over ``widened``, and ``tight``'s clusters, in one clause."""
    extent, covered, along_m = _short_side(widened, m, n)
    side = "M" if along_m else "N"
    columns = -(-extent // tight.tile_n)
    return (
        f"{widened.tile_m}×{widened.tile_n} in fours covers {side} = {extent} with {covered} rows "
        f"({1 - extent / covered:.0%} idle); {'computed as Cᵀ = B·Aᵀ, ' if tight.swap_ab else ''}{side} in "
        f"{columns} column tile{'s' if columns > 1 else ''} of {tight.tile_n}: per SM "
        f"{four_time(tight, m, n, sms):.0f} against {four_time(widened, m, n, sms):.0f} (four_time); "
        + describe(tight, m, n, sms)
    )
