"""examples/persistent_gemm.py on the GPU: numerics of every schedule × dtype × B layout × cluster.

Each check poisons the output with NaN first (an unwritten tile fails), compares against torch in
fp32 with a per-dtype relative bound, and odd shapes cover the tile edges (TMA bounds). Repeated
launches must be bitwise identical.
"""

from __future__ import annotations

import pytest
from gemm_modes.modes import tuned_config

pytestmark = pytest.mark.gpu


# fp32 accumulation over K, one rounding to the output dtype: the error is dominated by that rounding
# (2^-8 relative for bf16, 2^-11 for fp16) on values of size ~sqrt(K); bounds are on max|err| / max|ref|.
REL_BOUND = {"fp16": 2e-3, "bf16": 1.6e-2}


def _torch():
    return pytest.importorskip("torch")


def _inputs(m, n, k, dtype, b_layout, seed=0):
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(seed)
    tdt = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    a = torch.randn(m, k, device="cuda", dtype=tdt, generator=g)
    b = torch.randn((n, k) if b_layout == "nk" else (k, n), device="cuda", dtype=tdt, generator=g)
    return a, b


def _reference(a, b, b_layout, bias=None, alpha=1.0):
    bf = b.float() if b_layout == "kn" else b.float().t()
    ref = alpha * (a.float() @ bf)
    if bias is not None:
        ref = ref + bias.float()
    return ref


def _check(out, ref, dtype):
    torch = _torch()
    assert not torch.isnan(out).any(), f"{int(torch.isnan(out).sum())} outputs never written (NaN poison left)"
    err = (out.float() - ref).abs().max().item()
    scale = ref.abs().max().item() or 1.0
    assert err / scale <= REL_BOUND[dtype], f"max |err| {err:.4g} / max |ref| {scale:.4g} = {err / scale:.3g}"


def _run(m, n, k, dtype, b_layout, schedule, tile=None, cluster=None, bias=False, alpha=1.0):
    torch = _torch()
    from hopper_gemm.api import gemm

    a, b = _inputs(m, n, k, dtype, b_layout)
    bias_t = torch.randn(n, device="cuda", dtype=a.dtype) if bias else None
    out = None
    if n % 8 == 0:
        out = torch.full((m, n), float("nan"), device="cuda", dtype=a.dtype)
    result = gemm(
        a, b, bias=bias_t, alpha=alpha, out=out, b_layout=b_layout, schedule=schedule, tile=tile, cluster=cluster
    )
    torch.cuda.synchronize()
    _check(result, _reference(a, b, b_layout, bias_t, alpha), dtype)
    return a, b, bias_t, result


CONFIGS = [
    ("cooperative", (128, 256), (2, 1)),
    ("cooperative", (128, 256), (1, 2)),
    ("cooperative", (256, 128), (1, 1)),
    ("cooperative", (128, 128), (2, 1)),
    ("pingpong", (128, 128), (2, 1)),
    ("pingpong", (128, 128), (1, 2)),
    ("pingpong", (64, 256), (1, 1)),
    ("pingpong", (128, 192), (2, 1)),
    ("cooperative", (256, 128), (2, 2)),  # A and B both multicast: three peers release each stage
    ("pingpong", (128, 128), (2, 2)),
    ("pingpong", (128, 64), (2, 1)),  # the small-M fill rule's tiles (gemm_modes.autotable.small_m)
    ("pingpong", (64, 128), (2, 1)),
    ("pingpong", (64, 64), (1, 2)),
    ("pingpong", (64, 96), (4, 1)),  # clusters of four: B multicast to four row tiles
    ("pingpong", (128, 128), (1, 4)),
    ("cooperative", (128, 128), (4, 2)),  # eight CTAs: each stage released to 4 + 2 - 1 = 5 peers
]


@pytest.mark.parametrize("schedule,tile,cluster", CONFIGS, ids=lambda v: str(v))
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("b_layout", ["nk", "kn"])
def test_every_configuration_matches_torch(schedule, tile, cluster, dtype, b_layout):
    # 3 × 5 tiles of 128×256 plus ragged edges in M and N, K with a partial last k-tile.
    _run(3 * 256 + 40, 5 * 256 + 24, 1000, dtype, b_layout, schedule, tile, cluster)


#: Tile widths between the powers of two (16-column subtiles where 32 does not divide them).
BETWEEN_WIDTHS = [
    ("pingpong", (128, 176), (1, 2), {}),
    ("pingpong", (128, 112), (2, 1), {}),
    ("pingpong", (128, 144), (1, 2), {}),
    ("pingpong", (128, 96), (1, 2), {}),
    ("cooperative", (128, 176), (2, 1), {"deferred_chunks": 11}),
    ("cooperative", (128, 208), (1, 2), {"deferred_chunks": 13}),
    ("cooperative", (128, 224), (2, 1), {"deferred_chunks": 7}),
    ("cooperative", (128, 240), (2, 1), {}),
    ("cooperative", (256, 176), (1, 2), {}),
    ("cooperative", (128, 176), (1, 2), {"stream_k": True, "stream_k_aligned": True, "deferred_chunks": 11}),
    ("pingpong", (128, 168), (1, 2), {}),
    ("pingpong", (128, 120), (2, 1), {}),
    ("cooperative", (128, 152), (2, 1), {"deferred_chunks": 19}),
    ("cooperative", (128, 168), (2, 1), {}),
    ("pingpong", (192, 112), (1, 2), {}),
    ("pingpong", (192, 128), (2, 1), {}),
    ("pingpong", (128, 160), (2, 1), {}),
]


@pytest.mark.parametrize("schedule,tile,cluster,extra", BETWEEN_WIDTHS, ids=lambda v: str(v))
@pytest.mark.parametrize("b_layout", ["nk", "kn"])
@pytest.mark.parametrize("bias", [False, True])
def test_tile_widths_between_the_powers_of_two(schedule, tile, cluster, extra, b_layout, bias):
    """Ragged M and N (a partial last tile each way, N inside a 16-column subtile), K with a partial last
    k-tile: within the bound of fp32, repeats bitwise."""
    config = tuned_config(*tile, *cluster, schedule, **extra)
    _matches_and_repeats(config, (3 * 128 + 40, 7 * tile[1] + 24, 4104), bias, 0, repeats=1, b_layout=b_layout)


#: Cooperative tiles whose warpgroups split the columns (``wg_split="n"``), with the B layouts each allows
#: (N-major B needs a warpgroup's half to start on a 64-column swizzle atom).
ALONG_N = [
    ((192, 192), (1, 2), ["nk"]),
    ((192, 192), (2, 1), ["nk"]),
    ((192, 160), (2, 1), ["nk"]),
    ((128, 256), (2, 1), ["nk", "kn"]),
    ((256, 128), (1, 2), ["nk", "kn"]),
]


@pytest.mark.parametrize("tile,cluster,b_layout", [(t, c, b) for t, c, bs in ALONG_N for b in bs], ids=lambda v: str(v))
@pytest.mark.parametrize("bias", [False, True])
def test_warpgroups_along_n(tile, cluster, b_layout, bias):
    """Each warpgroup every row and half the columns: ragged M and N (a partial last tile each way, N
    inside a subtile of the second half), K with a partial last k-tile; within the bound of fp32,
    repeats bitwise."""
    config = tuned_config(*tile, *cluster, "cooperative", wg_split="n")
    _matches_and_repeats(
        config, (3 * tile[0] + 40, 7 * tile[1] + tile[1] // 2 + 24, 4104), bias, 0, repeats=1, b_layout=b_layout
    )


#: Swapped launches (Cᵀ = B·Aᵀ into C's memory, column-major): (tile, cluster, schedule, wg_split).
SWAPPED = [
    ((192, 176), (2, 1), "cooperative", "n"),
    ((192, 192), (1, 2), "cooperative", "n"),
    ((128, 256), (2, 1), "cooperative", "m"),
    ((128, 128), (1, 2), "pingpong", "m"),
    ((128, 160), (2, 1), "pingpong", "m"),  # the small-M swap: M's width along the tile
    ((128, 64), (2, 1), "pingpong", "m"),
    ((128, 80), (1, 2), "pingpong", "m"),  # the swapped small-M tiles: M in column tiles of 8-row steps
    ((64, 120), (1, 2), "pingpong", "m"),
    ((128, 184), (2, 1), "pingpong", "m"),
    ((128, 200), (2, 1), "cooperative", "m"),
    ((192, 144), (2, 1), "cooperative", "n"),
]


@pytest.mark.parametrize("tile,cluster,schedule,wg_split", SWAPPED, ids=lambda v: str(v))
@pytest.mark.parametrize("shape", [(4104, 4104, 4104), (3 * 176 + 40, 2 * 192 + 24, 1000), (8, 1000, 64)])
def test_swapped_launch_writes_c_column_by_column(tile, cluster, schedule, wg_split, shape):
    """``hopper_gemm.api.swapped``: the kernel computes Cᵀ = B·Aᵀ and stores it column-major into the
    row-major C (transposed ``stmatrix``, a column-major TMA store): NaN-poisoned C fully written, within
    the bound of fp32, bitwise equal over repeats; ragged M, N and K (a partial tile each way)."""
    torch = _torch()
    from gemm_modes.launch import launcher
    from hopper_gemm.api import swapped, validate

    m, n, k = shape
    a, b = _inputs(m, n, k, "bf16", "nk", seed=3)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=a.dtype)
    ops = swapped(validate(a, b, out=out, alpha=0.5))
    launch = launcher(tuned_config(*tile, *cluster, schedule, wg_split=wg_split), ops, ops.out)
    launch()
    torch.cuda.synchronize()
    _check(out, 0.5 * _reference(a, b, "nk", None), "bf16")
    first = out.clone()
    for _ in range(2):
        out.fill_(float("nan"))
        launch()
    torch.cuda.synchronize()
    assert torch.equal(out, first)


@pytest.mark.parametrize("schedule", ["cooperative", "pingpong", "auto"])
@pytest.mark.parametrize(
    "m,n,k", [(1, 8, 8), (1, 4096, 512), (1000, 1000, 1000), (130, 200, 64), (4096, 8, 4096), (257, 263, 72)]
)
def test_odd_shapes(schedule, m, n, k):
    _run(m, n, k, "bf16", "nk", schedule)


@pytest.mark.parametrize("schedule", ["cooperative", "pingpong"])
def test_bias_and_alpha(schedule):
    _run(1000, 1032, 512, "bf16", "nk", schedule, bias=True, alpha=0.5)
    _run(512, 520, 256, "fp16", "kn", schedule, bias=True)


