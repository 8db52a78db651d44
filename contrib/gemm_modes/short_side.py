"""Tiles that cut a short side of C into column tiles of 8-row steps: ``gemm_modes.autotable``'s short-side
rules (M ≤ 640 computed as Cᵀ = B·Aᵀ, N ≤ 640 as it is).

A tile's rows come in steps of 64 (a warpgroup's wgmma rows), its columns in steps of 8 (a wgmma N
extent). Where one side of C is short and not a whole count of row tiles, putting that side along the
tile's columns pads it by under 8 rows instead of up to 127: 272 rows are two column tiles of 136, where
128-row tiles take three (29 % idle). Each candidate cuts the short side into 1–4 column tiles, under 64,
128 or 192 rows of the long side; the rules take the one of least :func:`~gemm_modes.tile_time.tile_time`.
"""

from __future__ import annotations

from hopper_gemm.config import MAX_ACC_REGISTERS, GemmConfig, Schedule

from .modes import TunedConfig
from .tile_time import tile_time

#: The longest short side the rules weigh: four column tiles of 256.
SHORT_SIDE_MAX = 1024
#: Up to this many rows a short-side tile replaces any pick that pads them (measured up to 552 and 609).
#: Past it a 128-row tile pads at most a fifth, and what the other pick does well counts: the short-side
#: tile must keep its schedule or replace a cooperative one, a swapped one must not replace a pick that
#: already computes Cᵀ, and it must be :data:`MARGIN_PAST_PADDING_ALONE` faster by ``tile_time``. NVIDIA
#: H200, 2026-11-28, ours / torch against the pick without the rules, 36 shapes drawn at random with M
#: 668–976 or N 648–968: in place of ping-pong 128×144 / 128×160 five of eleven lost, up to 18 %
#: (13824×792×5120 0.794 against 0.973, 770×14336×4096 0.794 against 0.858; 808×18432×7168 gained, 0.966
#: against 0.800), in place of swapped 192×176 three of three (817×4288×3248 0.798 against 0.915).
PADDING_ALONE_MAX = 640
#: Of 44 shapes where the bound above let a short-side tile in (the 36 and 23 more drawn after it was
#: fixed), the 9 under 4 % faster by ``tile_time`` held all three losses (11346×856×4224 cooperative
#: 128×216 0.933 against 128×224's 1.019, 2070×648×14832 ping-pong 64×168 0.686 against 128×112's 0.761),
#: four ties and two gains; the 35 past it all ran 2–29 % faster (823×4096×14336 swapped 128×208 0.983
#: against cooperative 128×256's 0.838, 668×4096×14336 swapped ping-pong 128×168 0.968 against 128×192's
#: 0.752, 4096×920×14336 128×232 0.965 against 128×256's 0.906). Same card and day.
MARGIN_PAST_PADDING_ALONE = 1.04
#: The column tiles the short side is cut into: each ⌈extent / count⌉ wide, rounded up to
#: :data:`WIDTH_STEP` (a wgmma N extent; 16 where the warpgroups split the width).
COLUMN_TILES = (1, 2, 3, 4)
WIDTH_STEP = 8
#: The tiles' rows along the long side and their kind: ping-pong for 64 and 128 rows (cooperative past a
#: ping-pong warpgroup's 192 columns), cooperative 192 with the warpgroups along the width.
ROWS = (128, 64, 192)
#: The widest ping-pong 192-row tile: each warpgroup's 192 × 128 fp32 accumulators are 192 registers a thread, the
#: most beside its operands' fragments and addresses under the math warpgroups' 232.
PINGPONG_192_WIDEST = 128
#: A 192-row tile of a short M on Cᵀ, cut into two or more column tiles of a width in this range (8-column
#: steps), runs ping-pong: each warpgroup a whole 192×width tile (three m64 wgmmas per k-step, 1.5 × width
#: accumulators a thread: 192 at 128), where cooperative ones split the width between the warpgroups (each
#: 192 × width/2, a 16-column step). cuBLAS runs such tiles at 406×18432×7168 and 444×18432×7168 (torch
#: 2.11: nvjet 192×104 and 192×112 in 1×2): there ours ran 0.981 and 0.989 of torch against the picks'
#: 0.844 (256×136 2×1) and 0.935 (cooperative 192×112). NVIDIA H200, 2026-11-30, ours / torch against the
#: table without them, in the same rounds: a first form for any width ≤ 128 on 28 shapes (26 drawn at
#: random) changed 9 of them at these widths, 8 faster (399×18432×7168 0.977 → 1.134); on 32 drawn after
#: the range was fixed, all changed by it: 0.949 → 1.023, 29 faster by 2–17 %, none slower (412×18432×7168
#: 0.865 → 0.981, 201×9952×9496 0.873 → 0.935). Narrower ones weighed here were mixed: they took the place
#: of split-K or of ping-pong 128-row tiles in clusters of four and lost up to 12 % (170×10664×10232 0.926 →
#: 0.816); a narrower pick that stays a cooperative 192-row tile runs ping-pong at the end
#: (``gemm_modes.pingpong_192``).
PINGPONG_192_WIDTHS = range(104, PINGPONG_192_WIDEST + 1)
#: Cooperative tiles of 256 rows, each warpgroup 128 of them and the whole width: the warpgroup tiles of two 128-row
#: ping-pong tiles, the short side's operand loaded once for both. :func:`pick` weighs them in place of a ping-pong tile
#: in a 1×2 cluster (an even count of column tiles) where rows of K end off a 32-byte sector, and in place of a
#: cooperative 192-row tile in a 1×2 cluster (below). The first: there ping-pong's loads touch a fifth sector per box
#: row (``autotable.PINGPONG_UNSECTORED_K_COST``). NVIDIA H200, 2026-11-28, ours / torch against the table without them,
#: in the same rounds, on 63 shapes drawn at random where they are faster by ``tile_time``: in place of ping-pong 1×2
#: with rows of K off a sector all 17 ran 6–31 % faster (296×15912×4168 swapped 256×152 0.995 against 128×152's 0.758,
#: 16808×328×4488 1.035 against 0.875); in 2×1 clusters (odd column counts) 7 ran −5 … +31 % (528×10232×2728 0.913
#: against 0.961, 541×8792×4312 0.878 against 0.672); with rows in sectors 28 within ±6 % (13824×360×5120 0.833 against
#: 0.876, 168×28672×8192 0.999 against 0.947); in place of cooperative 192-row tiles 6 of 11 lost (261×9656×13128 256×88
#: 0.908 against 192×144's 1.059).
#: Where the fastest short-side tile is a cooperative 192-row one in a 1×2 cluster (an even count of column tiles),
#: :func:`pick` also weighs these tiles in 1×2 and takes the fastest where it is :data:`MARGIN` faster by ``tile_time``:
#: that happens where 256 rows take a whole wave fewer of the long side (M 257–288 against N = 28672: 192×144 in 150
#: cluster-tiles, 2.3 waves of 66; 256×136 in 112, 1.7). NVIDIA H200, 2026-11-29, ours / torch against the pick without
#: it, in the same rounds, on each kind of shape it changes in the four models' projections and 2,000 draws (M or N of
#: 257–288 against 28672, K 4096–14336; 536–544 against 24576): 13 shapes 0.826 → 0.984, 11 faster by 13–26 %
#: (272×28672×8192 0.803 → 1.025, 28672×272×8192 0.751 → 0.944), one within 1 %, 24576×536×4096 0.933 → 0.907 (in place
#: of the table's 192×192 2×1).
PAIRED_ROWS = 256
#: How much faster by ``tile_time`` a short-side tile must be than the pick without the rules:
#: 240×4096×14336 (ping-pong 128×64 1.085 of torch, swapped 64×120 1.173: 4 % faster by the estimate) and
#: 200×14336×4096 (cooperative 128×224 0.937, swapped 128×200 0.960: 9 %) take it; 448×7168×8192 (a tie by
#: the estimate: 1.060 against 1.090) does not. NVIDIA H200, 2026-11-28.
MARGIN = 1.03
#: Where the other pick's tiles fill less than this share of the short side's rows (cluster pairs included), a
#: short-side tile no slower by ``tile_time`` takes its place, without :data:`MARGIN`: the estimate counts the
#: turns of the SMs, not the loads spent on the idle rows. NVIDIA H200, 2026-11-29, ours / torch against the
#: pick with the margin, in the same rounds, on 12 shapes drawn at random where this changes the pick, and
#: 513×8736×2304: 0.965 → 1.051, 10 faster (513×8736×2304 swapped ping-pong 128×176 0.932 against unswapped
#: 128×176's 0.786 over 640 rows, 281×5928×12040 swapped 192×80 0.906 against 0.704), 215×28672×8192
#: 0.968 → 0.935 the worst. 448×7168×8192 (0.875 filled, a tie by the estimate) ran 1.090 unswapped against
#: 1.060 (the example of :data:`MARGIN`).
HEAVY_PADDING_FILL = 0.85
#: The share of the other pick's tiles along M (cluster pairs included) that a swapped short-side tile
#: needs idle, its kernel computing Cᵀ (along N no padding is asked: ``autotable._short_side``): at
#: 251×5120×8192 (two 128-row tiles, 2 % idle) the unswapped aligned split ran 1.053 of torch, the swapped
#: 128×88 0.914; at 629×7168×7168 (six 128-row tiles in pairs, 18 % idle) swapped 192×224 0.944 against
#: ping-pong 128×176's 0.863. NVIDIA H200, 2026-11-28.
MIN_PADDING = 0.03
#: Where the other pick pads M under :data:`MIN_PADDING` but is a ping-pong tile over
#: :data:`RESTREAMING_ROW_TILES` or more row tiles of M, each loading the whole of N's operand, a swapped
#: short-side tile (N's operand once per row tile of N) takes its place where this much faster by
#: ``tile_time``. NVIDIA H200, 2026-11-30, ours / torch against the pick without it, in the same rounds: on
#: 40 shapes where a form for any pick (1.15 faster, no padding asked) changes the pick (36 drawn at random,
#: 4 by hand), those over 3–7 ping-pong row tiles all ran level or faster (192×22432×2632 64×128 over 3:
#: 0.557 → 0.885; 313×9088×13024 64×128 over 5: 0.685 → 1.079; 630×10952×3120 128×144 over 5: 0.852 →
#: 0.950), those over fewer lost: one 64-row tile (63×22536×2640 0.930 of its speed), two of 128×64 in
#: clusters of four (252×2656×3504 0.872), and a split (384×4096×14336 0.966). On 45 more drawn before
#: the bound was set, the 33 it lets in: 1.113 of the pick's speed, 13 faster, none slower (188×19824×3464
#: 1.876, 317×8560×6152 1.682); the 12 it leaves out 0.970 (8 slower). On 30 drawn after: 0.933 → 1.000 of
#: torch, 13 faster, 3 slower (191×3072×4376 1.130 → 1.068).
RESTREAMING_MARGIN = 1.15
RESTREAMING_ROW_TILES = 3


