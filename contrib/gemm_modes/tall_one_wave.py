"""One wave of tall cooperative tiles where the pick takes more or leaves SMs idle: ``gemm_modes.autotable``'s
step after the tile steps.

Where the pick's tiles are not one nearly full wave (more than the SMs, or under :data:`BUSY_SHARE` of them),
a cooperative tile of 192 rows (its warpgroups splitting the columns) or 256 rows (each warpgroup 128 of
them), on C or on Cᵀ = B·Aᵀ, can often be sized to take exactly one: rows and width chosen so that ⌈rows'
side / tile rows⌉ × ⌈columns' side / width⌉ fills between :data:`BUSY_SHARE` of the SMs and all of them.
cuBLAS runs such plans where we trailed (torch 2.11: 5176×856×4600 cooperative 256×144 in 1×2, 21 × 6 = 126
tiles; 9824×512×6592 256×160 on Cᵀ)::

    5176×856 in ping-pong 128×144 tiles (2×1)     in cooperative 256×144 tiles (1×2)
    41 × 6 = 246 tiles: 1.9 waves of 132           21 × 6 = 126 tiles: one wave
    per SM two turns of 128×144 = 36864 per k      per SM one of 256×144 = 36864 per k

:func:`replaces` weighs both orientations, 192 rows at widths 128–240 and 256 rows at 128–176 (16-column
steps), where each side fills at least :data:`SIDE_FILL` of its tiles, and takes the tile of least area
(multiply-adds per SM and k-step) where that is no more than the pick's per SM (its tile over its split-K
parts, times its turns). The cluster pairs the row tiles where they are even, else the columns where they
are; where neither is, the pick stays. Only problems that could run swapped (no bias, B as (N, K)) past
K = :data:`MIN_K`, and not where the pick is a cluster of four, stream-K (its waves are balanced already) or
already a cooperative tile of 192 or 256 rows.

NVIDIA H200, 2026-11-29, ours / torch against the pick in the same rounds. Without the last four bounds,
on 30 of the 132 of 9,000 draws it changed and two cuBLAS shapes: 0.961 → 0.992, 18 faster by more than 2 %,
7 slower; the losses were a pick of the same tile in a pair (513×7168×18432 192×176 on Cᵀ: 0.992 → 0.959 in
1×1), a pick in fours (3360×832×12584 1.163 → 1.008) and unclustered tiles. With the first two bounds, on 34
of the 104 of 9,000 drawn after: 0.948 → 0.980, 22 faster, 4 slower, all four unclustered (8464×504×4456
0.849 → 0.745; such tiles won on 7 and lost on 5 of 12 in both runs); stream-K picks gained on 1 of 5
(4448×760×6944 0.903 → 0.950), 3 within 2 %. As landed, on the shapes of those runs it still changes: **19
shapes 0.937 → 0.994 (13 faster, none slower) and 23 drawn after 0.928 → 0.981 (18 faster, none slower)**
(5176×856×4600 0.765 → 0.980, 4584×800×14536 0.750 → 0.973, 256×18904×12568 0.840 → 0.986).
"""

from __future__ import annotations

from hopper_gemm.config import GemmConfig, Schedule

from .modes import TunedConfig

#: The K past which the step weighs the tiles (as the wave balance's swapped and 192-row tiles).
MIN_K = 4096
#: The share of the SMs the tiles keep busy in their one wave, and that a pick left alone already does.
BUSY_SHARE = 0.9
#: The least share of its tiles each side of the launch fills.
SIDE_FILL = 0.85
#: The tiles weighed: rows, how the warpgroups split them, and the widest width (a 256-row tile's warpgroup
#: holds 128 × width accumulators: 176 is the widest the swapped 256-row tiles run).
TALL_TILES = ((192, "n", 240), (256, "m", 176))
NARROWEST = 128


def replaces(config: TunedConfig, mnk: tuple[int, int, int], sms: int, swappable: bool) -> TunedConfig | None:
    """The tall tile of one wave (module docstring) in place of ``config``; None where the problem
    (``swappable``: no bias, B as (N, K)), K, the pick or the tile's cluster leave it alone."""
    m, n, k = mnk
    if not swappable or k <= MIN_K:
        return None
    if config.cluster_size > 2 or config.stream_k or (config.schedule is Schedule.COOPERATIVE and config.tile_m >= 192):
        return None
    tiles = config.launch_tiles(m, n)
    if BUSY_SHARE * sms <= tiles <= sms:
        return None
    per_sm = config.tile_m * config.tile_n / config.split_k * -(-tiles // sms)
    least = None
    for swap in (False, True):
        rows, cols = (n, m) if swap else (m, n)
        for tile_m, wg_split, widest in TALL_TILES:
            row_tiles = -(-rows // tile_m)
            if rows < SIDE_FILL * row_tiles * tile_m:
                continue
            for width in range(NARROWEST, widest + 1, 16):
                columns = -(-cols // width)
                if cols < SIDE_FILL * columns * width or not BUSY_SHARE * sms <= row_tiles * columns <= sms:
                    continue
                if least is None or tile_m * width < least[0]:
                    least = (tile_m * width, swap, tile_m, width, wg_split, row_tiles, columns)
    if least is None or least[0] > per_sm:
        return None
    _, swap, tile_m, width, wg_split, row_tiles, columns = least
    if row_tiles % 2 and columns % 2:  # no pair: unclustered, such tiles lost on 5 of 12 shapes
        return None
    cluster = (2, 1) if row_tiles % 2 == 0 else (1, 2)
    return TunedConfig(GemmConfig(tile_m, width, *cluster, Schedule.COOPERATIVE, wg_split=wg_split), swap_ab=swap)


def describe(tall: TunedConfig, pick: TunedConfig, m: int, n: int, sms: int) -> str:
    """Why :func:`replaces` took ``pick``'s place, in one clause (``--explain``)."""
    rows, cols = tall.launch_shape(m, n)
    tiles = pick.launch_tiles(m, n)
    kind = f"parts of {pick.tile_m}×{pick.tile_n} in {pick.split_k}" if pick.split_k > 1 else "tiles of "
    kind = kind if pick.split_k > 1 else f"{kind}{pick.tile_m}×{pick.tile_n}"
    return (
        f"one wave of {tall.tile_m}×{tall.tile_n} tiles{' on Cᵀ = B·Aᵀ' if tall.swap_ab else ''}: "
        f"{-(-rows // tall.tile_m)} × {-(-cols // tall.tile_n)} on {sms} SMs, per SM {tall.tile_m * tall.tile_n} "
        f"multiply-adds per k against {pick.tile_m * pick.tile_n // pick.split_k * -(-tiles // sms)} for "
        f"{tiles} {kind}"
    )