@pytest.mark.parametrize("schedule", ["cooperative", "pingpong"])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("n", [1001, 263, 9])
def test_bias_of_odd_length_reads_no_element_past_its_end(schedule, dtype, n):
    """``ColumnBias`` reads column pairs as 32-bit words: with an odd N the last word's upper half is the
    element past the bias's end. Here that element is NaN (the bias a view of a longer buffer): a
    column given the wrong half of a word, or column N-1 given element N, shows it; the output is
    checked in full, edge tiles included."""
    torch = _torch()
    from hopper_gemm.api import gemm

    a, b = _inputs(517, n, 264, dtype, "nk", seed=3)
    buffer = torch.full((n + 7,), float("nan"), device="cuda", dtype=a.dtype)
    buffer[:n] = torch.randn(n, device="cuda", dtype=a.dtype)
    bias = buffer[:n]
    result = gemm(a, b, bias=bias, schedule=schedule)
    torch.cuda.synchronize()
    _check(result, _reference(a, b, "nk", bias), dtype)


@pytest.mark.parametrize(
    "mnk", [(8000, 250, 1000), (4000, 250, 1000), (14000, 120, 600), (3000, 64, 512), (2000, 200, 1000)]
)
@pytest.mark.parametrize("bias", [False, True])
def test_auto_small_n_picks_match_torch(mnk, bias):
    """Small N: auto turns the fill rule (ping-pong tiles of 64/128, the staging in the ring where each CTA
    owns one tile), ragged M and N included."""
    _run(*mnk, "bf16", "nk", "auto", bias=bias)


@pytest.mark.parametrize("mnk", [(9808, 384, 5880), (24744, 192, 7552), (11728, 312, 3960), (8320, 320, 4144)])
def test_auto_small_n_column_tiles_match_torch(mnk):
    """Small N: in one wave cooperative 192×192 (its warpgroups split N) over a ragged M and N = 384 or 192;
    short-side tiles (192×160 1×2 at N = 312, 128×160 1×2 at N = 320, where 128×64 tiles cover N exactly)."""
    _run(*mnk, "bf16", "nk", "auto")


@pytest.mark.parametrize(
    "mnk", [(823, 4096, 4104), (668, 4096, 3000), (4096, 920, 4104), (699, 4944, 3216), (811, 18432, 7184)]
)
def test_auto_short_sides_past_640_rows_match_torch(mnk):
    """Short sides of 641–1024 rows: swapped cooperative 128×208 (1×2) and 128×240 (2×1), swapped ping-pong
    128×168, N in four column tiles of 232, and swapped cooperative 192×208 (warpgroups along the width)
    in place of ping-pong, over ragged M, N and K."""
    _run(*mnk, "bf16", "nk", "auto")


@pytest.mark.parametrize("mnk", [(515, 8736, 2312), (283, 5928, 12040), (821, 6784, 3040)])
def test_auto_short_side_ties_where_the_other_pick_pads_match_torch(mnk):
    """Short-side tiles no faster than the other pick by ``tile_time`` but taken since it fills under 85 % of
    its rows (``short_side.outruns``): swapped ping-pong 128×176 (2×1), cooperative 192×80 (warpgroups along
    the width) and 128×208 (1×2, past 640 rows), over ragged M, N and K."""
    from gemm_modes.autotable import decide
    from hopper_gemm.config import Problem

    decision = decide(Problem("bf16"), mnk)
    assert decision.config.swap_ab and "no slower suffices" in decision.facts
    _run(*mnk, "bf16", "nk", "auto")


@pytest.mark.parametrize("mnk", [(296, 15912, 4168), (16808, 328, 4488), (273, 12960, 2424)])
def test_auto_paired_rows_match_torch(mnk):
    """Cooperative 256-row tiles (each warpgroup 128 rows, the width whole) in a 1×2 cluster, swapped and
    not, where rows of K end off a 32-byte sector."""
    _run(*mnk, "bf16", "nk", "auto")


@pytest.mark.parametrize("mnk", [(272, 28672, 8192), (28672, 285, 4096), (540, 24576, 8192)])
def test_auto_paired_rows_a_wave_fewer_match_torch(mnk):
    """Cooperative 256-row tiles in a 1×2 cluster in place of 192-row ones where they take a wave fewer
    (``short_side.pick``), swapped and not, rows of K in sectors, over ragged M and N."""
    from gemm_modes.autotable import decide
    from hopper_gemm.config import Problem

    picked = decide(Problem("bf16"), mnk).config
    assert (picked.tile_m, picked.cluster_n) == (256, 2)
    _run(*mnk, "bf16", "nk", "auto")


@pytest.mark.parametrize(
    "mnk,width",
    [((1835, 5120, 13824), 144), ((770, 28672, 8192), 112), ((2057, 5120, 13824), 160)]
    + [((1825, 14336, 4096), 136), ((1039, 5120, 13824), 176), ((1062, 13824, 5120), 152)]
    + [((1026, 28672, 8192), 152), ((854, 7168, 18432), 96), ((1621, 4096, 14336), 104), ((787, 7168, 18432), 88)],
)
def test_auto_swapped_256_row_tiles_match_torch(mnk, width):
    """Auto's swapped cooperative 256-row tiles (2×1, each warpgroup 128 rows of N, M in column tiles of
    88–176 stored column by column: 16-column subtiles, 8 for 88, 104, 136, 152 and 176, four A/B stages),
    over ragged M; 1026×28672×8192 where stream-K yields to them (``autotable.stream_k_yields``); 88 where
    the width is cut to M's column tiles of 96."""
    from gemm_modes.autotable import decide
    from hopper_gemm.config import Problem

    picked = decide(Problem("bf16"), mnk).config
    assert picked.swap_ab and (picked.tile_m, picked.tile_n) == (256, width)
    _run(*mnk, "bf16", "nk", "auto")


@pytest.mark.parametrize(
    "mnk,swapped,width",
    [((18736, 176, 6592), True, 144), ((180, 18432, 7168), False, 144), ((9864, 360, 5072), True, 160)]
    + [((6368, 536, 5416), True, 160), ((181, 18840, 12304), False, 144)],
)
def test_auto_192_row_tiles_narrowed_to_fill_one_wave_match_torch(mnk, swapped, width):
    """Auto's cooperative 192-row tiles (warpgroups along the width, 1×2) narrowed until their one wave is
    full (``gemm_modes.one_wave``), swapped and not, over ragged M and N."""
    from gemm_modes.autotable import decide
    from hopper_gemm.config import Problem

    picked = decide(Problem("bf16"), mnk).config
    assert (picked.tile_m, picked.tile_n, picked.cluster_n, picked.swap_ab) == (192, width, 2, swapped)
    _run(*mnk, "bf16", "nk", "auto")


def _auto_pick(mnk: tuple[int, int, int], *rule_ends: str):
    """Auto's configuration for a plain bf16 ``mnk``, after asserting that its rule ends with one of
    ``rule_ends`` (the step a test is about took the pick)."""
    from gemm_modes.autotable import decide
    from hopper_gemm.config import Problem

    decision = decide(Problem("bf16"), mnk)
    assert decision.rule.endswith(rule_ends), decision.rule
    return decision.config


@pytest.mark.parametrize(
    "mnk,width,cluster",
    [((1136, 1136, 1136), 192, 4), ((1048, 1048, 1048), 176, 4), ((6840, 176, 2120), 176, 4)]
    + [((462, 2112, 2048), 144, 4), ((2208, 544, 7384), 184, 4), ((7120, 144, 2352), 144, 4)]
    + [((2328, 752, 8064), 256, 4), ((2064, 712, 2048), 240, 4), ((1392, 1392, 1000), 232, 2)]
    + [((1632, 1136, 5888), 232, 2)],
)
def test_auto_half_rows_match_torch(mnk, width, cluster):
    """Auto's one-wave ping-pong 128-row picks turned into 64-row tiles twice as wide in clusters of four
    (or two, on a square-ish output) along M (``gemm_modes.half_rows``), odd multiples of 8 in wide
    subtiles, over ragged M, N and K; the launch holds every cluster at once."""
    picked = _auto_pick(mnk, "in 64-row tiles twice as wide")
    assert (picked.tile_m, picked.tile_n, picked.cluster_m, picked.cluster_n) == (64, width, cluster, 1)
    _run(*mnk, "bf16", "nk", "auto")


@pytest.mark.parametrize(
    "mnk,width,cluster,parts",
    [((2864, 544, 10872), 144, (1, 2), 2), ((2656, 592, 13536), 208, (2, 1), 3)]
    + [((2352, 864, 12248), 176, (1, 1), 2), ((3600, 664, 11368), 224, (2, 1), 2)]
    + [((2072, 688, 11832), 176, (1, 2), 3), ((8192, 128, 13400), 128, (2, 1), 3)]
    + [((273, 5728, 13336), 144, (1, 2), 2), ((11688, 184, 9088), 192, (2, 1), 2)]
    + [((5848, 392, 12288), 208, (1, 2), 2), ((11888, 208, 12904), 208, (2, 1), 2)]
    + [((11688, 168, 12600), 176, (2, 1), 2), ((2688, 880, 12872), 224, (1, 2), 2)]
    + [((6144, 328, 5880), 176, (1, 2), 2), ((5912, 440, 6112), 224, (1, 2), 2)],
)
def test_auto_split_halves_match_torch(mnk, width, cluster, parts):
    """Auto's one-wave ping-pong pairs over a long K split on 192-row tiles whose warpgroups split N
    (``gemm_modes.split_halves``): 192×144 in 64×72 subtiles, 192×208 in 3 parts, 1×1, 2×1 with a
    cluster row past M, two 64-row picks' splits (192×176 in 3 parts of 61 k-tiles, N in one column
    tile), a narrow 192-row pick's (192×144 on Cᵀ), 192×192 and 192×176 2×1 over a short N past one wave of
    clusters of eight, two stream-K picks' (128×256 in less than a wave), one that keeps only as many SMs busy
    as its pick (ping-pong 128×176 on 105), and two cooperative picks' in parts of 46 and 48 k-tiles; ragged M,
    N and K."""
    picked = _auto_pick(mnk, "split over K on 192-row halves")
    assert (picked.tile_m, picked.tile_n, (picked.cluster_m, picked.cluster_n)) == (192, width, cluster)
    assert (picked.wg_split, picked.split_k) == ("n", parts)
    _run(*mnk, "bf16", "nk", "auto")


