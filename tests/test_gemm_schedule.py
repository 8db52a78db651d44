"""examples/hopper_gemm on the CPU: tile order, configuration rules and argument checks (no compile)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from types import SimpleNamespace

import pytest
from gemm_modes.modes import tuned_config
from hopper_gemm.config import SMEM_CAPACITY, Problem, Schedule

from pipes.tile_order import TileOrder, ceil_div


def visits(order: TileOrder, tiles_m: int, tiles_n: int, clusters: int) -> Counter:
    """Every (tile row, tile column) every CTA of every launched cluster computes, as the kernel walks."""
    cm, cn = order.cluster_grid(tiles_m, tiles_n)
    seen: Counter = Counter()
    for cluster in range(clusters):
        for linear in range(cluster, cm * cn, clusters):
            for cta_m in range(order.cluster_m):
                for cta_n in range(order.cluster_n):
                    seen[order.cta_tile(linear, cm, cn, cta_m, cta_n)] += 1
    return seen


@pytest.mark.parametrize("cluster", [(1, 1), (2, 1), (1, 2)])
@pytest.mark.parametrize("raster", ["m", "n"])
@pytest.mark.parametrize("group", [1, 3, 8])
@pytest.mark.parametrize("tiles", [(1, 1), (7, 5), (32, 16), (2, 64)])
def test_every_tile_is_computed_exactly_once(cluster, raster, group, tiles):
    order = TileOrder(*cluster, raster=raster, group=group)
    seen = visits(order, *tiles, clusters=5)
    inside = {(m, n): c for (m, n), c in seen.items() if m < tiles[0] and n < tiles[1]}
    assert set(inside) == {(m, n) for m in range(tiles[0]) for n in range(tiles[1])}
    assert set(inside.values()) == {1}
    # Outside tiles exist only where a cluster hangs over the edge.
    for m, n in set(seen) - set(inside):
        assert m < ceil_div(tiles[0], cluster[0]) * cluster[0] and n < ceil_div(tiles[1], cluster[1]) * cluster[1]


@pytest.mark.parametrize("cluster", [(1, 1), (2, 1), (1, 2)])
@pytest.mark.parametrize("raster", ["m", "n"])
@pytest.mark.parametrize("group", [1, 3, 8])
@pytest.mark.parametrize("tiles", [(1, 1), (7, 5), (16, 32), (3, 64)])
@pytest.mark.parametrize("depth", [1, 2, 3])
def test_steps_are_rectangles_walked_in_order(cluster, raster, group, tiles, depth):
    """Each tile is in exactly one step, a step's tiles are its rectangle, and the walk's cluster-tiles
    visit the steps in order: a copy engine that ships step after step waits on them in the order they finish.
    ``step_depth`` d: d band rows (columns) per step, the last step of a band shallower where they run out."""
    order = TileOrder(*cluster, raster=raster, group=group, step_depth=depth)
    tiles_m, tiles_n = tiles
    cm, cn = order.cluster_grid(tiles_m, tiles_n)
    steps = order.steps(cm, cn)
    members: dict[int, set] = {}
    for tm in range(tiles_m):
        for tn in range(tiles_n):
            members.setdefault(order.step(tm, tn, cm, cn), set()).add((tm, tn))
    assert sorted(members) == list(range(steps))  # no empty step: every step has a tile inside C
    for step, inside in members.items():
        rows, cols = order.step_tiles(step, tiles_m, tiles_n)
        assert inside == {(m, n) for m in rows for n in cols}
    walked = [order.step(*order.cta_tile(i, cm, cn, 0, 0), cm, cn) for i in range(cm * cn)]
    assert walked == sorted(walked)
    # The walk is the same for every depth: depth only groups its steps.
    flat = TileOrder(*cluster, raster=raster, group=group)
    assert [order.cluster_tile(i, cm, cn) for i in range(cm * cn)] == [
        flat.cluster_tile(i, cm, cn) for i in range(cm * cn)
    ]
    # Depth only groups the flat order's steps: each step is at most d consecutive flat steps.
    grouped: dict[int, set] = {}
    for tm in range(tiles_m):
        for tn in range(tiles_n):
            grouped.setdefault(order.step(tm, tn, cm, cn), set()).add(flat.step(tm, tn, cm, cn))
    for flat_steps in grouped.values():
        assert len(flat_steps) <= depth and sorted(flat_steps) == list(range(min(flat_steps), max(flat_steps) + 1))


def test_the_configuration_counts_the_cluster_tiles_the_kernel_walks():
    """``GemmConfig.cluster_tiles`` (the host's count: launch size, the table's waves, the single-wave
    rule) is the product of ``TileOrder.cluster_grid`` (the kernel's)."""
    for tile_m, tile_n, cm, cn in [(128, 256, 2, 1), (256, 128, 1, 2), (128, 128, 2, 2), (64, 64, 1, 1)]:
        config = tuned_config(tile_m, tile_n, cm, cn, "pingpong" if tile_m == 64 else "cooperative")
        order = TileOrder(cm, cn)
        for m in (1, 63, 64, 65, 128, 300, 4096):
            for n in (8, 127, 128, 129, 1000, 8192):
                grid = order.cluster_grid(ceil_div(m, tile_m), ceil_div(n, tile_n))
                assert config.cluster_tiles(m, n) == grid[0] * grid[1], (config.describe(), m, n)


def test_consecutive_cluster_tiles_stay_in_a_band():
    order = TileOrder(1, 1, raster="m", group=4)
    walk = [order.cluster_tile(i, 8, 10) for i in range(12)]
    # Band of 4 columns, walked across first, then down the rows.
    assert walk[:6] == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1)]
    last_band = [order.cluster_tile(i, 8, 10) for i in range(64, 80)]
    assert {n for _, n in last_band} == {8, 9}  # the last band is 2 columns wide


def test_pingpong_warpgroups_split_the_ctas_tiles():
    # Warpgroup g takes the CTA's tiles g, g+2, ...: together they cover the CTA's walk once.
    clusters, total = 3, 17
    for cluster in range(clusters):
        walk = list(range(cluster, total, clusters))
        wg0 = list(range(cluster, total, 2 * clusters))
        wg1 = list(range(cluster + clusters, total, 2 * clusters))
        assert sorted(wg0 + wg1) == walk
        assert wg0 == walk[0::2] and wg1 == walk[1::2]


def test_configuration_rules_name_the_field():
    with pytest.raises(ValueError, match=r"tile_m = 64 is invalid: allowed 128 or 256"):
        tuned_config(tile_m=64, schedule="cooperative")
    with pytest.raises(ValueError, match=r"256 fp32 accumulators"):
        tuned_config(tile_m=128, tile_n=256, schedule="pingpong")
    with pytest.raises(ValueError, match=r"cluster_m = 3"):
        tuned_config(cluster_m=3)
    with pytest.raises(ValueError, match=r"schedule = 'zigzag'"):
        tuned_config(schedule="zigzag")
    with pytest.raises(ValueError, match=r"dtype = 'fp8'"):
        Problem("fp8")
    # 256×128 cooperative: 8 subtiles of 128×32 through 4 staging buffers.
    assert tuned_config(256, 128, 1, 2, "cooperative", epi_batch=4).subtiles == 8
    for batch in (3, 8, 0, True):
        with pytest.raises(
            ValueError, match=rf"epi_batch = {batch} is invalid: allowed an int in \[1, 4\] .* 8 subtiles"
        ):
            tuned_config(256, 128, 1, 2, "cooperative", epi_batch=batch)
    with pytest.raises(ValueError, match=r"epi_batch = 4 is invalid: allowed an int in \[1, 2\]"):
        tuned_config(128, 128, 2, 1, "pingpong", epi_batch=4)  # ping-pong stages through 2 buffers


def test_tile_widths_between_the_powers_of_two_take_16_or_8_column_subtiles():
    """``tile_n``: any multiple of 8 in [64, 256]; where 32 does not divide it the staged subtiles are 16
    columns wide, where 16 does not either 8 (``epi_n`` None), and a new width re-derives that default
    unless ``epi_n`` was asked for."""
    from hopper_gemm.config import GemmConfig, default_epi_n

    assert GemmConfig(tile_n=176, schedule="pingpong").epi_n == 16 == default_epi_n(176)
    assert GemmConfig(tile_n=168, schedule="pingpong").epi_n == 8 == default_epi_n(168)
    assert GemmConfig(tile_n=168).subtiles == 21  # cooperative: 128-row subtiles, 21 of 8 columns
    assert GemmConfig(tile_n=224).epi_n == 32 and GemmConfig(tile_n=224).subtiles == 7
    assert GemmConfig(tile_n=176).subtiles == 11  # cooperative: 128-row subtiles, 11 of 16 columns
    assert GemmConfig(tile_n=256).with_(tile_n=208).epi_n == 16
    assert GemmConfig(tile_n=208).with_(tile_n=256).epi_n == 32
    assert GemmConfig(tile_n=256, epi_n=64).with_(tile_n=192).epi_n == 64  # asked for: kept (and checked)
    assert "epilogue" not in GemmConfig(tile_n=176).describe()  # the default is not spelled out
    for width in (100, 264, 48, 172, True):
        with pytest.raises(ValueError, match=rf"tile_n = {width} is invalid: allowed a multiple of 8 in \[64, 256\]"):
            GemmConfig(tile_n=width)
    with pytest.raises(
        ValueError,
        match=r"epi_n = 32 is invalid: allowed None, 16, 32, 64 or an odd multiple of 8, dividing tile_n = 176",
    ):
        GemmConfig(tile_n=176, epi_n=32)
    with pytest.raises(ValueError, match=r"epi_n = 16 is invalid: .* dividing tile_n = 168"):
        GemmConfig(tile_n=168, epi_n=16)
    # an odd multiple of 8 that divides the width: plain rows, one TMA box (epilogue_store.staging_layout)
    assert GemmConfig(tile_n=168, epi_n=56).subtiles == 3 and GemmConfig(tile_n=168, epi_n=168).subtiles == 1
    for cols in (48, 80, 40, 0, 264):  # 48, 80: swizzled atoms of 16 columns, not plain rows; 40: not a divisor
        with pytest.raises(ValueError, match=rf"epi_n = {cols} is invalid"):
            GemmConfig(tile_n=240 if cols == 48 else 160 if cols == 80 else 168, epi_n=cols)
    with pytest.raises(ValueError, match=r"176 fp32 accumulators \+ 88 registers"):
        tuned_config(128, 176, 2, 1, "cooperative", deferred_chunks=11).with_(tile_m=256)


def test_the_wave_balance_weighs_narrower_tiles():
    """``autotable.COOPERATIVE_NARROWER``: 128×224 and 128×208 (deferred, one subtile per chunk) where they
    keep more of the clusters' turns busy than 128×256, weighed by their merit (0.92) and the columns N
    fills. H100, with PDL, 2026-11-28, against the table without them in the same run: 512×7168×2048 0.936
    against 0.898, 512×14336×4096 1.062 against 1.006, 2560³ 0.973 against 0.927, 2560²×8192 1.012 against
    0.982, 3072×1024×4096 0.897 against 0.839; 256×14336×2048 and 256×13824×5120 ties. Ping-pong 128×176
    (``PINGPONG_BETWEEN_REUSE_COST``): 1024×14336×4096 0.989 / 0.987 against 0.984 / 0.954 (two runs)."""
    from gemm_modes.autotable import decide, wave_balance

    bf16 = Problem("bf16")
    narrow = {mnk: decide(bf16, mnk).config for mnk in ((512, 7168, 2048), (2560, 2560, 2560), (512, 14336, 4096))}
    # 512×7168×2048: 64 cluster-tiles, one per CTA: the ring staging instead of the deferred epilogue
    assert [(c.tile_n, c.deferred_chunks, c.staging_in_ring) for c in narrow.values()] == [
        (224, 0, True),
        (208, 13, False),
        (224, 7, False),
    ]
    assert "keeps 97% of the clusters' turns busy (128×256: 85%)" in decide(bf16, (512, 7168, 2048)).facts
    assert wave_balance((4096, 4096, 2048)).tile_n == 256  # 128×256 fills 97 %: no narrower tile scores more
    # ping-pong 128×176 c2×1: 4 × 82 cluster-tiles fill 4.97 of 5 waves
    wide_n = decide(bf16, (1024, 14336, 4096)).config
    assert (wide_n.schedule, wide_n.tile_n, wide_n.cluster_m) == (Schedule.PINGPONG, 176, 2)
    assert wave_balance((512, 7168, 2048), widths=False).tile_n == 256
    assert decide(bf16, (384, 14336, 4096), widths=False).config.tile_n == 192


