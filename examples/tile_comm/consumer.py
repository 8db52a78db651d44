"""The host thread that consumes tiles as they land in page-locked memory while the kernel still runs.

It polls the ready flags (per tile, or per step with the copy engine: ``Receiver.flag_index``); a tile
whose flag holds this launch's epoch is complete (the device
released the flag at system scope after the tile's data, and x86 keeps this thread's loads in program
order: flag, then data). It checksums the tile then and there, records when (``time.perf_counter_ns``),
and with ``credits`` hands the tile back (``credits[tile] = epoch``), which a launch with
``OPT_CREDITS`` waits for before overwriting the tile. The per-CTA start/end flags give the host-side
start and end of the kernel.

The checksums taken as tiles land are compared, after the kernel, with the checksums of the final
buffer: a tile read before its data had landed shows up as a mismatch (a stale or torn tile).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .receiver import Receiver


@dataclass
class Consumption:
    """What the host saw of one launch (times in ``perf_counter_ns``; -1: never seen)."""

    epoch: int
    seen_ns: np.ndarray  # per tile
    checksums: np.ndarray  # per tile, taken when the tile's flag appeared
    start_ns: int = -1  # first CTA start flag seen
    end_ns: int = -1  # every CTA's end flag seen
    launched_ns: int = -1
    errors: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return bool((self.seen_ns >= 0).all()) and not self.errors

    def summary(self) -> list[str]:
        """When the first and last tiles were consumed, relative to the kernel's start and end."""
        if self.start_ns < 0 or not (self.seen_ns >= 0).any():
            return ["host: no tile seen"]
        us = lambda ns: (ns - self.start_ns) / 1e3  # noqa: E731
        first, last = int(self.seen_ns[self.seen_ns >= 0].min()), int(self.seen_ns.max())
        launch = f"; launch call {us(self.launched_ns):+.0f} µs" if self.launched_ns >= 0 else ""
        lines = [
            f"host: kernel start seen at 0 µs (first CTA's start flag{launch})",
            f"host: first tile consumed at {us(first):.0f} µs, last at {us(last):.0f} µs "
            f"({int((self.seen_ns >= 0).sum())} tiles checksummed as they landed)",
        ]
        if self.end_ns >= 0:
            lines.append(
                f"host: kernel end seen at {us(self.end_ns):.0f} µs (every CTA's end flag); "
                f"the last tile was consumed {us(last) - us(self.end_ns):+.0f} µs from it"
            )
        return lines


class HostConsumer(threading.Thread):
    """Consume launches ``epochs`` (in order) of ``receiver`` (a ``host`` receiver) on a host thread.

    ``ctas``: CTAs per launch (their end flags mark the kernel's end). ``delay_s``: sleep after each
    tile (a deliberately slow receiver). ``credits``: hand each tile back after checksumming it (needed
    when later launches are queued behind: they wait for the credit before overwriting the tile).
    """

    def __init__(
        self,
        receiver: Receiver,
        epochs: int | Sequence[int],
        ctas: int,
        *,
        delay_s: float = 0.0,
        credits: bool = False,
        timeout_s: float = 60.0,
    ) -> None:
        epochs = [epochs] if isinstance(epochs, int) else list(epochs)
        super().__init__(name=f"host-consumer-{epochs[0]}", daemon=True)
        self.receiver = receiver
        self.ctas = ctas
        self.delay_s = delay_s
        self.credits = credits
        self.timeout_s = timeout_s
        tiles = receiver.tiles
        self.results = [Consumption(e, np.full(tiles, -1, np.int64), np.zeros(tiles, np.uint64)) for e in epochs]
        self.started_polling = threading.Event()
        self.completed = 0  # launches fully consumed so far (a launcher may throttle on it)

    @property
    def result(self) -> Consumption:
        """The first (or only) launch's consumption."""
        return self.results[0]

    def run(self) -> None:
        deadline = time.monotonic() + self.timeout_s
        self.started_polling.set()
        for out in self.results:
            try:
                if not self._consume(out, deadline):
                    return
                self.completed += 1
            except Exception as exc:  # noqa: BLE001 - reported by verify(), not lost with the thread
                out.errors.append(f"host consumer failed: {type(exc).__name__}: {exc}")
                return

    def _consume(self, out: Consumption, deadline: float) -> bool:
        rx = self.receiver
        flags = rx.flags.numpy().view(np.uint32)
        covering = np.arange(rx.tiles) if rx.flag_index is None else rx.flag_index
        ctas = rx.ctas.numpy().view(np.uint32)[: 2 * self.ctas]
        credits = rx.credits.numpy().view(np.uint32)
        epoch = np.uint32(out.epoch)
        pending = np.ones(rx.tiles, dtype=bool)
        while pending.any() or out.end_ns < 0:
            now = time.perf_counter_ns()
            if out.start_ns < 0 and _reached(ctas[0::2], epoch).any():
                out.start_ns = now
            # Before any checksumming: a batch of ready tiles takes this thread milliseconds.
            if out.end_ns < 0 and _reached(ctas[1::2], epoch).all():
                out.end_ns = now
            # A flag past this epoch means a later launch rewrote the tile (no credits): taken and reported.
            ready = np.flatnonzero(_reached(flags[covering], epoch) & pending)
            if ready.size:
                if self.delay_s > 0:
                    ready = ready[:1]  # a slow receiver takes one tile at a time
                out.seen_ns[ready] = now
                out.checksums[ready] = rx.checksums(ready)
                pending[ready] = False
                if self.credits:
                    credits[ready] = epoch  # after the reads above: the tile may be overwritten now
                if self.delay_s > 0:
                    time.sleep(self.delay_s)
            if not ready.size:
                time.sleep(0)  # hand the GIL over: the launching thread may still be queueing copies
            if time.monotonic() > deadline:
                out.errors.append(
                    f"timed out after {self.timeout_s:.0f} s: {int(pending.sum())} tile(s) never flagged with "
                    f"epoch {out.epoch} (first missing: {np.flatnonzero(pending)[:8].tolist()})"
                )
                return False
        return True

    def verify(self, expected: Sequence[np.ndarray] | np.ndarray | None = None) -> list[str]:
        """The checksums taken as tiles landed against ``expected`` (per launch, per tile; default: the
        buffer's checksums now — for one launch, after its kernel and before another one writes)."""
        rx = self.receiver
        if expected is None:
            expected = [rx.checksums()]
        elif isinstance(expected, np.ndarray):
            expected = [expected]
        problems: list[str] = []
        for out, want in zip(self.results, expected, strict=True):
            problems += [f"epoch {out.epoch}: {e}" for e in out.errors]
            bad = np.flatnonzero(want != out.checksums)
            if bad.size:
                problems.append(
                    f"epoch {out.epoch}: {bad.size} tile(s) read with other contents than the launch's "
                    f"(stale, torn or overwritten; first: {bad[:8].tolist()})"
                )
        return problems


def _reached(values: np.ndarray, epoch: np.uint32) -> np.ndarray:
    """``values ≥ epoch`` on wrapping uint32 epochs (within 2³¹ of each other)."""
    return (values - epoch).view(np.int32) >= 0
