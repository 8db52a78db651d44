"""The table's rules that go by the operands' layout and the tile's shape rather than the wave count alone:
rows of K that end off a 32-byte sector, the 192×192 cooperative tile, the 64×128 fill tile, split-K in
one wave for an odd count of row tiles, the swapped small-M tiles and the ping-pong widths between the powers
of two in either cluster (``gemm_modes.autotable``)."""

from __future__ import annotations

from gemm_modes.autotable import (
    COOPERATIVE_DEFERRED,
    PADDED_COLUMN_CLUSTER_COST,
    PINGPONG_BETWEEN_MIN_K,
    PINGPONG_BETWEEN_REUSE_COST,
    PINGPONG_BETWEEN_WIDTHS,
    TALL_MERIT,
    PINGPONG_128x192,
    between_width_pingpong,
    cta_share,
    one_wave_split_k,
    pingpong_reuse_cost,
    rows_in_sectors,
    small_m_split,
    table_decision,
    wave_balance,
    whole_tiles,
)
from hopper_gemm.config import Problem, Schedule

BF16 = Problem("bf16")
TALL = TALL_MERIT[0][0]


def test_rows_in_sectors_counts_bytes_not_elements():
    """A row of K starts on a 32-byte sector when K × element bytes is a multiple of 32: 3000 bf16 elements
    (6000 bytes) do not, 6000 (12000 bytes) and 4096 do, and 1000 fp32 elements (4000 bytes) do."""
    assert not rows_in_sectors(3000, 2) and not rows_in_sectors(1000, 2) and not rows_in_sectors(5000, 2)
    assert rows_in_sectors(6000, 2) and rows_in_sectors(4096, 2) and rows_in_sectors(1000, 4)


def test_ping_pong_pays_for_rows_off_a_sector():
    """At 3000³ ping-pong 128×192 wins the wave balance on fill alone; with its sector cost the 192×192 tile
    wins, and the explain line names the cost. Where the rows fill whole sectors (3072³, 2432²×6000) the
    ping-pong tile stays."""
    assert wave_balance((3000, 3000, 3000), swappable=True) == PINGPONG_128x192
    assert wave_balance((3000, 3000, 3000), swappable=True, k_rows_in_sectors=False) == TALL
    decision = table_decision(BF16, (3000, 3000, 3000))
    assert decision.config == TALL
    assert "rows of K (6000 bytes) end off a 32-byte sector: ping-pong weighed 0.08 lower" in decision.line()
    for mnk in ((3072, 3072, 3072), (2432, 2432, 6000)):
        assert table_decision(BF16, mnk).config.schedule is Schedule.PINGPONG, mnk
    # without a tile that may split its warpgroups along N the cost moves 3000³ to a cooperative 128-row tile
    assert table_decision(Problem("bf16", bias=True), (3000, 3000, 3000)).config.tile_m == 128


def test_the_192_tile_only_where_its_warpgroups_may_split_n():
    """Cooperative 192×192 (warpgroups along N) where it fills the waves 128-row tiles cannot (2104²×4096:
    121 tiles of 192×192 pad to 132 in 2×1 clusters, one wave), past K = 2048 only, never with a bias, B as
    (K, N) (a warpgroup's 96 columns start inside a swizzle atom) or where the widths are left out."""
    assert (TALL.tile_m, TALL.tile_n, TALL.wg_split, TALL.swap_ab) == (192, 192, "n", False)
    decision = table_decision(BF16, (2104, 2104, 4096))
    assert decision.config == TALL
    assert "this tile keeps 100% of the clusters' turns busy (128×256: 61%)" in decision.line()
    for problem in (Problem("bf16", bias=True), Problem("bf16", b_major="n")):
        assert table_decision(problem, (2104, 2104, 4096)).config.wg_split == "m", problem
    assert table_decision(BF16, (2104, 2104, 4096), widths=False).config.wg_split == "m"
    assert table_decision(BF16, (2112, 2112, 2048)).config.wg_split == "m"  # K ≤ 2048: not measured
    assert table_decision(BF16, (4096, 4096, 4096)).config.tile_m == 128  # 128×256 fills 97 %, 192×192 92 %


def test_the_fill_rule_turns_its_one_warpgroup_tile_to_64x128():
    """At equal streamed rows the fill rule takes 64×128 (one m64n128 wgmma per k-step) over 128×64 where
    M ≥ N, K ≤ 2048 and K's rows fill whole sectors; otherwise 128×64 as before."""

    def tile(mnk):
        config = table_decision(BF16, mnk).config
        return config.schedule, config.tile_m, config.tile_n, config.cluster_m, config.cluster_n

    pp = Schedule.PINGPONG
    assert tile((1024, 1024, 1024)) == (pp, 64, 128, 1, 2)
    assert tile((896, 896, 896)) == (pp, 64, 128, 2, 1)  # 7 column tiles cannot pair, 14 row tiles can
    assert tile((1000, 1000, 1000)) == (pp, 128, 64, 1, 2)  # 2000-byte rows: off a sector
    assert tile((640, 1536, 2048)) == (pp, 128, 64, 1, 2)  # M < N
    assert whole_tiles(BF16, (1024, 1024, 4096)).tile_m == 128  # past SHORT_K