def test_deferred_chunks_are_checked_against_the_tile():
    """``deferred_chunks``: a divisor of the tile's subtiles, cooperative only, and the held outputs must
    fit beside the accumulators."""
    assert tuned_config(256, 128, 1, 2, "cooperative", deferred_chunks=8).describe().endswith("deferred store in 8")
    for chunks in (3, 16, -1, True, 1.0):
        with pytest.raises(ValueError, match=r"deferred_chunks = .* is invalid: allowed 0 .* 8 subtiles"):
            tuned_config(256, 128, 1, 2, "cooperative", deferred_chunks=chunks)
    with pytest.raises(ValueError, match=r"deferred_chunks = 2 is invalid: allowed 0 with ping-pong"):
        tuned_config(128, 128, 2, 1, "pingpong", deferred_chunks=2)
    with pytest.raises(ValueError, match=r"192 fp32 accumulators \+ 96 registers .* = 288; allowed at most 192"):
        tuned_config(256, 192, 1, 2, "cooperative", deferred_chunks=2)


def test_stages_fill_shared_memory():
    problem = Problem("bf16")
    config = tuned_config(128, 256, schedule=Schedule.COOPERATIVE)
    ab, epi = config.stages(problem)
    assert (ab, epi) == (4, 4)
    used = ab * config.stage_bytes(problem) + epi * config.staging_bytes(problem)
    assert used <= SMEM_CAPACITY < used + config.stage_bytes(problem)
    with pytest.raises(ValueError, match=r"ab_stages = 9 is invalid: .* = 4 stages"):
        config.with_(ab_stages=9).stages(problem)


def _tensors(torch, m=64, n=32, k=64, dtype=None):
    dtype = dtype or torch.bfloat16
    return torch.randn(m, k, dtype=dtype), torch.randn(n, k, dtype=dtype)