@pytest.mark.parametrize(
    "mnk,width,parts,swapped",
    [((2864, 432, 7216), 112, 2, False), ((4144, 232, 2720), 128, 2, False), ((2064, 504, 4192), 128, 3, False)]
    + [((254, 2088, 15320), 128, 6, True), ((3024, 216, 9680), 112, 4, False)],
)
def test_auto_long_k_halves_match_torch(mnk, width, parts, swapped):
    """Auto's split-K for a narrow N (on Cᵀ, a short M) over a long K on 192-row tiles whose warpgroups split N
    (``gemm_modes.long_k_halves``), in 1×2 pairs: 192×112 in 64×56 subtiles, N in one column tile turned
    into two, 6 parts on Cᵀ, 4 parts of 38 k-tiles; ragged M, N and K."""
    picked = _auto_pick(mnk, "on 192-row halves")
    assert (picked.tile_m, picked.tile_n, (picked.cluster_m, picked.cluster_n)) == (192, width, (1, 2))
    assert (picked.wg_split, picked.split_k, picked.swap_ab) == ("n", parts, swapped)
    _run(*mnk, "bf16", "nk", "auto")


@pytest.mark.parametrize(
    "mnk,width,cluster,swapped",
    [((9016, 112, 6096), 144, (2, 1), True), ((8896, 64, 3800), 72, (1, 2), True)]
    + [((115, 8520, 10736), 136, (2, 1), False), ((57, 18792, 6592), 144, (1, 2), False)],
)
def test_auto_thin_side_in_64_row_tiles_matches_torch(mnk, width, cluster, swapped):
    """Auto's thin side across one wave of 64-row ping-pong tiles (``gemm_modes.thin_side_one_wave``): two
    row tiles paired on Cᵀ, one row tile with the columns paired, a thin M on C, ragged M, N and K."""
    picked = _auto_pick(mnk, "the thin side in 64-row tiles")
    assert (picked.tile_m, picked.tile_n, (picked.cluster_m, picked.cluster_n)) == (64, width, cluster)
    assert picked.swap_ab == swapped
    _run(*mnk, "bf16", "nk", "auto")


@pytest.mark.parametrize(
    "mnk,tile,cluster,swapped",
    [((5176, 856, 4600), (256, 144), (1, 2), False), ((9824, 512, 6592), (256, 160), (2, 1), True)]
    + [((4584, 800, 14536), (192, 160), (2, 1), False), ((256, 18904, 12568), (256, 144), (1, 2), False)],
)
def test_auto_tall_tiles_in_one_wave_match_torch(mnk, tile, cluster, swapped):
    """Auto's one wave of tall cooperative tiles (``gemm_modes.tall_one_wave``): 256×144 on C, 256×160 on
    Cᵀ (stored column by column), 192×160 with its warpgroups along N; ragged M, N and K."""
    picked = _auto_pick(mnk, "one wave of tall tiles")
    assert ((picked.tile_m, picked.tile_n), (picked.cluster_m, picked.cluster_n)) == (tile, cluster)
    assert picked.swap_ab == swapped
    _run(*mnk, "bf16", "nk", "auto")


@pytest.mark.parametrize(
    "mnk,width,cluster",
    [((13624, 384, 9432), 208, (2, 1)), ((8848, 528, 10456), 208, (1, 1))]
    + [((9688, 576, 7264), 224, (1, 2)), ((15456, 376, 4632), 240, (2, 1))]
    + [((538, 9032, 13576), 208, (1, 2)), ((348, 12944, 8856), 208, (2, 1))]
    + [((382, 9816, 13760), 160, (2, 1)), ((373, 9016, 4832), 144, (2, 1))],
)
def test_auto_short_side_in_one_wave_match_torch(mnk, width, cluster):
    """Auto's short side in whole 192-row tiles, one wave along the long side
    (``gemm_modes.short_side_one_wave``), warpgroups along N: a short N on Cᵀ = B·Aᵀ (stored column by
    column into C), a short M on C (192×144 in 64×72 subtiles); one to three row tiles, ragged M, N and K."""
    # the tall tiles' step before it takes most of these shapes with the same tile
    picked = _auto_pick(mnk, "its short side in one wave of 192-row tiles", "one wave of tall tiles")
    assert (picked.tile_m, picked.tile_n, (picked.cluster_m, picked.cluster_n)) == (192, width, cluster)
    assert picked.swap_ab == (mnk[0] > mnk[1]) and picked.wg_split == "n"
    _run(*mnk, "bf16", "nk", "auto")


@pytest.mark.parametrize(
    "mnk,tile",
    [((2128, 904, 4664), (192, 96, 4, 2)), ((60, 12320, 6584), (64, 96, 1, 2))]
    + [((2896, 552, 2784), (192, 72, 1, 2)), ((2752, 880, 3024), (128, 152, 2, 1))],
)
def test_auto_pingpong_tiles_narrowed_to_fill_one_wave_match_torch(mnk, tile):
    """Auto's ping-pong tiles narrowed until their one wave is full (``gemm_modes.one_wave``): 128-row ones
    in the ring staging, 192- and 64-row ones, in pairs along M and along N (the 192-row pair then in 4×2), over
    ragged M, N and K."""
    picked = _auto_pick(mnk, "narrowed to fill one wave")
    assert (picked.tile_m, picked.tile_n, picked.cluster_m, picked.cluster_n) == tile
    _run(*mnk, "bf16", "nk", "auto")


@pytest.mark.parametrize(
    "mnk,tile",
    [((63, 18136, 12880), (64, 144, 1, 2)), ((63, 19928, 5848), (64, 152, 1, 2))]
    + [((63, 22968, 4944), (64, 176, 1, 2)), ((64, 22808, 12872), (64, 176, 1, 2))],
)
def test_auto_pingpong_picks_held_in_one_wave_match_torch(mnk, tile):
    """Auto's ping-pong picks of more than one wave held in one (``gemm_modes.one_wave.held_in_one_wave``):
    64-row tiles made wider, in the ring staging and not, over ragged M and N."""
    picked = _auto_pick(mnk, "held in one wave")
    assert (picked.tile_m, picked.tile_n, picked.cluster_m, picked.cluster_n) == tile
    _run(*mnk, "bf16", "nk", "auto")


@pytest.mark.parametrize(
    "mnk,tile",
    [((190, 10352, 3776), (192, 96, 4, 2)), ((630, 10952, 3120), (128, 216, 2, 1))]
    + [((880, 18432, 7168), (192, 224, 1, 2))],
)
def test_auto_small_m_where_pingpong_row_tiles_each_load_b_match_torch(mnk, tile):
    """Auto's short M on Cᵀ = B·Aᵀ where the unswapped pick pads M under 3 % but loads B in each of three
    or more ping-pong row tiles (``short_side.restreams_long_side``): 192-row tiles in 1×2 with M in one
    and four column tiles (ragged, past 640 rows), a 128-row tile in 2×1 with M in three."""
    from gemm_modes.autotable import decide
    from hopper_gemm.config import Problem

    decision = decide(Problem("bf16"), mnk)
    picked = decision.config
    assert decision.rule.startswith("small M") and "loads all of N's operand in each of its" in decision.facts
    assert (picked.tile_m, picked.tile_n, picked.cluster_m, picked.cluster_n) == tile and picked.swap_ab
    _run(*mnk, "bf16", "nk", "auto")


@pytest.mark.parametrize(
    "mnk,width,dtype",
    [((412, 18432, 7168), 104, "bf16"), ((437, 6008, 8120), 112, "bf16"), ((209, 11552, 4424), 112, "fp16")],
)
def test_auto_short_m_in_pingpong_192_row_tiles_match_torch(mnk, width, dtype):
    """Auto's short M on Cᵀ = B·Aᵀ in ping-pong 192-row tiles (``short_side.PINGPONG_192_WIDTHS``: each
    warpgroup a whole 192×104 or 192×112 tile, 1×2 clusters): M in four and two column tiles, ragged, fp16."""
    picked = _auto_pick(mnk, "small M")
    assert (picked.tile_m, picked.tile_n, picked.cluster_n, picked.schedule.value) == (192, width, 2, "pingpong")
    assert picked.swap_ab
    _run(*mnk, dtype, "nk", "auto")


@pytest.mark.parametrize(
    "mnk,width,swapped,dtype",
    [((144, 9184, 2224), 72, True, "bf16"), ((351, 5816, 3520), 88, True, "fp16")]
    + [((8800, 144, 2144), 72, False, "bf16"), ((18824, 504, 2288), 128, False, "fp16")],
)
def test_auto_narrow_192_row_picks_run_pingpong_match_torch(mnk, width, swapped, dtype):
    """Auto's narrow cooperative 192-row picks run ping-pong (``gemm_modes.pingpong_192``): on Cᵀ and on C,
    192×72 and 192×88 (ragged in their column tiles), 192×72 in 64×72 subtiles, the widest 192×128."""
    picked = _auto_pick(mnk, "in ping-pong 192-row tiles")
    assert (picked.tile_m, picked.tile_n, picked.schedule.value, picked.swap_ab) == (192, width, "pingpong", swapped)
    _run(*mnk, dtype, "nk", "auto")


@pytest.mark.parametrize(
    "mnk,rows,dtype",
    [((169, 10368, 4664), 192, "bf16"), ((9152, 184, 4872), 192, "fp16"), ((142, 6064, 2280), 128, "bf16")]
    + [((2552, 816, 14712), 128, "fp16"), ((1432, 1432, 1432), 128, "bf16"), ((348, 3200, 3200), 128, "fp16")]
    + [((2960, 344, 2664), 128, "bf16"), ((409, 3056, 4744), 128, "fp16")]
    + [((3648, 144, 8320), 64, "bf16"), ((201, 3568, 5616), 64, "fp16")],
)
def test_auto_pingpong_pairs_in_clusters_of_eight_match_torch(mnk, rows, dtype):
    """Auto's ping-pong pairs in clusters of 4×2 (``gemm_modes.clusters_of_eight``): 192-row tiles on Cᵀ and on C,
    128-row ones on Cᵀ, in 64×136 subtiles, square, and with the long side's tiles padded (25 of N in 28); and
    128-row and 64-row tiles from clusters of four along the rows, in 64×88 and 64×72 subtiles and on Cᵀ."""
    from gemm_modes.autotable import decide
    from hopper_gemm.config import Problem

    decision = decide(Problem("bf16"), mnk)
    picked = decision.config
    assert (picked.tile_m, picked.schedule.value, picked.cluster_m, picked.cluster_n) == (rows, "pingpong", 4, 2)
    assert "in clusters of 4×2:" in decision.line()
    _run(*mnk, dtype, "nk", "auto")