def test_split_k_in_one_wave_for_an_odd_count_of_row_tiles():
    """M = 384 (three row tiles): split-K in 2 of 128×192 tiles in 1×2 clusters holds all 66 clusters in
    one wave and beats the aligned split's score; with an even row count (256) or a single row tile the
    aligned split stays, and where N's column tiles cannot pair (5120 / 192: 27) 128×192 is not weighed."""
    parts = one_wave_split_k((384, 4096, 14336))
    assert parts is not None
    config, score = parts
    assert (config.tile_m, config.tile_n, config.cluster_m, config.cluster_n, config.split_k) == (128, 192, 1, 2, 2)
    assert score == 66 / 66 * 4096 / (22 * 192)
    decision = table_decision(BF16, (384, 4096, 14336))
    picked = decision.config  # with the staging in the A/B ring (one part per CTA) and the plain stage count
    assert picked.staging_in_ring and picked.with_(staging_in_ring=False, ab_stages=None) == config
    assert "3 row tiles (odd), split-K in 2 of 128×192 tiles holds 66 of 66 clusters in one wave" in decision.line()
    assert small_m_split((384, 4096, 8192))[0] == config
    for mnk in ((256, 5120, 13824), (128, 11008, 14336)):
        assert small_m_split(mnk)[0].stream_k_aligned, mnk
    wide = one_wave_split_k((384, 5120, 13824))[0]  # 128×256: 20 column tiles pair, 30 × 2 parts fit
    assert (wide.tile_n, wide.split_k) == (256, 2)
    assert one_wave_split_k((384, 4096, 1024)) is None  # 16 k-tiles: parts of 8 are too short


def test_one_tile_per_cta_stages_in_the_ring_instead_of_deferring():
    """A deferred epilogue hides each tile's stores under the next tile's k-loop; where the cluster-tiles
    fit the clusters at once there is no next tile, so the pick stages in the A/B ring instead (512×7168×2048:
    64 cluster-tiles of 128×224 for 66 clusters). Past one wave the deferred epilogue stays; stream-K's and
    split picks keep their own epilogues."""
    one = table_decision(BF16, (512, 7168, 2048)).config
    assert (one.tile_n, one.deferred_chunks, one.staging_in_ring) == (224, 0, True)
    many = table_decision(BF16, (512, 14336, 4096)).config  # 128 cluster-tiles of 128×224
    assert (many.tile_n, many.deferred_chunks, many.staging_in_ring) == (224, 7, False)
    assert table_decision(BF16, (8192, 8192, 8192)).config.stream_k  # stream-K: its own store path


def test_a_pair_of_192_row_tiles_where_128_row_tiles_take_three():
    """The small-M rule weighs ping-pong 192×112 in a 2×1 cluster (each B tile multicast to both row tiles)
    for 256 < M ≤ 384, past one wave: 320×14336×4096 (the second tile 128 of 192 rows) takes it where the
    swap may not (a bias, or a comm role); at M = 256 two 128-row tiles already pair, and at M = 448
    192-row tiles take three."""
    biased = Problem("bf16", bias=True)
    tall = table_decision(biased, (320, 14336, 4096)).config
    assert (tall.schedule, tall.tile_m, tall.tile_n, tall.cluster_m) == (Schedule.PINGPONG, 192, 112, 2)
    assert "2 row tiles of 192, each B tile multicast to a pair" in table_decision(biased, (320, 14336, 4096)).line()
    assert table_decision(BF16, (320, 14336, 4096), swap=False).config == tall
    for m in (256, 448):
        assert table_decision(biased, (m, 14336, 4096)).config.tile_m == 128, m


def test_tile_time_is_waves_times_the_longer_of_wgmmas_and_loads():
    """``tile_time``: ⌈cluster-tiles / clusters⌉ × max(tile area, LOAD_BOUND_INTENSITY × (rows + columns)).
    128×80 tiles on 4096 × 320 in clusters of 1×2: 32 × 4 = 128 tiles in one wave, load-bound (80 × 208 =
    16640 > 10240); 128×192 tiles on 320 × 4096: 3 × 22 = 66, one wave, 25600; a cluster of two pads an odd
    tile count (3 row tiles in 2×1 clusters: 4); split-K in one wave is charged as its whole tile, stream-K
    and split-K past one wave by the fraction of the waves their tiles take."""
    from gemm_modes.modes import tuned_config
    from gemm_modes.tile_time import LOAD_BOUND_INTENSITY, tile_time

    assert LOAD_BOUND_INTENSITY == 80
    assert tile_time(tuned_config(128, 80, 1, 2, "pingpong", swap_ab=True), 4096, 320, 132) == 16640
    wide = tuned_config(128, 192, 1, 2, "cooperative")
    assert tile_time(wide, 320, 4096, 132) == tile_time(wide.with_(split_k=2), 320, 4096, 132) == 25600
    # 3 row tiles padded to 4 in 2×1 clusters: 4 × 22 = 88 tiles = 44 cluster-tiles, one wave of 66 clusters
    assert tile_time(wide.with_(cluster_m=2, cluster_n=1), 320, 4096, 132) == 25600
    assert tile_time(wide, 320, 4096, 64) == 2 * 25600  # 33 cluster-tiles on 32 clusters: two waves
    # stream-K spreads the k-tiles: 43 cluster-tiles of 128×256 on 66 clusters are 43/66 of a wave, and
    # split-K past one wave splits the last: 144 on 66 are 144/66 waves
    aligned = tuned_config(128, 256, 2, 1, "cooperative", stream_k=True, stream_k_aligned=True)
    assert tile_time(aligned, 11008, 232, 132) == 43 / 66 * 32768
    tail = tuned_config(128, 256, 2, 1, "cooperative", split_k=4)
    assert tile_time(tail, 18432, 480, 132) == 144 / 66 * 32768


