"""benchmarks/gemm.py without a GPU: the summary names what ``schedule="auto"`` picks and judges it."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_summary_judges_autos_pick_against_the_issue_target():
    import gemm

    def row(name, ratio):
        return gemm.Row((8192, 8192, 8192), "bf16", False, name, 1000.0, 1000.0 * ratio, 0.0)

    rows = [row("coop128x256c21d8", 1.05), row("coop128x256c21skrd8", 1.01)]
    # 8192³ is 15 waves + 34 cluster-tiles: auto splits the partial wave, and its 1.01 misses the 1.02 target.
    want = "; auto = coop128x256c21skrd8 1.010, target ≥ 1.02 ✗"
    assert gemm._auto((8192, 8192, 8192, "bf16", False), rows) == want
    assert "auto = coop128x256c21d8 1.050" in gemm._auto((8192, 8192, 8192, "bf16", False), rows, sms=128)  # 16 waves
    assert "not in this run" in gemm._auto((4096, 4096, 4096, "bf16", False), rows[1:])
    assert set(gemm.TARGETS) == {s[:3] for s in gemm.SHAPES}
    assert set(gemm.CANDIDATES) >= gemm.DIAGNOSTIC


def test_the_summary_finds_autos_pick_among_pdl_launches(monkeypatch):
    """``--pdl on`` launches every configuration with programmatic dependent launch: the summary names the
    table's pick among them (the flag is a launch choice, not a shape)."""
    import gemm

    shape = (256, 8192, 8192, "bf16", False)
    monkeypatch.setattr(gemm, "CANDIDATES", {k: v.with_(pdl=True) for k, v in gemm.CANDIDATES.items()})
    rows = [gemm.Row(shape[:3], "bf16", False, "pp128x128c21r", 1000.0, 980.0, 0.0)]
    assert "auto = pp128x128c21r 0.980, target ≥ 0.98 ✓" in gemm._auto(shape, rows, pdl=True)
    assert "not in this run" in gemm._auto(shape, rows, pdl=False)  # no configuration without PDL ran


def test_autos_picks_for_the_issue_table_are_the_measured_ones():
    """The target table's rows keep the configurations benchmarks/RESULTS.md measured for them: a new rule of the
    table that moved one would need that row measured again."""
    import gemm
    from gemm_modes.autotable import pick
    from hopper_gemm.config import Problem

    expected = {
        (4096, 4096, 4096): "coop128x256c21d8",
        (6144, 6144, 6144): "coop128x256c21skad8",  # 8 + 48/66 waves: the aligned split (1.042 against 1.038)
        (8192, 8192, 8192): "coop128x256c21skrd8",
        (8192, 8192, 1024): "pp128x192c21",
        (256, 8192, 8192): "pp128x128c21r",
        (1024, 8192, 8192): "coop128x256c21d8",
    }
    for m, n, k, dtype, bias in gemm.SHAPES:
        config = pick(Problem(dtype, bias=bias), (m, n, k))
        name = expected.get((m, n, k), "coop128x256c21skrd8")  # the bias row: 8192²×4096
        assert config == gemm.CANDIDATES[name], ((m, n, k), config.describe())


def test_the_width_family_names_each_width_and_cluster_once():
    """``--sweep --widths``: every multiple of 16 from 96 to 240 but the powers of two's 128 and 192, ping-pong up
    to 192 columns, cooperative with one deferred chunk per subtile; the names say tile, cluster and chunks."""
    import gemm
    from hopper_gemm.config import Schedule

    widths = {config.tile_n for config in gemm.WIDTHS.values()}
    assert widths == {96, 112, 144, 160, 176, 208, 224, 240}
    for name, config in gemm.WIDTHS.items():
        kind = "pp" if config.schedule is Schedule.PINGPONG else "coop"
        chunks = f"d{config.subtiles}" if kind == "coop" else ""
        assert name == f"{kind}128x{config.tile_n}c{config.cluster_m}{config.cluster_n}{chunks}", name
        assert config.deferred_chunks == (config.subtiles if kind == "coop" else 0)
    assert len(gemm.WIDTHS) == 2 * (8 + 5)  # both clusters; ping-pong only up to 176 of these
    assert set(gemm.WIDTHS) <= gemm.DIAGNOSTIC and set(gemm.WIDTHS) <= set(gemm.CANDIDATES)