def test_bad_arguments_are_value_errors_that_name_them():
    torch = pytest.importorskip("torch")
    from hopper_gemm.api import gemm, validate

    a, b = _tensors(torch)
    cases = [
        (dict(a=a.float(), b=b), r"a.dtype = torch.float32 is not supported"),
        (dict(a=a, b=b.half()), r"differ"),
        (dict(a=a, b=b[:, :56]), r"shape mismatch: a is \(64, 64\) \(K = 64\) but b.shape\[1\] = 56"),
        (dict(a=a[:, :60], b=b[:, :60]), r"K = 60 is invalid: allowed a multiple of 8"),
        (dict(a=a, b=b, bias=torch.randn(31, dtype=torch.bfloat16)), r"bias must be a 1-D tensor of length N = 32"),
        (dict(a=a, b=b, bias=torch.randn(32)), r"bias.dtype"),
        (dict(a=a.t(), b=b), r"shape mismatch|a must be row-major"),
        (dict(a=a.view(-1)[4 : 4 + 64 * 56].view(64, 56), b=b[:, :56]), r"a.data_ptr\(\) is not 16-byte aligned"),
        (dict(a=a, b=b, out=torch.empty(64, 31, dtype=torch.bfloat16)), r"out must be a tensor of shape"),
        (dict(a=a, b=b, b_layout="tn"), r"b_layout = 'tn' is invalid"),
        (dict(a=a, b=b), r"a is on cpu: every tensor must be on the same CUDA device"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            validate(**kwargs)
    with pytest.raises(ValueError, match=r"schedule = 'fast' is invalid"):
        gemm(a, b, schedule="fast")
    with pytest.raises(ValueError, match=r"pdl = 1 is invalid: allowed True or False"):
        gemm(a, b, pdl=1)


def test_stream_k_is_the_tables_choice_unless_asked():
    from gemm_modes.choice import choose_config
    from hopper_gemm.config import Problem

    bf16 = Problem("bf16")
    # 256×256 cluster-tiles on 66 clusters: 8192³ 15 waves + 34 tiles: the partial wave split; 6144³ 8 + 48
    # (0.73 full): the aligned split (the wave balance's).
    picked = choose_config(bf16, (8192, 8192, 8192), "auto", None, None)
    assert picked.stream_k and picked.stream_k_remainder
    picked = choose_config(bf16, (6144, 6144, 6144), "auto", None, None)
    assert picked.stream_k and picked.stream_k_aligned
    # 3 waves + 58 (a wash when measured, 0.88 full), 1 + 62 (slower), whole waves (nothing to split).
    assert not choose_config(bf16, (4096, 4096, 4096), "auto", None, None).stream_k
    assert not choose_config(bf16, (1024, 8192, 8192), "auto", None, None).stream_k
    assert not choose_config(bf16, (256 * 33, 256 * 8, 4096), "auto", None, None).stream_k  # 4 × 66 tiles
    # From 6 whole waves, the partial wave alone: split when at most 0.6 full, unsplit fuller; before
    # them never (the wave balance weighs the aligned split there)
    from gemm_modes.autotable import decide, stream_k_pays

    assert not stream_k_pays((2560, 2560, 8192))  # 100 = 1 × 66 + 34: aligned 1.005 / remainder 1.019 / 0.976
    assert not stream_k_pays((3328, 3328, 8192))  # 169 = 2 × 66 + 37
    assert not stream_k_pays((512, 28672, 8192))  # 224 = 3 × 66 + 26: remainder 0.90–0.93, aligned 0.96–1.00
    assert not stream_k_pays((6144, 6144, 6144))  # 8 whole waves + 48: 0.73 > 0.6
    assert not stream_k_pays((8192, 5120, 13824))  # 9 + 46 (0.70): remainder 0.99–1.01, aligned 1.06
    assert stream_k_pays((4096, 14336, 4096))  # 13 + 38: 0.58
    assert not stream_k_pays((4608, 4608, 8192))  # 324 = 4 × 66 + 60
    assert not stream_k_pays((7168, 7168, 8192))  # 784 = 11 × 66 + 58: 0.88
    # A thinner partial wave is split with a whole one: from 6 whole waves
    assert stream_k_pays((5120, 5120, 8192))  # 400 = 6 × 66 + 4
    assert not stream_k_pays((4352, 4352, 8192))  # 289 = 4 × 66 + 25, measured 0.92 → 0.84
    assert not stream_k_pays((2560, 2560, 2048))  # short K: never
    # Past K = 16384 from 10 whole waves: split-K on the last wave or a swapped tile ran ahead before them
    assert not stream_k_pays((3099, 8192, 28672))  # 6 + 20: 0.891 remainder, 0.996 swapped 256×112
    assert stream_k_pays((6144, 7168, 18432))  # 10 + 12
    assert stream_k_pays((6966, 5120, 13824))  # 8 + 32 at K = 13824: level there, stream-K kept
    # Where N is the longer side, not where M's row tiles pad it past STREAM_K_MIN_USEFUL: the wave balance's
    # swapped 256-row tiles run M in columns of 8-row steps
    assert not stream_k_pays((1026, 28672, 8192))  # 9 row tiles filled 0.891: swapped 256×152 1.008 against 0.951
    assert stream_k_pays((1433, 28672, 8192))  # 12 filled 0.933
    assert stream_k_pays((5000, 5000, 5000))  # a square: N is not the longer side
    assert stream_k_pays((7000, 6000, 8192))  # M the longer side: the swapped tiles are weighed only where N is
    decision = decide(Problem("bf16"), (1026, 28672, 8192))
    assert decision.config.swap_ab and decision.config.tile_m == 256, decision
    # --explain says why stream-K yielded
    assert decision.facts.endswith("stream-K yields: M × N fills 89% of its 128×256 tiles (< 93%)"), decision.facts
    long_k = decide(Problem("bf16"), (3099, 8192, 28672)).facts
    assert "stream-K yields: K = 28672 > 16384 over 6 whole waves (< 10)" in long_k, long_k
    assert "yields" not in decide(Problem("bf16"), (2048, 2048, 8192)).facts  # stream-K was never in reach
    # The SM count decides the waves: 4096³ on 56 SMs is 9 waves + 4 tiles, on 64 SMs 8 whole ones.
    assert choose_config(bf16, (4096, 4096, 4096), "auto", None, None, sms=56).stream_k
    assert not choose_config(bf16, (4096, 4096, 4096), "auto", None, None, sms=64).stream_k
    assert not choose_config(bf16, (8192, 8192, 8192), "auto", None, None, stream_k=False).stream_k
    assert choose_config(bf16, (4096, 4096, 4096), "cooperative", None, None, stream_k=True).stream_k
    remainder = choose_config(bf16, (4096, 4096, 4096), "auto", None, None, stream_k="remainder")
    assert remainder.stream_k and remainder.stream_k_remainder
    with pytest.raises(ValueError, match=r"stream_k = 1 is invalid"):
        choose_config(bf16, (4096, 4096, 4096), "auto", None, None, stream_k=1)
    with pytest.raises(ValueError, match=r"stream_k = 'yes' is invalid"):
        choose_config(bf16, (4096, 4096, 4096), "auto", None, None, stream_k="yes")
    with pytest.raises(ValueError, match=r"GemmConfig.stream_k = True is invalid: allowed False with ping-pong"):
        choose_config(bf16, (4096, 4096, 4096), "pingpong", None, None, stream_k=True)


@pytest.mark.parametrize(
    "tiles,clusters,k_tiles",
    [(256, 66, 64), (576, 66, 96), (1024, 66, 128), (2048, 66, 64), (66, 66, 8), (10, 66, 8), (40, 66, 8)]
    + [(67, 66, 3), (131, 66, 1), (200, 7, 5), (256, 66, 2)]
    + [(16, 66, 128), (32, 132, 128), (64, 132, 128), (33, 66, 64), (5, 66, 64), (3, 7, 1)],  # under a wave
)
@pytest.mark.parametrize("mode", ["wave", "remainder", "remainder3", "remainder4", "remainder8"])
def test_stream_k_covers_every_k_tile_once_and_numbers_the_parts(tiles, clusters, k_tiles, mode):
    """StreamKSplit, walked as the kernel walks it: every (tile, k-tile) exactly once; a split tile's units
    meet end to end, numbered 0 (k-tile 0: it stores the tile) to ``partials``, at most ``p + 1`` of them
    (p = the configuration's partials in remainder mode, else 1: shares of a whole tile); whole waves are
    not split; ``remainder`` splits only the partial wave when its shares are at least 1/p of a tile
    (else the wave and a half), and under a wave that is every tile (split-K)."""
    from gemm_modes.modes import STREAM_K_PARTIALS
    from gemm_modes.splits import StreamKSplit

    remainder = mode != "wave"
    p = int(mode[9:] or STREAM_K_PARTIALS) if remainder else 1
    split = StreamKSplit.of(tiles, clusters, k_tiles, remainder=remainder, partials=max(p, STREAM_K_PARTIALS))
    parts: dict[int, list] = {}
    for cluster in range(clusters):
        for linear in range(cluster, split.dp_tiles, clusters):
            parts.setdefault(linear, []).append((0, k_tiles, 0))
        at, end = split.stream(cluster, k_tiles)
        while at < end:
            tile, kb, ke = StreamKSplit.unit(at, end, k_tiles)
            assert 0 <= kb < ke <= k_tiles
            parts.setdefault(split.dp_tiles + tile, []).append((kb, ke, split.part(at, tile, k_tiles)))
            at += ke - kb
    assert sorted(parts) == list(range(tiles))
    for linear, units in parts.items():
        units.sort()
        assert units[0][0] == 0 and units[-1][1] == k_tiles and len(units) <= p + 1
        assert all(a[1] == b[0] for a, b in zip(units, units[1:], strict=False))
        assert [u[2] for u in units] == list(range(len(units)))  # part 0 holds k-tile 0
        if linear >= split.dp_tiles:
            assert split.partials(linear - split.dp_tiles, k_tiles) == len(units) - 1
    rem = tiles % clusters
    if remainder and rem and p * -(-rem * k_tiles // clusters) >= k_tiles:
        assert split.sk_tiles == rem  # the partial wave alone (every tile under a wave)
    elif rem and tiles > clusters:
        assert split.sk_tiles == clusters + rem and split.share >= k_tiles
    else:
        assert split.sk_tiles == 0  # whole waves, or under a wave with shares too small


@pytest.mark.slow
@pytest.mark.parametrize(
    "tiles,clusters,k_tiles,remainder,partials",
    [(7, 3, 3, False, 2), (4, 3, 5, False, 2), (5, 2, 4, False, 2), (11, 4, 4, False, 2), (6, 4, 5, True, 2)]
    + [(2, 6, 8, True, 3)],  # split-K under a wave: shares of 3 k-tiles of 8, a tile of four parts
)
def test_the_stream_k_fix_up_passes_the_checker_and_planted_defects_do_not(
    tiles, clusters, k_tiles, remainder, partials
):
    """gemm_modes.stream_k_protocol: each cluster an agent walking StreamKSplit's units (the kernel's own
    arithmetic) over two stream-ordered launches; (6, 4, 5) with ``remainder`` has a tile of three parts,
    the walk under a wave (six agents: proved over one launch, within the state budget) one of four.
    Waiting for the flag's count and putting it back are each necessary: without either, a storing unit
    adds a partial that is not this launch's."""
    from gemm_modes.splits import StreamKSplit
    from gemm_modes.stream_k_protocol import STREAM_K_BUGS, StreamKWalk, check_stream_k

    split = StreamKSplit.of(tiles, clusters, k_tiles, remainder=remainder, partials=partials)
    if remainder:
        assert max(split.partials(t, k_tiles) for t in range(split.sk_tiles)) == partials
    walk = StreamKWalk(tiles, clusters, k_tiles, remainder=remainder, partials=partials)
    report = check_stream_k(walk if clusters < 6 else replace(walk, launches=1))
    assert report.ok and report.exhaustive, str(report)
    for bug in STREAM_K_BUGS:
        found = check_stream_k(walk, bug=bug, max_states=50_000, max_findings=1)
        kinds = {f.kind.name for f in found.findings}
        assert "AGENT_ERROR" in kinds or "READ_UNCOMMITTED" in kinds, (bug, kinds)


def test_the_stream_k_model_finds_a_part_without_a_slot():
    """A kernel built with fewer slots than its split has parts would post a partial into the next tile's
    slots: the model walks the split of ``partials`` but gives the tile the slots of a smaller build."""
    from gemm_modes import stream_k_protocol
    from gemm_modes.splits import StreamKSplit
    from gemm_modes.stream_k_protocol import StreamKWalk, check_stream_k

    walk = StreamKWalk(1, 4, 4, remainder=True, partials=4)
    real = StreamKSplit.slots
    try:
        stream_k_protocol.StreamKSplit.slots = staticmethod(lambda remainder, partials=2: 2)
        found = check_stream_k(walk)
    finally:
        stream_k_protocol.StreamKSplit.slots = real
    assert not found.ok
    assert any("past its 2 slots" in str(f) for f in found.findings), str(found)


def test_the_stream_k_model_refuses_walks_with_nothing_to_fix_up():
    from gemm_modes.stream_k_protocol import StreamKWalk, check_stream_k

    with pytest.raises(ValueError, match="split nothing"):
        check_stream_k(StreamKWalk(6, 3, 4))  # whole waves
    with pytest.raises(ValueError, match="split no tile"):
        check_stream_k(StreamKWalk(5, 3, 2))  # shares of 4 k-tiles = 2 whole tiles
    with pytest.raises(ValueError, match="bug = 'typo' is invalid"):
        check_stream_k(StreamKWalk(7, 3, 3), bug="typo")


@pytest.mark.parametrize(
    "tiles,clusters,k_tiles",
    [(48, 66, 128), (40, 66, 128), (48, 66, 64), (256, 66, 64), (65, 66, 128), (1, 66, 128), (132 + 7, 66, 96)]
    + [(2, 3, 7), (5, 3, 7), (2, 4, 4), (3, 4, 8), (7, 8, 1), (7, 8, 2), (66, 66, 64), (0, 66, 64), (33, 66, 4)],
)
def test_the_aligned_split_keeps_every_cluster_at_the_same_k(tiles, clusters, k_tiles):
    """AlignedSplit, walked as the kernel walks it: every (tile, k-tile) exactly once; the whole waves
    whole; each tile of the partial wave a lead ``[0, lead)`` on cluster ``tile`` (same length for all:
    the leads walk k in step) and, where something follows, one follow part ``[lead, K)`` on a cluster
    the partial wave leaves idle, at most ``per_follower`` of them per cluster; ``lead`` the least that
    balances a lead and its addition against a follower's parts and posts."""
    from gemm_modes.splits import ALIGNED_ADD_K_TILES, ALIGNED_POST_K_TILES, AlignedSplit

    split = AlignedSplit.of(tiles, clusters, k_tiles)
    rem = tiles % clusters if split.lead < k_tiles else 0  # a lead of every k-tile: the tiles stay whole
    assert (split.dp_tiles, split.sk_tiles) == (tiles - rem, rem)
    units: dict[int, list] = {}
    followers: dict[int, int] = {}
    for cluster in range(clusters):
        at, end = split.stream(cluster, k_tiles)
        first = True
        while at < end:
            tile, kb, ke = split.unit(at, end, k_tiles)
            part = split.part(at, tile, k_tiles)
            assert first or part == 1  # a lead is its cluster's only unit: stream_k.split_phase relies on it
            first = False
            units.setdefault(tile, []).append((kb, ke, part, cluster))
            if part:
                followers[cluster] = followers.get(cluster, 0) + 1
            at += ke - kb
    assert sorted(units) == list(range(rem))
    for tile, parts in units.items():
        parts.sort()
        assert parts[0] == (0, split.lead, 0, tile)  # the lead, on its own cluster
        assert len(parts) == 2 and parts[1][:3] == (split.lead, k_tiles, 1) and parts[1][3] >= rem
        assert split.partials(tile, k_tiles) == 1
    assert all(count <= split.per_follower for count in followers.values())
    if rem and split.lead > 1:
        q, add, post = split.per_follower, ALIGNED_ADD_K_TILES, ALIGNED_POST_K_TILES
        follow = split.follow(k_tiles)
        assert split.lead + add >= q * (follow + post)
        assert q * (follow + 1 + post) > split.lead - 1 + add  # one k-tile less would not balance


@pytest.mark.parametrize("tiles,clusters,k_tiles", [(2, 3, 7), (5, 3, 7), (2, 4, 4)])
def test_the_aligned_fix_up_passes_the_checker_and_planted_defects_do_not(tiles, clusters, k_tiles):
    """gemm_modes.stream_k_protocol with ``aligned``: (2, 3, 7) has one follower posting two tiles' follow
    parts in turn, (5, 3, 7) whole tiles before them, over two stream-ordered launches."""
    from gemm_modes.stream_k_protocol import STREAM_K_BUGS, StreamKWalk, check_stream_k

    walk = StreamKWalk(tiles, clusters, k_tiles, aligned=True)
    report = check_stream_k(walk)
    assert report.ok and report.exhaustive and "stream_k_aligned" in str(report), str(report)
    for bug in STREAM_K_BUGS:
        kinds = {f.kind.name for f in check_stream_k(walk, bug=bug).findings}
        assert "AGENT_ERROR" in kinds or "READ_UNCOMMITTED" in kinds, (bug, kinds)
    with pytest.raises(ValueError, match="split nothing"):
        check_stream_k(StreamKWalk(7, 8, 1, aligned=True))  # a lead of the one k-tile: nothing follows
    with pytest.raises(ValueError, match="aligned and remainder are two modes"):
        check_stream_k(StreamKWalk(2, 3, 7, remainder=True, aligned=True))


def test_the_aligned_split_is_asked_for_and_launched_on_every_resident_cluster(monkeypatch):
    """``stream_k="aligned"`` (gemm, choose_config) and ``GemmConfig.stream_k_aligned``: with stream-K only,
    not with the remainder mode; under a wave the launch takes every resident cluster (the followers)."""
    from gemm_modes import launch
    from gemm_modes.choice import choose_config
    from hopper_gemm import launch as plain_launch
    from hopper_gemm.config import Problem

    monkeypatch.setitem(plain_launch._RESIDENT, (2, 0), 66)
    aligned = choose_config(Problem("bf16"), (3072, 1024, 8192), "auto", None, None, stream_k="aligned")
    assert aligned.stream_k and aligned.stream_k_aligned and not aligned.stream_k_remainder
    assert "stream-K (aligned)" in aligned.describe()
    # 48 cluster-tiles of 128 k-tiles on 66 clusters: leads of 99 k-tiles, 16 followers of three follow parts
    assert launch.clusters_to_launch(aligned, 3072, 1024, k=8192) == 66
    assert launch.stream_k_split(aligned, (3072, 1024, 8192), 66).lead == 99
    assert launch.clusters_to_launch(aligned, 3072, 1024) == 48  # without k: no split known
    assert launch.clusters_to_launch(aligned, 3072, 1024, k=64) == 48  # one k-tile: nothing follows
    with pytest.raises(ValueError, match=r"stream_k_aligned = True is invalid: allowed False, or True with stream_k"):
        tuned_config(stream_k_aligned=True)
    with pytest.raises(ValueError, match=r"stream_k_aligned = True is invalid"):
        tuned_config(stream_k=True, stream_k_remainder=True, stream_k_aligned=True)
    with pytest.raises(ValueError, match=r"stream_k_aligned = 1 is invalid"):
        tuned_config(stream_k=True, stream_k_aligned=1)
    with pytest.raises(ValueError, match=r"stream_k = 'align' is invalid: allowed None .* 'remainder' or 'aligned'"):
        choose_config(Problem("bf16"), (3072, 1024, 8192), "auto", None, None, stream_k="align")


def test_auto_takes_the_aligned_split_where_it_measured_ahead():
    """``autotable.aligned_split`` among the wave balance's contenders (H100, with PDL, two repetitions, ours /
    torch, unsplit → aligned): 3072×1024×8192 (48 cluster-tiles on 66 clusters) 0.815 → 0.894, ×4096 0.773 →
    0.807, 2304×3328×8192 (1 + 51/66 waves) 0.999 → 1.054, 2816²×8192 (1 + 55/66) 1.002 → 1.029; kept
    unsplit: 4096³ (3 + 58/66, leads of 61 of 64 k-tiles: a tie), 1536×2560×8192 (60/66 under a wave: 0.980
    against 0.963), 4608²×8192 (4 + 60/66, a tie); the remainder mode where stream-K pays (6144³: a tie);
    never at K ≤ 2048 (not measured)."""
    from gemm_modes.autotable import aligned_split, pick
    from hopper_gemm.config import Problem

    bf16 = Problem("bf16")
    for mnk in ((3072, 1024, 8192), (2304, 3328, 8192), (2816, 2816, 8192), (3840, 3840, 8192)):
        chosen = pick(bf16, mnk)
        assert chosen.stream_k_aligned and chosen.deferred_chunks == 8 and (chosen.tile_m, chosen.tile_n) == (128, 256)
    # 3072×1024×4096: 60 cluster-tiles of 128×208 keep more turns busy (0.897 against the split's 0.839)
    assert (pick(bf16, (3072, 1024, 4096)).tile_n, pick(bf16, (3072, 1024, 4096)).stream_k) == (208, False)
    for mnk in ((4096, 4096, 4096), (1536, 2560, 8192), (4608, 4608, 8192)):
        assert not pick(bf16, mnk).stream_k, mnk
    assert pick(bf16, (6144, 6144, 6144)).stream_k_aligned  # 8 + 48/66 waves: 1.042 against remainder 1.038
    assert aligned_split((3072, 1024, 2048)) is None and aligned_split((4096, 4096, 4096)) is not None
    assert aligned_split((256 * 33, 256 * 8, 4096)) is None  # 4 whole waves of 66: nothing to split


def test_small_m_takes_the_largest_tile_that_fills_the_sms():
    """The fill rule (gemm_modes.autotable): the tile of least streamed rows per SM (waves × (tile_m +
    tile_n) / the useful share of the rows), the larger on a tie; cluster 2×1 when M spans an even number
    of row tiles, else 1×2; tile_m 128 never for M ≤ 64."""
    from gemm_modes.autotable import pick
    from hopper_gemm.config import Problem, Schedule

    def shape(mnk, sms=132):
        c = pick(Problem("bf16"), mnk, sms, swap=False)  # the swapped small-M tiles: test_gemm_rule_facts.py
        assert c.schedule is Schedule.PINGPONG and not c.stream_k, mnk
        return (c.tile_m, c.tile_n, c.cluster_m, c.cluster_n)

    assert shape((256, 8192, 8192)) == (128, 128, 2, 1)  # 2 × 64 = 128 tiles ≥ 0.9 × 132
    assert shape((256, 8192, 1024)) == (128, 128, 2, 1)  # small M comes before short K
    assert shape((128, 16384, 4096)) == (128, 128, 1, 2)  # one row tile: the cluster runs along N
    assert shape((128, 8192, 8192)) == (128, 64, 1, 2)  # 64 tiles of 128×128 would idle half the SMs
    assert shape((256, 4096, 8192)) == (128, 64, 2, 1)
    assert shape((128, 4096, 4096)) == (64, 64, 2, 1)  # 32, 64, 64 tiles, then 128
    assert shape((64, 8192, 8192)) == (64, 64, 1, 2)  # M ≤ 64: no 128-row tiles
    assert shape((1, 8, 8)) == (64, 64, 1, 2)  # nothing fills: the smallest tile
    # 144 tiles of 128×128 are 1.09 waves; 96 of 128×192 one; 3 row tiles: a 2×1 cluster would pad a fourth.
    # 128×144 would stream fewer rows per SM, but its 43 column tiles pad one (``pairs_evenly``); 2 × 55
    # tiles of 192×112 are under one wave (``TALL_SMALL_M_TILE`` is weighed past one only)
    assert shape((384, 6144, 8192)) == (128, 192, 1, 2)
    assert shape((384, 13824, 5120)) == (192, 112, 2, 1)  # 2 × 124 tiles: 1.88 waves, B multicast to both
    assert shape((320, 8192, 8192)) == (128, 192, 1, 2)  # 129 tiles in one wave (320 of 384 rows useful)
    assert shape((300, 6144, 6144)) == (128, 192, 1, 2)  # ties with 64×128's 2 waves: the larger tile
    assert shape((130, 4096, 4096)) == (64, 128, 1, 2)  # not 2 rows of 128 whose second holds 2 rows
    assert shape((384, 4096, 4096)) == (128, 128, 1, 2)  # 96 tiles in one wave, not 192 in 1.45 (112: unpaired)
    assert shape((128, 14336, 4096)) == (128, 112, 1, 2)  # 128 tiles in one wave: fewer rows than 128×128's
    # 384×14336×4096: 2 × 128 tiles of 192×112 in 1.94 waves (1.002 of torch against 128×176's 0.880)
    assert shape((384, 14336, 4096)) == (192, 112, 2, 1)
    assert shape((130, 2048, 4096)) == (64, 64, 1, 2)  # 96 tiles: none fills; 3 rows of 64: cluster 1×2
    # the SM count decides: 128×8192² on 64 SMs fills with 128×128 c1×2 (64 tiles ≥ 0.9 × 64)
    assert shape((128, 8192, 8192), sms=64) == (128, 128, 1, 2)
    # with a bias a 128×192 ping-pong tile spills: the rule takes the next cheapest
    biased = pick(Problem("bf16", bias=True), (320, 8192, 8192))
    assert (biased.tile_m, biased.tile_n, biased.cluster_m, biased.cluster_n) == (64, 128, 1, 2)  # 576 against 583


def test_small_m_steps_aside_where_the_cooperative_tile_streams_no_more_and_splits_a_long_k():
    """Past the ping-pong tiles, the small-M rule weighs the cooperative 128×256 tile (the table's other
    rows then decide) and, where its tile leaves clusters idle and K is long, 128×128 tiles split at one k.
    H100, with PDL, ours against ours in one run: 256×13824×5120 cooperative 1.00 against ping-pong
    128×128 0.93, 512×8192×28672 0.99 against 0.91, 512×28672×8192 aligned 0.96 against 128×192 0.88;
    256×5120×13824 the 128×128 split 0.91 against ping-pong 0.80."""
    from gemm_modes.autotable import decide, small_m, small_m_cost, table_decision
    from hopper_gemm.config import Problem, Schedule

    bf16 = Problem("bf16")
    for mnk, width in (((256, 13824, 5120), 224), ((512, 8192, 28672), 256)):
        ping = min((128, 192), (128, 128), key=lambda t: small_m_cost(mnk, t))
        assert small_m_cost(mnk, (128, 256), row_pairs=True) < small_m_cost(mnk, ping)
        assert small_m(mnk) is None
        chosen = decide(bf16, mnk)
        assert chosen.config.schedule is Schedule.COOPERATIVE and chosen.config.tile_n == width, mnk
    # 512×28672×8192: 4 × 163 tiles of 128×176 stream fewer rows than 128×256 (0.975 against the split's 0.943)
    assert decide(bf16, (512, 28672, 8192)).config.tile_n == 176
    split = table_decision(bf16, (256, 5120, 13824))  # decide's last step splits K on Cᵀ there (long_k)
    assert split.rule == "small M" and split.config.stream_k_aligned and split.config.tile_n == 128
    assert "split at one k" in split.facts
    assert not small_m((256, 5120, 4096)).stream_k  # K below SMALL_M_SPLIT_MIN_K
    assert not small_m((384, 14336, 8192)).stream_k  # 113 cluster-tiles of 128×192: the SMs are full
    assert not small_m((130, 4096, 8192)).stream_k  # 128-row tiles would waste half their rows
    assert small_m((384, 14336, 4096)) is not None  # 3 row tiles: a 2×1 cluster of 128×256 would pad a fourth


def test_small_n_turns_the_fill_rule_where_cooperative_tiles_would_idle_sms():
    """N ≤ 512 with M above it: the fill rule on the turned problem (A is the streamed operand), cluster 1×2
    (A multicast) for an even number of column tiles, else 2×1; the cooperative 128×256 tile where M is
    long enough that it streams no more rows per SM."""
    from gemm_modes.autotable import pick, table_decision
    from hopper_gemm.config import Problem, Schedule

    def shape(mnk, bias=False):  # the rule's own pick, before the long-K split may take its place
        c = table_decision(Problem("bf16", bias=bias), mnk).config
        return (c.schedule.value, c.tile_m, c.tile_n, c.cluster_m, c.cluster_n)

    pp = Schedule.PINGPONG.value
    assert shape((8192, 256, 8192)) == (pp, 128, 128, 1, 2)  # 128 tiles in one wave; 64 of 128×256 idle half
    assert shape((4096, 256, 4096)) == (pp, 64, 128, 1, 2)
    assert shape((4096, 128, 8192)) == (pp, 64, 64, 1, 2)
    assert shape((14336, 128, 4096)) == (pp, 128, 128, 2, 1)  # one column tile: the cluster runs along M
    assert shape((8192, 64, 8192)) == (pp, 64, 64, 2, 1)  # N ≤ 64: no 128-column tile
    assert shape((8192, 256, 1024), bias=True) == (pp, 128, 128, 1, 2)  # before short K, as small M
    coop = Schedule.COOPERATIVE.value
    assert shape((8192, 512, 8192)) == (coop, 128, 256, 2, 1)  # 128 tiles of 128×256 fill a wave
    assert shape((16384, 256, 8192)) == (coop, 128, 256, 2, 1)
    assert pick(Problem("bf16"), (8192, 256, 8192)).staging_in_ring  # one tile per CTA


def test_fill_takes_a_ping_pong_tile_where_cooperative_tiles_are_fewer_than_the_sms():
    """M and N above 512 with fewer cooperative 128×256 tiles than SMs: the ping-pong tile of least streamed
    rows per SM if it beats the cooperative one; cluster 1×2 unless that pairs an odd number of column
    tiles and 2×1 would not. Before short K: a short k-loop leaves the SMs just as idle."""
    from gemm_modes.autotable import whole_tiles
    from hopper_gemm.config import Problem, Schedule

    def shape(mnk, bias=False):
        c = whole_tiles(Problem("bf16", bias=bias), mnk)  # split-K takes some first (its own test)
        return (c.schedule.value, c.tile_m, c.tile_n, c.cluster_m, c.cluster_n)

    pp, coop = Schedule.PINGPONG.value, Schedule.COOPERATIVE.value
    assert shape((1024, 1024, 8192)) == (pp, 128, 64, 1, 2)  # 32 cooperative tiles for 132 SMs; 128 of these
    assert shape((1024, 2048, 8192)) == (pp, 128, 128, 1, 2)
    assert shape((1000, 1104, 8192)) == (pp, 128, 112, 1, 2)  # 80 tiles, 1104 of 1120 columns useful
    assert shape((1000, 1200, 8192)) == (pp, 128, 112, 2, 1)  # 11 column tiles, 8 row tiles: 2×1
    assert shape((1536, 1536, 4096)) == (pp, 128, 144, 2, 1)  # 132 tiles in one wave; 11 column tiles
    assert shape((1536, 1536, 4096), bias=True) == (pp, 128, 144, 2, 1)
    assert shape((1024, 1024, 2048)) == (pp, 64, 128, 1, 2)  # not short K's 128×192; 64×128: WIDE_BEFORE_TALL
    assert shape((2048, 2048, 8192)) == (coop, 128, 256, 2, 1)  # 128 tiles: no small tile streams less
    assert shape((1024, 8192, 8192)) == (coop, 128, 256, 2, 1)  # a whole wave and more


def test_wave_balance_weighs_each_tiles_wave_fill_by_its_merit_at_this_k():
    """Where neither stream-K nor the fill rules apply: the cooperative 128×256 tile or a ping-pong tile,
    whichever scores best; a score is the wave fill (cluster-tiles over the whole waves they take), times
    1 + 0.03 × 2048 / K − reuse for ping-pong (128×192: 0.06, 128×128: 0.09; with a bias 0.08 × 2048 / K
    and no 128×192)."""
    from gemm_modes.autotable import (
        COOPERATIVE_DEFERRED,
        TALL_MERIT,
        COOPERATIVE_128x256,
        PINGPONG_128x128,
        PINGPONG_128x192,
        pick,
        split_tail,
        wave_fill,
    )
    from hopper_gemm.config import Problem

    def picked(mnk, bias=False):
        return pick(Problem("bf16", bias=bias), mnk).with_(staging_in_ring=False)

    # 8192²: 1024 cluster-tiles on 66 clusters fill 15.5 of 16 waves, 1376 ping-pong ones 20.85 of 21
    assert wave_fill(COOPERATIVE_DEFERRED, 8192, 8192) == 1024 / (16 * 66)
    assert wave_fill(PINGPONG_128x192, 8192, 8192) == 1376 / (21 * 66)
    assert wave_fill(PINGPONG_128x192, 8192, 8192, sms=8) == 1376 / (344 * 4)  # a small GPU: 4 clusters
    assert wave_fill(COOPERATIVE_DEFERRED, 2048, 2048) == 64 / 66  # under a wave: one turn each
    # 0.993 × (1 + 0.03 − 0.06) > 0.970 at K = 1024, not at K = 2048 (× 0.97); with a bias 128×128 ties the
    # cooperative fill, and its merit 0.08 × 2048 / K − 0.09 is positive up to K = 1820
    assert picked((8192, 8192, 1024)) == PINGPONG_128x192
    assert picked((8192, 8192, 2048)) == COOPERATIVE_DEFERRED
    assert picked((8192, 8192, 1024), bias=True) == PINGPONG_128x128
    assert picked((8192, 8192, 1792), bias=True) == PINGPONG_128x128
    assert picked((8192, 8192, 1856), bias=True) == COOPERATIVE_DEFERRED
    for mnk in ((4096, 4096, 2048), (6144, 6144, 2048)):
        assert picked(mnk) == picked(mnk, bias=True) == COOPERATIVE_DEFERRED, mnk
    # 2048³: 64 cluster-tiles, one per CTA: nothing to defer the epilogue under (single_wave_staging)
    assert picked((2048, 2048, 2048)) == picked((2048, 2048, 2048), bias=True) == COOPERATIVE_128x256
    # 3072²: 144 cooperative cluster-tiles are 2.2 waves of 66; 384 ping-pong tiles 2.9 of 132
    assert picked((3072, 3072, 2048)) == PINGPONG_128x192
    assert picked((3072, 3072, 2048), bias=True) == PINGPONG_128x128
    # long K, too few waves for stream-K: split-K on the last wave, 12 tiles in 4 parts (ping-pong ties it)
    assert picked((3072, 3072, 8192)) == COOPERATIVE_128x256.with_(split_k=4)
    # 128×128 fills 0.97 against 0.82 (128×192), 0.81 (cooperative); 128×160 fills 0.97 too with fewer tiles
    # (H200, 2026-11-28: 1.052 of torch against 128×128's 1.040); with a bias 128×128
    assert picked((2048, 5120, 2048)) == PINGPONG_128x128.with_(tile_n=160)
    assert picked((2048, 5120, 2048), bias=True) == PINGPONG_128x128
    # 128×128 with M the longer side: cluster 1×2 (A multicast) where the 8 column tiles pair evenly
    assert picked((6144, 1024, 2048)) == PINGPONG_128x128.with_(cluster_m=1, cluster_n=2)
    assert picked((6144, 1024, 2048), bias=True) == PINGPONG_128x128.with_(cluster_m=1, cluster_n=2)
    assert picked((3072, 3072, 2048)) == PINGPONG_128x192  # 128×192 keeps 2×1
    # split-K on the last wave: 1536×3072×8192 is 72 cluster-tiles, 6 past one wave; 8 parts score
    # 72 / (66 × (1 + 1/8 + 0.4 × 2048 / 8192)) = 0.89 against ping-pong 128×192's 0.73 × 0.9475
    assert split_tail((1536, 3072, 8192))[0] == COOPERATIVE_128x256.with_(split_k=8)
    assert split_tail((1536, 3072, 8192))[1] == 72 / (66 * (1 + 1 / 8 + 0.1))
    assert picked((1536, 3072, 8192), bias=True) == COOPERATIVE_128x256.with_(split_k=8)
    assert picked((1536, 3072, 8192)) == TALL_MERIT[0][0]  # 64 cluster-tiles of 192×192: 0.97 × 0.95
    assert split_tail((1536, 3072, 2048))[0].split_k == 2  # 32 k-tiles: parts of at least 16
    short = picked((1536, 3072, 2048))  # the fix-up weighs 4× as much at K = 2048: a ping-pong tile instead
    assert short.schedule is Schedule.PINGPONG and short.split_k == 1
    assert split_tail((3072, 3072, 8192))[0].split_k == 4  # 12 past 132: 8 parts would need 96 clusters
    assert split_tail((4096, 4096, 4096)) is None  # 58 past 198: 116 clusters for 2 parts
    assert split_tail((1024, 1024, 8192)) is None  # under a wave: split_k's class
    assert split_tail((3072, 2816, 8192)) is None  # 132 = 2 whole waves
    assert picked((6144, 6144, 6144)).stream_k  # from 4 whole waves and a partial one at long K: stream-K
    assert not picked((6144, 6144, 2048)).stream_k  # never at short K: not measured there


def test_the_small_m_cost_counts_waves_streamed_rows_and_padding():
    from gemm_modes.autotable import small_m_cost

    # 128×8192², 132 SMs: 64 tiles of 128×128 in one wave (256 rows each); 128 of 128×64 in one (192)
    assert small_m_cost((128, 8192, 8192), (128, 128)) == 256
    assert small_m_cost((128, 8192, 8192), (128, 64)) == 192
    # 384×4096²: 192 tiles of 128×64 are 2 waves on 132 SMs
    assert small_m_cost((384, 4096, 4096), (128, 64)) == 2 * 192
    # 130 rows in two 128-row tiles: 256 / 130 of the streamed rows per useful one
    assert small_m_cost((130, 4096, 4096), (128, 64)) == 192 * 256 / 130
    # columns past N count as rows do: 14336 in 82 tiles of 176 columns (14432)
    assert small_m_cost((384, 14336, 4096), (128, 176)) == 2 * 304 * 14432 / 14336
    # a 1×2 cluster pads an odd column count: 3 × 43 tiles of 128×144 at N = 6144 become 3 × 44 = 132
    assert small_m_cost((384, 6144, 8192), (128, 144), col_pairs=True) == 272 * 6192 / 6144
    assert small_m_cost((384, 6144, 8192), (128, 144)) == 272 * 6192 / 6144  # 129 tiles: one wave either way
    assert small_m_cost((384, 7168, 4096), (128, 112), col_pairs=True) == 2 * 240  # 3 × 64 + 0 padding: 192 tiles


def test_a_width_between_the_powers_of_two_is_weighed_only_where_its_tiles_pair_evenly():
    """``autotable.pairs_evenly``: in :func:`small_m` and :func:`fill` a width between the powers of two is a
    candidate only where the row or the column tiles come in an even count (a cluster of two pads none)."""
    from gemm_modes.autotable import pairs_evenly, small_m

    assert pairs_evenly((384, 14336, 4096), (128, 176))  # 3 rows, 82 columns
    assert not pairs_evenly((384, 6144, 8192), (128, 144))  # 3 rows, 43 columns
    assert pairs_evenly((512, 6144, 8192), (128, 144))  # 4 rows
    assert small_m((384, 6144, 8192)).tile_n != 144  # its cheapest 128-row tile by the cost, but padded
    assert small_m((384, 14336, 4096), widths=False).tile_n == 192


def test_a_tile_override_keeps_the_epilogue_choices_the_new_tile_allows():
    """``tile=`` / ``cluster=`` on an auto pick: the deferred chunks and the staging batch shrink to what the
    new tile accepts instead of failing (or being dropped where they still fit)."""
    from gemm_modes.choice import choose_config

    bf16 = Problem("bf16")
    cube = (4096, 4096, 4096)
    assert choose_config(bf16, cube, "auto", None, None).deferred_chunks == 8
    assert choose_config(bf16, cube, "auto", (128, 128), None).deferred_chunks == 4  # 4 subtiles of 128×32
    assert choose_config(bf16, cube, "auto", (256, 128), (1, 2)).deferred_chunks == 8
    assert choose_config(bf16, cube, "auto", (256, 192), None).deferred_chunks == 0  # 192 + 96 registers
    batched = tuned_config(256, 128, 1, 2, "cooperative", epi_batch=4)
    assert batched.reshaped(schedule="pingpong", tile_m=128).epi_batch == 2  # ping-pong stages through 2
    assert batched.reshaped(cluster_m=2, cluster_n=1) == batched.with_(cluster_m=2, cluster_n=1)


def test_staging_in_the_ring_frees_a_stage_and_is_refused_where_the_ring_stays_busy():
    """``staging_in_ring``: the staging buffers' bytes go to the A/B ring (128×128: 6 → 7 stages of 32 KiB);
    with stream-K or the deferred epilogue loads still land in the ring under an epilogue: refused, naming
    the field and why."""
    bf16 = Problem("bf16")
    pingpong = tuned_config(128, 128, 2, 1, Schedule.PINGPONG)
    assert pingpong.stages(bf16) == (6, 2)
    assert pingpong.with_(staging_in_ring=True).stages(bf16) == (7, 2)
    used = 7 * pingpong.stage_bytes(bf16)
    assert used <= SMEM_CAPACITY < used + pingpong.staging_bytes(bf16) * 2 + 1024  # the staging did not fit beside
    assert "staging in the A/B ring" in pingpong.with_(staging_in_ring=True).describe()
    coop = tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE)
    with pytest.raises(ValueError, match=r"staging_in_ring = True is invalid: allowed False with stream_k"):
        coop.with_(stream_k=True, staging_in_ring=True)
    with pytest.raises(ValueError, match=r"staging_in_ring = True is invalid: allowed False with deferred_chunks"):
        coop.with_(deferred_chunks=8, staging_in_ring=True)
    with pytest.raises(ValueError, match=r"staging_in_ring = 1 is invalid: allowed True or False"):
        coop.with_(staging_in_ring=1)
    # 16 staging buffers of 128×32 bf16 (128 KiB) do not fit in a 2-stage A ring of 128×64 (32 KiB)
    with pytest.raises(ValueError, match=r"16 staging buffers × 8192 B do not fit in the A ring's 2 × 128×64"):
        coop.with_(staging_in_ring=True, epi_stages=16, ab_stages=2).stages(bf16)
    assert coop.with_(staging_in_ring=True).reshaped(tile_n=128).staging_in_ring is False


def test_pdl_is_a_checked_flag_that_names_itself():
    config = tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE)
    assert not config.pdl and "PDL" not in config.describe()
    assert config.with_(pdl=True).describe().endswith(" PDL")
    with pytest.raises(ValueError, match=r"GemmConfig.pdl = 'on' is invalid: allowed True or False"):
        config.with_(pdl="on")


def test_the_single_wave_rule_puts_the_staging_in_the_ring_only_where_each_cta_owns_one_tile():
    """:func:`~gemm_modes.autotable.single_wave_staging` in ``pick`` and ``choose_config``: on where the
    cluster-tiles fit the SMs at once, off past a wave and under any override that changes that; the
    stage it frees is taken by ping-pong tiles from K = 4096 on (below it, and for cooperative tiles, the
    plain stage count stays)."""
    from gemm_modes.autotable import RING_EXTRA_STAGE_MIN_K, pick, single_wave_staging
    from gemm_modes.choice import choose_config

    bf16 = Problem("bf16")

    def ring(mnk, sms=132, problem=bf16):
        config = pick(problem, mnk, sms, swap=False)  # a swapped tile runs the plain kernel: no ring staging
        return config.staging_in_ring and config.stages(problem)[0]

    assert ring((256, 8192, 8192)) == ring((200, 8192, 8192)) == 7  # 64 cluster-tiles of 128×128, 66 clusters
    assert ring((256, 8192, RING_EXTRA_STAGE_MIN_K)) == 7
    assert ring((256, 8192, RING_EXTRA_STAGE_MIN_K - 64)) == ring((256, 8192, 1024)) == 6  # short K: the plain 6
    # a cooperative tile keeps the plain count at any K: 128×224 one row of clusters, 4 stages (the ring: 5)
    assert ring((224, 14336, 8192)) == 4 and pick(bf16, (224, 14336, 8192), swap=False).tile_n == 224
    assert ring((256, 8192, 8192), problem=Problem("fp16", bias=True)) == 7
    assert ring((320, 8192, 8192)) == 5 and ring((128, 8192, 8192)) == 9  # 128×192, 128×64: no stage to gain
    assert ring((64, 8192, 8192)) == 14 and ring((64, 8192, 1024)) == 13  # 64×64
    # 64 cluster-tiles of the cooperative 128×256, one per CTA: its deferred epilogue gives way to the ring,
    # with the plain 4 stages (both operands re-read by several cluster rows and columns)
    assert ring((512, 8192, 8192)) == 4 and not pick(bf16, (512, 8192, 8192)).deferred_chunks
    assert not ring((512, 14336, 8192))  # 112 cluster-tiles of 128×256: two per CTA
    # 60 clusters of two hold 64 cluster-tiles of 128×128 only in two waves
    assert not single_wave_staging(
        tuned_config(128, 128, 2, 1, "pingpong"), bf16, (256, 8192, 8192), 120
    ).staging_in_ring
    assert not ring((4096, 4096, 4096)) and not ring((8192, 8192, 1024))  # many tiles per CTA
    assert choose_config(bf16, (256, 8192, 8192), "pingpong", None, None).stages(bf16) == (7, 2)
    assert choose_config(bf16, (256, 8192, 8192), "auto", (64, 256), None).staging_in_ring  # 64 cluster-tiles
    assert not choose_config(bf16, (512, 8192, 8192), "auto", (64, 256), None).staging_in_ring  # 128
    split = choose_config(bf16, (256, 8192, 8192), "cooperative", (128, 128), None, stream_k=True)
    assert split.stream_k and not split.staging_in_ring


def test_a_launch_refuses_ring_staging_when_a_cta_would_own_a_second_tile(monkeypatch):
    """``clusters_to_launch`` checks what the configuration assumes (one cluster per cluster-tile, all
    resident at once); ``without_unheld_ring_staging`` is ``gemm()``'s way out on such a GPU."""
    from gemm_modes import launch
    from hopper_gemm import launch as plain_launch

    monkeypatch.setitem(plain_launch._RESIDENT, (2, 0), 66)  # an H100's clusters of two, without asking a GPU
    config = tuned_config(128, 128, 2, 1, Schedule.PINGPONG, staging_in_ring=True)
    assert launch.clusters_to_launch(config, 256, 8192) == 64
    with pytest.raises(ValueError, match=r"M×N = 512×8192: .* make 128 cluster-tiles, more than the 66 clusters"):
        launch.clusters_to_launch(config, 512, 8192)
    assert launch.without_unheld_ring_staging(config, 512, 8192) == config.with_(staging_in_ring=False)
    assert launch.without_unheld_ring_staging(config, 256, 8192) is config
    assert launch.clusters_to_launch(config.with_(staging_in_ring=False), 512, 8192) == 66


def test_split_k_launches_every_resident_cluster_only_where_it_splits(monkeypatch):
    """Under a wave, a ``stream_k_remainder`` configuration takes every resident cluster where its shares
    reach ``1 / stream_k_partials`` of a tile (split-K), else one cluster per cluster-tile; without ``k``
    the launch cannot know, and stays at the cluster-tiles."""
    from gemm_modes import launch
    from hopper_gemm import launch as plain_launch

    monkeypatch.setitem(plain_launch._RESIDENT, (2, 0), 66)
    deep = tuned_config(
        128, 256, 2, 1, Schedule.COOPERATIVE, stream_k=True, stream_k_remainder=True, stream_k_partials=4
    )
    # 1024²: 16 cluster-tiles of 128 k-tiles on 66 clusters, shares of ⌈2048 / 66⌉ = 32 k-tiles = ¼ tile
    assert launch.clusters_to_launch(deep, 1024, 1024, k=8192) == 66
    assert launch.stream_k_split(deep, (1024, 1024, 8192), 66).sk_tiles == 16
    assert launch.clusters_to_launch(deep, 1024, 1024) == 16
    half = deep.with_(stream_k_partials=2)  # ¼-tile shares need 4 partials: no split, no extra clusters
    assert launch.clusters_to_launch(half, 1024, 1024, k=8192) == 16
    assert launch.clusters_to_launch(half, 2304, 1024, k=8192) == 66  # 36 tiles: shares of 70 ≥ 128 / 2
    wave = deep.with_(stream_k_remainder=False, stream_k_partials=2)
    assert launch.clusters_to_launch(wave, 1024, 1024, k=8192) == 16
    for bad in (1, 9, 2.0, True):
        with pytest.raises(ValueError, match=rf"stream_k_partials = {bad!r} is invalid: allowed an int in \[2, 8\]"):
            deep.with_(stream_k_partials=bad)
    with pytest.raises(ValueError, match=r"other than 2 only with stream_k_remainder"):
        tuned_config(stream_k=True, stream_k_partials=3)
    assert "up to 4 partials" in deep.describe()


@pytest.mark.parametrize("parts", [2, 3, 4, 8])
@pytest.mark.parametrize("k_tiles", [1, 2, 5, 16, 127, 128])
def test_split_k_parts_cover_every_k_tile_once(parts, k_tiles):
    """SplitK.unit, as the load warp and the math warpgroups call it: cluster c computes part c mod s of
    tile c // s; a tile's parts meet end to end over [0, K), differ by at most one k-tile, and are empty
    only when K has fewer k-tiles than parts. The flag counts: s posts, then s − 1 "seen"."""
    from gemm_modes.splits import SplitK

    split = SplitK(parts)
    tiles = 3
    assert split.clusters(tiles) == 3 * parts
    for tile in range(tiles):
        units = [split.unit(c, k_tiles) for c in range(split.clusters(tiles)) if c // parts == tile]
        assert [(u[0], u[1]) for u in units] == [(tile, p) for p in range(parts)]
        assert units[0][2] == 0 and units[-1][3] == k_tiles
        assert all(a[3] == b[2] for a, b in zip(units, units[1:], strict=False))
        sizes = [u[3] - u[2] for u in units]
        assert max(sizes) - min(sizes) <= 1 and (min(sizes) > 0 or k_tiles < parts)
    assert (split.posted(), split.seen()) == (parts, 2 * parts - 1)
    if parts != 3:  # the host's count of the launch is the same function's
        config = tuned_config(split_k=parts)
        assert config.one_wave_clusters(1000, 3000) == split.clusters(config.cluster_tiles(1000, 3000)) == 48 * parts


@pytest.mark.parametrize("tiles", [3, 66, 67, 72, 100, 150, 198])
@pytest.mark.parametrize("parts", [2, 4, 8])
def test_split_k_after_whole_waves_covers_every_k_tile_once(tiles, parts, monkeypatch):
    """Past one wave, every resident cluster walks the whole waves' cluster-tiles whole (c, c + C, …, as
    the kernel hooks' plan bounds the loop), then part c mod s of split tile c // s after them: every k-tile
    of every cluster-tile exactly once, where the last wave's tiles × s fit the C clusters; the launch
    (clusters_to_launch) and the workspace (its split tiles) count the same."""
    from gemm_modes import launch
    from gemm_modes.hooks import ModeHooks
    from gemm_modes.splits import SplitK
    from hopper_gemm import launch as plain_launch

    clusters, k_tiles = 66, 16
    config = tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE, split_k=parts)
    one_wave = tiles * parts <= clusters
    launched = tiles * parts if one_wave else clusters
    first = SplitK.first_split(tiles, launched)
    _, whole = ModeHooks(config).plan(None, tiles, launched, k_tiles)
    assert whole == first
    if not one_wave and (tiles % clusters) * parts > clusters:
        return  # the launch refuses it (below)
    covered = {t: [] for t in range(tiles)}
    for c in range(launched):
        for linear in range(c, whole, launched):
            covered[linear].append((0, k_tiles))
        tile, _, kb, ke = SplitK(parts).unit(c, k_tiles)
        if tile < tiles - whole:
            covered[first + tile].append((kb, ke))
    for t, ranges in covered.items():
        ranges.sort()
        assert ranges[0][0] == 0 and ranges[-1][1] == k_tiles, (t, ranges)
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False)), (t, ranges)
    # the host: one cluster per part in one wave, else every resident cluster
    monkeypatch.setitem(plain_launch._RESIDENT, (2, 0), clusters)
    assert launch.clusters_to_launch(config, 256, 256 * tiles) == launched