def test_short_side_tiles_cut_it_into_column_tiles_of_eight():
    """The short-side candidates for 272 rows: 128 rows of the long side with the short one in 1 (272: too
    wide), 2 (136), 3 (96 rounded from 91) or 4 (72 from 68) column tiles; 64 rows with the ping-pong widths;
    192 rows (warpgroups along the width) with widths in 16s. Cluster 1×2 (the long side's operand multicast)
    for an even count of column tiles. Swapped for M, as they are for N; without the 192-row tiles where
    the warpgroups may not split the width."""
    from gemm_modes.short_side import pads_short_side, short_side_tiles

    swapped = short_side_tiles(272, swap_ab=True)
    tiles = {(c.tile_m, c.tile_n, c.cluster_n, c.schedule.value, c.wg_split) for c in swapped}
    assert tiles == {
        (128, 136, 2, "pingpong", "m"),
        (128, 96, 1, "pingpong", "m"),
        (128, 72, 2, "pingpong", "m"),
        (64, 136, 2, "pingpong", "m"),
        (64, 96, 1, "pingpong", "m"),
        (64, 72, 2, "pingpong", "m"),
        (192, 144, 2, "cooperative", "n"),
        (192, 96, 1, "cooperative", "n"),
        (192, 80, 2, "cooperative", "n"),
    }
    assert all(c.swap_ab for c in swapped)
    assert [c.with_(swap_ab=True) for c in short_side_tiles(272, swap_ab=False)] == swapped
    assert {c.tile_m for c in short_side_tiles(272, swap_ab=False, along_n=False)} == {64, 128}
    wide = {(c.tile_m, c.tile_n, c.schedule.value) for c in short_side_tiles(400, swap_ab=True)}
    assert (128, 200, "cooperative") in wide and (64, 200, "pingpong") not in wide  # past ping-pong's 192
    # 272 rows in 128-row tiles: 384 (29 % idle); 251 in two: 256 (2 %, under MIN_PADDING); in 2×1 pairs: 3 → 4
    plain = PINGPONG_128x192.with_(cluster_m=1, cluster_n=2)
    assert pads_short_side(plain, 272, along_rows=True) == 384
    assert pads_short_side(plain, 251, along_rows=True) is None
    assert pads_short_side(PINGPONG_128x192, 300, along_rows=True) == 512
    assert pads_short_side(plain, 272, along_rows=False) == 384  # 192-wide columns, in pairs


def test_small_m_swaps_where_the_unswapped_row_tiles_pad_m():
    """M ≤ 640 past K = 2048, without a bias and with B as (N, K): where the unswapped pick's row tiles
    (cluster pairs included) leave over 3 % of their rows idle, C is computed as Cᵀ = B·Aᵀ with the swapped
    tile of least ``tile_time`` if it is 3 % faster by it, and the explain line gives both times."""
    picks = {
        (272, 8192, 8192): (128, 136, 1, 2),  # 384 rows of 128×192 tiles; two column tiles of 136
        (320, 4096, 8192): (128, 80, 1, 2),  # against split-K's 128×192 tiles, charged whole
        (552, 5248, 7168): (128, 184, 2, 1),
        (144, 8192, 8192): (128, 72, 1, 2),
        (136, 18432, 7168): (192, 144, 2, 1),  # 96 tiles of 192 rows in one wave
        (240, 4096, 14336): (64, 120, 1, 2),
    }
    for mnk, tile in picks.items():
        config = table_decision(BF16, mnk).config
        assert config.swap_ab and (config.tile_m, config.tile_n, config.cluster_m, config.cluster_n) == tile, mnk
    # a tie by tile_time (load-bound 128×128 and 192×64): the tile that keeps more CTAs busy (94 against 72)
    tied = table_decision(BF16, (128, 9000, 8192)).config
    assert tied.swap_ab and (tied.tile_m, tied.tile_n, tied.cluster_n, tied.wg_split) == (192, 64, 2, "n")
    line = table_decision(BF16, (272, 8192, 8192)).line()
    assert "M = 272 ≤ 640 in 384 rows of 128×192 tiles: computed as Cᵀ = B·Aᵀ, M in 2 column tiles of 136" in line
    assert "per SM 21120 against 25600 (tile_time)" in line
    # 2 % of 256 rows idle (the aligned split ran ahead); whole 128-row tiles; a tie by tile_time (448)
    for mnk in ((251, 5120, 8192), (256, 5120, 13824), (128, 14336, 4096), (448, 7168, 8192)):
        assert not table_decision(BF16, mnk).config.swap_ab, mnk
    # short K (unmeasured), M past 1024, a bias, B as (K, N), a comm role
    for mnk in ((272, 8192, 2048), (1100, 8192, 8192)):
        assert not table_decision(BF16, mnk).config.swap_ab, mnk
    for problem in (Problem("bf16", bias=True), Problem("bf16", b_major="n")):
        assert not table_decision(problem, (272, 8192, 8192)).config.swap_ab, problem
    assert not table_decision(BF16, (272, 8192, 8192), swap=False).config.swap_ab


