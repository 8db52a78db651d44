"""The host side of examples/epilogue_comm.py: checksum every tile as it lands, note when, watch the CTAs.

The polling, the flag arithmetic, the credits and the clean stop are the library's
:class:`pipes.comm.TileConsumer`; this adds what the example measures: each tile's checksum taken the
moment its flag appears (``perf_counter_ns``), and the kernel's start and end as the host sees them (the
per-CTA start/end flags the comm warps publish).

The checksums taken as tiles land are compared, after the kernel, with the checksums of the final
buffer: a tile read before its data had landed shows up as a mismatch (a stale or torn tile).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from pipes.comm import TileConsumer, reached_all

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


class HostConsumer:
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
        self.receiver = receiver
        self.ctas = ctas
        self.delay_s = delay_s
        tiles = receiver.tiles
        self.results = [Consumption(e, np.full(tiles, -1, np.int64), np.zeros(tiles, np.uint64)) for e in epochs]
        self._by_epoch = {out.epoch: out for out in self.results}
        self._cta_words = receiver.ctas.numpy().view(np.uint32)[: 2 * ctas]
        self.thread = TileConsumer(
            receiver.flags.numpy(),
            epochs,
            self._landed,
            covers=receiver.flag_index,
            credits=receiver.credits.numpy() if credits else None,
            one_at_a_time=delay_s > 0,
            on_poll=self._watch_ctas,
            timeout_s=timeout_s,
        )
        self.started_polling = self.thread.started_polling

    @property
    def result(self) -> Consumption:
        """The first (or only) launch's consumption."""
        return self.results[0]

    @property
    def completed(self) -> int:
        """Launches fully consumed so far (a launcher may throttle on it)."""
        return self.thread.completed

    def start(self) -> None:
        self.thread.start()

    def is_alive(self) -> bool:
        return self.thread.is_alive()

    def join(self, timeout: float | None = None) -> None:
        self.thread.join(timeout)
        # The kernel's end may be seen only after the last tile: wait for it briefly, as before.
        deadline = time.monotonic() + 5.0
        for out in self.results:
            while out.end_ns < 0 and not self.thread.errors and time.monotonic() < deadline:
                self._watch_ctas(out.epoch)
                time.sleep(1e-4)

    def _watch_ctas(self, epoch: int) -> None:
        out = self._by_epoch[epoch]
        now = time.perf_counter_ns()
        if out.start_ns < 0 and reached_all(self._cta_words[0::2], epoch).any():
            out.start_ns = now
        if out.end_ns < 0 and reached_all(self._cta_words[1::2], epoch).all():
            out.end_ns = now

    def _landed(self, tiles: np.ndarray, epoch: int) -> None:
        out = self._by_epoch[epoch]
        out.seen_ns[tiles] = time.perf_counter_ns()
        out.checksums[tiles] = self.receiver.checksums(tiles)
        if self.delay_s > 0:
            time.sleep(self.delay_s)

    def verify(self, expected: Sequence[np.ndarray] | np.ndarray | None = None) -> list[str]:
        """The checksums taken as tiles landed against ``expected`` (per launch, per tile; default: the
        buffer's checksums now — for one launch, after its kernel and before another one writes)."""
        rx = self.receiver
        if expected is None:
            expected = [rx.checksums()]
        elif isinstance(expected, np.ndarray):
            expected = [expected]
        problems = [f"host consumer: {e}" for e in self.thread.errors]
        for out, want in zip(self.results, expected, strict=True):
            problems += [f"epoch {out.epoch}: {e}" for e in out.errors]
            bad = np.flatnonzero(want != out.checksums)
            if bad.size:
                problems.append(
                    f"epoch {out.epoch}: {bad.size} tile(s) read with other contents than the launch's "
                    f"(stale, torn or overwritten; first: {bad[:8].tolist()})"
                )
        return problems