def replaces_pingpong_past_padding(config: TunedConfig) -> bool:
    """Whether a short-side tile past :data:`PADDING_ALONE_MAX` rows may replace a ping-pong pick (the
    others must keep its schedule or replace a cooperative one): a swapped cooperative 192-row tile, its
    warpgroups along the width. Its 192 × width multiply-adds per k against 192 + width loaded rows keep
    its wgmmas ahead of the loads where ping-pong 128×144's (the wave balance's usual pick there) wait on
    them. NVIDIA H200, 2026-11-29, ours / torch against the ping-pong pick in the same rounds, on 29
    shapes of M 641–1024 against the four models' projections where a swapped cooperative tile is 4 %
    faster by ``tile_time``: the 13 swapped 192-row tiles ran 11 faster and 2 within 1 % (773×5120×13824
    192×208 0.872 against 128×144's 0.788, 645×7168×18432 192×224 1.399 against 128×176's 1.275,
    839×18432×7168 0.944 against 0.953), the 16 swapped 128-row ones 5 faster and 11 slower
    (857×14336×4096 128×216 0.845 against 128×160's 0.991, 801×7456×4688 128×208 0.995 against 0.785).
    On 17 more drawn after the rule was fixed, where it changes the pick: 1.059 against 1.015, 10 faster
    by 4–19 % (775×5120×13824 0.898 against 0.756), 6 within 1.5 %, 790×5120×13824 0.882 against 0.916."""
    return config.swap_ab and config.tile_m == 192 and config.wg_split == "n"


