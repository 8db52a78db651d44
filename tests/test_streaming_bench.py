"""benchmarks/streaming.py on the CPU: its case list covers what the issue asks, and its report and figure
render from a result document (numbers here are placeholders shaped like a run's, not measurements)."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from examples.streaming.bench import Row  # noqa: E402
from examples.streaming.plan import Op, Store  # noqa: E402


def _bench():
    spec = importlib.util.spec_from_file_location("streaming_benchmark", ROOT / "benchmarks" / "streaming.py")
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
    from examples.streaming.cli import gpu_absent_reason, main

    if gpu_absent_reason() is None:
        pytest.skip("a Hopper GPU is present: the CLI would run the check instead")
    assert main(["--dtype", "bf16", "--n", "1024"]) == 0
    out = capsys.readouterr()
    assert "compile-only report" in out.err
    rows = [line for line in out.out.splitlines() if line.startswith("| rmsnorm") or line.startswith("| axpby")]
    assert len(rows) == 2 and all("| 0 |" in row for row in rows)  # zero spills
