"""A bounded wait for the GPU: a hung kernel fails its test instead of stalling the whole run."""

from __future__ import annotations

import time

import pytest


def synchronize(seconds: float = 60.0) -> None:
    """torch.cuda.synchronize with a deadline (``pytest.fail`` after ``seconds``)."""
    torch = pytest.importorskip("torch")
    done = torch.cuda.Event()
    done.record()
    deadline = time.monotonic() + seconds
    while not done.query():
        if time.monotonic() > deadline:
            pytest.fail(f"the GPU did not finish within {seconds:.0f} s (a hang: the process must exit)")
        time.sleep(1e-4)