def test_small_m_swaps_where_three_or_more_pingpong_row_tiles_each_load_all_of_b():
    """Where the unswapped pick pads M under 3 % but is an unsplit ping-pong tile over three or more row
    tiles of M (each loading the whole of B), the swapped short-side tile takes its place where 15 % faster
    by ``tile_time``; over one or two row tiles, or in place of a split, it does not. The explain line
    counts the row tiles."""
    from gemm_modes.short_side import RESTREAMING_MARGIN, restreams_long_side, short_side_tiles

    pingpong_64 = short_side_tiles(318, swap_ab=False, rows_of=(64,))[0]
    assert (pingpong_64.tile_m, pingpong_64.schedule.value) == (64, "pingpong")
    assert restreams_long_side(pingpong_64, 318, 100.0, 100.0 * RESTREAMING_MARGIN) == 5  # 320 rows: 0.6 % idle
    assert restreams_long_side(pingpong_64, 318, 100.0, 100.0 * RESTREAMING_MARGIN - 1) is None
    assert restreams_long_side(pingpong_64, 128, 100.0, 200.0) is None  # two row tiles
    assert restreams_long_side(COOPERATIVE_DEFERRED, 384, 100.0, 200.0) is None  # cooperative (and any split)
    picks = {
        (318, 9224, 4144): (192, 160, 1, 2),  # against ping-pong 64×128 over 5 row tiles: 30720 against 46080
        (313, 9088, 13024): (192, 160, 1, 2),
        (192, 22432, 2632): (192, 192, 2, 1),  # over 3: 36864 against 61440
        (630, 10952, 3120): (128, 216, 2, 1),  # against ping-pong 128×144 over 5
        (880, 18432, 7168): (192, 224, 1, 2),  # over 7, past 640 rows
    }
    for mnk, tile in picks.items():
        config = table_decision(BF16, mnk).config
        assert config.swap_ab and (config.tile_m, config.tile_n, config.cluster_m, config.cluster_n) == tile, mnk
    line = table_decision(BF16, (318, 9224, 4144)).line()
    assert "M = 318 ≤ 640 in 320 rows of 64×128 tiles: computed as Cᵀ = B·Aᵀ, M in 2 column tiles of 160" in line
    assert "the other pick pads M by under 3% but loads all of N's operand in each of its 5 row tiles" in line
    # one 64-row tile (B loaded once); two 128-row tiles in clusters of four; a split; 1.11 by tile_time
    for mnk in ((63, 22536, 2640), (252, 2656, 3504), (384, 4096, 14336), (383, 10728, 3808)):
        assert not table_decision(BF16, mnk).config.swap_ab, mnk


def test_short_m_in_two_or_more_192_row_column_tiles_104_to_128_wide_runs_them_pingpong():
    """A 192-row short-side tile of a short M on Cᵀ, in two or more column tiles 104–128 wide, runs
    ping-pong (each warpgroup the whole tile, 8-column steps) in place of cooperative with the warpgroups
    along the width (16-column steps): cuBLAS's plan at 406×18432×7168. One column tile, narrower or wider
    tiles, N on the columns, and the other rules' tiles (``whole_192`` off) keep the warpgroups along the width."""
    from gemm_modes.short_side import PINGPONG_192_WIDTHS, short_side_tiles

    def tile_192(extent, **kwargs):
        return {t.config.tile_n: t.config for t in short_side_tiles(extent, rows_of=(192,), **kwargs)}

    cut = tile_192(412, swap_ab=True, whole_192=True)  # 4 column tiles of 103 → 104, 2 of 206 → 208
    assert (cut[104].schedule.value, cut[104].wg_split, cut[104].cluster_n) == ("pingpong", "m", 2)
    assert (cut[208].schedule.value, cut[208].wg_split) == ("cooperative", "n")
    assert 112 not in cut  # the cooperative 16-column step's width is gone
    assert tile_192(412, swap_ab=True)[112].wg_split == "n"  # whole_192 off
    assert tile_192(412, swap_ab=False, whole_192=True)[112].wg_split == "n"  # N on the columns
    assert tile_192(120, swap_ab=True, whole_192=True)[128].wg_split == "n"  # one column tile
    assert tile_192(150, swap_ab=True, whole_192=True)[80].wg_split == "n"  # 2 of 75: under 104
    assert min(PINGPONG_192_WIDTHS) == 104 and max(PINGPONG_192_WIDTHS) == 128
    picks = {
        (412, 18432, 7168): (104, 4),  # in place of cooperative 256×136 2×1
        (444, 18432, 7168): (112, 4),  # in place of cooperative 192×112 with the warpgroups along N
        (209, 11552, 4424): (112, 2),
        (201, 9952, 9496): (104, 2),
    }
    for mnk, (width, columns) in picks.items():
        decision = table_decision(BF16, mnk)
        config = decision.config
        assert config.swap_ab and (config.tile_m, config.tile_n, config.cluster_n) == (192, width, 2), mnk
        assert (config.schedule.value, config.wg_split) == ("pingpong", "m"), mnk
        assert f"M in {columns} column tiles of {width} under 192 rows of N" in decision.line(), mnk