@pytest.mark.parametrize(
    "mnk,width,swapped,dtype",
    [((11456, 168, 12136), 88, False, "bf16"), ((163, 11296, 5112), 88, True, "fp16")]
    + [((9240, 200, 15112), 104, False, "bf16")],
)
def test_auto_splits_unsplit_in_clusters_of_eight_match_torch(mnk, width, swapped, dtype):
    """Auto's split-K and stream-K picks over a short side of 129–256 run unsplit as ping-pong 192-row tiles in 4×2
    (``clusters_of_eight.replaces_split``): in place of split-K on C and on Cᵀ, and of aligned stream-K."""
    picked = _auto_pick(mnk, "unsplit in ping-pong 192-row tiles")
    assert (picked.tile_m, picked.tile_n, picked.cluster_m, picked.cluster_n) == (192, width, 4, 2)
    assert picked.swap_ab == swapped and not picked.partial_sums
    _run(*mnk, dtype, "nk", "auto")


@pytest.mark.parametrize(
    "mnk,tile",
    [((298, 18432, 7168), (256, 104, 2, 1)), ((536, 7856, 8200), (256, 136, 1, 2))]
    + [((428, 22008, 8856), (256, 144, 2, 1))],
)
def test_auto_short_m_in_256_row_tiles_match_torch(mnk, tile):
    """Auto's short M on Cᵀ = B·Aᵀ in cooperative 256-row tiles in place of 192-row ones
    (``gemm_modes.paired_rows``): pairs along N and along M, M ragged in its column tiles."""
    picked = _auto_pick(mnk, "in 256-row tiles")
    assert (picked.tile_m, picked.tile_n, picked.cluster_m, picked.cluster_n) == tile and picked.swap_ab
    _run(*mnk, "bf16", "nk", "auto")


@pytest.mark.parametrize(
    "mnk,tile",
    [((1600, 1600, 1600), (128, 160)), ((1856, 1856, 1856), (128, 240)), ((780, 9600, 7432), (192, 160))]
    + [((1568, 1568, 1568), (128, 176)), ((2616, 608, 5336), (128, 104)), ((2344, 2344, 2344), (128, 184))]
    + [((787, 7168, 18432), (256, 88)), ((1648, 1648, 1648), (128, 168))],
)
def test_auto_widths_cut_to_their_column_tiles_match_torch(mnk, tile):
    """Auto's widths cut to their column tiles (``gemm_modes.tight_width``): ping-pong 128×160 and 128×176
    and cooperative 128×240 in the ring staging, swapped 192×160 with its warpgroups along N; in 8-column
    steps ping-pong 128×104 and 128×168 in the ring and 128×184 beside it (each in subtiles as wide as the
    tile), swapped cooperative 256×88 (column-major Cᵀ in 8-column subtiles); over ragged M, N and K."""
    picked = _auto_pick(mnk, "width cut to its column tiles")
    assert (picked.tile_m, picked.tile_n) == tile
    _run(*mnk, "bf16", "nk", "auto")


@pytest.mark.parametrize(
    "mnk,bias",
    [((3240, 384, 2472), False), ((128, 7168, 18432), False), ((68, 5032, 2608), False)]
    + [((19936, 72, 7816), False), ((5328, 88, 16176), True), ((131, 4912, 2496), False), ((3824, 96, 3000), False)]
    + [((132, 18184, 3016), False), ((19752, 144, 2136), False)],
)
def test_auto_clusters_of_four_match_torch(mnk, bias):
    """Auto's clusters of four along the long side (``gemm_modes.clusters_of_four``): ping-pong 64×192 4×1,
    128×64 1×4, swapped 64×72 4×1, cooperative 192×80 (warpgroups along N) 4×1, 64×128 4×1 with a bias,
    and the short-side tiles that replace a padded one, swapped 64×136 and 64×96 (4×1), cooperative 192×144
    near the load bound on Cᵀ and on C (in 64×72 subtiles), over ragged M, N and K; the launch holds every
    cluster-tile at once."""
    from gemm_modes.autotable import decide
    from hopper_gemm.config import Problem

    assert decide(Problem("bf16", bias=bias), mnk).config.cluster_size == 4
    _run(*mnk, "bf16", "nk", "auto", bias=bias)


@pytest.mark.parametrize(
    "mnk,bias,parts",
    [((2088, 72, 10784), False, 7), ((3000, 128, 12288), True, 5), ((3384, 288, 15224), False, 2)]
    + [((1024, 96, 8192), True, 8), ((2544, 312, 13464), False, 3)]
    + [((72, 2088, 10784), False, 7), ((148, 2584, 6648), False, 6), ((401, 2272, 3024), False, 3)],
)
def test_auto_long_k_splits_match_torch(mnk, bias, parts):
    """Auto's split-K for a narrow N over a long K (``gemm_modes.long_k``): cooperative 128×72 in 7 parts
    (subtiles of 8 columns, shares of one or two), 128×128 in 5 with a bias (subtiles of 16), 128×144 in
    2, 128×96 in 8, 128×160 in 3, each 2×1, ragged M, N and K; every part resident at once. A short M
    the same way on Cᵀ (swapped, C column-major): 128×72 in 7, 128×152 in 6, 128×208 in 3 (M in two
    column tiles)."""
    from gemm_modes.autotable import decide
    from hopper_gemm.config import Problem

    picked = decide(Problem("bf16", bias=bias), mnk).config
    assert (picked.tile_m, picked.split_k, picked.cluster_size) == (128, parts, 2)
    assert picked.swap_ab == (mnk[0] < mnk[1])
    _run(*mnk, "bf16", "nk", "auto", bias=bias)


@pytest.mark.parametrize("mnk", [(1000, 1032, 3000), (1000, 1000, 1000), (2000, 1000, 1000), (700, 3000, 1024)])
@pytest.mark.parametrize("bias", [False, True])
def test_auto_fill_picks_match_torch(mnk, bias):
    """Both sides above 512, fewer cooperative tiles than SMs: auto's ping-pong fill tiles (128×64,
    128×128, 128×192 without a bias) with either cluster, ragged edges included."""
    _run(*mnk, "bf16", "nk", "auto", bias=bias)


@pytest.mark.parametrize(
    "mnk",
    [
        (3072, 3000, 4104),
        (2000, 5100, 2000),
        (2040, 2040, 2040),
        (1000, 14300, 4104),
        (2550, 2550, 2552),
        (4304, 2152, 4992),
        (1056, 17896, 4800),
    ],
)
@pytest.mark.parametrize("bias", [False, True])
def test_auto_wave_balance_picks_match_torch(mnk, bias):
    """Wave balance's picks on ragged M, N and K, with and without a bias: ping-pong 128×192 at long K (with
    a bias, where 128×192 spills, split-K on the last wave: 12 cluster-tiles past two waves in 4 parts),
    ping-pong 128×128 (with a bias; 128×160 without), the cooperative tile, and the widths between the powers
    of two: ping-pong 128×176 (with a bias the aligned split), cooperative 128×208, ping-pong 128×144 and
    128×176 in 1×2 clusters (9 row tiles; with a bias the cooperative tile and its splits, the aligned split's
    pair along N there too)."""
    from gemm_modes.autotable import wave_balance

    picked = wave_balance(mnk, bias=bias)
    assert (picked.tile_n, picked.schedule.value, picked.split_k, picked.cluster_m) == {
        (3072, 3000, 4104): (256, "cooperative", 4, 2) if bias else (192, "pingpong", 1, 2),
        (2000, 5100, 2000): (128, "pingpong", 1, 2) if bias else (160, "pingpong", 1, 2),
        (2040, 2040, 2040): (256, "cooperative", 1, 2),
        (1000, 14300, 4104): (256, "cooperative", 1, 2) if bias else (176, "pingpong", 1, 2),
        (2550, 2550, 2552): (208, "cooperative", 1, 2),
        (4304, 2152, 4992): (256, "cooperative", 1, 2) if bias else (144, "pingpong", 1, 2),
        (1056, 17896, 4800): (256, "cooperative", 1, 1) if bias else (176, "pingpong", 1, 1),  # 1×2: 9 row tiles
    }[mnk]
    _run(*mnk, "bf16", "nk", "auto", bias=bias)


#: Shapes where the table goes by the operands' layout or the tile's shape (tests/test_gemm_rule_facts.py):
#: the kind of tile it picks there, ragged edges and rows of K off a 32-byte sector included.
LAYOUT_RULE_PICKS = {
    (1024, 1024, 1024): ("pingpong", 64, 128, 1),  # the fill tile turned to 64×128
    (904, 896, 2048): ("pingpong", 64, 128, 1),
    (2104, 2104, 4096): ("cooperative", 192, 192, 1),  # 192×192, warpgroups along N
    (3000, 3000, 3000): ("cooperative", 192, 192, 1),  # ping-pong pays for 6000-byte rows
    (3000, 2990, 5000): ("cooperative", 192, 192, 1),
    (384, 4096, 8192): ("cooperative", 128, 192, 2),  # split-K in one wave, three row tiles
    (380, 4088, 12000): ("cooperative", 128, 192, 2),
    (384, 14336, 4096): ("pingpong", 192, 112, 1),  # a pair of 192-row tiles
    (376, 14000, 4104): ("pingpong", 192, 112, 1),
    (512, 7168, 2048): ("cooperative", 128, 224, 1),  # one tile per CTA: ring staging, not deferred
    (500, 7000, 2000): ("cooperative", 128, 224, 1),
    # swapped (Cᵀ = B·Aᵀ) where the unswapped row tiles pad M: M in column tiles of 8-row steps
    (150, 6000, 4104): ("pingpong", 128, 80, 1),
    (140, 7000, 4096): ("pingpong", 128, 72, 1),
    (272, 8192, 8192): ("pingpong", 128, 136, 1),
    (552, 5248, 7168): ("pingpong", 128, 184, 1),
    (240, 4096, 14336): ("pingpong", 64, 120, 1),
    (200, 14336, 4096): ("cooperative", 128, 200, 1),
    (136, 18432, 7168): ("cooperative", 192, 144, 1),
    # N in column tiles of 8-row steps, unswapped, where 64- or 128-wide tiles would pad N
    (8200, 272, 8192): ("pingpong", 128, 136, 1),
    (4104, 320, 8200): ("pingpong", 128, 80, 1),
    (6000, 552, 7168): ("cooperative", 192, 144, 1),
}