def test_split_k_after_whole_waves_refuses_a_last_wave_the_gpu_cannot_hold(monkeypatch):
    from gemm_modes import launch
    from hopper_gemm import launch as plain_launch

    monkeypatch.setitem(plain_launch._RESIDENT, (2, 0), 66)
    config = tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE, split_k=2)
    assert launch.clusters_to_launch(config, 256, 256 * 90) == 66  # 1 wave + 24 tiles × 2 = 48 clusters
    with pytest.raises(ValueError, match=r"split_k = 4 is invalid for M×N = 256×23040: .* 90 cluster-tiles, 1 whole"):
        launch.clusters_to_launch(config.with_(split_k=4), 256, 256 * 90)  # 24 × 4 = 96 > 66
    with pytest.raises(ValueError, match=r"34 in the last, × 2 parts = 68 clusters, more than it holds"):
        launch.clusters_to_launch(config, 256, 256 * 100)


@pytest.mark.parametrize("walk", [(1, 2, 4), (1, 3, 4), (1, 2, 1)])
def test_the_split_k_fix_up_passes_the_checker_and_planted_defects_do_not(walk):
    """gemm_modes.split_k_protocol: each part an agent with SplitK's (tile, part) and flag counts, over two
    stream-ordered launches, exhaustive. Waiting for every post, resetting the flag, and resetting only
    after the others said "seen" are each necessary: without the first two a part adds a partial that is
    not this launch's; resetting early leaves a part polling a flag that never comes back (a deadlock)."""
    from gemm_modes.split_k_protocol import SPLIT_K_BUGS, SplitKWalk, check_split_k

    report = check_split_k(SplitKWalk(*walk))
    assert report.ok and report.exhaustive, str(report)
    expected = {"no_wait": "READ_UNCOMMITTED", "no_reset": "READ_UNCOMMITTED", "early_reset": "DEADLOCK"}
    for bug in SPLIT_K_BUGS:
        found = check_split_k(SplitKWalk(*walk), bug=bug, max_states=20_000)
        assert expected[bug] in {f.kind.name for f in found.findings}, (bug, str(found))
    with pytest.raises(ValueError, match="bug = 'typo' is invalid"):
        check_split_k(SplitKWalk(*walk), bug="typo")
    with pytest.raises(ValueError, match="parts >= 2"):
        check_split_k(SplitKWalk(1, 1, 4))


