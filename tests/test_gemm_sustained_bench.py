"""benchmarks/studies/gemm_sustained.py and its clock sampler (benchmarks/gpu_clocks.py) without a GPU: parsing,
windows, the ratios, errors (its command line: tests/test_benchmark_cli.py)."""

from __future__ import annotations

import math
import os

import pytest


def test_a_sampler_line_is_parsed_and_anything_else_is_not():
    from gpu_clocks import parse_line

    sample = parse_line("2026/11/26 01:40:00.125, 1755, 612.40, 55, Active\n")
    assert (sample.sm_mhz, sample.watts, sample.celsius, sample.capped) == (1755.0, 612.4, 55.0, 1.0)
    later = parse_line("2026/11/26 01:40:01.125, 1755, 612.40, 55, Not Active")
    assert later.time - sample.time == pytest.approx(1.0) and later.capped == 0.0
    assert math.isnan(parse_line("2026/11/26 01:40:01.125, 1755, 612.40, 55, [N/A]").capped)
    for junk in (
        "timestamp, clocks.current.sm [MHz], power.draw [W], temperature.gpu, clocks_event_reasons.sw_power_cap",
        "",
        "a, b, c, d, e",
        "2026/11/26 01:40:00.125, 1755, 612.40, 55",  # four fields: another query
        "2026/11/26 01:40:00.125, [N/A], 612.40, 55, Active",
    ):
        assert parse_line(junk) is None


def test_a_window_averages_only_its_own_samples():
    from gpu_clocks import Sample, window_of

    capped = [1.0, 0.0, 1.0, math.nan, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    samples = [Sample(t, 1000.0 + 100 * t, 500.0 + t, 50.0, capped[t]) for t in range(10)]
    w = window_of(samples, 2.0, 4.0)
    assert (w.samples, w.sm_mhz, w.watts) == (3, 1300.0, 503.0)
    assert w.capped == 1.0  # samples 2 and 4 capped; sample 3 did not say
    assert window_of(samples, 0.0, 9.0).capped == pytest.approx(4 / 9)
    assert math.isnan(window_of(samples, 3.0, 3.0).capped)
    empty = window_of(samples, 20.0, 30.0)
    assert empty.samples == 0 and math.isnan(empty.sm_mhz) and math.isnan(empty.capped)


def test_the_ratio_and_its_equal_clock_scaling():
    from gemm_sustained import Segment, Verdict, median_segment

    torch_seg = Segment(us=200.0, sm_mhz=1500.0, watts=580.0, capped=1.0)
    ours_seg = Segment(us=190.0, sm_mhz=1425.0, watts=585.0, capped=1.0)
    v = Verdict(torch_seg, ours_seg)
    assert v.ratio == pytest.approx(200 / 190)
    # ours ran at 5 % lower clocks: at torch's clock it would take 190 × 1425 / 1500 µs
    assert v.ratio_at_equal_clocks == pytest.approx(200 / (190 * 1425 / 1500))
    med = median_segment([Segment(3, 30, 300, 1.0), Segment(1, 10, 100, 0.5), Segment(2, 20, 200, 0.0)])
    assert med == Segment(2, 20, 200, 0.5)


def test_nvidia_smi_names_the_device_by_uuid_when_torch_has_one():
    from types import SimpleNamespace

    from gpu_clocks import smi_id

    def fake(props):
        return SimpleNamespace(cuda=SimpleNamespace(get_device_properties=lambda device: props))

    assert smi_id(fake(SimpleNamespace(uuid="8c1f-77")), 1) == "GPU-8c1f-77"
    assert smi_id(fake(SimpleNamespace()), 1) == "1"  # older torch: the index


def test_the_sampler_reads_a_running_nvidia_smi(tmp_path, monkeypatch):
    """A stand-in ``nvidia-smi`` on PATH printing a sample every 20 ms: the background reader collects
    them, and a window waits for its last samples instead of answering from what has arrived so far."""
    import time

    from gpu_clocks import ClockSampler

    fake = tmp_path / "nvidia-smi"
    fake.write_text(
        "#!/bin/sh\n"
        'while true; do echo "$(date +"%Y/%m/%d %H:%M:%S.%N" | cut -c1-23), 1410, 555.5, 51, Active"\n'
        "sleep 0.02; done\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    with ClockSampler("0") as sampler:
        assert sampler.available
        t0 = time.time()
        time.sleep(0.3)
        window = sampler.window(t0, time.time())
    assert window.samples >= 3
    assert (window.sm_mhz, window.watts, window.celsius, window.capped) == (1410.0, 555.5, 51.0, 1.0)


def test_without_nvidia_smi_the_sampler_says_so(tmp_path, monkeypatch):
    from gpu_clocks import ClockSampler

    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no nvidia-smi
    with ClockSampler("0") as sampler:
        assert not sampler.available
        assert math.isnan(sampler.window(0.0, 1e12).sm_mhz)