@pytest.mark.parametrize("mnk", list(LAYOUT_RULE_PICKS), ids=lambda s: "x".join(map(str, s)))
def test_auto_layout_rule_picks_match_torch(mnk):
    """The table's picks by layout and tile shape (the 64×128 fill tile, cooperative 192×192, split-K of
    128×192 in one wave, a pair of 192-row tiles, the ring staging where one tile per CTA leaves a deferred
    epilogue nothing to hide under, Cᵀ = B·Aᵀ where row tiles would pad M, N in column tiles of 8-row
    steps) match torch on ragged shapes and repeat bit for bit."""
    torch = _torch()
    from gemm_modes.autotable import table_decision
    from hopper_gemm.config import Problem

    # the rule's own pick; auto's may come after it (4104×320×8200: gemm_modes.long_k's split-K)
    picked = table_decision(Problem("bf16"), mnk, 132).config
    assert (picked.schedule.value, picked.tile_m, picked.tile_n, picked.split_k) == LAYOUT_RULE_PICKS[mnk]
    a, b, _, first = _run(*mnk, "bf16", "nk", "auto")
    from hopper_gemm.api import gemm

    assert torch.equal(first, gemm(a, b, schedule="auto"))


@pytest.mark.parametrize(
    "mnk", [(1000, 1000, 8000), (300, 2000, 9000), (2040, 260, 8200), (520, 520, 4096), (800, 1500, 8000)]
)
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_auto_split_k_picks_match_torch(mnk, bias, dtype):
    """K ≥ 4 × the longer side: auto's split-K (128×128 cooperative, 2 or 4 parts per tile, either
    cluster; 128×192 in 2 at 800×1500), ragged edges and K included; gemm(split_k=...) runs the same path
    on request and refuses a grid the GPU cannot hold at once."""
    torch = _torch()
    from gemm_modes.choice import choose_config, device_sms
    from hopper_gemm.api import gemm
    from hopper_gemm.config import Problem

    assert choose_config(Problem(dtype, bias=bias), mnk, "auto", None, None, sms=device_sms(0)).split_k > 1
    _run(*mnk, dtype, "nk", "auto", bias=bias)
    a, b = _inputs(*mnk, "bf16", "nk")
    _check(gemm(a, b, split_k=2, schedule="cooperative", tile=(128, 256)), _reference(a, b, "nk"), "bf16")
    assert torch.equal(gemm(a, b, split_k=1), gemm(a, b, split_k=1))
    # 4096×1000 in 128×128 tiles, clusters 2×1: 128 cluster-tiles, 62 past one wave × 4 parts > 66 clusters
    with pytest.raises(ValueError, match="split_k = 4 is invalid for M×N = 4096×1000"):
        gemm(
            torch.empty(4096, 64, device="cuda", dtype=a.dtype),
            torch.empty(1000, 64, device="cuda", dtype=a.dtype),
            split_k=4,
        )


@pytest.mark.parametrize("schedule", ["cooperative", "pingpong"])
def test_repeated_launches_are_bitwise_identical(schedule):
    torch = _torch()
    from hopper_gemm.api import gemm

    a, b, _, first = _run(2048, 2048, 2048, "bf16", "nk", schedule)
    for _ in range(5):
        again = gemm(a, b, schedule=schedule)
        torch.cuda.synchronize()
        assert torch.equal(again, first)


def test_auto_schedule_runs_every_benchmark_shape_class():
    for m, n, k in [(256, 1024, 2048), (1024, 1024, 256)]:
        _run(m, n, k, "bf16", "nk", "auto")


@pytest.mark.parametrize("m", [1, 7, 64, 65, 130, 200, 384])
@pytest.mark.parametrize("n", [8, 1000, 4104])
def test_auto_small_m_picks_match_torch_at_ragged_edges(m, n):
    """Every tile and cluster the fill rule can pick, on M and N that end inside a tile (and M below a
    cluster's rows: cluster 1×2 there), K with a partial last k-tile."""
    from gemm_modes.autotable import small_m

    picked = small_m((m, n, 520))
    _run(m, n, 520, "bf16", "nk", "auto")
    if m <= 64:
        assert picked.tile_m == 64


@pytest.mark.parametrize("bias", [False, True])
def test_auto_small_m_just_past_a_wave_takes_128x192(bias):
    """300×6120: 128×192 c1×2 fills one wave where 128×128 would take 1.09 (with a bias, which would spill
    128×192, the next cheapest); M, N and K end inside a tile."""
    from gemm_modes.autotable import table_decision
    from hopper_gemm.config import Problem

    # the small-M rule's tile (without a bias auto then takes swapped 128×152 in clusters of four)
    config = table_decision(Problem("bf16", bias=bias), (300, 6120, 1000)).config
    assert ((config.tile_m, config.tile_n) == (128, 192)) != bias and config.cluster_n == 2
    _run(300, 6120, 1000, "bf16", "nk", "auto", bias=bias)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("tile,cluster", [((256, 128), (1, 2)), ((128, 256), (2, 1))])
def test_wide_epilogue_subtiles(tile, cluster, bias):
    """Cooperative with 64-column epilogue subtiles (two staging buffers): the configuration's kernel,
    launched directly, on ragged edges."""

    config = tuned_config(*tile, *cluster, "cooperative", epi_stages=2, epi_n=64)
    _matches_and_repeats(config, (3 * 256 + 40, 5 * 256 + 24, 1000), bias, 0, repeats=1)


@pytest.mark.parametrize(
    "config",
    [
        ("cooperative", (256, 128), (1, 2), {"epi_batch": 4}),
        ("cooperative", (128, 256), (2, 1), {"epi_batch": 2, "stream_k": True, "stream_k_remainder": True}),
        ("pingpong", (128, 128), (2, 1), {"epi_batch": 2}),
    ],
    ids=["coop-batch4", "coop-stream-k-batch2", "pingpong-batch2"],
)
@pytest.mark.parametrize("bias", [False, True])
def test_batched_epilogue_matches_torch_and_repeats_bitwise(config, bias):
    """``epi_batch``: several subtiles per staging acquire (one wait, one barrier pair): every subtile
    still lands where it belongs, on ragged edges, and repeated launches are bitwise equal."""

    schedule, tile, cluster, extra = config
    _matches_and_repeats(tuned_config(*tile, *cluster, schedule, **extra), (3 * 256 + 40, 70 * 128 + 24, 1000), bias, 3)


def _matches_and_repeats(config, shape, bias, seed, repeats=3, b_layout="nk"):
    """``config``'s kernel launched directly on randn bf16 (and a bias): NaN-poisoned output within the
    bound of fp32, then ``repeats`` more launches bitwise equal to the first."""
    torch = _torch()
    from gemm_modes.launch import launcher
    from hopper_gemm.api import validate

    m, n, k = shape
    a, b = _inputs(m, n, k, "bf16", b_layout, seed=seed)
    bias_t = torch.randn(n, device="cuda", dtype=a.dtype) if bias else None
    out = torch.full((m, n), float("nan"), device="cuda", dtype=a.dtype)
    launch = launcher(config, validate(a, b, bias=bias_t, out=out, b_layout=b_layout), out)
    launch()
    torch.cuda.synchronize()
    _check(out, _reference(a, b, b_layout, bias_t), "bf16")
    first = out.clone()
    for _ in range(repeats):
        out.fill_(float("nan"))
        launch()
    torch.cuda.synchronize()
    assert torch.equal(out, first)


# --- stream-K (GemmConfig.stream_k) ------------------------------------------------------------------
STREAM_K_SHAPES = [
    (4096, 4096, 4096),  # 256 cluster-tiles on 66 clusters: 132 whole, 124 split (the 4096³ target)
    (3 * 256 + 40, 70 * 128 + 24, 1000),  # ragged in M, N and K (16 k-tiles, the last partial)
    (2048, 33 * 256 + 128, 64),  # one k-tile per tile: every split unit is a whole tile
    (1024, 1024, 256),  # 16 cluster-tiles < 66 clusters: no split, the data-parallel walk alone
]