def short_side_tiles(
    extent: int,
    *,
    swap_ab: bool,
    along_n: bool = True,
    rows_of: tuple[int, ...] = ROWS,
    whole_192: bool = False,
) -> list[TunedConfig]:
    """The tiles for a short side of ``extent`` rows along their columns (``swap_ab``: M, the launch
    computing Cᵀ; else N): every row count of ``rows_of`` with the extent cut into each count of
    :data:`COLUMN_TILES`, where the width fits the tile's accumulators; cluster 1×2 for an even count of
    column tiles (each tile of the long side's operand multicast to the pair that shares it), else 2×1.
    ``along_n`` False leaves out the 192-row tiles, whose warpgroups split the width; ``whole_192``: a
    192-row tile of a short M in two or more column tiles of :data:`PINGPONG_192_WIDTHS` runs ping-pong
    instead (:func:`pick`'s own tiles; the other rules were measured without them)."""
    tiles = []
    for rows in rows_of if along_n else tuple(r for r in rows_of if r != 192):
        widest = MAX_ACC_REGISTERS if rows == PAIRED_ROWS else 256  # a warpgroup's 128 rows × the width
        for count in COLUMN_TILES:
            share = -(-extent // count)
            whole_width = pingpong_192_width(extent, count)
            whole = whole_192 and swap_ab and rows == 192 and count > 1 and whole_width in PINGPONG_192_WIDTHS
            split_width = rows == 192 and not whole
            width = whole_width if whole else _rounded(share, 16 if split_width else WIDTH_STEP)
            pingpong = (rows < 192 and width <= 192) or whole
            if width < 64 or width > widest or (rows == 64 and not pingpong):
                continue
            schedule = Schedule.PINGPONG if pingpong else Schedule.COOPERATIVE
            cluster_m = 1 if count % 2 == 0 else 2
            config = GemmConfig(rows, width, cluster_m, 3 - cluster_m, schedule, wg_split="n" if split_width else "m")
            if config not in (t.config for t in tiles):
                tiles.append(TunedConfig(config, swap_ab=swap_ab))
    return tiles


def _rounded(extent: int, step: int) -> int:
    return -(-extent // step) * step


def pingpong_192_width(extent: int, column_tiles: int) -> int:
    """The width of each of ``column_tiles`` ping-pong 192-row column tiles over a short side of ``extent`` rows
    (each warpgroup a whole tile): the share rounded up to :data:`WIDTH_STEP`, at least a 64-column wgmma."""
    return max(64, _rounded(-(-extent // column_tiles), WIDTH_STEP))


def fastest(tiles: list[TunedConfig], rows: int, cols: int, sms: int) -> tuple[TunedConfig, float] | None:
    """The tile of ``tiles`` of least ``tile_time`` on a ``rows`` × ``cols`` output (the short side the
    columns), and that time; on a tie the one that keeps more CTAs busy (more loads in flight: at
    128×9000×8192 swapped 192×64 in 94 tiles ran 0.858 and 0.889 of torch where 128×128 in 72 ran 0.755
    and 0.773, both load-bound at the same estimate; at 7168×424×14336, 0.908 against 0.914, a tie; NVIDIA
    H200, 2026-11-28), else the first; None for no tiles."""
    timed = [(config, tile_time(config, rows, cols, sms)) for config in tiles]
    if not timed:
        return None
    return min(timed, key=lambda pair: (pair[1], -pair[0].cluster_tiles(rows, cols) * pair[0].cluster_size))


def pick(
    extent: int, long_side: int, sms: int, *, swap_ab: bool, k_rows_in_sectors: bool = True
) -> tuple[TunedConfig, float] | None:
    """The short-side tile for a short side of ``extent`` rows against ``long_side`` (``swap_ab``: M, else
    N) and its ``tile_time``: the :func:`fastest` of :func:`short_side_tiles`, or where that is a ping-pong
    tile in a 1×2 cluster and rows of K end off a 32-byte sector (``k_rows_in_sectors`` False), the fastest
    of :data:`PAIRED_ROWS` rows if faster still; where it is a cooperative 192-row tile in a 1×2 cluster,
    the fastest of :data:`PAIRED_ROWS` rows in a 1×2 cluster if :data:`MARGIN` faster."""
    best = fastest(short_side_tiles(extent, swap_ab=swap_ab, whole_192=True), long_side, extent, sms)
    if best is None or best[0].cluster_n != 2:
        return best
    if best[0].schedule is Schedule.PINGPONG and not k_rows_in_sectors:
        paired = fastest(short_side_tiles(extent, swap_ab=swap_ab, rows_of=(PAIRED_ROWS,)), long_side, extent, sms)
        if paired is not None and paired[1] < best[1]:
            return paired
    if best[0].tile_m == 192:
        pairs = [t for t in short_side_tiles(extent, swap_ab=swap_ab, rows_of=(PAIRED_ROWS,)) if t.cluster_n == 2]
        paired = fastest(pairs, long_side, extent, sms)
        if paired is not None and paired[1] * MARGIN < best[1]:
            return paired
    return best


def covered(config: TunedConfig, extent: int, along_rows: bool) -> int:
    """The rows ``config``'s tiles (cluster pairs included) give a short side of ``extent`` (``along_rows``:
    the side its tile rows cover, else its columns)."""
    tile, cluster = (config.tile_m, config.cluster_m) if along_rows else (config.tile_n, config.cluster_n)
    tiles = -(-extent // tile)
    return -(-tiles // cluster) * cluster * tile


def outruns(time: float, other_time: float, extent: int, covered_rows: int, past_padding_alone: bool) -> str:
    """Why a short-side tile of ``tile_time`` ``time`` takes the place of a pick of ``other_time`` that gives the
    short side of ``extent`` rows ``covered_rows``: "faster" where :data:`MARGIN` faster
    (:data:`MARGIN_PAST_PADDING_ALONE` past :data:`PADDING_ALONE_MAX` rows), "padded" where no slower and that
    pick fills less than :data:`HEAVY_PADDING_FILL` of its rows; "" where it does not."""
    margin = MARGIN_PAST_PADDING_ALONE if past_padding_alone else MARGIN
    if time * margin < other_time:
        return "faster"
    return "padded" if extent < HEAVY_PADDING_FILL * covered_rows and time <= other_time else ""


def restreams_long_side(config: TunedConfig, extent: int, time: float, other_time: float) -> int | None:
    """The row tiles ``config`` (an unswapped pick, the short side of ``extent`` rows along its tile rows)
    cuts that side into, where they are :data:`RESTREAMING_ROW_TILES` or more ping-pong tiles and a
    swapped short-side tile of ``tile_time`` ``time`` is :data:`RESTREAMING_MARGIN` faster than its
    ``other_time``; else None. Each such row tile loads the whole long side's operand, where the swapped
    tile loads it once per tile of the long side."""
    row_tiles = -(-extent // config.tile_m)
    pingpong = config.schedule is Schedule.PINGPONG  # never split: split-K and stream-K are cooperative
    if pingpong and row_tiles >= RESTREAMING_ROW_TILES and time * RESTREAMING_MARGIN <= other_time:
        return row_tiles
    return None


def pads_short_side(config: TunedConfig, extent: int, along_rows: bool) -> int | None:
    """:func:`covered` where those rows leave more than :data:`MIN_PADDING` of them idle, else None."""
    padded = covered(config, extent, along_rows)
    return padded if extent < (1 - MIN_PADDING) * padded else None
