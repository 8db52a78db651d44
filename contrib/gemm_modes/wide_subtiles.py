"""Wide staged subtiles for a tile an odd multiple of 8 wide: ``gemm_modes.autotable``'s last step.

The epilogue stores C one staged subtile at a time, each subtile a TMA store. Its default width divides
the tile's: 32 or 16 columns, and only 8 for a tile an odd multiple of 8 wide (88, 152, 216). Eight
columns of bf16 are 16 bytes: such a tile's epilogue is one 16-byte row piece per row per subtile, eleven
TMA stores of 64 × 16 B for a 64×88 warpgroup tile where a 64×96 one takes three of 64 × 64 B. A subtile
as wide as an odd divisor of the width allows (88 → 88, 216 → 24 or 72, 200 → 40) stages plain rows
(``hopper_gemm.epilogue_store.staging_layout``) and stores them in one box::

    128×88 tile, 64-row subtiles    8 columns: ▌▌▌▌▌▌▌▌▌▌▌  11 boxes of 64 × 16 B per warpgroup
                                   88 columns: ██████████   1 box of 64 × 176 B

:func:`widened` takes the widest such subtile whose staging buffers still leave the A/B ring
:data:`~hopper_gemm.config.NARROW_SUBTILES_BELOW_STAGES` stages (or the 8-column subtiles' count, where
that is fewer): wider buffers cost ring stages, and a ring of 3 ran slower than the 8-column subtiles.

Only for a row-major C: a column-major one (a swapped launch's Cᵀ) stores 8 columns as 8 rows of
64 contiguous elements already, and its layouts take subtiles of 8, 16, 32 or 64 columns only. Not for a
256-row cooperative tile either (each warpgroup 128 rows): its wide subtiles ran at half the speed of its
8-column ones (NVIDIA H200, 2026-11-29, ours / torch: 256×104 at 12776×520×9360 0.375 with 128×104 subtiles,
two A/B stages beside them, against 0.938; in the ring, 256×120 with 128×120 subtiles 0.444–0.506 on three
shapes where 256×120 with 128×24 ran 1.039 on a fourth). The cause is not known; no pick of the table takes
such a tile unswapped with an odd multiple of 8 wide.

NVIDIA H200, 2026-11-29, ours / torch, each against the 8-column subtiles in the same rounds: ping-pong
128×88 at 2304×528×1024 1.014 → 1.210, at 2304×528×8192 1.184 → 1.290, 1136³ 0.825 → 0.903; cooperative
128×216 at 5064×640×2072 0.869 → 1.004 (24 columns: 4 stages; 72 columns, 3 stages: 1.008) and at
5584×640×5296 0.908 → 0.971 (72 columns: 0.892); cooperative 128×200 at 21264×392×9184 0.819 → 0.901
(40 columns).
"""

from __future__ import annotations

from hopper_gemm.config import NARROW_SUBTILES_BELOW_STAGES, Problem

from .modes import TunedConfig

#: The subtile width the step replaces: an odd multiple of 8 wide tile's default.
NARROW = 8


def subtile_widths(width: int) -> list[int]:
    """The subtile widths wider than :data:`NARROW` that divide an odd multiple of 8 ``width`` in whole
    8-column steps, widest first (each again an odd multiple of 8)."""
    return [cols for cols in range(width, NARROW, -NARROW) if width % cols == 0]


def widened(config: TunedConfig, problem: Problem) -> TunedConfig | None:
    """``config`` with the widest subtile of :func:`subtile_widths` that its modes accept and that leaves
    the A/B ring its stages (the module's docstring), where it stores 8-column subtiles into a row-major C
    and is no 256-row tile; else None."""
    width = config.mma_tile[1]
    if config.epi_n != NARROW or width % 16 != NARROW or config.swap_ab or problem.c_major != "n":
        return None
    if config.tile_m == 256:  # 128-row wide subtiles ran at half speed (the module's docstring)
        return None
    floor = min(NARROW_SUBTILES_BELOW_STAGES, config.stages(problem)[0])
    for cols in subtile_widths(width):
        wide = _with_subtiles(config, cols)
        if wide is not None and _stages(wide, problem) >= floor:
            return wide
    return None


def _stages(config: TunedConfig, problem: Problem) -> int:
    """``config``'s A/B stages, 0 where its staging buffers do not fit (in the ring or beside it)."""
    try:
        return config.stages(problem)[0]
    except ValueError:
        return 0


def _with_subtiles(config: TunedConfig, cols: int) -> TunedConfig | None:
    """``config`` storing ``cols``-column subtiles, a deferred epilogue still storing one subtile per chunk
    where it did; None where its modes refuse them (split-K's parts each store whole subtiles)."""
    chunks = config.deferred_chunks
    per_subtile = chunks and chunks == config.subtiles
    try:
        wide = config.with_(epi_n=cols, epi_batch=1, deferred_chunks=0)
        if chunks:
            wide = wide.with_(deferred_chunks=wide.subtiles if per_subtile else chunks)
        return wide
    except ValueError:
        return None


def describe(wide: TunedConfig, pick: TunedConfig) -> str:
    """Why ``wide`` took ``pick``'s place, in one clause (``--explain``)."""
    return (
        f"staged in subtiles of {wide.epi_tile[0]}×{wide.epi_n} (one TMA store each) where 8 columns "
        f"take {pick.subtiles} subtiles of 16-byte rows"
    )
