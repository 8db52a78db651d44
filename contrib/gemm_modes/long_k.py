"""Split-K for a narrow N (or, on Cᵀ, a short M) over a long K: ``gemm_modes.autotable``'s last rule.

Where N is narrow (at most :data:`MAX_N`, at most half of M) the output holds few tiles, each with a long
k-loop: one tile per CTA leaves SMs idle, or the tiles that fill them are 64 rows tall and load far more
operand rows per multiply-add. Split-K cuts each 128-row cooperative tile's k-loop into as many parts as
one wave holds (``gemm_modes.split_k``: every part on its own cluster, the parts summed through global
memory), so every SM streams its share of A at once.

The candidates are the cooperative tiles 128 × ⌈N / c⌉ (rounded up to 8) for N in c = 1 or 2 column
tiles, in clusters of 1×1, 2×1 or 1×2, in 2 to 8 parts whose clusters the GPU holds at once and whose
parts keep at least :data:`MIN_PART_K_TILES` k-tiles each. :func:`split_time` weighs them: a part's
k-loop is 1/s of the tile's (``tile_time`` / s), but the L2 serves the same operand rows whatever s
(``clusters_of_four.fetched_rows`` × ``L2_ROW_COST``: a cluster that shares a tile fetches it once); the
least wins, the most parts among ties (:data:`TIE`). :func:`replaces` takes it in place of the pick
before it where that is worth a fix-up (:data:`MAX_TIME_SHARE`, :data:`FIXUP_COST`), never where the
pick already covers C exactly on nearly every SM (:func:`covers_exactly`).

NVIDIA H200, 2026-11-29, ours / torch, the pick without the rule → with it, in the same rounds, on every
shape of nine draws of 48 small-side shapes where it takes the split: 0.868 → 1.097 on 42 (38 faster,
2600×264×2720 0.964 → 0.914 the worst) and, on eight draws made after the rule was set, 0.812 → 1.110 on
38 (35 faster, 2832×64×3816 1.026 → 1.003 the worst);
2088×72×10784 0.514 → 1.067, 2712×136×9976 0.623 → 1.325, 5328×152×6328 0.891 → 1.568
(docs/gemm-auto.md, "Split-K for a narrow N over a long K").

A short M against a long N is the same problem turned: where the problem can run as Cᵀ = B·Aᵀ (no bias, B
as (N, K)) and K has at least :data:`MIN_SWAPPED_K_TILES` k-tiles, the rule weighs the same splits of Cᵀ
on the swapped launch (:func:`swaps`). Same device and method, on the shapes where it takes the split:
0.898 → 1.122 on 43 small-side shapes, 0.889 → 1.134 on 58 more (draws, projections, a sweep shape) and,
drawn after its gate, 0.903 → 1.158 on 44 (158×3864×3040 1.221 → 1.064, 243×4080×3280 1.019 → 0.946) and
0.886 → 1.134 on 18 (docs/gemm-auto.md, "The same split for a short M, on Cᵀ"). With a bias a short M is
left alone: unswapped 128-row tiles lost on 7 of 11 shapes with M in one row tile (114×7136×12480 0.885
against 1.011).
"""

from __future__ import annotations

from hopper_gemm.config import GemmConfig, Schedule

from .clusters_of_four import L2_ROW_COST, fetched_rows, resident_clusters
from .modes import SPLIT_K_MOST_PARTS, TunedConfig
from .tile_time import tile_time

#: The widest N the rule splits: two column tiles of at most 256.
MAX_N = 512
#: The fewest k-tiles a part keeps (64-deep k-tiles): below it the fix-up outweighs the k-loop it shares out.
MIN_PART_K_TILES = 16
#: The largest share of the table pick's :func:`split_time` at which a split, its :func:`fixup_time`
#: added, replaces a pick that is not split-K (see the fit on :data:`FIXUP_COST`).
MAX_TIME_SHARE = 0.85
#: ``tile_time`` units per accumulator of a tile that a split's parts exchange, (s − 1) / s of the tile
#: (:func:`fixup_time`). Each is written and read back as fp32, 8 bytes, which at a k-step's load rate
#: would be 5 units; the parts also wait for one another. Fitted with :data:`MAX_TIME_SHARE` on 72 shapes
#: the rule changed (NVIDIA H200, 2026-11-29, ours / torch, the table's pick and the split in the same
#: rounds): without the term, 6 of 67 splits lost, all at K ≤ 4056 (4816×144×2704 0.831 of the table's
#: speed, 3752×184×3592 0.893); with it 1 of 58 (2600×264×2720, 0.948), and 2 gains are missed
#: (6280×160×3240 1.159, 3400×352×3248 1.058). It weighs only whether to split: in the choice among
#: splits it took fewer parts, which ran slower.
FIXUP_COST = 15