#: Shapes of the split-K rule, measured on an H100 (2026-11-26, ratio over torch): the rule's config and
#: the whole-tile pick's ratio → the split's.
SPLIT_K_PICKS = [
    ((1024, 1024, 8192), (1, 2, 2)),  # a square: 1×2; 0.73 → 0.89
    ((1024, 1024, 4096), (1, 2, 2)),  # 0.77 → 0.84
    ((512, 1024, 16384), (2, 1, 4)),  # 0.67 → 0.95
    ((384, 1024, 8192), (1, 2, 4)),  # 3 row tiles: 1×2; 0.73 → 0.89
    ((1024, 384, 4096), (2, 1, 4)),  # 3 column tiles: 2×1; 0.94 → 0.96
    ((2048, 256, 8192), (1, 2, 4)),  # N shorter: its tiles paired, A multicast; 0.92 → 1.03
    ((256, 2048, 8192), (2, 1, 4)),  # 1.05 → 1.21
    ((512, 2048, 16384), (2, 1, 2)),  # 0.80 → 0.99
    ((768, 768, 16384), (1, 2, 2)),  # 0.55 → 0.76
    ((768, 1536, 8192), (2, 1, 2), (128, 192)),  # 128×128 in 2 needs 72 clusters; 0.65 → 0.77
    ((1024, 1536, 16384), (1, 2, 2), (128, 192)),  # 8 × 8 tiles of 128×192: 1×2; 0.68 → 0.92
    ((800, 1500, 8000), (1, 2, 2), (128, 192)),  # 7 row tiles: 1×2
]


