"""kernel_tools.timing.time_paired on the CPU: the order alternates per round, each round's ratio is kept,
and the median and quartiles are of those ratios (the GPU timing itself is stubbed)."""

from __future__ import annotations

import pytest


def _without_gpu(monkeypatch) -> None:
    """A torch whose ``cuda.synchronize`` does nothing: the batches are stubbed, so no GPU (or torch) is used."""
    import sys
    import types

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(synchronize=lambda *a, **k: None))
    monkeypatch.setitem(sys.modules, "torch", fake)


def test_paired_rounds_alternate_and_report_the_median_ratio(monkeypatch):
    from kernel_tools import timing

    _without_gpu(monkeypatch)
    order: list[str] = []
    # Drift: every batch after the first takes longer; "other" is 2 % slower than "base" in every round.
    clock = iter(range(1000))

    def batch_us(fn, batch, settle=None):
        tick = next(clock)
        name = fn()
        order.append(name)
        return (100.0 + tick) * (1.02 if name == "other" else 1.0)

    monkeypatch.setattr(timing, "_batch_us", batch_us)
    result = timing.time_paired(lambda: "base", lambda: "other", rounds=6)
    # The warm-up calls the functions directly; only timed batches go through _batch_us.
    assert order[:4] == ["base", "other", "other", "base"]  # round 0 base first, round 1 other first
    assert result.rounds == 6
    # Drift makes the second batch of a round slower: the per-round ratios alternate around 1.02 (1.030,
    # 1.010, …) and the median lands between them, at the true 2 % within the drift.
    assert result.q1 <= result.median <= result.q3
    assert result.median == pytest.approx(1.02, abs=0.01)
    assert "+" in result.describe() and "6 rounds" in result.describe()
    with pytest.raises(ValueError, match="rounds = 3 is invalid"):
        timing.time_paired(lambda: None, lambda: None, rounds=3)


def test_paired_ratio_takes_the_rounds_ratios_so_drift_between_rounds_cancels():
    """Two contenders timed in the same rounds (``interleaved_samples``): ``other`` 5 % slower in every
    round while the rounds themselves drift by 40 %; the ratio of medians would move with the drift's
    spread, the median of the per-round ratios does not."""
    from kernel_tools.timing import paired_ratio

    base = [100.0, 140.0, 110.0, 130.0, 120.0]
    other = [b * 1.05 for b in base]
    r = paired_ratio(other, base)
    assert r.median == pytest.approx(1.05) and r.q1 == pytest.approx(1.05) and r.q3 == pytest.approx(1.05)
    assert r.rounds == 5
    with pytest.raises(
        ValueError, match=r"paired_ratio of 3 and 3 rounds is invalid: allowed the same count, at least 4"
    ):
        paired_ratio(other[:3], base[:3])
    with pytest.raises(ValueError, match=r"paired_ratio of 5 and 4 rounds"):
        paired_ratio(other, base[:4])


def test_interleaved_samples_keep_every_round_and_time_interleaved_their_median(monkeypatch):
    from kernel_tools import timing

    _without_gpu(monkeypatch)
    clock = iter(range(1000))
    monkeypatch.setattr(timing, "_batch_us", lambda fn, batch, *_: float(next(clock)))
    samples = timing.interleaved_samples({"a": lambda: None, "b": lambda: None}, rounds=3, batch=1, rotate=True)
    assert samples == {"a": [0.0, 3.0, 4.0], "b": [1.0, 2.0, 5.0]}  # round 1 starts with b
    clock = iter(range(1000))
    medians = timing.time_interleaved({"a": lambda: None, "b": lambda: None}, rounds=3, batch=1, rotate=True)
    assert medians == {"a": 3.0, "b": 2.0}


def test_a_torch_without_its_spin_kernel_times_the_batch_unheld_and_says_so(monkeypatch):
    """``hold_stream`` uses ``torch.cuda._sleep`` (private): where a torch lacks it, the batch runs unheld
    and a warning says so, rather than the benchmark failing."""
    import sys
    import types

    from kernel_tools import timing

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace())
    monkeypatch.setitem(sys.modules, "torch", fake)
    with pytest.warns(UserWarning, match="no torch.cuda._sleep: batches are timed without queue_ahead_us"):
        timing.hold_stream(100)