@pytest.mark.parametrize("shape", STREAM_K_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("tile,cluster", [((256, 128), (1, 2)), ((128, 256), (2, 1)), ((128, 256), (2, 2))])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("remainder", [False, True], ids=["wave", "remainder"])
def test_stream_k_matches_torch_and_repeats_bitwise(shape, tile, cluster, bias, remainder):
    """Split tiles are summed through the workspace: NaN-poisoned output fully written, within the dtype's
    bound of fp32, and bitwise equal over repeated launches (the flags are back to zero after each).
    ``remainder``: only the partial wave split, up to three parts per tile (4096³: 58 tiles in shares of
    57 k-tiles of 64)."""
    torch = _torch()
    from gemm_modes.launch import stream_k_workspace

    config = tuned_config(*tile, *cluster, "cooperative", stream_k=True, stream_k_remainder=remainder)
    _matches_and_repeats(config, shape, bias, 5, repeats=4)
    flags, _ = stream_k_workspace(config, torch.device("cuda", torch.cuda.current_device()))
    assert int(flags.count_nonzero()) == 0  # every split tile's flag was consumed and reset


#: Aligned stream-K (128×256 c2×1): 4096³ leads of 61 of 64 k-tiles, 8 follow parts per follower; ragged
#: (2 waves + 12 tiles of 16 k-tiles: leads of 8); under a wave, ragged (48 tiles of 129 k-tiles: leads of
#: 99, three follow parts each); 1024²×256 (16 tiles of 4 k-tiles under a wave: leads of 2); one k-tile
#: (nothing follows: whole tiles).
ALIGNED_SHAPES = [(4096, 4096, 4096), STREAM_K_SHAPES[1], (3000, 1000, 8200), (1024, 1024, 256), STREAM_K_SHAPES[2]]


@pytest.mark.parametrize("shape", ALIGNED_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize(
    "tile,cluster,extra",
    [((128, 256), (2, 1), {"deferred_chunks": 8}), ((128, 256), (2, 1), {}), ((256, 128), (1, 2), {})]
    + [((128, 256), (2, 2), {}), ((128, 256), (1, 2), {"deferred_chunks": 8})],
    ids=["128x256c21d8", "128x256c21", "256x128c12", "128x256c22", "128x256c12d8"],
)
@pytest.mark.parametrize("bias", [False, True])
def test_aligned_stream_k_matches_torch_and_repeats_bitwise(shape, tile, cluster, extra, bias):
    """``stream_k_aligned``: each split tile's lead adds its one follow part, posted by a cluster the partial
    wave left idle: NaN-poisoned output fully written, within the bound of fp32, bitwise over repeated
    launches, and every flag back at zero."""
    torch = _torch()
    from gemm_modes.launch import stream_k_workspace

    config = tuned_config(*tile, *cluster, "cooperative", stream_k=True, stream_k_aligned=True, **extra)
    _matches_and_repeats(config, shape, bias, 6, repeats=4)
    flags, _ = stream_k_workspace(config, torch.device("cuda", torch.cuda.current_device()))
    assert int(flags.count_nonzero()) == 0


@pytest.mark.parametrize("mnk", [(3000, 1000, 8200), (2300, 3300, 4104)])
@pytest.mark.parametrize("bias", [False, True])
def test_auto_aligned_picks_match_torch(mnk, bias):
    """Auto's aligned split, ragged: under a wave (48 cluster-tiles on 66 clusters) and after one (1 + 51/66)."""
    from gemm_modes.autotable import pick
    from hopper_gemm.config import Problem

    assert pick(Problem("bf16", bias=bias), mnk).stream_k_aligned
    _run(*mnk, "bf16", "nk", "auto", bias=bias)


@pytest.mark.parametrize(
    "mnk,bias,mode",
    [
        ((3353, 8192, 28672), False, "aligned"),
        ((783, 7168, 18432), True, "aligned"),
        ((1400, 20000, 3000), False, "stream-K"),
        ((3359, 5000, 10000), True, "split-K"),
    ],
)
def test_auto_paired_along_n_matches_torch(mnk, bias, mode):
    """Auto's split cooperative 128×256 picks in a 1×2 pair (``autotable.paired_along_n``: M in an odd count of
    row tiles, 27, 7, 11 and 27, N the longer side): the aligned split, stream-K and split-K on the last wave,
    ragged M, N or K, with a bias and without."""
    from gemm_modes.autotable import pick
    from hopper_gemm.config import Problem

    config = pick(Problem("bf16", bias=bias), mnk)
    modes = {"aligned": config.stream_k_aligned, "stream-K": config.stream_k and not config.stream_k_aligned}
    modes["split-K"] = config.split_k > 1
    assert modes[mode] and (config.tile_m, config.tile_n, config.cluster_m, config.cluster_n) == (128, 256, 1, 2)
    _run(*mnk, "bf16", "nk", "auto", bias=bias)


@pytest.mark.parametrize("mnk", [(4100, 14300, 4104), (5100, 5120, 2056)])
def test_auto_stream_k_picks_match_torch(mnk):
    """Auto's stream-K picks: the partial wave alone after 14 whole waves (952 cluster-tiles = 14 × 66 + 28),
    and a whole wave split with a thin partial one after six (400 = 6 × 66 + 4), ragged M, N and K."""
    from gemm_modes.autotable import stream_k_pays

    assert stream_k_pays(mnk)
    _run(*mnk, "bf16", "nk", "auto")


@pytest.mark.parametrize(
    "shape,config",
    [
        ((3000, 1000, 8200), dict(tile=(128, 128), cluster=(4, 1), stream_k=True, stream_k_aligned=True)),
        ((520, 1000, 8192), dict(tile=(128, 128), cluster=(1, 4), split_k=2)),  # 10 cluster-tiles × 2 parts
        ((300, 3800, 4104), dict(tile=(64, 168), cluster=(4, 1), schedule="pingpong", swap_ab=True)),
        ((168, 8632, 4104), dict(tile=(192, 80), cluster=(1, 4), wg_split="n")),
    ],
    ids=["aligned-c41", "split-k-c14", "swapped-pp-c41", "192x80-c14"],
)
def test_clusters_of_four_match_torch_and_repeat_bitwise(shape, config):
    """Clusters of four CTAs along one side, ragged shapes: the aligned stream-K split and split-K (their
    flags back at zero), a swapped ping-pong tile (C column-major) and 192-row tiles whose warpgroups split
    N, each NaN-poisoned, within bf16's bound and bitwise equal over repeats."""
    torch = _torch()
    from gemm_modes.launch import stream_k_workspace

    tile, cluster = config.pop("tile"), config.pop("cluster")
    tuned = tuned_config(*tile, *cluster, config.pop("schedule", "cooperative"), **config)
    _matches_and_repeats(tuned, shape, False, 17, repeats=3)
    if tuned.stream_k or tuned.split_k > 1:
        flags, _ = stream_k_workspace(tuned, torch.device("cuda", torch.cuda.current_device()))
        assert int(flags.count_nonzero()) == 0


# --- split-K (GemmConfig.split_k) and stream-K under a wave (stream_k_partials) -----------------------------
SPLIT_K_SHAPES = [
    (512, 1024, 8192),  # 128×256 c2×1: 8 cluster-tiles × 8 parts = 64 clusters of 16 k-tiles each
    (3 * 128 + 40, 2 * 256 + 24, 1000),  # ragged in M, N and K: 16 k-tiles, parts of 2 to 8
    (300, 520, 128),  # 2 k-tiles: with 4 or 8 parts, some parts are empty and add zeros
    (1, 8, 8),
]
SPLIT_K_CONFIGS = [
    ((128, 256), (2, 1), {"split_k": 4}),
    ((128, 256), (2, 1), {"split_k": 8}),
    ((128, 256), (1, 1), {"split_k": 2, "epi_batch": 2}),
    ((128, 128), (2, 1), {"split_k": 4}),
    ((128, 128), (1, 2), {"split_k": 2, "staging_in_ring": True}),  # auto's: 7 stages, staging in the ring
    ((256, 128), (1, 2), {"split_k": 2}),
    ((128, 192), (2, 1), {"split_k": 2}),  # auto's where 128×128 tiles are too many: 6 subtiles, 3 a part
]
#: Stream-K shares of a quarter tile (``stream_k_partials`` = 4): 1024²×8192 is 16 cluster-tiles of 128
#: k-tiles in shares of 32 on 66 clusters; 4096³ splits its partial wave as with two partials.
DEEP_STREAM_K = ((128, 256), (2, 1), {"stream_k": True, "stream_k_remainder": True, "stream_k_partials": 4})
#: Parts whose shares of the subtiles differ (``SplitK.share``: whole subtiles, as even as they go).
UNEVEN_SPLIT_K_CASES = [
    ((2088, 72, 10784), (128, 80), (1, 1), {"split_k": 7, "epi_n": 8}),  # 10 subtiles: 1,1,2,1,2,1,2; 119 CTAs
    ((1, 8, 8), (128, 80), (1, 1), {"split_k": 7, "epi_n": 8}),  # one k-tile: six parts add zeros
    ((424, 536, 1000), (128, 64), (2, 1), {"split_k": 3, "epi_n": 16}),  # 4 subtiles: 1,1,2; 16 k-tiles
    ((300, 520, 128), (128, 128), (1, 2), {"split_k": 3}),  # 4 subtiles of 32 columns; 2 k-tiles
    # warpgroups along N: each part stores its share of both halves' subtiles
    ((2072, 688, 11832), (192, 176), (1, 2), {"split_k": 3, "wg_split": "n"}),  # cuBLAS's plan: 11 × 4 × 3
    ((1000, 344, 3000), (192, 128), (2, 1), {"split_k": 2, "wg_split": "n"}),  # ragged M, N and K
    ((1, 8, 8), (192, 96), (1, 1), {"split_k": 3, "wg_split": "n"}),  # one k-tile: two parts add zeros
]
SPLIT_K_CASES = (
    [(shape, *config) for shape in SPLIT_K_SHAPES for config in SPLIT_K_CONFIGS]
    + UNEVEN_SPLIT_K_CASES
    + [(shape, *DEEP_STREAM_K) for shape in [(1024, 1024, 8192), (4096, 4096, 4096), SPLIT_K_SHAPES[1]]]
)


@pytest.mark.parametrize(
    "shape,tile,cluster,extra",
    SPLIT_K_CASES,
    ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else "-".join(f"{k}{x}" for k, x in v.items()),
)
@pytest.mark.parametrize("bias", [False, True])
def test_split_k_matches_torch_and_repeats_bitwise(shape, tile, cluster, extra, bias):
    """Every part of a tile posts its partial and adds the others' values of its own subtiles (split-K), or
    a stream-K share under a wave meets a tile up to five times (``stream_k_partials`` = 4): NaN-poisoned
    output fully written, within bf16's bound of fp32, bitwise equal over repeated launches, and every
    flag back at zero."""
    torch = _torch()
    from gemm_modes.launch import stream_k_workspace

    config = tuned_config(*tile, *cluster, "cooperative", **extra)
    _matches_and_repeats(config, shape, bias, 13, repeats=4)
    flags, _ = stream_k_workspace(config, torch.device("cuda", torch.cuda.current_device()))
    assert int(flags.count_nonzero()) == 0


#: Split-K on the swapped launch (Cᵀ = B·Aᵀ into C's memory, column-major), M short and N long.
SWAPPED_SPLIT_K_CASES = [
    ((72, 2088, 10784), (128, 80), (1, 1), {"split_k": 7, "epi_n": 8}),  # Cᵀ 2088×72: 17 tiles × 7 parts
    ((244, 2240, 11864), (128, 128), (1, 2), {"split_k": 3}),  # Cᵀ 2240×244: ragged M, two column tiles
    ((300, 520, 1000), (128, 64), (2, 1), {"split_k": 3, "epi_n": 16}),  # ragged M, N and K
    ((1, 8, 8), (128, 80), (1, 1), {"split_k": 7, "epi_n": 8}),  # one k-tile: six parts add zeros
    ((1536, 3072, 2048), (128, 256), (2, 1), {"split_k": 8}),  # 72 cluster-tiles: 66 whole, 6 split in 8
    ((688, 2072, 11832), (192, 176), (1, 2), {"split_k": 3, "wg_split": "n"}),  # halves, column by column
]


@pytest.mark.parametrize(
    "shape,tile,cluster,extra",
    SWAPPED_SPLIT_K_CASES,
    ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else "-".join(f"{k}{x}" for k, x in v.items()),
)
def test_swapped_split_k_matches_torch_and_repeats_bitwise(shape, tile, cluster, extra):
    """Split-K with ``swap_ab``: every part posts its partial in register order and stores its share of
    Cᵀ's subtiles column by column into C's memory; NaN-poisoned output fully written, within bf16's
    bound of fp32, bitwise equal over repeated launches, every flag back at zero."""
    torch = _torch()
    from gemm_modes.launch import stream_k_workspace

    config = tuned_config(*tile, *cluster, "cooperative", swap_ab=True, **extra)
    _matches_and_repeats(config, shape, False, 19, repeats=4)
    flags, _ = stream_k_workspace(config, torch.device("cuda", torch.cuda.current_device()))
    assert int(flags.count_nonzero()) == 0


def test_gemm_swap_ab_with_split_k_matches_torch():
    """``gemm(swap_ab=True, split_k=7)``: the split-K rule's tile for Cᵀ, into a fresh output and into
    ``out``."""
    torch = _torch()
    from hopper_gemm.api import gemm

    a, b = _inputs(72, 2088, 10784, "bf16", "nk")
    reference = _reference(a, b, "nk", None)
    _check(gemm(a, b, swap_ab=True, split_k=7), reference, "bf16")
    out = torch.full((72, 2088), float("nan"), device="cuda", dtype=a.dtype)
    gemm(a, b, out=out, swap_ab=True, split_k=7)
    torch.cuda.synchronize()
    _check(out, reference, "bf16")


#: Split-K past one wave (128×256 c2×1 on the 66 clusters of an H100): the whole waves walked whole, then
#: the last wave's tiles split. (cluster-tiles = whole waves + last; parts × last ≤ 66)
SPLIT_K_TAIL_CASES = [
    ((1536, 3072, 2048), 8),  # 72 = 66 + 6: 48 clusters of parts, 18 idle after their whole tile
    ((3072, 3072, 1000), 4),  # 144 = 132 + 12: two whole waves; ragged K
    ((2300, 2560, 520), 2),  # 90 = 66 + 24: ragged M, the last row of tiles part-full
    ((3072, 2816, 512), 2),  # 132 = 2 × 66: no tile to split, every cluster walks whole tiles only
]


@pytest.mark.parametrize(
    "shape,parts", SPLIT_K_TAIL_CASES, ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v)
)
@pytest.mark.parametrize("bias", [False, True])
def test_split_k_after_whole_waves_matches_torch_and_repeats_bitwise(shape, parts, bias):
    """More cluster-tiles than the GPU holds at once: every resident cluster walks the whole waves, then
    the last wave's tiles are split into ``parts`` and summed in parallel; NaN-poisoned output fully
    written, bitwise equal over repeated launches, every flag back at zero."""
    torch = _torch()
    from gemm_modes.launch import clusters_to_launch, stream_k_workspace
    from hopper_gemm.launch import resident_clusters

    config = tuned_config(128, 256, 2, 1, "cooperative", split_k=parts)
    assert clusters_to_launch(config, *shape[:2]) == resident_clusters(2)
    _matches_and_repeats(config, shape, bias, 17, repeats=4)
    flags, _ = stream_k_workspace(config, torch.device("cuda", torch.cuda.current_device()))
    assert int(flags.count_nonzero()) == 0


def test_split_k_refuses_a_grid_the_gpu_cannot_hold_at_once():
    """Every part waits for the tile's other parts: a split-K launch that would not be resident at once is
    a ValueError before anything launches."""
    _torch()
    from gemm_modes.launch import clusters_to_launch
    from hopper_gemm.launch import resident_clusters

    config = tuned_config(128, 256, 2, 1, "cooperative", split_k=4)
    assert clusters_to_launch(config, 1024, 1024) == 64 <= resident_clusters(2)
    with pytest.raises(ValueError, match=r"split_k = 4 is invalid for M×N = 4096×4096: .* make 256 cluster-tiles"):
        clusters_to_launch(config, 4096, 4096)


# --- the deferred epilogue (GemmConfig.deferred_chunks) -------------------------------------------------
DEFERRED_SHAPES = [
    (3 * 256 + 40, 70 * 128 + 24, 1000),  # ragged in M, N and K; several tiles per CTA
    (4096, 4096, 4096),  # 512 tiles of 256×128: four per CTA, the last wave part-full
    (700, 1000, 64),  # one k-tile per tile: fewer k-tiles than chunks, the rest stored after the loop
    (300, 520, 128),  # two k-tiles
    (1, 8, 8),
    # 1 k-tile per tile, 272 cluster-tiles: stream-K splits 8, the other 58 clusters' shares are empty
    (2048, 33 * 256 + 128, 64),
]
DEFERRED_CONFIGS = [
    ((256, 128), (1, 2), {"deferred_chunks": 1}),
    ((256, 128), (1, 2), {"deferred_chunks": 4}),
    ((128, 256), (2, 1), {"deferred_chunks": 2}),
    ((128, 128), (2, 1), {"deferred_chunks": 4}),
    ((128, 256), (2, 1), {"deferred_chunks": 2, "stream_k": True, "stream_k_remainder": True}),
    # The last whole tile's chunks under the first split unit, which can be shorter than 8 k-tiles
    ((128, 256), (2, 1), {"deferred_chunks": 8, "stream_k": True, "stream_k_remainder": True}),
    ((128, 256), (2, 1), {"deferred_chunks": 8, "stream_k": True}),
]


def _deferred_id(config: tuple) -> str:
    (tm, tn), _, extra = config
    split = ("-skr" if extra.get("stream_k_remainder") else "-sk") if extra.get("stream_k") else ""
    return f"{tm}x{tn}-{extra['deferred_chunks']}{split}"


@pytest.mark.parametrize("shape", DEFERRED_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("config", DEFERRED_CONFIGS, ids=_deferred_id)
@pytest.mark.parametrize("bias", [False, True])
def test_deferred_epilogue_is_bitwise_the_staged_one(shape, config, bias):
    """Outputs stored from registers under the next tile's k-loop: NaN-poisoned output within the fp32
    bound, bitwise equal to the staged (TMA-store) epilogue of the same tile, and repeatable."""
    torch = _torch()
    from gemm_modes.launch import launcher
    from hopper_gemm.api import validate

    tile, cluster, extra = config
    m, n, k = shape
    a, b = _inputs(m, n, k, "bf16", "nk", seed=5)
    bias_t = torch.randn(n, device="cuda", dtype=a.dtype) if bias else None
    outs = []
    for chunks in (extra["deferred_chunks"], 0):
        cfg = tuned_config(*tile, *cluster, "cooperative", **{**extra, "deferred_chunks": chunks})
        out = torch.full((m, n), float("nan"), device="cuda", dtype=a.dtype)
        launch = launcher(cfg, validate(a, b, bias=bias_t, out=out), out)
        launch()
        torch.cuda.synchronize()
        outs.append(out)
    _check(outs[0], _reference(a, b, "nk", bias_t), "bf16")
    assert torch.equal(outs[0], outs[1]), "the deferred epilogue differs from the staged one"
    first = outs[0].clone()
    outs[0].fill_(float("nan"))
    launch = launcher(
        tuned_config(*tile, *cluster, "cooperative", **extra), validate(a, b, bias=bias_t, out=outs[0]), outs[0]
    )
    launch()
    torch.cuda.synchronize()
    assert torch.equal(outs[0], first)


# --- the staging buffers in the A/B ring (GemmConfig.staging_in_ring) -----------------------------------
RING_SHAPES = [
    (256, 8192, 1024),  # 128×128: 64 cluster-tiles of 2×1 on 66 clusters, one tile per CTA
    (200, 1000, 520),  # ragged in M, N and K (9 k-tiles, the last partial)
    (130, 4104, 64),  # one k-tile; the second row tile holds 2 rows
    (1, 8, 8),
]
RING_CONFIGS = [
    ((128, 128), (2, 1), "pingpong"),
    ((128, 128), (1, 2), "pingpong"),
    ((64, 128), (2, 1), "pingpong"),
    ((64, 64), (1, 2), "pingpong"),
    ((128, 64), (1, 2), "pingpong"),
    ((128, 192), (1, 2), "pingpong"),
    ((128, 128), (2, 1), "cooperative"),
    ((256, 128), (1, 2), "cooperative"),
]


@pytest.mark.parametrize("shape", RING_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("config", RING_CONFIGS, ids=lambda c: f"{c[2]}-{c[0][0]}x{c[0][1]}-c{c[1][0]}{c[1][1]}")
@pytest.mark.parametrize("bias", [False, True])
def test_ring_staging_is_bitwise_the_staged_one(shape, config, bias):
    """The epilogue staged through the A ring's first bytes, every CTA owning one tile: NaN-poisoned
    output within the fp32 bound, bitwise equal to staging through buffers of their own, repeatable."""
    torch = _torch()
    from gemm_modes.launch import clusters_to_launch, launcher
    from hopper_gemm.api import validate
    from hopper_gemm.launch import resident_clusters

    tile, cluster, schedule = config
    m, n, k = shape
    ring_config = tuned_config(*tile, *cluster, schedule, staging_in_ring=True)
    if ring_config.cluster_tiles(m, n) > resident_clusters(ring_config.cluster_size):
        with pytest.raises(ValueError, match="a CTA would own a second tile"):
            clusters_to_launch(ring_config, m, n)
        return
    a, b = _inputs(m, n, k, "bf16", "nk", seed=7)
    bias_t = torch.randn(n, device="cuda", dtype=a.dtype) if bias else None
    outs = []
    for ring in (True, False, True):
        cfg = tuned_config(*tile, *cluster, schedule, staging_in_ring=ring)
        out = torch.full((m, n), float("nan"), device="cuda", dtype=a.dtype)
        launcher(cfg, validate(a, b, bias=bias_t, out=out), out)()
        torch.cuda.synchronize()
        outs.append(out)
    _check(outs[0], _reference(a, b, "nk", bias_t), "bf16")
    assert torch.equal(outs[0], outs[1]), "staging in the ring differs from staging buffers of their own"
    assert torch.equal(outs[0], outs[2])


@pytest.mark.parametrize("k,stages", [(4096, 7), (2048, 6)])
def test_auto_stages_in_the_ring_at_one_tile_per_cta(k, stages):
    """gemm() at 256×8192×K: the table's ping-pong 128×128 with the staging in the ring, and the stage
    that frees taken from K = 4096 on."""
    from gemm_modes.choice import choose_config, device_sms
    from hopper_gemm.config import Problem

    mnk = (256, 8192, k)
    config = choose_config(Problem("bf16"), mnk, "auto", None, None, sms=device_sms(0))
    assert config.staging_in_ring and config.stages(Problem("bf16"))[0] == stages
    _run(*mnk, "bf16", "nk", "auto")
    _run(*mnk, "bf16", "nk", "auto", bias=True, alpha=0.5)


# --- programmatic dependent launch (GemmConfig.pdl, gemm(pdl=True)) -------------------------------------
@pytest.mark.parametrize("shape", [(256, 4096, 4096), (2048, 2048, 1024)], ids=["one-wave", "four-waves"])
def test_pdl_chains_read_and_overwrite_what_the_previous_grid_touched(shape):
    """Back-to-back launches that overlap set-up and tail: a GEMM reading the previous one's output (RAW)
    and a GEMM overwriting the previous one's input (WAR), 20 rounds without a sync, bitwise equal to
    the same chain launched without PDL."""
    torch = _torch()
    from hopper_gemm.api import gemm

    m, n, k = shape
    g = torch.Generator(device="cuda").manual_seed(11)
    x0 = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    w1 = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=g) / 64
    w2 = torch.randn(k, n, device="cuda", dtype=torch.bfloat16, generator=g) / 64

    def chain(pdl):
        x = x0.clone()
        outs = []
        for _ in range(20):
            y = gemm(x, w1, pdl=pdl)  # reads x
            gemm(y, w2, out=x, pdl=pdl)  # reads y (written just before), overwrites x (read just before)
            outs.append(y)
        torch.cuda.synchronize()
        return torch.stack(outs), x

    ys, x = chain(True)
    ys_ref, x_ref = chain(False)
    assert not torch.isnan(ys).any() and ys.abs().max() > 0
    assert torch.equal(ys, ys_ref) and torch.equal(x, x_ref)


@pytest.mark.parametrize("pdl", [False, True])
def test_a_cuda_graph_of_chained_gemms_replays_the_eager_result(pdl):
    """Two dependent gemm() calls captured in a CUDA graph (PDL launches become programmatic edges):
    NaN-poisoned outputs, three replays, bitwise the eager chain's result."""
    torch = _torch()
    from hopper_gemm.api import gemm

    g = torch.Generator(device="cuda").manual_seed(13)
    x = torch.randn(256, 4096, device="cuda", dtype=torch.bfloat16, generator=g)
    w1, w2 = (torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16, generator=g) / 64 for _ in range(2))
    y, z = torch.empty_like(x), torch.empty_like(x)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # compile and prepare outside the capture, on the capturing stream
        gemm(x, w1, out=y, pdl=pdl)
        gemm(y, w2, out=z, pdl=pdl)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    eager = z.clone()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        gemm(x, w1, out=y, pdl=pdl)
        gemm(y, w2, out=z, pdl=pdl)
    y.fill_(float("nan"))
    z.fill_(float("nan"))
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(z, eager)


def test_pdl_stream_k_launches_back_to_back_reset_their_flags():
    """Stream-K with PDL: ten launches without a sync, each waiting for the previous grid before it
    touches the shared flags and partials; every result bitwise the first, the flags back to zero."""
    torch = _torch()
    from gemm_modes.launch import launcher, stream_k_workspace
    from hopper_gemm.api import validate

    config = tuned_config(128, 256, 2, 1, "cooperative", stream_k=True, stream_k_remainder=True, pdl=True)
    a, b = _inputs(4096, 4096, 4096, "bf16", "nk", seed=3)
    outs = [torch.full((4096, 4096), float("nan"), device="cuda", dtype=a.dtype) for _ in range(10)]
    launches = [launcher(config, validate(a, b, out=out), out) for out in outs]
    for launch in launches:
        launch()
    torch.cuda.synchronize()
    _check(outs[0], _reference(a, b, "nk"), "bf16")
    assert all(torch.equal(out, outs[0]) for out in outs[1:])
    flags, _ = stream_k_workspace(config, torch.device("cuda", torch.cuda.current_device()))
    assert int(flags.count_nonzero()) == 0


@pytest.mark.parametrize("chunks", [2, 0])
@pytest.mark.parametrize("n", [1001, 37])
def test_an_odd_n_in_padded_rows_matches_torch(n, chunks):
    """N odd inside padded rows (the layout gemm() returns), deferred and staged: every output inside N
    is written and right (what lands in the padding is unspecified: zeros, on the H100)."""
    torch = _torch()
    from gemm_modes.launch import launcher
    from hopper_gemm.api import validate

    m, k = 517, 256
    a, b = _inputs(m, n, k, "bf16", "nk", seed=9)
    padded = torch.full((m, (n + 7) // 8 * 8), float("nan"), device="cuda", dtype=a.dtype)
    out = padded[:, :n]
    cfg = tuned_config(256, 128, 1, 2, "cooperative", deferred_chunks=chunks)
    launcher(cfg, validate(a, b), out)()  # validate refuses such an out; gemm() builds one itself
    torch.cuda.synchronize()
    _check(out, _reference(a, b, "nk"), "bf16")


@pytest.mark.parametrize("alpha", [1.0, 0.5])
@pytest.mark.parametrize("bias", [False, True])
def test_the_cli_times_torch_s_one_call_equivalent(bias, alpha):
    """``--bench``'s torch contender computes what gemm() does (alpha and bias inside cuBLAS's call:
    F.linear, addmm, matmul), so the ratio compares one kernel with one kernel."""
    torch = _torch()
    import persistent_gemm

    a, b = _inputs(300, 520, 256, "bf16", "nk", seed=3)
    bias_t = torch.randn(520, device="cuda", dtype=a.dtype) if bias else None
    got = persistent_gemm.torch_contender(a, b, bias_t, alpha)()
    torch.cuda.synchronize()
    _check(got, _reference(a, b, "nk", bias_t, alpha), "bf16")


def test_a_swapped_launch_refuses_what_it_cannot_compute():
    """``swapped`` names why: a bias (it adds along N, the rows of Cᵀ), B as (K, N) (A' would be M-major),
    no ``out``."""
    torch = _torch()
    from hopper_gemm.api import swapped, validate

    a, b = _inputs(256, 256, 64, "bf16", "nk", seed=0)
    out = torch.empty(256, 256, device="cuda", dtype=a.dtype)
    bias = torch.zeros(256, device="cuda", dtype=a.dtype)
    with pytest.raises(ValueError, match="takes no bias"):
        swapped(validate(a, b, bias=bias, out=out))
    with pytest.raises(ValueError, match=r"needs B as \(N, K\)"):
        swapped(validate(a, b.t().contiguous(), out=out, b_layout="kn"))
    with pytest.raises(ValueError, match="writes into out"):
        swapped(validate(a, b))


# --- wide subtiles for widths an odd multiple of 8 (gemm_modes.wide_subtiles) ----------------------------
WIDE_SUBTILE_CONFIGS = [
    ((128, 88), (1, 2), "pingpong", {"epi_n": 88}),
    ((64, 72), (4, 1), "pingpong", {"epi_n": 72}),
    ((128, 216), (2, 1), "cooperative", {"epi_n": 24}),
    ((128, 216), (2, 1), "cooperative", {"epi_n": 72}),
    ((128, 200), (1, 2), "cooperative", {"epi_n": 40, "split_k": 2}),
    ((128, 120), (2, 1), "cooperative", {"epi_n": 24, "split_k": 4, "staging_in_ring": True}),
    ((128, 216), (2, 1), "cooperative", {"epi_n": 24, "deferred_chunks": 9}),
    ((192, 144), (1, 2), "cooperative", {"epi_n": 72, "wg_split": "n"}),
]


def _shape_id(shape: tuple) -> str:
    return "x".join(map(str, shape))


def _wide_id(config: tuple) -> str:
    (tm, tn), (cm, cn), schedule, extra = config
    modes = "".join(f"-{k}{v}" for k, v in extra.items() if k != "epi_n")
    return f"{schedule}-{tm}x{tn}-c{cm}{cn}-e{extra['epi_n']}{modes}"


WIDE_SUBTILE_SHAPES = [(1000, 440, 1000), (300, 1304, 520), (520, 240, 2000), (130, 216, 64)]


@pytest.mark.parametrize("shape", WIDE_SUBTILE_SHAPES, ids=_shape_id)
@pytest.mark.parametrize("config", WIDE_SUBTILE_CONFIGS, ids=_wide_id)
@pytest.mark.parametrize("dtype,bias", [("bf16", False), ("fp16", True)])
def test_wide_subtiles_are_bitwise_the_8_column_ones(shape, config, dtype, bias):
    """A tile an odd multiple of 8 wide staged in plain rows as wide as its subtile (one TMA box each): NaN-
    poisoned output within the fp32 bound, bitwise equal to the same tile's 8-column subtiles (with split-K,
    whose parts add in an order that follows the subtiles, both within the bound) and repeatable, with the
    ring staging, the deferred epilogue and warpgroups along N; ragged M, N and K."""
    torch = _torch()
    from gemm_modes.launch import clusters_to_launch, launcher
    from hopper_gemm.api import validate

    tile, cluster, schedule, extra = config
    m, n, k = shape
    wide = tuned_config(*tile, *cluster, schedule, **extra)
    narrow = wide.with_(epi_n=8)
    try:
        clusters_to_launch(wide, m, n)
    except ValueError:
        pytest.skip("the ring staging or split-K's parts need more clusters than this GPU holds at once")
    a, b = _inputs(m, n, k, dtype, "nk", seed=11)
    bias_t = torch.randn(n, device="cuda", dtype=a.dtype) if bias else None
    outs = []
    for cfg in (wide, narrow, wide):
        out = torch.full((m, n), float("nan"), device="cuda", dtype=a.dtype)
        launcher(cfg, validate(a, b, bias=bias_t, out=out), out)()
        torch.cuda.synchronize()
        outs.append(out)
    _check(outs[0], _reference(a, b, "nk", bias_t), dtype)
    if wide.split_k == 1:  # split-K's parts own shares of subtiles: other subtiles, other orders of the sum
        assert torch.equal(outs[0], outs[1]), "the wide subtiles differ from the 8-column ones"
    _check(outs[1], _reference(a, b, "nk", bias_t), dtype)
    assert torch.equal(outs[0], outs[2])


@pytest.mark.parametrize(
    "mnk,subtile",
    [((2744, 520, 4568), (64, 88)), ((5064, 640, 2072), (128, 24)), ((21264, 392, 9184), (128, 40))]
    + [((18264, 536, 3656), (64, 72)), ((13096, 184, 4672), (64, 184)), ((3464, 120, 8528), (128, 24))],
)
def test_auto_stages_wide_subtiles_and_matches_torch(mnk, subtile):
    """Auto's picks an odd multiple of 8 wide with wide subtiles (``gemm_modes.wide_subtiles``): ping-pong
    128×88 in the ring, cooperative 128×216 and 128×200, 192×144 with its warpgroups along N, ping-pong
    128×184 in clusters of four, and split-K in 4 of 128×120 in the ring."""
    from gemm_modes.autotable import decide
    from hopper_gemm.config import Problem

    assert decide(Problem("bf16"), mnk).config.epi_tile == subtile
    _run(*mnk, "bf16", "nk", "auto")