def test_split_k_rule_picks_the_measured_split_and_leaves_other_shapes_alone():
    """autotable.split_k: K ≥ 4 × the longer side, both sides ≥ 256, 128×128 cooperative with 4 parts where
    they fit the SMs / 2 clusters, else 2, else 128×192 in 2; the cluster pairs the shorter side's tiles
    unless they are odd (a square's column tiles).
    Below the ratio (2048×512×4096 measured 0.91 of the whole-tile pick) or with too few k-tiles per part
    the table is unchanged, and so is it on a GPU too small for two parts."""
    from gemm_modes.autotable import split_k, table_decision, whole_tiles

    bf16 = Problem("bf16")
    for mnk, (cluster_m, cluster_n, parts), *tile in SPLIT_K_PICKS:
        config = table_decision(bf16, mnk).config  # the rule's own (gemm_modes.long_k may come after it)
        assert (config.tile_m, config.tile_n, config.schedule) == (*(tile or [(128, 128)])[0], Schedule.COOPERATIVE)
        assert (config.cluster_m, config.cluster_n, config.split_k) == (cluster_m, cluster_n, parts), mnk
        assert config.split_k * config.cluster_tiles(*mnk[:2]) <= 66
        # each CTA owns one part: the staging in the ring; its freed stage only from a part's K of 4096
        # where one operand streams once (one cluster row or column of tiles)
        once = min(config.cluster_grid(*mnk[:2])) == 1
        assert config.staging_in_ring and (config.ab_stages is None) == (mnk[2] // parts >= 4096 and once), mnk
    for mnk in [(2048, 512, 4096), (256, 2048, 4096), (1024, 1024, 2048), (200, 1024, 16384), (256, 256, 1024)] + [
        (1536, 1024, 16384),  # neither tile splits in one wave (128×192: 36 cluster-tiles × 2 > 66)
        (768, 1536, 4096),  # below the ratio (128×192 in 2 measured 1.11× here, but 0.96× at 640×1536×4096)
    ]:
        assert split_k(mnk) is None and table_decision(bf16, mnk).config == whole_tiles(bf16, mnk), mnk
    assert split_k((1024, 1024, 8192), sms=60) is None  # 32 cluster-tiles × 2 parts > 30 clusters
    assert split_k((1024, 1024, 8192), sms=264).split_k == 4


def test_split_k_overrides_and_the_residency_fallback(monkeypatch):
    """choose_config: split_k=s asks for it (on the rule's cluster where the rule applies), 1 or a stream-K
    choice takes the whole-tile table, a new tile or cluster drops the table's split; gemm() halves the
    table's split where the GPU holds fewer clusters at once than SMs / 2."""
    from gemm_modes import launch
    from gemm_modes.autotable import whole_tiles
    from gemm_modes.choice import choose_config
    from hopper_gemm import launch as plain_launch

    bf16, mnk = Problem("bf16"), (1024, 1024, 8192)
    assert choose_config(bf16, mnk, "auto", None, None).split_k == 2
    assert choose_config(bf16, mnk, "auto", None, None, split_k=4).split_k == 4
    assert choose_config(bf16, mnk, "auto", None, None, split_k=1) == whole_tiles(bf16, mnk)
    assert choose_config(bf16, mnk, "auto", None, None, stream_k=False) == whole_tiles(bf16, mnk)
    assert choose_config(bf16, mnk, "auto", (128, 256), None).split_k == 1
    asked = choose_config(bf16, (4096, 4096, 4096), "cooperative", None, None, split_k=2)
    assert asked.split_k == 2 and asked.deferred_chunks == 0 and (asked.tile_m, asked.tile_n) == (128, 256)
    with pytest.raises(ValueError, match=r"split_k = 2 is invalid: allowed 1 with ping-pong"):
        choose_config(bf16, mnk, "pingpong", None, None, split_k=2)
    with pytest.raises(ValueError, match=r"split_k = '2' is invalid: allowed None"):
        choose_config(bf16, mnk, "auto", None, None, split_k="2")
    config = choose_config(bf16, (512, 1024, 16384), "auto", None, None)
    monkeypatch.setitem(plain_launch._RESIDENT, (2, 0), 40)  # 16 cluster-tiles: 4 parts need 64, 2 need 32
    assert launch.without_unheld_split_k(config, 512, 1024).split_k == 2
    monkeypatch.setitem(plain_launch._RESIDENT, (2, 0), 20)
    assert launch.without_unheld_split_k(config, 512, 1024).split_k == 1
    # past one wave: the last wave's tiles × parts. 1536×3072: 72 cluster-tiles, 6 past 66 clusters × 8
    tail = choose_config(Problem("bf16", bias=True), (1536, 3072, 8192), "auto", None, None)
    monkeypatch.setitem(plain_launch._RESIDENT, (2, 0), 66)
    assert tail.split_k == 8 and launch.without_unheld_split_k(tail, 1536, 3072).split_k == 8
    monkeypatch.setitem(plain_launch._RESIDENT, (2, 0), 60)  # 12 past 60: 8 parts need 96, 4 need 48
    assert launch.without_unheld_split_k(tail, 1536, 3072).split_k == 4


def test_ping_pong_takes_tiles_of_64_128_or_192_rows():
    """One warpgroup owns a ping-pong tile: 64, 128 or 192 rows (one to three m64 wgmmas), as long as its
    accumulators fit (192 × 128 = 192 per thread; 192 × 192 would be 288)."""
    from hopper_gemm.config import GemmConfig

    assert GemmConfig(tile_m=192, tile_n=112, schedule="pingpong").acc_registers == 168
    with pytest.raises(ValueError, match=r"tile_m = 256 is invalid: allowed 64, 128 or 192 with ping-pong"):
        GemmConfig(tile_m=256, tile_n=64, schedule="pingpong")
    with pytest.raises(ValueError, match=r"288 fp32 accumulators"):
        GemmConfig(tile_m=192, tile_n=192, schedule="pingpong")
    # one wave of them: auto moves the staging into the A/B ring for other tiles, not for this one (not run
    # on a GPU with 192 rows)
    from gemm_modes.autotable import decide
    from gemm_modes.choice import choose_config

    assert (
        decide(Problem("bf16"), (384, 14336, 4096))
        .line()
        .endswith("2 row tiles of 192, each B tile multicast to a pair")
    )
    tall = choose_config(Problem("bf16"), (384, 6144, 8192), "auto", (192, 112), (2, 1))
    assert tall.tile_m == 192 and not tall.staging_in_ring
    assert choose_config(Problem("bf16"), (384, 6144, 8192), "auto", None, (1, 2)).staging_in_ring


def test_warpgroups_along_n_take_every_row_and_half_the_columns():
    """``wg_split="n"``: the cooperative warpgroups each take every row (up to four m64 wgmmas) and half
    the columns, staging 64-row subtiles of their half; what the kernel cannot build is refused by name."""
    from hopper_gemm.config import GemmConfig, check_wg_split

    coop_b = GemmConfig(tile_m=192, tile_n=192, wg_split="n")
    assert coop_b.mma_tile == (192, 96) and coop_b.epi_tile == (64, 32) and coop_b.acc_registers == 144
    assert coop_b.subtiles == 3 * 6 == 18 and coop_b.describe().endswith("warpgroups along N")
    assert GemmConfig(tile_m=192, tile_n=160, wg_split="n").epi_n == 16  # 80 columns a half
    assert coop_b.with_(wg_split="m", tile_m=128).epi_tile == (128, 32)
    with pytest.raises(ValueError, match=r"wg_split = 'x' is invalid: allowed 'm' \(the warpgroups halve the rows\)"):
        GemmConfig(wg_split="x")
    with pytest.raises(ValueError, match=r"wg_split = 'n' is invalid: allowed 'm' with ping-pong"):
        GemmConfig(schedule="pingpong", wg_split="n")
    with pytest.raises(ValueError, match=r"tile_n = 200 is invalid: allowed a multiple of 16 with wg_split='n'"):
        GemmConfig(tile_m=192, tile_n=200, wg_split="n")
    with pytest.raises(ValueError, match=r"tile_m = 160 is invalid: allowed 128, 192 or 256 with wg_split='n'"):
        GemmConfig(tile_m=160, tile_n=192, wg_split="n")
    with pytest.raises(ValueError, match=r"epi_batch = 2 is invalid: allowed 1 with wg_split='n'"):
        GemmConfig(tile_m=192, tile_n=192, wg_split="n", epi_batch=2)
    with pytest.raises(ValueError, match=r"epi_stages = 3 is invalid: allowed an even count with wg_split='n'"):
        GemmConfig(tile_m=192, tile_n=192, wg_split="n", epi_stages=3)
    with pytest.raises(ValueError, match=r"epi_n = 64 is invalid: .* dividing a warpgroup's 96 columns"):
        GemmConfig(tile_m=192, tile_n=192, wg_split="n", epi_n=64)
    with pytest.raises(ValueError, match=r"256 / \(2 warpgroup\(s\) × 128 threads\) = 256 fp32 accumulators"):
        GemmConfig(tile_m=256, tile_n=256, wg_split="n")
    check_wg_split(coop_b, Problem("bf16"))
    check_wg_split(GemmConfig(tile_m=128, tile_n=256, wg_split="n"), Problem("bf16", "n"))  # halves of 128
    with pytest.raises(ValueError, match=r"half of B starts 96 columns in, inside a 64-column swizzle atom"):
        check_wg_split(coop_b, Problem("bf16", "n"))
    with pytest.raises(ValueError, match=r"wg_split='n' runs on the plain kernel or with split-K alone: no comm"):
        check_wg_split(coop_b, Problem("bf16"), modes=SimpleNamespace(split_k_alone=False))
    with pytest.raises(ValueError, match=r"wg_split='n' runs on the plain kernel or with split-K alone: no comm"):
        check_wg_split(coop_b, Problem("bf16"), comm=object())
    check_wg_split(coop_b, Problem("bf16"), modes=SimpleNamespace(split_k_alone=True))


def test_split_k_runs_on_a_tile_whose_warpgroups_split_n():
    """Split-K alone extends a ``wg_split="n"`` tile (cuBLAS's 192×176 in 3 parts at 2072×688×11832): its parts
    share each warpgroup's half's subtiles (``mma_subtiles``); every other mode still refuses the halves."""
    from gemm_modes.hooks import ModeHooks
    from hopper_gemm.config import check_wg_split

    config = tuned_config(192, 176, 1, 2, Schedule.COOPERATIVE, wg_split="n").with_split_k(3)
    assert (config.split_k, config.wg_split, config.epi_n, config.mma_subtiles) == (3, "n", 8, 33)
    assert ModeHooks(config).split_k_alone
    check_wg_split(config.config, Problem("bf16"), modes=ModeHooks(config))
    with pytest.raises(ValueError, match=r"split_k = 4 is invalid: allowed at most a warpgroup's half's 3 subtiles"):
        tuned_config(192, 64, 1, 1, Schedule.COOPERATIVE, wg_split="n", epi_n=32, split_k=4)
    with pytest.raises(ValueError, match=r"modes stream-K are invalid with GemmConfig.wg_split = 'n'"):
        tuned_config(192, 176, 1, 2, Schedule.COOPERATIVE, wg_split="n", stream_k=True)
    from gemm_modes.choice import choose_config

    asked = choose_config(Problem("bf16"), (2072, 688, 11832), "cooperative", (192, 176), (1, 2), split_k=3)
    assert asked == config  # gemm(tile=(192, 176), cluster=(1, 2), split_k=3)


def test_a_tile_override_picks_the_schedule_and_the_split_that_can_hold_it():
    """``gemm(tile=...)``: a 192-row cooperative tile has its warpgroups split the columns (no mode: they run on
    the plain kernel); with ``schedule="auto"`` a tile one warpgroup cannot hold (ping-pong's accumulators)
    goes to the cooperative schedule, as a 64-row tile goes to ping-pong."""
    from gemm_modes.choice import choose_config
    from hopper_gemm.config import GemmConfig

    square = (3072, 3072, 3072)  # auto picks ping-pong 128×192 here
    assert choose_config(Problem("bf16"), square, "auto", None, None).schedule is Schedule.PINGPONG
    for schedule in ("cooperative", "auto"):
        coop_b = choose_config(Problem("bf16"), square, schedule, (192, 192), None)
        assert (coop_b.schedule, coop_b.wg_split, coop_b.modes.active) == (Schedule.COOPERATIVE, "n", False)
    wide = choose_config(Problem("bf16"), square, "auto", (128, 256), None)
    assert (wide.schedule, wide.wg_split, wide.tile_n) == (Schedule.COOPERATIVE, "m", 256)
    assert choose_config(Problem("bf16"), square, "auto", (192, 112), None).schedule is Schedule.PINGPONG
    with pytest.raises(ValueError, match=r"tile_m = 64 is invalid: allowed 128 or 256 with the cooperative"):
        choose_config(Problem("bf16"), square, "cooperative", (64, 128), None)
    with pytest.raises(ValueError, match=r"modes deferred store in 6 are invalid with GemmConfig.wg_split = 'n'"):
        tuned_config(192, 192, 2, 1, Schedule.COOPERATIVE, wg_split="n", deferred_chunks=6)
    assert GemmConfig(tile_m=192, tile_n=192, wg_split="n").epi_tile == (64, 32)


def test_the_wave_balance_swaps_where_192x176_tiles_along_n_fill_the_waves():
    """``SWAPPED_MERIT``: computing Cᵀ = B·Aᵀ with 192×176 tiles (192 along N, 176 along M) where that fills
    whole waves the 128×256 tile cannot (4104³: 528 tiles, 4.0 waves), and the explain line says so; never
    with a bias or B as (K, N) (the swap cannot run), at K ≤ 2048 (unmeasured), where 128×256 fills the
    waves (4096³), or where a cluster pads an odd count of tile rows in a single wave (3768×840)."""
    from gemm_modes.autotable import SWAPPED_MERIT, decide, swapped_score

    swapped = SWAPPED_MERIT[0][0]
    assert swapped.swap_ab and (swapped.tile_m, swapped.tile_n, swapped.wg_split) == (192, 176, "n")
    decision = decide(Problem("bf16"), (4104, 4104, 4104), 132)
    assert decision.config == swapped
    assert "computed as Cᵀ = B·Aᵀ, 192×176 tiles along (N, M) make 264 cluster-tiles and keep 100% busy" in (
        decision.line()
    )
    assert decide(Problem("bf16"), (808, 4776, 4096), 132).config == swapped
    for problem in (Problem("bf16", bias=True), Problem("bf16", b_major="n")):
        assert not decide(problem, (4104, 4104, 4104), 132).config.swap_ab
    for mnk in ((4104, 4104, 2048), (4096, 4096, 4096), (3768, 840, 4096)):
        assert not decide(Problem("bf16"), mnk, 132).config.swap_ab, mnk
    assert not decide(Problem("bf16"), (4104, 4104, 4104), 132, swap=False).config.swap_ab
    # the padded CTA counts: 5 tile rows along N in clusters of two leave 22 of 132 CTAs idle
    assert swapped_score(swapped, 3768, 840) < swapped_score(swapped, 4104, 4104)


def test_the_wave_balance_swaps_256_row_tiles_along_a_longer_n():
    """``SWAPPED_ALONG_N_MERIT``: swapped cooperative 256×W tiles (256 rows along N, W columns along M) where
    they keep more turns busy than the unswapped picks by more than their merit (1835×5120×13824: 130
    cluster-tiles of 256×144 keep 98% busy, split-K in 2 over 2.42 waves of 128×256 keeps 81%), the width
    whose tiles fill M best, from 96 to 176 columns (96 and 104 at ``NARROW_SWAPPED_MERIT``); never where M
    is the longer side (the mirror keeps ping-pong) or M ≤ 512, with a bias or B as (K, N), at K ≤ 2048, or
    in the aligned split's place at 95% busy (2230×7168×18432)."""
    from gemm_modes.autotable import NARROW_SWAPPED_MERIT, SWAPPED_ALONG_N_MERIT, decide
    from gemm_modes.choice import choose_config

    tiles = {config.tile_n: config for config, _ in SWAPPED_ALONG_N_MERIT}
    assert sorted(tiles) == list(range(96, 177, 8))
    merits = {config.tile_n: merit for config, merit in SWAPPED_ALONG_N_MERIT}
    assert {w for w, merit in merits.items() if merit == NARROW_SWAPPED_MERIT} == {96, 104}
    assert all(c.swap_ab and c.tile_m == 256 and c.wg_split == "m" for c in tiles.values())
    # every width keeps four A/B stages (16- or 8-column subtiles where 32 would leave three)
    assert {c.config.stages(Problem("bf16", c_major="m"))[0] for c in tiles.values()} == {4}
    decision = decide(Problem("bf16"), (1835, 5120, 13824), 132)
    assert decision.config == tiles[144]
    assert "computed as Cᵀ = B·Aᵀ, 256×144 tiles along (N, M) make 130 cluster-tiles and keep 98% busy" in (
        decision.line()
    )
    assert decide(Problem("bf16"), (770, 28672, 8192), 132).config == tiles[112]  # 7 × 112 = 784 columns
    assert decide(Problem("bf16"), (2057, 5120, 13824), 132).config == tiles[160]
    assert decide(Problem("bf16"), (854, 7168, 18432), 132).config == tiles[96]  # 9 × 96 = 864 columns
    assert decide(Problem("bf16"), (5120, 1835, 13824), 132).config.tile_m != 256
    assert decide(Problem("bf16"), (417, 7168, 18432), 132).config.tile_m != 256  # M ≤ 512: the small-M rules'
    # a swapped short-side tile whose busy area beats the 256-row tile's times its merit takes its place
    assert decide(Problem("bf16"), (823, 8192, 28672), 132).config.tile_m == 128
    # gemm(swap_ab=True) weighs the same tiles
    forced = choose_config(Problem("bf16"), (1835, 5120, 13824), "auto", None, None, swap_ab=True, sms=132)
    assert forced == tiles[144]
    for problem in (Problem("bf16", bias=True), Problem("bf16", b_major="n")):
        assert decide(problem, (1835, 5120, 13824), 132).config.split_k == 2
    assert not decide(Problem("bf16"), (1835, 5120, 2048), 132).config.swap_ab
    assert decide(Problem("bf16"), (2230, 7168, 18432), 132).config.stream_k_aligned


def test_swap_ab_overrides_and_their_errors():
    """``gemm(swap_ab=...)`` through ``choose_config``: True takes the best swapped tile, or the asked tile
    for Cᵀ, always on the plain kernel; False never swaps; another override keeps the table from swapping;
    a stream-K beside a forced swap, or a non-bool, is refused by name; split-K runs swapped."""
    from gemm_modes.autotable import SWAPPED_MERIT
    from gemm_modes.choice import choose_config

    bf16 = Problem("bf16")
    assert choose_config(bf16, (4096, 4096, 4096), "auto", None, None, swap_ab=True, sms=132) == SWAPPED_MERIT[0][0]
    forced = choose_config(bf16, (4104, 4104, 4104), "auto", (128, 256), None, swap_ab=True, sms=132)
    assert forced.swap_ab and (forced.tile_m, forced.tile_n) == (128, 256) and not forced.modes.active
    assert not choose_config(bf16, (4104, 4104, 4104), "auto", None, None, swap_ab=False, sms=132).swap_ab
    assert not choose_config(bf16, (4104, 4104, 4104), "auto", None, (1, 2), sms=132).swap_ab
    with pytest.raises(ValueError, match="swap_ab = True runs on the plain kernel or with split-K: no stream_k"):
        choose_config(bf16, (4104, 4104, 4104), "auto", None, None, True, swap_ab=True, sms=132)
    # split-K beside a forced swap: the split-K rule's tile for Cᵀ (2088×72 → 128×128 in 2×1 clusters)
    split = choose_config(bf16, (72, 2088, 10784), "auto", None, None, swap_ab=True, split_k=7, sms=132)
    assert split.swap_ab and split.split_k == 7 and split.modes.active and split.tile_m == 128
    assert choose_config(bf16, (72, 2088, 10784), "auto", (128, 80), (1, 1), swap_ab=True, split_k=7).epi_n == 8
    with pytest.raises(ValueError, match="swap_ab = 'yes' is invalid"):
        choose_config(bf16, (4104, 4104, 4104), "auto", None, None, swap_ab="yes", sms=132)
    # a 192-row tile asked for where the table splits: the plain kernel, not a mode it cannot run with
    asked = choose_config(bf16, (4104, 4104, 4104), "auto", (192, 192), None, swap_ab=False, sms=132)
    assert asked.wg_split == "n" and not asked.modes.active


def test_swap_ab_is_a_launch_mode_not_a_kernel_mode():
    """``Modes.swap_ab`` leaves the kernel's hooks off (``active`` False: the plain kernel runs, storing
    C column by column) and refuses every mode that needs them but split-K alone."""
    from gemm_modes.modes import Modes

    assert not Modes(swap_ab=True).active
    swapped = tuned_config(192, 176, 2, 1, Schedule.COOPERATIVE, wg_split="n", swap_ab=True)
    assert "swapped (Cᵀ = B·Aᵀ)" in swapped.describe()
    with pytest.raises(ValueError, match=r"swap_ab = True is invalid: allowed False with deferred store in 8"):
        tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE, deferred_chunks=8, swap_ab=True)
    # split-K alone: its parts store through the plain kernel's path, column by column as well
    assert tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE, split_k=2, swap_ab=True).modes.active
    with pytest.raises(ValueError, match=r"allowed False with split-K in 2 staging in the A/B ring \(a swapped"):
        tuned_config(128, 256, 2, 1, Schedule.COOPERATIVE, split_k=2, staging_in_ring=True, swap_ab=True)


