"""A 192-row tile narrowed to fill its one wave: ``gemm_modes.autotable``'s step after the clusters of four.

Where every cluster-tile of the pick runs at once (one wave) but part of the clusters idle, the wave
takes as long as one tile. The same tile cut narrower, so that its count fills the wave, does that work
in smaller pieces: 18736×176 in 98 tiles of 192×176 keeps 74 % of an H200's 66 clusters of two busy; in
131 tiles of 192×144 (N = 176 along the 192 rows, computed as Cᵀ = B·Aᵀ) 99 %, each tile a fifth smaller.
cuBLAS fits its tiles so (torch 2.11 ran nvjet's 144×192 there, 131 tiles).

:func:`replaces` takes, for a cooperative 192-row pick with its warpgroups along the width that holds the
output in one wave keeping under :data:`MIN_FILL` of the clusters busy, the tile of the same kind (either
way round, in a cluster of two either way) that keeps at least :data:`MIN_FILL` busy in one wave, of least
``tile_time``, where that is :data:`MARGIN` faster. Both must be compute-bound by ``tile_time``
(``clusters_of_four.load_bound``): a tile that waits on its loads gains little from being narrower (the
four load-bound 192×96 picks the first form narrowed to 192×80 ran 2.5–11 % slower: 167×10272×3520 1.004
→ 0.890); and the narrowed tile must fill :data:`MIN_ROWS_FILL` of its rows.

NVIDIA H200, 2026-11-29, ours / torch against the table without the step, in the same rounds. Fitted on
63 shapes drawn at random where a first form of it (no bound on the rows' fill) changed the pick: on the
47 where it now does, 0.940 → 1.014, 45 faster (9864×360×5072 192×192 → 192×160 0.830 → 0.957,
180×18432×7168 0.997 → 1.135, 18736×176×6592 0.865 → 1.005), 181×22288×7848 0.990 → 0.958 the worst.
Drawn after the bounds were set: 26 shapes 0.948 → 1.013, 25 faster (8712×336×3800 0.850 → 1.019),
178×21416×2336 1.026 → 0.920 the one loss. Tried more widely (every tile of 128, 192 or 256 rows in place
of any one-wave pick) it lost: 39 shapes 0.950 → 0.930, 16 of them over 2 % (142×9128×4976 ping-pong
192×72 0.879 → 0.686, 13864×224×8608 swapped 128×216 1.006 → 0.820).
"""

from __future__ import annotations

from functools import cache

from hopper_gemm.config import GemmConfig, Schedule

from .clusters_of_four import load_bound
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


def launch_shape(config: TunedConfig, m: int, n: int) -> tuple[int, int]:
    """The output ``config``'s launch computes: N × M for a swapped one (Cᵀ), else M × N."""
    return (n, m) if config.swap_ab else (m, n)


def busy_share(config: TunedConfig, m: int, n: int, sms: int) -> float | None:
    """The share of the clusters ``config``'s cluster-tiles of an M×N output keep busy in one wave, None where
    they take more than one."""
    clusters = max(1, sms // config.cluster_size)
    tiles = config.cluster_tiles(*launch_shape(config, m, n))
    return tiles / clusters if tiles <= clusters else None


def rows_fill(config: TunedConfig, m: int, n: int) -> float:
    """The share of its tile rows ``config`` fills along the side of an M×N output its rows cover."""
    rows = launch_shape(config, m, n)[0]
    return rows / (-(-rows // config.tile_m) * config.tile_m)


def fitted(m: int, n: int, sms: int, swappable: bool) -> tuple[TunedConfig, float] | None:
    """The candidate of least ``tile_time`` that holds an M×N output in one wave keeping at least
    :data:`MIN_FILL` of the clusters busy and fills :data:`MIN_ROWS_FILL` of its rows, and that time (on a tie
    the busier); swapped ones only where ``swappable``; None where none does."""
    best = None
    for swap_ab in (False, True) if swappable else (False,):
        for config in candidates(swap_ab):
            busy = busy_share(config, m, n, sms)
            if busy is None or busy < MIN_FILL or rows_fill(config, m, n) < MIN_ROWS_FILL:
                continue
            key = (tile_time(config, *launch_shape(config, m, n), sms), -busy)
            if best is None or key < best[0]:
                best = (key, config)
    return None if best is None else (best[1], best[0][0])


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
    if fit is None or fit[1] * MARGIN >= tile_time(config, *launch_shape(config, m, n), sms):
        return None
    return fit[0]


def describe(fit: TunedConfig, pick: TunedConfig, m: int, n: int, sms: int) -> str:
    """Why ``fit`` took ``pick``'s place, in one clause (``--explain``)."""
    rows, cols = launch_shape(fit, m, n)
    before, after = (busy_share(c, m, n, sms) or 0.0 for c in (pick, fit))
    swapped = " (computed as Cᵀ = B·Aᵀ)" if fit.swap_ab else ""
    return (
        f"one wave: {pick.tile_m}×{pick.tile_n} keeps {before:.0%} of the clusters busy; narrowed to "
        f"{fit.tile_m}×{fit.tile_n}{swapped} in {fit.cluster_tiles(rows, cols)} cluster-tiles, {after:.0%}: per SM "
        f"{tile_time(fit, rows, cols, sms):.0f} against {tile_time(pick, *launch_shape(pick, m, n), sms):.0f} "
        "(tile_time)"
    )
