"""A short N in whole 192-row tiles of Cᵀ, one wave along M: ``gemm_modes.autotable``'s last tile step.

Where N is a little under one, two or three multiples of 192 and M is long, the output as Cᵀ = B·Aᵀ (the
swapped launch: Cᵀ's rows run along N) takes N in whole 192-row tiles, and a width along M can be chosen so
that the tiles fill one wave exactly: ⌈N / 192⌉ row tiles × ⌈M / width⌉ columns ≤ the SMs. Each is the
cooperative 192-row tile whose warpgroups split its columns (``wg_split="n"``). cuBLAS runs this plan at
13624×384×9432 (torch 2.11: 192×208, 2 × 66 tiles)::

    13624×384 in 192×128 tiles (2×1)              Cᵀ = 384×13624 in 192×208 tiles (2×1)
    71 × 3 = 213 tiles: 1.6 waves of 132          2 × 66 = 132 tiles: one wave
    ┌────┬────┬────┐                              ┌──────┬──────┬─ … 66 columns along M
    │    │    │    │ 71 rows along M              │192×208      │ 2 rows along N
    └────┴────┴────┘                              └──────┴──────┴─

:func:`replaces` takes it where the problem can run swapped (no bias, B as (N, K)), K is past :data:`MIN_K`,
M is at least :data:`LONG_SIDE_RATIO` × N, N fills at least :data:`ROW_FILL` of at most three 192-row tiles,
the width (16-column steps, 128–240) keeps at least :data:`BUSY_SHARE` of the SMs busy, and the pick does not
already: its tiles (or split-K parts) fewer than that share, or more than one wave. The cluster pairs the row
tiles where they are even, else the columns where they are, else none.

NVIDIA H200, 2026-11-29, ours / torch against the pick in the same rounds. With widths to 256, on the 20 of
18,000 draws it changed and 13624×384×9432: 0.884 → 0.983, 17 faster by more than 2 %, 3 slower; on the 24 of
27,000 drawn after: 0.946 → 1.010, 16 faster, 3 slower. The 256-wide tiles were 5 of the 6 losses; as landed,
without them, **18 shapes 0.874 → 0.991 (16 faster, 1 slower) and 20 drawn after 0.944 → 1.029 (15 faster,
1 slower)** (13448×384×7192 0.707 → 0.971, 9088×568×6696 0.987 → 1.219; 8848×528×10456 0.830 → 0.800 the
worst).
"""

from __future__ import annotations

from hopper_gemm.config import GemmConfig, Schedule

from .modes import TunedConfig

#: The K past which the step weighs the swapped tiles (the wave balance's swapped tiles start at 4096 too).
MIN_K = 4096
#: M at least this many times N: the long side along the tiles' columns.
LONG_SIDE_RATIO = 4
#: The least share of its ⌈N / 192⌉ row tiles N fills, and the most row tiles.
ROW_FILL = 0.9
MAX_ROW_TILES = 3
#: The share of the SMs the tiles keep busy in their one wave, and that a pick left alone already does.
BUSY_SHARE = 0.9
#: The tile's widths along M, 16-column steps (each warpgroup half of them). 192×256 ran slower than the
#: pick on 5 of the 7 shapes it took (10776×520×4184 0.945 → 0.843 in 1×1 clusters; 16360×384×9032 0.872 →
#: 0.964 one of the two gains), so a shape that needs it keeps its pick.
WIDTHS = range(128, 241, 16)


def replaces(config: TunedConfig, mnk: tuple[int, int, int], sms: int, swappable: bool) -> TunedConfig | None:
    """The swapped 192-row tile of one wave (module docstring) in place of ``config``; None where the
    shape, the problem (``swappable``: no bias, B as (N, K)) or the pick's fill leave it alone."""
    m, n, k = mnk
    if not swappable or k <= MIN_K or m < LONG_SIDE_RATIO * n:
        return None
    row_tiles = -(-n // 192)
    if row_tiles > MAX_ROW_TILES or n < ROW_FILL * row_tiles * 192:
        return None
    width = -(-m // (sms // row_tiles) // 16) * 16  # the narrowest whose columns fit the wave
    if width not in WIDTHS:
        return None
    columns = -(-m // width)
    if row_tiles * columns < BUSY_SHARE * sms or BUSY_SHARE * sms <= _tiles(config, m, n) <= sms:
        return None
    cluster = (2, 1) if row_tiles % 2 == 0 else (1, 2) if columns % 2 == 0 else (1, 1)
    tile = GemmConfig(192, width, *cluster, Schedule.COOPERATIVE, wg_split="n")
    return TunedConfig(tile, swap_ab=True)


def _tiles(config: TunedConfig, m: int, n: int) -> int:
    """``config``'s tiles on C (Cᵀ where it is swapped), times its split-K parts."""
    rows, cols = config.launch_shape(m, n)
    return -(-rows // config.tile_m) * -(-cols // config.tile_n) * config.split_k


def describe(turned: TunedConfig, pick: TunedConfig, m: int, n: int, sms: int) -> str:
    """Why :func:`replaces` took ``pick``'s place, in one clause (``--explain``)."""
    rows, columns = -(-n // 192), -(-m // turned.tile_n)
    return (
        f"N = {n} in {rows} row tiles of 192 on Cᵀ = B·Aᵀ: {rows} × {columns} tiles of 192×{turned.tile_n} on "
        f"{sms} SMs, one wave, where {pick.tile_m}×{pick.tile_n} takes {_tiles(pick, m, n)} tiles"
        + (f" in {pick.split_k} parts" if pick.split_k > 1 else "")
    )