def test_cooperative_128x256_picks_pair_along_n_where_m_would_idle_a_cta():
    """``paired_along_n``: the split cooperative 128×256 pick (2×1; stream-K, split-K on the last wave, the aligned
    split) goes 1×2 where that idles more than ``PAIR_ALONG_N_COST`` fewer CTAs (M in an odd count of
    row tiles, under 50 of them), N the longer side and M past 1024 rows (640 for the aligned split);
    elsewhere it stays, and ``decide`` says why in its facts."""
    from gemm_modes.autotable import (
        COOPERATIVE_ALIGNED,
        COOPERATIVE_DEFERRED,
        COOPERATIVE_128x256,
        PINGPONG_128x192,
        decide,
        paired_along_n,
        table_decision,
    )

    def pair(config):
        return config.cluster_m, config.cluster_n

    streamed = COOPERATIVE_DEFERRED.with_(stream_k=True, stream_k_remainder=True)
    for config in (COOPERATIVE_ALIGNED, streamed, COOPERATIVE_128x256.with_(split_k=4)):
        assert paired_along_n(config, 1392, 8192) == config.with_(cluster_m=1, cluster_n=2)  # 11 × 32 tiles
        assert pair(paired_along_n(config, 1700, 8192)) == (2, 1)  # 14 row tiles: 2×1 idles nothing
        assert pair(paired_along_n(config, 1392, 8320)) == (1, 2)  # 11 × 33: 1×2 idles 11 CTAs of 374, 2×1 33 of 396
        assert pair(paired_along_n(config, 6200, 8192)) == (1, 2)  # 49 row tiles: 2×1 idles 2.0 % of its CTAs
        assert pair(paired_along_n(config, 6401, 8192)) == (2, 1)  # 51: 1.9 %, under the pair's cost
        assert pair(paired_along_n(config, 7464, 7464)) == (2, 1)  # a square: 1×2 lost there
        assert pair(paired_along_n(config, 625, 28672)) == (2, 1)  # M within 640 rows
    assert pair(paired_along_n(COOPERATIVE_ALIGNED, 783, 8192)) == (1, 2)  # 7 row tiles
    assert pair(paired_along_n(streamed, 783, 8192)) == (2, 1)  # M within 1024 rows: the short-side rules' ground
    others = (COOPERATIVE_DEFERRED, PINGPONG_128x192, COOPERATIVE_128x256.with_(swap_ab=True, split_k=2))
    for other in (*others, COOPERATIVE_128x256.with_(tile_n=192, split_k=2)):
        assert paired_along_n(other, 1392, 8192) == other  # whole tiles (1×2 lost there) and other tiles as they are
    bf16 = Problem("bf16", b_major="n")  # B as (K, N): no swapped 256-row tile (they take 1392×8192×28672)
    for mnk in ((1392, 8192, 28672), (1561, 4096, 14336), (2876, 8192, 28672)):
        config = table_decision(bf16, mnk).config
        assert config.stream_k_aligned and pair(config) == (1, 2) and config.deferred_chunks == 8, mnk
        assert decide(bf16, mnk).config == config
    # stream-K over 27 row tiles, split-K on the last wave over 33: paired, and the facts say so
    for mnk, rows, idle in (((3335, 13824, 5120), 27, "3.6%"), ((4196, 5120, 13824), 33, "2.9%")):
        decision = decide(Problem("bf16"), mnk)
        assert pair(decision.config) == (1, 2) and (decision.config.stream_k or decision.config.split_k > 1)
        assert (
            "paired 1×2 along N" in decision.facts and f"2×1 over {rows} row tiles would idle {idle}" in decision.facts
        )
    assert pair(decide(Problem("bf16"), (7181, 8192, 28672)).config) == (2, 1)  # 57 row tiles
    # only where the aligned split won already: ping-pong 128×144 stays at 783×7168×18432
    assert not table_decision(bf16, (783, 7168, 18432)).config.stream_k
