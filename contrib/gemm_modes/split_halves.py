"""A one-wave pick over a long K split across 192-row halves: ``gemm_modes.autotable``'s step after
``half_rows``.

Where the pick is a 64- or 128-row ping-pong tile in clusters of one or two and the output takes one wave,
every CTA owns one tile and ping-pong's second math warpgroup has none; a third of the SMs or more can sit
idle besides. A cooperative 192-row tile whose two warpgroups each take every row and half the columns
(``wg_split="n"``) keeps both warpgroups issuing, and split-K in 2–4 parts (``gemm_modes.split_k``) turns
its fewer tiles back into one full wave. cuBLAS runs this plan at 2072×688×11832 (torch 2.11: 192×176 in
three parts), where the pick is a 64×176 pair. A cooperative 192-row pick at most 96 columns wide (on C or
Cᵀ) keeps both warpgroups, but each issues m64n48 or narrower and reads a whole 64-row slice of A for so few
columns; the same search finds it wider 192-row tiles in fewer columns, split to fill the wave again
(273×5728×13336 on Cᵀ: 192×80 → 192×144 in two parts, cuBLAS's 192×72 plan ran at 1.0 there). A stream-K
pick whose whole tiles are fewer than the SMs (128×256 over a narrow N, its last wave's aligned split) shares
those tiles out among all SMs, partials and all; where a split does fewer multiply-adds per CTA than that
share (5848×392×12288: 192×208 in 2 parts, 19968 against 92 × 128×256 / 132 = 22838) it runs instead::

    2832×600 in 128×152 tiles, one per CTA (1×2)      192×160, warpgroups along N, K in 2 parts (1×2)
    ┌───────┬───────┬───────┬───────┐                ┌─────────┬─────────┬─────────┬─────────┐
    │128×152│       │       │       │ 23 rows        │ 192×160 │         │         │         │ 15 rows
    ├───────┼───────┼─ …                             ├────┬────┼─ …       × 2 parts of K
    92 CTAs of 132; one warpgroup each:              120 CTAs; two warpgroups each: 3 × m64n80
    2 × m64n152 per k-step over all of K             per k-step over half of K, partials summed in L2

:func:`splits` weighs the tiles 192 × ⌈N / c⌉ (16-column steps, 80–256 wide) for c = 1…8 column tiles, in
clusters of 1×2, 2×1 or 1×1, in 2–4 parts of at least :data:`MIN_PART_K_TILES` k-tiles
(:data:`MIN_PART_K_TILES_COOPERATIVE` from a cooperative pick), whose clusters the
GPU holds at once and whose tiles keep at least :data:`BUSY_SHARE` of the SMs busy, or as many as the pick
does where it keeps fewer (a 192×80 pick on 108 CTAs: 192×144 in 2 parts on 108); the one of fewest
multiply-adds per CTA and k-step (192 × width / parts) wins where that is at most the pick's.

NVIDIA H200, ours / torch against the pick in the same rounds. On every one-wave ping-pong pick at first
(2026-11-29; parts of 16+ k-tiles, 64- and 128-row picks, clusters of four included): 30 of the 165 of 9,000
draws it changed, 1.023 → 0.999, 9 faster and 13 slower; the losses were the 64-row picks over a short K
(5512×104×3784 0.950 → 0.641), the clusters of four (0.93–1.07, 1.008 on average) and parts under 60 k-tiles
(3064×624×2632 1.134 → 0.994), the gains 128-row pairs over long K (2832×600×11496 0.798 → 1.206,
2240×792×8536 1.219 → 1.518). Gated so, 128-row pairs: on 10 shapes of earlier draws 1.099 of the pick, and
on **34 fresh shapes (every one the gate changes in 54,000 draws) 0.935 → 1.001, 17 faster, 8 slower by
more than 2 %** (2864×544×10872 0.845 → 1.246, 3832×568×9800 0.894 → 1.109; 4016×760×9952 1.013 → 0.947 the
worst). 64-row pairs over a long K (2026-11-29; about 1 draw in 9,000, mostly a short side of 160–700 over
2,000–8,000 rows): 18 shapes 0.927 → 1.133 (10 faster, 2 slower: 64-wide halves, each warpgroup n32, lost at
all four N = 64 shapes, 0.95–0.98 of the pick, hence the 80-column floor), then **22 fresh ones 0.861 →
1.114, 16 faster, 1 slower** (2080×624×13160 0.700 → 1.461, 2104×632×16264 0.547 → 1.075; 8192×80×13728
1.132 → 1.043 the one loss). Narrow cooperative 192-row picks (2026-11-29; about 1 draw in 450 of small
sides): with swapped ping-pong picks in the same trial, 31 shapes 0.989 → 0.994, the 7 narrow ones all
faster (1.016–1.195), the swapped ping-pong ones mostly slower (4096×14336 projections 0.95–0.98 of the pick;
left out); then **24 fresh narrow ones 0.934 → 1.051, 21 faster, none slower** (6048×280×13288 0.835 →
1.113, 275×6024×9208 0.922 → 1.235). Stream-K picks of less than a wave (2026-11-29; 5 of 18,000 draws,
N of 200–470 over M of 5,700–12,500, K past 8,000): **24 shapes 0.936 → 1.066, every one faster**
(5848×392×12288 0.737 → 0.963, 6000×424×8552 0.848 → 1.014). A split keeping only as many SMs busy as a
pick that keeps under :data:`BUSY_SHARE` (2026-11-29; about 1 draw in 600): 10 shapes 0.957 → 1.039, then
**22 fresh ones 0.929 → 1.048, every one faster** (9248×168×12600 0.765 → 0.922, 2632×944×9784 0.721 → 1.030).
Parts of 40–59 k-tiles from a cooperative pick (2026-11-29; about 1 draw in 800): **23 fresh shapes 0.938 →
1.028, 16 faster, none slower** (285×5688×7240 0.776 → 1.043).
"""