def test_short_sides_past_640_rows_replace_only_a_tile_they_beat_by_four_percent_in_its_schedule():
    """From 641 to 1024 rows the short-side rules take their tile only where it is 4 % faster by
    ``tile_time`` and replaces a cooperative tile or one of its own schedule, and a swapped one only where
    the other pick does not compute Cᵀ already; the explain line says so."""
    picks = {
        (823, 4096, 14336): (True, 128, 208, "cooperative"),  # against cooperative 128×256: 22 % by tile_time
        (668, 4096, 14336): (True, 128, 168, "pingpong"),  # against ping-pong 128×192
        (4096, 920, 14336): (False, 128, 232, "cooperative"),
        (808, 18432, 7168): (True, 192, 208, "cooperative"),  # swapped 192 rows may replace ping-pong 128×144
        (645, 7168, 18432): (True, 192, 224, "cooperative"),  # and ping-pong 128×176
    }
    for mnk, (swapped, rows, width, schedule) in picks.items():
        config = table_decision(BF16, mnk).config
        assert (config.swap_ab, config.tile_m, config.tile_n, config.schedule.value) == (swapped, rows, width, schedule)
    line = table_decision(BF16, (823, 4096, 14336)).line()
    assert "M = 823 ≤ 1024 in 1024 rows of 128×256 tiles: computed as Cᵀ = B·Aᵀ, M in 4 column tiles of 208" in line
    assert "past 640 rows: over 4% faster, in place of a cooperative tile" in line
    kept = {
        # the wave balance's swapped 256×112 in place of ping-pong 128×160 (0.903 of torch against 0.709 and
        # 0.937 against 0.843, H200 2026-11-29; at 778 rows now 256×104, M in 8 column tiles where 112 takes
        # 7 and 1.7 waves); the short side's swapped 128×208 / 128×216 not taken
        (778, 8192, 4096): (True, 256, 104, "cooperative"),
        (856, 8192, 4096): (True, 256, 112, "cooperative"),
        (817, 4288, 3248): (True, 256, 120, "cooperative"),  # the wave balance's swapped tile stays
        (11346, 856, 4224): (False, 128, 224, "cooperative"),  # 128×216: 3.7 % faster by tile_time
        (2070, 648, 14832): (False, 128, 112, "pingpong"),  # 64×168: 3.4 %
    }
    for mnk, (swapped, rows, width, schedule) in kept.items():
        config = table_decision(BF16, mnk).config
        assert (config.swap_ab, config.tile_m, config.tile_n, config.schedule.value) == (swapped, rows, width, schedule)
        assert "past 640" not in table_decision(BF16, mnk).line()


def test_a_short_side_tile_no_slower_replaces_a_pick_that_fills_under_85_percent_of_its_rows():
    """``short_side.outruns``: the margin is waived where the other pick fills less than
    ``HEAVY_PADDING_FILL`` of the short side's rows, and a tie by ``tile_time`` goes to the short-side tile;
    at 0.875 filled (448×7168×8192) the tie stays with the other pick. The explain line says why."""
    from gemm_modes.short_side import HEAVY_PADDING_FILL, MARGIN, outruns

    assert HEAVY_PADDING_FILL == 0.85
    assert outruns(100.0, 100.0 * MARGIN + 1, 600, 640, past_padding_alone=False) == "faster"
    assert outruns(100.0, 100.0 * MARGIN + 1, 513, 640, past_padding_alone=False) == "faster"  # the margin first
    assert outruns(100.0, 100.0, 513, 640, past_padding_alone=False) == "padded"  # a tie, 80 % filled
    assert outruns(100.0, 100.0, 448, 512, past_padding_alone=False) == ""  # a tie, 87.5 % filled
    assert outruns(101.0, 100.0, 513, 640, past_padding_alone=False) == ""  # slower, however padded
    assert outruns(100.0, 102.0, 600, 640, past_padding_alone=False) == ""  # 94 % filled, 2 % faster
    assert outruns(100.0, 103.5, 900, 1024, past_padding_alone=True) == ""  # past 640 rows: 4 % asked
    config = table_decision(BF16, (513, 8736, 2304)).config  # 128×176 ping-pong over 640 rows, tied
    assert (config.swap_ab, config.tile_m, config.tile_n, config.cluster_m) == (True, 128, 176, 2)
    assert "the other pick fills 80% of its rows: no slower suffices" in table_decision(BF16, (513, 8736, 2304)).line()
    assert not table_decision(BF16, (448, 7168, 8192)).config.swap_ab


