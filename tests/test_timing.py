"""kernel_tools.timing.time_paired on the CPU: the order alternates per round, each round's ratio is kept,
and the median and quartiles are of those ratios (the GPU timing itself is stubbed)."""

from __future__ import annotations

import pytest


def test_paired_rounds_alternate_and_report_the_median_ratio(monkeypatch):
    torch = pytest.importorskip("torch")
    from kernel_tools import timing

    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
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