from __future__ import annotations

from dataclasses import dataclass

from hopper_gemm.config import GemmConfig, Schedule

from .clusters_of_four import resident_clusters
from .modes import TunedConfig

#: The fewest k-tiles (64 deep) a part keeps where the pick is ping-pong: below it the partials' exchange
#: and the epilogue the pick hid under its other warpgroup's k-loop outweighed the k-loop the parts share
#: (3064×624×2632 in 2 parts of 20: 1.134 of torch → 0.994; parts of 44–57 from 128-row pairs: 8 of 14
#: slower, 3928×760×5600 1.005 → 0.874); parts of 61 at 2072×688×11832 ran 0.60 → 1.07.
MIN_PART_K_TILES = 60
#: The same for a cooperative pick (a narrow 192-row tile, stream-K), whose epilogue already follows its
#: k-loop: parts of 41–57 k-tiles ran faster on 13 of 15 shapes and slower on none (6144×328×5880 0.877 →
#: 1.097, 5912×440×6112 0.806 → 0.935).
MIN_PART_K_TILES_COOPERATIVE = 40
#: The narrowest split tile: 64 columns leave each warpgroup an m64n32 per k-step, and lost at every N = 64
#: pick it replaced (8000×64×13248 1.161 → 1.109).
MIN_WIDTH = 80
#: The widest cooperative 192-row pick split so: each warpgroup's m64n48 or narrower reads a whole 64-row
#: slice of A per 48 columns; 192×144 in 2 parts at 273×5728×13336 (Cᵀ) ran 1.067 of torch where 192×80 ran
#: 0.745. (Swapped ping-pong picks stay: at 4096×14336 projections the split lost, 0.95–0.98 of the pick.)
NARROW_WIDTH = 96
#: The share of the SMs the split's tiles (times parts) must keep busy in its one wave, or as many as the
#: pick keeps busy where that is fewer (:func:`busy_ctas`); a cluster's CTAs past M or N don't count
#: (3600×664×11368: 19 × 3 tiles of 192×224 in 2 parts, 114 busy of 120 launched, ran 1.194 of the pick).
#: 9248×168×12600: 192×96 in 1×2 keeps 98 CTAs busy, 192×176 in 2 parts (2×1) as many (0.765 → 0.922 of torch).
BUSY_SHARE = 0.85
#: Parts a split weighs, and the cluster shapes, in the order ties go.
PARTS = (2, 3, 4)
CLUSTERS = ((1, 2), (2, 1), (1, 1))


def replaceable(config: TunedConfig) -> bool:
    """Whether :func:`splits` weighs a split in place of ``config``, in a cluster of at most two and never
    split already: a 64- or 128-row ping-pong pick on C, a cooperative 192-row pick on C or Cᵀ at most
    :data:`NARROW_WIDTH` wide whose warpgroups split N, or a stream-K pick (on C: stream-K is never swapped)."""
    if config.cluster_size > 2 or config.split_k > 1:
        return False
    if config.stream_k:
        return True
    if config.schedule is Schedule.PINGPONG:
        return config.tile_m in (64, 128) and not config.swap_ab
    return config.tile_m == 192 and config.wg_split == "n" and config.tile_n <= NARROW_WIDTH


