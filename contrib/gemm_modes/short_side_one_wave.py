"""A short side in whole 192-row tiles, one wave along the long side: ``gemm_modes.autotable``'s last tile
step.

Where one side of C is a little under one, two or three multiples of 192 and the other is long, the short
side can take whole 192-row tiles and the width along the long side can be chosen so that the tiles fill one
wave exactly: ⌈short / 192⌉ row tiles × ⌈long / width⌉ columns ≤ the SMs. Each is the cooperative 192-row
tile whose warpgroups split its columns (``wg_split="n"``). A short N runs as Cᵀ = B·Aᵀ (the swapped launch:
Cᵀ's rows run along N), a short M as it is. cuBLAS runs this plan at 13624×384×9432 (torch 2.11: 192×208 on
Cᵀ, 2 × 66 tiles)::

    13624×384 in 192×128 tiles (2×1)              Cᵀ = 384×13624 in 192×208 tiles (2×1)
    71 × 3 = 213 tiles: 1.6 waves of 132          2 × 66 = 132 tiles: one wave
    ┌────┬────┬────┐                              ┌──────┬──────┬─ … 66 columns along M
    │    │    │    │ 71 rows along M              │192×208      │ 2 rows along N
    └────┴────┴────┘                              └──────┴──────┴─

:func:`replaces` takes it where K is past :data:`MIN_K`, the long side is at least :data:`LONG_SIDE_RATIO`
times the short one, the short side fills at least :data:`ROW_FILL` of at most three 192-row tiles, the width
(16-column steps: :data:`SWAPPED_WIDTHS` on Cᵀ, :data:`WIDTHS` on C) keeps at least :data:`BUSY_SHARE` of
the SMs busy, and the pick does not already: its tiles (or split-K parts) fewer than that share, or more
than one wave. The cluster pairs the row tiles where they are even, else the columns where they are, else
none. Only problems that could run swapped (no bias, B as (N, K)): those it was measured on.

NVIDIA H200, 2026-11-29, ours / torch against the pick in the same rounds. A short N, on Cᵀ: with widths to
256, on the 20 of 18,000 draws it changed and 13624×384×9432, 0.884 → 0.983, 17 faster by more than 2 %, 3
slower; on the 24 of 27,000 drawn after, 0.946 → 1.010, 16 faster, 3 slower. The 256-wide tiles were 5 of
the 6 losses; without them **18 shapes 0.874 → 0.991 (16 faster, 1 slower) and 20 drawn after 0.944 →
1.029 (15 faster, 1 slower)** (13448×384×7192 0.707 → 0.971, 9088×568×6696 0.987 → 1.219; 8848×528×10456
0.830 → 0.800 the worst). A short M, on C: with widths to 240 and any pick, 34 of the 74 of 27,000 draws it
changed ran 0.890 → 0.976 (24 faster, 5 slower); the picks that were already Cᵀ's 192-row tiles gained
nothing (4 of 4, 173×22584×7592 0.951 → 0.747) and 240-wide tiles lost on 3 of 5 (538×10176×6440 0.978 →
0.884), so neither is taken (538×9032×13576 0.662 → 0.959, 190×22440×4544 0.642 → 0.910).
"""

from __future__ import annotations

from hopper_gemm.config import GemmConfig, Schedule

from .modes import TunedConfig

#: The K past which the step weighs the tiles (the wave balance's swapped tiles start there too).
MIN_K = 4096
#: The long side at least this many times the short one: it runs along the tiles' columns.
LONG_SIDE_RATIO = 4
#: The least share of its ⌈short / 192⌉ row tiles the short side fills, and the most row tiles.
ROW_FILL = 0.9
MAX_ROW_TILES = 3
#: The share of the SMs the tiles keep busy in their one wave, and that a pick left alone already does.
BUSY_SHARE = 0.9
#: The widths along M on Cᵀ, 16-column steps (each warpgroup half of them). 192×256 ran slower than the
#: pick on 5 of the 7 shapes it took (10776×520×4184 0.945 → 0.843 in 1×1 clusters; 16360×384×9032 0.872 →
#: 0.964 one of the two gains), so a shape that needs it keeps its pick.
SWAPPED_WIDTHS = range(128, 241, 16)
#: The widths along N on C: 192×240 lost on 3 of the 5 shapes it took (379×14976×7072 0.969 → 0.910).
WIDTHS = range(128, 225, 16)


def replaces(config: TunedConfig, mnk: tuple[int, int, int], sms: int, swappable: bool) -> TunedConfig | None:
    """The 192-row tile of one wave (module docstring) in place of ``config``; None where the shape, the
    problem (``swappable``: no bias, B as (N, K)) or the pick leave it alone."""
    m, n, k = mnk
    if not swappable or k <= MIN_K:
        return None
    if m >= LONG_SIDE_RATIO * n:
        short, long, swap, widths = n, m, True, SWAPPED_WIDTHS
    elif n >= LONG_SIDE_RATIO * m and not (config.swap_ab and config.tile_m == 192):
        short, long, swap, widths = m, n, False, WIDTHS
    else:
        return None
    row_tiles = -(-short // 192)
    if row_tiles > MAX_ROW_TILES or short < ROW_FILL * row_tiles * 192:
        return None
    width = -(-long // (sms // row_tiles) // 16) * 16  # the narrowest whose columns fit the wave
    if width not in widths:
        return None
    columns = -(-long // width)
    if row_tiles * columns < BUSY_SHARE * sms or BUSY_SHARE * sms <= config.launch_tiles(m, n) <= sms:
        return None
    cluster = (2, 1) if row_tiles % 2 == 0 else (1, 2) if columns % 2 == 0 else (1, 1)
    tile = GemmConfig(192, width, *cluster, Schedule.COOPERATIVE, wg_split="n")
    return TunedConfig(tile, swap_ab=swap)


def describe(turned: TunedConfig, pick: TunedConfig, m: int, n: int, sms: int) -> str:
    """Why :func:`replaces` took ``pick``'s place, in one clause (``--explain``)."""
    rows, cols = turned.launch_shape(m, n)
    row_tiles = -(-rows // 192)
    side = f"{'N' if turned.swap_ab else 'M'} = {rows} in {row_tiles} row tile{'s' if row_tiles > 1 else ''} of 192"
    return (
        f"{side}{' on Cᵀ = B·Aᵀ' if turned.swap_ab else ''}: {row_tiles} × {-(-cols // turned.tile_n)} tiles of "
        f"192×{turned.tile_n} on {sms} SMs, one wave, where {pick.tile_m}×{pick.tile_n} takes "
        f"{pick.launch_tiles(m, n)} tiles" + (f" in {pick.split_k} parts" if pick.split_k > 1 else "")
    )