#: The fewest k-tiles a short M's split takes (swapped): the splits of 33–38 k-tiles lost 14–42 % to the
#: table's swapped ping-pong tiles on three of four shapes (184×4056×2304 1.307 of torch → 0.756,
#: 329×2800×2112, 186×4528×2448; 320×3120×2296 won, 0.846 → 1.066), those of 40–60 won on 8 of 9
#: (NVIDIA H200, 2026-11-29).
MIN_SWAPPED_K_TILES = 40

#: The share of the SMs a table pick that covers C exactly must keep busy for the rule to leave it
#: (:func:`covers_exactly`): the losses' picks kept 128 of 132.
FULL_SHARE = 0.9

COOPERATIVE_128 = TunedConfig(GemmConfig(tile_m=128, tile_n=128, schedule=Schedule.COOPERATIVE))
CLUSTERS = ((1, 1), (2, 1), (1, 2))


def in_class(mnk: tuple[int, int, int]) -> bool:
    """Whether the rule weighs ``mnk``: N at most :data:`MAX_N` and at most half of M, and K long enough
    for two parts of :data:`MIN_PART_K_TILES`."""
    m, n, k = mnk
    return n <= MAX_N and 2 * n <= m and -(-k // COOPERATIVE_128.tile_k) >= 2 * MIN_PART_K_TILES


def turned(mnk: tuple[int, int, int], swap_ab: bool) -> tuple[int, int, int]:
    """The shape a launch tiles: ``mnk``, or with ``swap_ab`` Cᵀ's (N, M, K)."""
    m, n, k = mnk
    return (n, m, k) if swap_ab else mnk


def swaps(mnk: tuple[int, int, int], swappable: bool) -> bool | None:
    """How the rule weighs ``mnk``: False for a narrow N (:func:`in_class`), True for a short M whose
    problem can run swapped (``swappable``: Cᵀ then has the narrow side) over at least
    :data:`MIN_SWAPPED_K_TILES` k-tiles, None where it does not."""
    if in_class(mnk):
        return False
    k_tiles = -(-mnk[2] // COOPERATIVE_128.tile_k)
    if swappable and in_class(turned(mnk, True)) and k_tiles >= MIN_SWAPPED_K_TILES:
        return True
    return None


def split_time(config: TunedConfig, mnk: tuple[int, int, int], sms: int) -> float:
    """The estimate the rule weighs by (arbitrary units, one problem's configurations against each other):
    the k-tiles of a part (all of K without split-K) times the longer of the tile's ``tile_time`` and the
    L2's time to serve every cluster's operand rows per k-step (``fetched_rows`` × ``L2_ROW_COST`` over
    the SMs, each part fetching its own)."""
    m, n, k = mnk
    rows, cols = config.launch_shape(m, n)
    parts = config.split_k
    k_tiles = -(-k // config.tile_k)
    l2 = L2_ROW_COST * fetched_rows(config, rows, cols) * parts / sms
    return k_tiles / parts * max(tile_time(config, rows, cols, sms), l2)


def candidates(mnk: tuple[int, int, int], sms: int, swap_ab: bool = False) -> list[TunedConfig]:
    """Every split the rule weighs for ``mnk`` (see the module's docstring); ``swap_ab``: of Cᵀ = B·Aᵀ,
    the tile's columns along M."""
    rows, cols, k = turned(mnk, swap_ab)
    k_tiles = -(-k // COOPERATIVE_128.tile_k)
    found = []
    for columns in (1, 2):
        width = -(-cols // columns // 8) * 8
        if width > 256 or (columns > 1 and width < 64):
            continue
        width = max(width, 64)  # a side under 64 still takes a whole tile of the narrowest width
        for cluster_m, cluster_n in CLUSTERS:
            base = COOPERATIVE_128.with_(tile_n=width, cluster_m=cluster_m, cluster_n=cluster_n, swap_ab=swap_ab)
            held = resident_clusters(base.cluster_size, sms)
            for parts in range(2, SPLIT_K_MOST_PARTS + 1):
                if k_tiles // parts < MIN_PART_K_TILES or base.cluster_tiles(rows, cols) * parts > held:
                    break
                try:
                    found.append(base.with_split_k(parts))
                except ValueError:  # no subtile width gives every part a share
                    break
    return found


#: Candidates within this share of the least :func:`split_time` count as ties, and the one of most parts
#: wins: where the L2 bounds them all their estimates agree, and more parts ran faster (3232×256×9064, 2×1
#: clusters: 5 parts 1.273 against 4 parts' 1.203; 2920×160×8344 1.206 against 1.172).
TIE = 0.01


def fastest(mnk: tuple[int, int, int], sms: int, swap_ab: bool = False) -> TunedConfig | None:
    """The candidate of least :func:`split_time`, of the most parts among ties (None where none fits)."""
    timed = [(split_time(c, mnk, sms), c) for c in candidates(mnk, sms, swap_ab)]
    if not timed:
        return None
    least = min(t for t, _ in timed)
    return max(((t, c) for t, c in timed if t <= least * (1 + TIE)), key=lambda tc: (tc[1].split_k, -tc[0]))[1]


def replaces(
    table_pick: TunedConfig, mnk: tuple[int, int, int], sms: int, swappable: bool = False
) -> TunedConfig | None:
    """:func:`fastest` where it takes ``table_pick``'s place (the module's docstring), else None;
    ``swappable``: whether the problem can run as Cᵀ = B·Aᵀ (:func:`swaps`)."""
    swap_ab = swaps(mnk, swappable)
    if swap_ab is None or covers_exactly(table_pick, mnk, sms):
        return None
    split = fastest(mnk, sms, swap_ab)
    if split is None:
        return None
    if table_pick.split_k > 1:  # splits against splits, each with its fix-up
        faster = split_time(split, mnk, sms) + fixup_time(split) < split_time(table_pick, mnk, sms) + fixup_time(
            table_pick
        )
        return split if faster else None
    share = (split_time(split, mnk, sms) + fixup_time(split)) / split_time(table_pick, mnk, sms)
    return split if share <= MAX_TIME_SHARE else None


def covers_exactly(config: TunedConfig, mnk: tuple[int, int, int], sms: int) -> bool:
    """Whether ``config``'s tiles (or their split-K parts) cover C without a padded row or column and keep at
    least :data:`FULL_SHARE` of the SMs busy in one wave: no idle SM and no padding for a split to recover. The
    estimate then overrates what a split saves in L2 traffic (NVIDIA H200, 2026-11-29, ours / torch, the
    table's ping-pong tiles against the split: 2048×512×4096 64×128 1.187 against 128×256 in 4 parts'
    0.858, 4096×256×4096 1.286 against 0.989, 8192×256×4096 128×128 1.019 against 0.934; the split-K rule's
    128×128 in 4 parts at 2048×256×8192, 64 of 66 clusters, 1.114 against 128×256 in 8 parts' 0.956). On twelve
    more round shapes it decides (same day and device) the pick ran faster on nine, the split on three by 2–4 %."""
    m, n, _ = mnk
    rows, cols = config.launch_shape(m, n)
    if rows % config.tile_m or cols % config.tile_n:
        return False
    busy = config.one_wave_clusters(rows, cols) * config.cluster_size
    return FULL_SHARE * sms <= busy <= sms


def fixup_time(split: TunedConfig) -> float:
    """What a split's fix-up adds to :func:`split_time`: :data:`FIXUP_COST` per accumulator exchanged."""
    return FIXUP_COST * split.tile_m * split.tile_n * (split.split_k - 1) / split.split_k


def describe(split: TunedConfig, table_pick: TunedConfig, mnk: tuple[int, int, int], sms: int) -> str:
    """Why :func:`replaces` took ``split``, in one clause (``--explain``)."""
    m, n, k = mnk
    rows, cols, _ = turned(mnk, split.swap_ab)
    k_tiles = -(-k // split.tile_k)
    clusters = split.one_wave_clusters(rows, cols)
    side = f"M = {m} ≤ {MAX_N}, computed as Cᵀ = B·Aᵀ" if split.swap_ab else f"N = {n} ≤ {MAX_N}"
    return (
        f"{side}, K = {k}: {split.cluster_tiles(rows, cols)} cluster-tiles × {split.split_k} parts of "
        f"{k_tiles // split.split_k}+ k-tiles on {clusters} of {resident_clusters(split.cluster_size, sms)} "
        f"clusters, per SM {split_time(split, mnk, sms):.3g} + fix-up {fixup_time(split):.3g} against "
        f"{split_time(table_pick, mnk, sms):.3g} (split_time)"
    )