def test_each_row_carries_torchs_time_over_ours_round_by_round():
    """``bench_shape``'s rows from the rounds' samples: the median time, and torch / ours within each round
    (drift between rounds cancels); torch's eager call ran in rounds of its own, so it has no such ratio."""
    import gemm

    torch_us = [100.0, 130.0, 110.0, 120.0, 140.0]
    samples = {"torch": torch_us, "auto": [t / 1.02 for t in torch_us], "torch eager": [150.0] * 5}
    errors = {"auto": (2e-3, True), "torch eager": (2e-3, True)}
    auto, eager = gemm.shape_rows((3000, 3000, 3000), "bf16", False, samples, errors)
    assert auto.us == 120.0 / 1.02 and auto.torch_us == 120.0 and eager.by_round is None
    assert [round(v, 6) for v in auto.by_round] == [1.02, 1.02, 1.02]
    assert gemm._by_round(auto) == " [by round 1.020: 1.020–1.020]" and gemm._by_round(eager) == ""


def test_against_table_loads_another_autotable_beside_the_current_one(tmp_path):
    """``--sweep --against-table PATH``: another revision's ``autotable.py`` loads as a module of
    ``gemm_modes`` beside the current table (its relative imports resolve), and its ``decide`` is what the
    sweep runs beside auto's; the current file loaded so decides as the table in use."""
    import gemm
    from gemm_modes.autotable import decide
    from hopper_gemm.config import Problem

    copy = tmp_path / "autotable_old.py"
    source = (ROOT / "contrib" / "gemm_modes" / "autotable.py").read_text()
    # an older table: the 192×192 tile's merit so low it never wins
    copy.write_text(source.replace('wg_split="n")), 0.95),)', 'wg_split="n")), 0.5),)'))
    other = gemm.table_from_file(str(copy))
    assert (other.name, other.label) == ("table-autotable_old", "the table of autotable_old.py")
    problem = Problem("bf16")
    assert decide(problem, (3000, 3000, 3000), 132).config.tile_m == 192
    assert other.decide(problem, (3000, 3000, 3000), 132).config.tile_m == 128
    assert other.decide(problem, (4096, 4096, 4096), 132).config == decide(problem, (4096, 4096, 4096), 132).config
    plain = gemm.without_widths_table().decide(problem, (1536, 1536, 1536), 132).config
    assert (plain.tile_n, decide(problem, (1536, 1536, 1536), 132).config.tile_n) == (192, 144)


def test_against_table_refuses_what_is_not_a_table(tmp_path, capsys):
    """A missing file, a file that does not load, one without ``decide``, or the option without ``--sweep``
    (or beside ``--without-widths``) are refused by argparse, naming the file and the problem."""
    import gemm
    import pytest

    broken = tmp_path / "broken.py"
    broken.write_text("from .nowhere import decide\n")
    empty = tmp_path / "empty.py"
    empty.write_text("RULES = ()\n")
    cases = {
        ("--sweep", "--against-table", str(tmp_path / "missing.py")): "missing.py: no such file",
        ("--sweep", "--against-table", str(broken)): "does not load as gemm_modes' table",
        ("--sweep", "--against-table", str(empty)): "has no decide(problem, mnk, sms)",
        ("--against-table", str(empty)): "--against-table needs --sweep",
        ("--sweep", "--without-widths", "--against-table", str(empty)): "not allowed with argument",
        ("--sweep", "--shapes", "2000x5100x2000,64x64x64"): "2000x5100x2000: N and K must be multiples of 8",
        ("--sweep", "--draw", "cubes:4:1"): "family 'cubes' is none of projection, small-side, square",
        ("--sweep", "--draw", "square:0:1"): "COUNT = 0 is outside 1–1000",
        ("--sweep", "--draw", "square:4"): "expected FAMILY:COUNT:SEED",
        ("--draw", "square:4:1"): "--draw needs --sweep, without --shapes or --held-out",
    }
    for argv, message in cases.items():
        with pytest.raises(SystemExit) as exit_info:
            gemm.main(list(argv))
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err, argv


def test_drawn_shapes_are_reproducible_and_in_their_families_ranges():
    """``--draw FAMILY:COUNT:SEED``: the same shapes for the same seed (the two draws benchmarks/RESULTS.md
    quotes start as measured), log-uniform within each family's ranges, N and K multiples of 8."""
    from shape_draws import MODEL_PAIRS, draw

    projections = draw("projection:32:20261128")
    assert projections[:3] == [(1198, 14336, 4096), (4507, 13824, 5120), (5639, 28672, 8192)]
    assert projections[4] == (2853, 4096, 14336)  # the fifth turns down: N = hidden, K = intermediate
    assert all(128 <= m <= 16384 and ((k, n) in MODEL_PAIRS or (n, k) in MODEL_PAIRS) for m, n, k in projections)
    small = draw("small-side:24:8080")
    assert small[:2] == [(78, 8248, 5752), (4120, 232, 2824)]
    assert all(57 <= min(m, n) <= 1024 and 2048 <= max(m, n) <= 24576 and 2048 <= k <= 16384 for m, n, k in small)
    squares = draw("square:50:3")
    assert draw("square:50:3") == squares and draw("square:50:4") != squares
    assert all(n % 8 == 0 and k % 8 == 0 for _, n, k in projections + small + squares)