def test_paired_rows_replace_a_pingpong_pair_where_rows_of_k_end_off_a_sector():
    """Where the short-side tile is ping-pong in a 1×2 cluster and rows of K end off a 32-byte sector, a
    cooperative tile of 256 rows (each warpgroup 128, the width whole) replaces it if faster by
    ``tile_time``; not with rows of K in sectors, nor in place of a 2×1 pair."""
    from gemm_modes.short_side import PAIRED_ROWS, pick, short_side_tiles

    picks = {
        (296, 15912, 4168): (True, 152),  # 8336-byte rows
        (16808, 328, 4488): (False, 168),
        (13224, 344, 15528): (False, 176),
    }
    for mnk, (swapped, width) in picks.items():
        config = table_decision(BF16, mnk).config
        assert (config.swap_ab, config.tile_m, config.tile_n) == (swapped, PAIRED_ROWS, width), mnk
        assert (config.schedule.value, config.wg_split, config.cluster_m, config.cluster_n) == (
            "cooperative",
            "m",
            1,
            2,
        )
    # rows of K in sectors (5120 × 2 bytes), a 2×1 pair (three column tiles of 176): ping-pong 128 rows
    for mnk in ((13824, 360, 5120), (528, 10232, 2728)):
        config = table_decision(BF16, mnk).config
        assert (config.tile_m, config.schedule.value) == (128, "pingpong"), mnk
    # rows of K in sectors unless told otherwise; a warpgroup's 128 rows × the width within 192 accumulators:
    # 600 rows in four column tiles of 152, not three of 200
    assert pick(296, 15912, 132, swap_ab=True)[0].tile_m == 128
    assert pick(296, 15912, 132, swap_ab=True, k_rows_in_sectors=False)[0].tile_m == PAIRED_ROWS
    assert {c.tile_n for c in short_side_tiles(600, swap_ab=True, rows_of=(PAIRED_ROWS,))} == {152}


def test_256_row_tiles_take_a_192_row_pair_s_place_where_they_take_a_wave_fewer():
    """Where the short-side tile is cooperative 192-row in a 1×2 cluster, the 256-row tile in 1×2 replaces it
    if 3 % faster by ``tile_time``: at M = 272 against N = 28672 (rows of K in sectors) 112 cluster-tiles
    of 256×136 take 2 waves of 66 where 150 of 192×144 take 3; at N = 18432 both take 2 and 192 rows stay."""
    from gemm_modes.short_side import MARGIN, PAIRED_ROWS, pick, short_side_tiles
    from gemm_modes.tile_time import tile_time

    for mnk, swapped in (((272, 28672, 8192), True), ((28672, 272, 8192), False), ((285, 28672, 4096), True)):
        config = table_decision(BF16, mnk).config
        assert (config.swap_ab, config.tile_m, config.cluster_m, config.cluster_n) == (swapped, PAIRED_ROWS, 1, 2)
        assert config.schedule.value == "cooperative" and config.wg_split == "m"
    best = pick(272, 28672, 132, swap_ab=True)
    tall = [t for t in short_side_tiles(272, swap_ab=True) if t.tile_m == 192 and t.cluster_n == 2]
    tall_time = min(tile_time(t, 28672, 272, 132) for t in tall)
    assert best[0].tile_n == 136 and best[1] * MARGIN < tall_time
    assert tile_time(best[0], 28672, 272, 132) == 2 * 256 * 136  # two waves, compute-bound
    assert pick(280, 18432, 132, swap_ab=True)[0].tile_m == 192  # both two waves: 192 rows stay


def test_small_n_cuts_n_into_column_tiles_where_the_other_picks_take_longer():
    """The same for N ≤ 640 without a swap (``narrow_n``): where the pick without it takes 3 % longer by
    ``tile_time`` (padding N or not), N is cut into column tiles of 8-row steps. Without a bias (unmeasured)
    and only for the plain kernel (``swap=False`` keeps the table's other tiles)."""
    picks = {
        (8192, 272, 8192): (128, 136, 1, 2),  # 320 columns of 128×64 tiles
        (4096, 320, 8192): (128, 80, 1, 2),
        (5248, 552, 7168): (128, 184, 2, 1),
        (18432, 136, 7168): (192, 144, 2, 1),
        (4096, 240, 14336): (64, 120, 1, 2),
    }
    for mnk, tile in picks.items():
        config = table_decision(BF16, mnk).config
        assert not config.swap_ab and (config.tile_m, config.tile_n, config.cluster_m, config.cluster_n) == tile, mnk
    line = table_decision(BF16, (8192, 272, 8192)).line()
    assert "small N: N = 272 ≤ 640 in 320 columns of 128×64 tiles: N in 2 column tiles of 136 under 128 rows" in line
    assert table_decision(BF16, (14336, 200, 4096)).config.tile_n == 208  # one 208-wide column tile pads 4 %: a tie
    for problem, mnk in ((Problem("bf16", bias=True), (8192, 272, 8192)), (BF16, (8192, 256, 8192))):
        assert table_decision(problem, mnk).config.tile_n in (64, 128), (problem, mnk)
    assert table_decision(BF16, (8192, 272, 2048)).config.tile_n in (64, 128)  # short K: unmeasured
    # the splits of 128×256 tiles balance their waves: level or ahead of the short-side tiles by tile_time
    for mnk in ((11008, 232, 14336), (28672, 488, 5120), (18432, 480, 7168), (13824, 432, 8192)):
        config = table_decision(BF16, mnk).config
        assert config.tile_n == 256 and (config.stream_k or config.split_k > 1), mnk
    assert table_decision(BF16, (8192, 272, 8192), swap=False).config.tile_n in (64, 128)
    # N covered exactly by the other pick's 64-wide tiles (5 of them over 320): no padding asked along N
    for mnk, tile in {(8320, 320, 4144): (128, 160, 1, 2), (4456, 440, 7856): (128, 152, 2, 1)}.items():
        decision = table_decision(BF16, mnk)
        config = decision.config
        assert (config.tile_m, config.tile_n, config.cluster_m, config.cluster_n) == tile, mnk
    assert "N = 320 ≤ 640 in 320 columns of 128×64 tiles" in table_decision(BF16, (8320, 320, 4144)).line()
    # a cooperative short-side tile replaces a ping-pong pick wider than 128 only where it pads N (432 of 424)
    kept = table_decision(BF16, (19128, 424, 10448), short_sides=False).config
    assert kept.schedule is Schedule.PINGPONG and kept.tile_n == 144
    assert table_decision(BF16, (19128, 424, 10448)).config == kept
    # ... and the small-N rule's 128×64 wherever it is 3 % faster (five column tiles of 64 cover 320 exactly)
    assert table_decision(BF16, (16936, 312, 2824), short_sides=False).config.tile_n == 64
    taken = table_decision(BF16, (16936, 312, 2824)).config
    assert taken.schedule is Schedule.COOPERATIVE and (taken.tile_m, taken.tile_n) == (192, 160)