def per_cta_work(config: TunedConfig, m: int, n: int, sms: int) -> float | None:
    """Multiply-adds per CTA and k-step of ``config``, a pick :func:`replaceable` says a split may replace,
    where its tiles take less than one wave (one tile per CTA; stream-K: its tiles' share per SM); None where
    they take more."""
    rows, cols = config.launch_shape(m, n)
    area = config.tile_m * config.tile_n
    if config.stream_k:
        tiles = -(-rows // config.tile_m) * -(-cols // config.tile_n)
        return tiles * area / sms if tiles < sms else None
    return area if config.cluster_tiles(rows, cols) * config.cluster_size <= sms else None


def busy_ctas(config: TunedConfig, m: int, n: int, sms: int) -> int:
    """The CTAs a pick :func:`per_cta_work` weighs keeps busy: every SM for stream-K (it shares its tiles out
    among all), else one per tile."""
    return sms if config.stream_k else min(sms, config.launch_tiles(m, n))


def splits(config: TunedConfig, m: int, n: int, k: int, sms: int) -> TunedConfig | None:
    """The 192-row split (module docstring) in place of ``config``, a pick :func:`replaceable` says it may
    take whose tiles take less than one wave, on the pick's own output (Cᵀ where it is swapped); None where
    no split fits or none has no more multiply-adds per CTA (:func:`per_cta_work`)."""
    least = per_cta_work(config, m, n, sms) if replaceable(config) else None
    if least is None:
        return None
    fewest = MIN_PART_K_TILES if config.schedule is Schedule.PINGPONG else MIN_PART_K_TILES_COOPERATIVE
    busy = min(BUSY_SHARE * sms, busy_ctas(config, m, n, sms))
    search = Search(parts=PARTS, fewest_k_tiles=fewest, min_width=MIN_WIDTH, clusters=CLUSTERS)
    return fewest_multiply_adds(search, config, (m, n, k), sms, least=least, busy=busy)


@dataclass(frozen=True)
class Search:
    """The 192-row splits :func:`fewest_multiply_adds` weighs: ``parts`` in order, parts of at least
    ``fewest_k_tiles`` k-tiles, tiles ``min_width``–256 wide, ``clusters`` in the order ties go."""

    parts: tuple[int, ...]
    fewest_k_tiles: int
    min_width: int
    clusters: tuple[tuple[int, int], ...]


def fewest_multiply_adds(
    search: Search, pick: TunedConfig, mnk: tuple[int, int, int], sms: int, *, least: float, busy: float
) -> TunedConfig | None:
    """Of the tiles 192 × ⌈N / c⌉ (16-column steps) for c = 1…8 column tiles of ``pick``'s own output (Cᵀ
    where it is swapped), cooperative with warpgroups along N, split as ``search`` weighs them, whose clusters
    the GPU holds at once and whose tiles keep at least ``busy`` CTAs busy: the one of fewest multiply-adds per
    CTA and k-step (192 × width / parts), the first among equals, where that is at most ``least``; else None."""
    m, n, k = mnk
    rows, cols = pick.launch_shape(m, n)
    k_tiles = -(-k // pick.tile_k)
    best = None
    for columns in range(1, 9):
        width = -(-cols // columns // 16) * 16
        if not search.min_width <= width <= 256:
            continue
        for cluster_m, cluster_n in search.clusters:
            tile = GemmConfig(192, width, cluster_m, cluster_n, Schedule.COOPERATIVE, wg_split="n")
            halves = TunedConfig(tile, swap_ab=pick.swap_ab)
            for parts in search.parts:
                if k_tiles // parts < search.fewest_k_tiles:
                    break
                try:
                    candidate = halves.with_split_k(parts)
                except ValueError:  # no subtile width gives every part a share
                    break
                if candidate.one_wave_clusters(rows, cols) > resident_clusters(candidate.cluster_size, sms):
                    break
                if candidate.launch_tiles(m, n) < busy:  # a cluster's idle CTAs don't count
                    continue
                work = 192 * width / parts
                if work < least or best is None and work == least:
                    best, least = candidate, work
    return best


def describe(split: TunedConfig, pick: TunedConfig, m: int, n: int, sms: int) -> str:
    """Why :func:`splits` took ``pick``'s place, in one clause (``--explain``)."""
    tiles = split.launch_tiles(m, n) // split.split_k
    rows, cols = pick.launch_shape(m, n)
    shape = f"{pick.tile_m}×{pick.tile_n}"
    if pick.stream_k:
        whole = -(-rows // pick.tile_m) * -(-cols // pick.tile_n)
        opening = f"{whole} stream-K tiles of {shape} shared by {sms} SMs over a long K"
    else:
        opening = f"one {shape} tile per CTA over a long K"
    return (
        f"{opening}: 192×{split.tile_n} tiles whose warpgroups split N, {tiles} tiles × {split.split_k} parts on "
        f"{tiles * split.split_k} of {sms} SMs, per CTA {192 * split.tile_n // split.split_k} multiply-adds per k "
        f"against {per_cta_work(pick, m, n, sms):.0f}"
    )
