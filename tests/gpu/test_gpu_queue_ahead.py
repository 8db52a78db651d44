"""GPU test: ``kernel_tools.timing``'s ``queue_ahead_us`` times the GPU, not the host. A launch whose host
side takes far longer than its kernel (a sleep, then a short spin) reads as the host's time unheld, and
as the kernel's when each batch is held long enough for the host to queue it; a GPU left waiting warns."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.gpu

HOST_US = 300  # the host's time to queue one launch
BATCH = 5


def test_a_held_batch_measures_the_kernel_and_a_short_hold_warns():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kernel_tools.timing import _batch_us, hold_stream

    hold_stream(10)  # measures the spin's clock
    cycles = 40_000  # ~20 µs at the H100's and H200's clocks

    def slow_to_queue() -> None:
        time.sleep(HOST_US / 1e6)
        torch.cuda._sleep(cycles)

    kernel_us = _batch_us(lambda: torch.cuda._sleep(cycles), 20, queue_ahead_us=2000)
    unheld = _batch_us(slow_to_queue, BATCH)
    held = _batch_us(slow_to_queue, BATCH, queue_ahead_us=3 * BATCH * HOST_US)
    assert unheld > 0.6 * HOST_US, (unheld, held, kernel_us)  # the host's pace
    assert held < 1.5 * kernel_us + 5, (unheld, held, kernel_us)  # the kernel's
    with pytest.warns(UserWarning, match="slow: the GPU waited for the host within a batch of 5"):
        _batch_us(slow_to_queue, BATCH, queue_ahead_us=50, label="slow")