def test_small_n_takes_192x192_tiles_where_they_fit_one_wave():
    """``tall_small_n``: for N ≤ 512, K > 2048, without a bias, the cooperative 192×192 tile (2×1) where its
    tiles fit one wave and it streams the fewest rows per useful output over its merit; past one wave, where
    ping-pong 128×192 streams less, with a bias or a short K, the table's other tiles."""
    from gemm_modes.autotable import small_m_cost, tall_small_n

    for mnk in ((11992, 384, 12440), (24744, 192, 7552), (9808, 384, 5880), (10008, 384, 11000)):
        decision = table_decision(BF16, mnk)
        assert decision.config == TALL and decision.rule == "small N", mnk
        assert TALL.cluster_tiles(mnk[0], mnk[1]) <= 66  # one wave on an H100's 66 clusters of two
    m, n, k = 11992, 384, 12440
    tall, cost, narrow_cost = tall_small_n((m, n, k))
    # N = 384 in 2 column tiles of 192 against 3 of ping-pong 128×128: (192 + 192) rows per tile, 63 row tiles
    # over M, one wave; ping-pong 128×128 takes 3 × 94 = 282 tiles, 3 waves of 132 SMs.
    assert cost == small_m_cost((n, m, k), (192, 192), col_pairs=True) / TALL_MERIT[0][1]
    assert round(cost) == 408 and round(narrow_cost) == 771
    line = table_decision(BF16, (m, n, k)).line()
    assert "small N: N = 384 ≤ 512: 192×192 tiles stream 408 rows of A per useful output" in line
    assert "(the small-N tile: 771)" in line
    assert tall_small_n((19056, 384, 9776)) is None  # 100 cluster-tiles: past one wave
    assert tall_small_n((8016, 376, 5968)) is None  # ping-pong 128×192 in 1×2 streams less
    kept = PINGPONG_128x192.with_(cluster_m=1, cluster_n=2, staging_in_ring=True)
    assert table_decision(BF16, (8016, 376, 5968)).config == kept
    assert table_decision(Problem("bf16", bias=True), (11992, 384, 12440)).config != TALL
    assert table_decision(BF16, (11992, 384, 2048)).config != TALL  # K ≤ 2048: not measured
    assert table_decision(BF16, (11992, 384, 12440), swap=False).config != TALL  # not a tile a comm role has run with


def test_a_forced_swap_at_small_m_takes_the_rule_s_tile():
    """``gemm(swap_ab=True)`` (``best_swapped``): up to M = 640 the swapped tile of least ``tile_time``
    (also where the table itself would not swap; M under 64 as 64), past it the swapped tile the wave balance
    weighs that scores best: 192×176, or a 256-row one where N > M."""
    from gemm_modes.autotable import SWAPPED_ALONG_N_MERIT, SWAPPED_MERIT, best_swapped

    assert best_swapped((272, 8192, 8192)) == table_decision(BF16, (272, 8192, 8192)).config
    forced = best_swapped((8, 4096, 1024))
    assert forced.swap_ab and forced.tile_n == 64
    assert best_swapped((128, 14336, 4096)).swap_ab
    assert best_swapped((4096, 700, 4096)) == SWAPPED_MERIT[0][0]
    assert best_swapped((700, 4096, 4096)) in {tile for tile, _ in SWAPPED_ALONG_N_MERIT}


