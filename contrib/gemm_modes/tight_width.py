"""The pick's tile width cut to its column tiles: ``gemm_modes.autotable``'s last step.

The rules pick a width, then the output takes ⌈side / width⌉ column tiles of it. Where those tiles pad the
side by a whole step or more, a narrower width gives the same count of column tiles (the same cluster-tiles,
the same waves) with less padding in each: at 1600³ the fill rule's ping-pong 128×176 takes 10 column tiles,
160 idle columns in the last; 128×160 takes the same 10 with none, and each tile is a tenth smaller.

::

    N = 1600 in 10 column tiles    128×176: ▓▓▓▓▓▓▓▓▓▓ ▓▓▓▓▓▓▓▓▓▓ … ▓░░░░░░░░░  (1760 columns, 160 idle)
                                   128×160: ▓▓▓▓▓▓▓▓▓  ▓▓▓▓▓▓▓▓▓  … ▓▓▓▓▓▓▓▓▓   (1600 columns, none)

:func:`tightened` takes the width ⌈side / count⌉ rounded up to 8 columns, where that is narrower than the
pick's, and to 16 where an 8-column step does not pay: a width that is an odd multiple of 8 must store C in
wider subtiles than 8 columns (``gemm_modes.wide_subtiles``, or the column-major Cᵀ of a swapped launch,
whose 8-column subtiles are 8 contiguous rows), a 192-row tile with its warpgroups along N needs halves of
whole wgmma N extents (16 columns), and a tile in clusters of four keeps 16-column steps (it was picked for
its loads; the narrower tile's wider staging costs it an A/B stage and it saves no load).

NVIDIA H200, 2026-11-29, ours / torch against the pick in the same rounds: in 8-column steps while odd
multiples of 8 stored 8-column subtiles, 26 shapes drawn at random ran 0.901 → 0.900 (1664³ 128×176 →
128×168 0.959 → 0.832); in 16-column steps 11 squares drawn ran 0.825 → 0.890 (1600³ 128×176 → 128×160
0.744 → 0.960). With the wide subtiles, the 8-column steps: 24 shapes drawn among the picks they change
0.947 → 0.992, the losses all where they now keep 16-column steps (1960³ cooperative 128×256 → 128×248 in
8-column subtiles 0.946 → 0.820; 13616×168×4472 ping-pong 128×176 → 128×168 in fours 1.010 → 0.963); then
24 fresh draws of the rule as it is 0.939 → 0.981, 17 faster by more than 2 % (1240³ 128×112 → 128×104
0.910 → 1.079, 1648³ 128×176 → 128×168 0.878 → 0.996), one slower (2320³ 1.052 → 1.026).
"""

from __future__ import annotations

from hopper_gemm.config import Problem

from . import wide_subtiles
from .modes import TunedConfig

#: The steps the cut width is rounded up to where an odd multiple of 8 pays (the module's docstring).
STEP = 8
#: The steps where it does not: whole 16-column subtiles of C.
WHOLE_SUBTILE_STEP = 16
#: The narrowest tile width the kernel takes (one wgmma N extent of 64 and up).
NARROWEST = 64


def tightened(config: TunedConfig, m: int, n: int, problem: Problem) -> TunedConfig | None:
    """``config`` with its width cut to ⌈side / column tiles⌉ rounded up to :data:`STEP` (or
    :data:`WHOLE_SUBTILE_STEP` where :func:`takes_odd_eights` refuses it) where that is narrower (the
    module's docstring), else None; None also for split-K, stream-K and a deferred epilogue, whose parts and
    chunks follow the width they were picked with."""
    if config.split_k > 1 or config.stream_k or config.deferred_chunks:
        return None
    side = config.launch_shape(m, n)[1]
    count = -(-side // config.tile_n)
    share = -(-side // count)
    width = max(NARROWEST, -(-share // STEP) * STEP)
    if width % WHOLE_SUBTILE_STEP and not takes_odd_eights(config, width, problem):
        width = -(-width // WHOLE_SUBTILE_STEP) * WHOLE_SUBTILE_STEP
    return config.with_(tile_n=width) if width < config.tile_n else None


def takes_odd_eights(config: TunedConfig, width: int, problem: Problem) -> bool:
    """Whether the rule cuts ``config`` to ``width``, an odd multiple of 8: a cluster of at most two, no
    192-row tile with its warpgroups along N, and C stored in subtiles wider than 8 columns (a swapped
    launch's column-major Cᵀ, or ``wide_subtiles.widened`` finds them)."""
    if config.cluster_size > 2 or config.config.wg_split == "n":
        return False
    return config.swap_ab or wide_subtiles.widened(config.with_(tile_n=width), problem) is not None


def describe(cut: TunedConfig, pick: TunedConfig, m: int, n: int) -> str:
    """Why ``cut`` took ``pick``'s place, in one clause (``--explain``)."""
    side = pick.launch_shape(m, n)[1]
    count = -(-side // pick.tile_n)
    name = "M" if pick.swap_ab else "N"
    return (
        f"width cut to its column tiles: {name} = {side} in {count} column tiles of {cut.tile_n} "
        f"({count * cut.tile_n - side} columns idle; of {pick.tile_n}: {count * pick.tile_n - side})"
    )
