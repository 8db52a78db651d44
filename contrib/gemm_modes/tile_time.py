"""How long a tile keeps an SM busy: the estimate the table weighs swapped small-M tiles by.

Per k-step a CTA issues ``tile_m × tile_n`` multiply-adds per k and loads ``tile_m + tile_n`` rows of K. Its
wgmmas keep pace with its loads only where the tile does at least :data:`LOAD_BOUND_INTENSITY` of the
first per row of the second; below that the SM waits on its loads. A persistent GEMM's time is then the
waves its tiles take times the longer of the two::

    time ≈ ⌈tiles / CTAs held at once⌉ × max(tile_m × tile_n, LOAD_BOUND_INTENSITY × (tile_m + tile_n))

(arbitrary units, the same for every tile of one problem: only the comparison means something). A
cluster of two pads an odd tile count with an idle CTA. Stream-K (either mode) spreads the k-tiles over
every cluster, and split-K past one wave splits the last one: their waves are not rounded up. Split-K
whose unsplit tiles fit one wave is charged as its whole tile: its parts only fill the wave, and the
fix-up and padded rows cost what they save (320×4096×8192: split-K in 2 of 128×192 ran 0.78 of torch,
the swapped 128×80 tile 1.10; at 11008×232×14336 the aligned split of 128×256 tiles, 0.65 of a wave,
ran 0.91 against cooperative 192×128's 0.83, and at 28672×488×5120, 3.4 waves, 1.04 against 128×248's
0.91; NVIDIA H200, 2026-11-28).
"""

from __future__ import annotations

from .modes import TunedConfig

#: Multiply-adds per loaded element at which a tile's wgmmas and its loads take the same time: fitted on
#: 31 measured (shape, run) pairs of small-M tiles on an NVIDIA H200 (M 96–552, swapped and not, 2026-11-28),
#: where the estimate's fastest tile ran within 0.8 % of the measured fastest on average; 70–100 fit alike,
#: 50 or 140 do not. As an SM's load rate: its wgmma rate (989 TFLOP/s over 132 SMs) over 80 FLOP per
#: byte, 94 GB/s per SM.
LOAD_BOUND_INTENSITY = 80


def tile_time(config: TunedConfig, rows: int, cols: int, sms: int) -> float:
    """The estimate above of ``config`` on a ``rows`` × ``cols`` output (for a swapped configuration, the
    turned one: N × M) on a GPU with ``sms`` SMs."""
    tile_rows, tile_cols = config.tile_m, config.tile_n
    clusters = max(1, sms // config.cluster_size)
    tiles = config.cluster_tiles(rows, cols)
    balanced = config.stream_k or (config.split_k > 1 and tiles > clusters)
    waves = tiles / clusters if balanced else -(-tiles // clusters)
    return waves * max(tile_rows * tile_cols, LOAD_BOUND_INTENSITY * (tile_rows + tile_cols))