def test_swap_false_keeps_to_tiles_a_comm_role_or_gate_can_join():
    """``table_decision(swap=False)`` (the comm launcher, the ceiling study) and ``choose_config`` under an override
    (the gated all-gather GEMM's ``stream_k=False``) leave out every tile that runs on the plain kernel only:
    swapped tiles and 192-row tiles whose warpgroups split N."""
    import gated_gemm

    for mnk in ((3000, 3000, 3000), (2104, 2104, 4096), (152, 13056, 7680), (4104, 4104, 4104)):
        plain = table_decision(BF16, mnk, swap=False).config
        assert not plain.swap_ab and plain.wg_split == "m", mnk
        alone = gated_gemm.alone_configuration(*mnk, 2)
        assert not alone.swap_ab and alone.wg_split == "m", mnk
    assert table_decision(BF16, (3000, 3000, 3000)).config.wg_split == "n"  # the table itself takes it


def test_ping_pong_reuse_cost_is_linear_in_the_inverse_width():
    """128×192 and 128×128 are the anchors (0.06, 0.09); the widths between sit on the line in 1 / tile_n,
    in the order of the columns each A stage feeds."""
    assert [pingpong_reuse_cost(w) for w in (192, 176, 160, 144, 128)] == [0.06, 0.0655, 0.072, 0.08, 0.09]
    assert [cost for _, cost in PINGPONG_BETWEEN_REUSE_COST] == [0.0655, 0.072, 0.08]


def test_a_cluster_of_two_over_an_odd_tile_count_idles_a_cta():
    """9 row tiles in 2×1 clusters: 5 cluster rows, one CTA of the last idle (0.9 of the CTAs hold a tile);
    1×2 over 70 column tiles pads none; 8 row tiles in 2×1 pad none."""
    coop = COOPERATIVE_DEFERRED
    assert cta_share(coop, 1056, 17896) == 9 * 70 / (5 * 70 * 2)
    assert cta_share(coop.with_(cluster_m=1, cluster_n=2), 1056, 17896) == 1.0
    assert cta_share(coop, 1024, 17896) == 1.0


def test_between_width_ping_pong_charges_1x2_for_an_odd_column_count():
    """At N = 17896, 128×176 makes 102 column tiles and 128×160 112 (1×2 at their reuse cost), 128×144 125
    (1×2 at its reuse cost plus the padded cluster's); 2×1 always at the reuse cost."""
    offered = {(c.tile_n, c.cluster_m): cost for c, cost in between_width_pingpong(1056, 17896)}
    reuse = dict((c.tile_n, cost) for c, cost in PINGPONG_BETWEEN_REUSE_COST)
    assert offered == {
        (176, 2): reuse[176],
        (176, 1): reuse[176],
        (160, 2): reuse[160],
        (160, 1): reuse[160],
        (144, 2): reuse[144],
        (144, 1): reuse[144] + PADDED_COLUMN_CLUSTER_COST,
    }


def test_ragged_shapes_take_the_ping_pong_width_that_fills_the_waves():
    """Ragged M and N where 128×256 tiles leave a partial wave and pad: the ping-pong width whose tiles fill
    the waves with output (H200, 2026-11-28, ours / torch against the table without it in the same rounds:
    4304×2152×4992 0.976 against 0.855, 1056×17896×4800 0.994 against 0.870, 3736×1224×3712 0.945 against
    0.876, 848×14168×1328 1.099 against 0.771); 1×2 where M spans an odd count of row tiles. Not with a bias,
    below ``PINGPONG_BETWEEN_MIN_K`` or without the widths."""
    unswappable = Problem("bf16", b_major="n")  # B as (K, N): no swapped 256-row tile can take the shape
    expected = {
        (4304, 2152, 4992): (144, 2, 1),
        (1056, 17896, 4800): (176, 1, 2),
        (3736, 1224, 3712): (160, 2, 1),
        (2160, 6656, 8128): (176, 1, 2),  # 17 row tiles
        (848, 14168, 1328): (160, 1, 2),  # 7 row tiles: 2×1 would idle 89 CTAs, 1×2 over 89 column tiles 7
    }
    for mnk, (tile_n, cluster_m, cluster_n) in expected.items():
        decision = table_decision(unswappable, mnk)
        config = decision.config
        assert config.schedule is Schedule.PINGPONG and config.tile_m == 128, mnk
        assert (config.tile_n, config.cluster_m, config.cluster_n) == (tile_n, cluster_m, cluster_n), mnk
        assert "of their turns on output (128×256: " in decision.line(), mnk
        for other in (table_decision(Problem("bf16", bias=True), mnk), table_decision(unswappable, mnk, widths=False)):
            assert other.config.tile_n not in PINGPONG_BETWEEN_WIDTHS or other.config.schedule is not Schedule.PINGPONG
    # where the swap can run, swapped 256-row tiles take two of them (H200, 2026-11-29: 2160×6656×8128
    # 256×144 1.005 of torch against 128×176's 0.981; 1056×17896×4800 256×120 0.975 against 0.994)
    for mnk in ((2160, 6656, 8128), (1056, 17896, 4800)):
        assert table_decision(BF16, mnk).config.swap_ab, mnk
    short_k = table_decision(BF16, (4304, 2152, PINGPONG_BETWEEN_MIN_K - 8)).config
    assert not (short_k.schedule is Schedule.PINGPONG and short_k.tile_n in PINGPONG_BETWEEN_WIDTHS)
