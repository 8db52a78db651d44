"""The pick's tile width cut to its column tiles: ``gemm_modes.autotable``'s last step.

The rules pick a width, then the output takes ⌈side / width⌉ column tiles of it. Where those tiles pad the
side by a whole step or more, a narrower width gives the same count of column tiles (the same cluster-tiles,
the same waves) with less padding in each: at 1600³ the fill rule's ping-pong 128×176 takes 10 column tiles,
160 idle columns in the last; 128×160 takes the same 10 with none, and each tile is a tenth smaller.

::

    N = 1600 in 10 column tiles    128×176: ▓▓▓▓▓▓▓▓▓▓ ▓▓▓▓▓▓▓▓▓▓ … ▓░░░░░░░░░  (1760 columns, 160 idle)
                                   128×160: ▓▓▓▓▓▓▓▓▓  ▓▓▓▓▓▓▓▓▓  … ▓▓▓▓▓▓▓▓▓   (1600 columns, none)

:func:`tightened` takes the width ⌈side / count⌉ rounded up to :data:`STEP`, where that is narrower than the
pick's. Only 16-column steps: widths that are an odd multiple of 8 stored C in 8-column subtiles, and lost
(measured before ``gemm_modes.wide_subtiles`` staged such widths in wider subtiles; not measured since).

NVIDIA H200, 2026-11-29, ours / torch against the pick in the same rounds: in 8-column steps (the first
form) 26 shapes drawn at random ran 0.901 → 0.900, those cut to an odd multiple of 8 losing up to 14 %
(1664³ 128×176 → 128×168 0.959 → 0.832, 4344×544×2704 128×192 → 128×184 0.924 → 0.796); in 16-column
steps it changes four of the 26, all faster (1568³ 128×192 → 128×176 0.640 → 0.749, 780×9600×7432
swapped 192×176 → 192×160 0.918 → 0.981). Drawn after (squares: of 3,000 draws of the three families it
changed 53 squares of 1544–1904 and nothing else): 11 shapes 0.825 → 0.890, 8 faster by more than 2 %
(1600³ 128×176 → 128×160 0.744 → 0.960, 1808³ 128×256 → 128×240 0.754 → 0.832), none slower by more than
2 % (1800³ 0.937 → 0.924).
"""

from __future__ import annotations

from .modes import TunedConfig

#: The steps the cut width is rounded up to: whole 16-column subtiles of C in the epilogue.
STEP = 16
#: The narrowest tile width the kernel takes (one wgmma N extent of 64 and up).
NARROWEST = 64


def tightened(config: TunedConfig, m: int, n: int) -> TunedConfig | None:
    """``config`` with its width cut to ⌈side / column tiles⌉ rounded up to :data:`STEP` where that is
    narrower (the module's docstring), else None; None also for split-K, stream-K and a deferred epilogue,
    whose parts and chunks follow the width they were picked with."""
    if config.split_k > 1 or config.stream_k or config.deferred_chunks:
        return None
    side = config.launch_shape(m, n)[1]
    count = -(-side // config.tile_n)
    share = -(-side // count)
    width = max(NARROWEST, -(-share // STEP) * STEP)
    return config.with_(tile_n=width) if width < config.tile_n else None


def describe(cut: TunedConfig, pick: TunedConfig, m: int, n: int) -> str:
    """Why ``cut`` took ``pick``'s place, in one clause (``--explain``)."""
    side = pick.launch_shape(m, n)[1]
    count = -(-side // pick.tile_n)
    name = "M" if pick.swap_ab else "N"
    return (
        f"width cut to its column tiles: {name} = {side} in {count} column tiles of {cut.tile_n} "
        f"({count * cut.tile_n - side} columns idle; of {pick.tile_n}: {count * pick.tile_n - side})"
    )
