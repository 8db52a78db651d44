"""The GPU's SM clock, board power and power capping over time, read (never set) through ``nvidia-smi``.

``ClockSampler(smi_id(torch, device))`` starts ``nvidia-smi --query-gpu=... --loop-ms=20`` in the
background; ``window(t0, t1)`` averages the samples whose timestamps fall in ``[t0, t1]``
(``time.time()`` seconds). Under a power cap the clock a kernel gets depends on the kernel: two GEMMs
timed back to back in short batches share one clock, while each run on its own for a second settles at
its own (benchmarks/studies/gemm_sustained.py). ``power.draw`` is the driver's one-second average: windows much
shorter than a second of steady load read low; the SM clock is a sample. ``capped`` is the share of
samples in which the driver's SW power cap was holding the clock below the one requested
(``clocks_throttle_reasons.sw_power_cap``, a name old and new drivers know): on the runner's H100s
(700 W) it is active under every long GEMM, ours and cuBLAS's, so their sustained ratio is one of
energy per GEMM (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import datetime
import math
import shutil
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass

QUERY = "timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.sw_power_cap"
PERIOD_MS = 20
#: How long :meth:`ClockSampler.window` waits for a window's last samples to come through the pipe.
CATCH_UP_S = 5.0


@dataclass(frozen=True)
class Sample:
    time: float  # seconds since the epoch
    sm_mhz: float
    watts: float
    celsius: float
    capped: float  # 1.0: the SW power cap was active, 0.0: it was not, NaN: not reported


@dataclass(frozen=True)
class Window:
    """Means over the samples of one time window (NaN when it holds none)."""

    sm_mhz: float
    watts: float
    celsius: float
    capped: float  # share of the samples with the SW power cap active (NaN: none reported it)
    samples: int


#: How nvidia-smi reports a clock event reason.
REASON = {"Active": 1.0, "Not Active": 0.0}


def parse_line(line: str) -> Sample | None:
    """One line of ``nvidia-smi --query-gpu=QUERY --format=csv,noheader,nounits`` (e.g.
    ``2026/11/26 01:40:00.123, 1755, 612.40, 55, Active``); None if it is not one (a header, a warning,
    ``[N/A]`` for a number). A power-cap field other than Active / Not Active reads NaN."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != 5:
        return None
    try:
        when = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
        return Sample(when, float(parts[1]), float(parts[2]), float(parts[3]), REASON.get(parts[4], math.nan))
    except ValueError:
        return None


def window_of(samples: list[Sample], t0: float, t1: float) -> Window:
    """The means of the samples taken in ``[t0, t1]``."""
    inside = [s for s in samples if t0 <= s.time <= t1]
    if not inside:
        return Window(math.nan, math.nan, math.nan, math.nan, 0)
    reported = [s.capped for s in inside if not math.isnan(s.capped)]
    return Window(
        statistics.fmean(s.sm_mhz for s in inside),
        statistics.fmean(s.watts for s in inside),
        statistics.fmean(s.celsius for s in inside),
        statistics.fmean(reported) if reported else math.nan,
        len(inside),
    )


def smi_id(torch, device: int) -> str:
    """How ``nvidia-smi --id`` names torch's CUDA device ``device``: its UUID where torch reports one (torch
    counts only the devices ``CUDA_VISIBLE_DEVICES`` shows, nvidia-smi all of them), else the index."""
    uuid = getattr(torch.cuda.get_device_properties(device), "uuid", None)
    return f"GPU-{uuid}" if uuid else str(device)


class ClockSampler:
    """Samples of the GPU ``nvidia-smi`` knows as ``device`` (an index or ``GPU-<uuid>``, see
    :func:`smi_id`) every PERIOD_MS, in a background thread, until :meth:`close`."""

    def __init__(self, device: str | int = 0) -> None:
        self.samples: list[Sample] = []
        self._process = None
        if shutil.which("nvidia-smi") is None:
            return
        command = ["nvidia-smi", f"--id={device}", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits"]
        # Into a pipe nvidia-smi's output is block-buffered (seconds of samples): line-buffer it if possible.
        line_buffered = ["stdbuf", "-oL"] if shutil.which("stdbuf") else []
        self._process = subprocess.Popen(
            [*line_buffered, *command, f"--loop-ms={PERIOD_MS}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    @property
    def available(self) -> bool:
        return self._process is not None

    def _read(self) -> None:
        for line in self._process.stdout:
            sample = parse_line(line)
            if sample is not None:
                self.samples.append(sample)

    def window(self, t0: float, t1: float) -> Window:
        """The means over ``[t0, t1]``, once a sample from after ``t1`` has arrived (or CATCH_UP_S passed)."""
        deadline = time.time() + CATCH_UP_S
        while self.available and time.time() < deadline and not (self.samples and self.samples[-1].time > t1):
            time.sleep(PERIOD_MS / 1000)
        return window_of(list(self.samples), t0, t1)

    def close(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait()

    def __enter__(self) -> ClockSampler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
