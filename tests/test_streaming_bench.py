"""benchmarks/streaming_kernels.py on the CPU: its case list covers what the issue asks, and its report and figure
render from a result document (numbers here are placeholders shaped like a run's, not measurements)."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

from streaming.bench import Row  # noqa: E402
from streaming.plan import Op, Store  # noqa: E402


def _bench():
    spec = importlib.util.spec_from_file_location("streaming_benchmark", ROOT / "benchmarks" / "streaming_kernels.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_cases_cover_the_issue():
    bench = _bench()
    cases = bench.cases()
    main = {(c.op, c.n) for c in cases if c.section == "main"}
    assert main == {(Op.AXPBY, 8192)} | {(Op.RMSNORM, n) for n in (1024, 4096, 8192, 32768)}
    assert all(c.m * c.n >= 1 << 26 for c in cases if c.section != "small_m")
    sweep = [c for c in cases if c.section == "sweep"]
    for op in (Op.AXPBY, Op.RMSNORM):
        assert {c.config.stages for c in sweep if c.op is op and c.config.ctas_per_sm == 1} == set(range(1, 7))
    assert {c.m for c in cases if c.section == "small_m"} == {1, 2, 4, 8, 16, 32, 64}
    assert {c.config.store for c in cases if c.section == "store"} == {Store.ST_GLOBAL}


def _doc(bench):
    rows = []
    for case in bench.cases():
        plan = case.plan()
        row = Row(
            case.op.value,
            "bf16",
            case.m,
            case.n,
            plan.stages,
            plan.ctas_per_sm,
            plan.config.store.value,
            plan.bytes_in_flight * plan.ctas_per_sm // 1024,
            us=100.0,
            gbps=2500.0,
            copy_gbps=2650.0,
            torch_us=150.0,
            graph_us=4.0,
            torch_graph_us=12.0,
        )
        if case.section == "small_m":
            row.extra = {"out_us": 5.0, "bound_us": 3.0, "host_us": 6.0, "out_host_us": 5.0}
            row.extra |= {"bound_host_us": 3.0, "torch_host_us": 9.0, "graph_call_us": 60.0}
            row.extra |= {"graph_call_host_us": 2.0}
        rows.append({"section": case.section, **row.record()})
    return {
        "device": "placeholder",
        "dtype": "bf16",
        "elements": 1 << 28,
        "copy_gbps": {"1": 2650.0},
        "rows": rows,
        "failures": [],
        "seconds": 1.0,
    }


def test_report_prints_every_table(capsys):
    bench = _bench()
    log = bench.Log()
    bench.report(_doc(bench), log)
    text = "\n".join(log.lines)
    for heading in ("× copy", "Pipeline depth", "TMA store × copy", "Small M"):
        assert heading in text
    assert text.count("| rmsnorm |") >= 4 and "≥ 0.9" in text


def test_figure_renders(tmp_path):
    pytest.importorskip("matplotlib")
    bench = _bench()
    result = tmp_path / "streaming.json"
    result.write_text(json.dumps(_doc(bench)))
    figure = tmp_path / "stages.svg"
    bench.plot(str(result), str(figure))
    svg = figure.read_text()
    assert svg.startswith("<?xml") and "rmsnorm, 1 CTA/SM" in svg


def test_cli_without_a_gpu_prints_the_compile_report(capsys):
    from streaming.cli import gpu_absent_reason, main

    if gpu_absent_reason() is None:
        pytest.skip("a Hopper GPU is present: the CLI would run the check instead")
    assert main(["--dtype", "bf16", "--n", "1024"]) == 0
    out = capsys.readouterr()
    assert "compile-only report" in out.err
    rows = [line for line in out.out.splitlines() if line.startswith("| rmsnorm") or line.startswith("| axpby")]
    assert len(rows) == 2 and all("| 0 |" in row for row in rows)  # zero spills


def test_small_m_tables_show_each_way_to_call_and_what_bounds_it():
    bench = _bench()
    doc = _doc(bench)
    doc["rows"] = [r for r in doc["rows"] if r["section"] == "small_m"]  # what --small-m writes
    doc["copy_gbps"] = {}
    log = bench.Log()
    bench.report(doc, log)
    text = "\n".join(log.lines)
    assert "Pipeline depth" not in text and "| kernel | M × N |" not in text
    # torch 150 µs against 100 (call), 5 (out=), 3 (bound), 60 (graph call): out= and bound meet 3×
    want = "| 1 | 150.0 | 100.0 | **1.50** | 5.0 | 30.00 | 3.0 | **50.00** | 60.0 | **2.50** | ≥ 3: out=, bound |"
    assert want in text
    assert "| 1 | 9.0 | 6.0 | 5.0 | 3.0 | 2.0 | 12.0 | 4.0 | 3.00 |" in text


def test_a_run_before_the_split_renders_its_one_figure_as_out():
    """Rows recorded before the three-way split carry one per-call figure, measured with out= given."""
    bench = _bench()
    doc = _doc(bench)
    for r in doc["rows"]:
        r["extra"] = {}
    log = bench.Log()
    bench.report(doc, log)
    assert "| 1 | 150.0 | – | **–** | 100.0 | 1.50 | – | **–** | – | **–** | ≥ 3: MISS |" in "\n".join(log.lines)


def test_host_table_runs_on_the_cpu_and_leaves_the_api_as_it_was():
    torch = pytest.importorskip("torch")
    from streaming import rmsnorm
    from streaming.hostcost import measure

    rows = measure(1, 8192, "bf16", number=50, repeat=2)
    assert [r.what for r in rows][:3] == ["rmsnorm(x, w, eps, out=out)", "rmsnorm(x, w, eps)", "bind_rmsnorm(...)()"]
    assert all(r.us > 0 for r in rows)
    x = torch.randn(2, 8192).to(torch.bfloat16)
    with pytest.raises(ValueError, match="x is on cpu"):  # the stand-in layer is gone again
        rmsnorm(x, torch.randn(8192).to(torch.bfloat16))
