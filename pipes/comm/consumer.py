"""A host thread that hands each tile to a user function as soon as its flag says it has landed.

    consumer = TileConsumer.of(receiver, epochs=[e], on_tiles=lambda tiles, epoch: ..., credits=True)
    consumer.start(); launch(...); consumer.join_checked()

It polls the receiver's flags (page-locked host memory, read in place; or any ``uint32`` numpy view of
words the device writes, with the constructor). A tile whose flag has reached
the launch's epoch is complete: the device released the flag at system scope after the tile's data,
and x86 keeps this thread's loads in program order (flag, then data), so reading the tile after seeing
the flag is an acquire. ``on_tiles(tiles, epoch)`` gets the indices that landed since the last poll;
with ``credits`` the thread then grants them (the sender's next launch may overwrite them). With
``covers`` one flag covers several tiles (a copy engine raises one flag per step): ``covers[tile]`` is
the flag word of ``tile``.

The thread stops when every tile of every epoch has landed, on :meth:`stop`, or after ``timeout_s``
with an error naming the tiles that never came; an exception in ``on_tiles`` is recorded, not lost.
:meth:`join_checked` joins and raises any of these.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .epochs import reached_all
from .receivers import Receiver


class TileConsumer(threading.Thread):
    """Consume launches ``epochs`` (in order) on a host thread: ``flags`` and ``credits`` are the words the
    device writes and the host grants, as ``uint32`` numpy views of host memory (:meth:`of` takes them
    from a :class:`~pipes.comm.Receiver`)."""

    def __init__(
        self,
        flags: np.ndarray,
        epochs: int | Sequence[int],
        on_tiles: Callable[[np.ndarray, int], Any],
        *,
        credits: np.ndarray | None = None,
        covers: np.ndarray | None = None,
        one_at_a_time: bool = False,
        on_poll: Callable[[int], Any] | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        """``credits``: grant each tile (``credits[tile] = epoch``) after ``on_tiles`` returns. ``covers``:
        per tile, its flag word (default: one flag per tile). ``one_at_a_time``: hand over one tile per call
        (a slow reader). ``on_poll(epoch)``: called on every poll (to watch other words)."""
        epochs = [epochs] if isinstance(epochs, int) else list(epochs)
        if not epochs:
            raise ValueError("epochs is empty: give the epoch of at least one launch to consume")
        super().__init__(name=f"tile-consumer-{epochs[0]}", daemon=True)
        self.flags = np.asarray(flags).view(np.uint32)
        self.covers = np.arange(self.flags.size) if covers is None else np.asarray(covers, dtype=np.int64)
        self.tiles = len(self.covers)
        if self.covers.size and not 0 <= int(self.covers.min()) <= int(self.covers.max()) < self.flags.size:
            raise ValueError(f"covers names flag words outside [0, {self.flags.size}): {self.covers.tolist()[:8]}…")
        if credits is not None and np.asarray(credits).size < self.tiles:
            raise ValueError(f"credits must hold a word per tile: {np.asarray(credits).size} < {self.tiles} tiles")
        self.credit_words = None if credits is None else np.asarray(credits).view(np.uint32)
        self.epochs = epochs
        self.on_tiles = on_tiles
        self.one_at_a_time = one_at_a_time
        self.on_poll = on_poll
        self.timeout_s = timeout_s
        self.errors: list[str] = []
        self.completed = 0  # launches fully consumed so far
        self.started_polling = threading.Event()
        self._stopping = threading.Event()

    @classmethod
    def of(
        cls,
        receiver: Receiver,
        epochs: int | Sequence[int],
        on_tiles: Callable[[np.ndarray, int], Any],
        *,
        credits: bool = False,
        **options: Any,
    ) -> TileConsumer:
        """A consumer of a host ``receiver``'s flags (and, with ``credits``, its credits)."""
        if receiver.kind != "host":
            raise ValueError(f"TileConsumer reads host memory in place; this receiver is {receiver.kind!r}")
        flags = receiver.flags.numpy()
        words = receiver.credits.numpy() if credits else None
        return cls(flags, epochs, on_tiles, credits=words, **options)

    def stop(self) -> None:
        """Ask the thread to return at its next poll."""
        self._stopping.set()

    def run(self) -> None:
        deadline = time.monotonic() + self.timeout_s
        self.started_polling.set()
        flags = self.flags
        for epoch in self.epochs:
            pending = np.ones(self.tiles, dtype=bool)
            while pending.any():
                if self._stopping.is_set():
                    return
                if self.on_poll is not None:
                    self.on_poll(epoch)
                ready = np.flatnonzero(reached_all(flags[self.covers], epoch) & pending)
                if ready.size:
                    ready = ready[:1] if self.one_at_a_time else ready
                    try:
                        self.on_tiles(ready, epoch)
                    except Exception as exc:  # noqa: BLE001 - reported by join_checked, not lost with the thread
                        self.errors.append(f"on_tiles failed at epoch {epoch}: {type(exc).__name__}: {exc}")
                        return
                    pending[ready] = False
                    if self.credit_words is not None:  # after on_tiles' reads: the tiles may be overwritten now
                        self.credit_words[ready] = np.uint32(epoch & 0xFFFFFFFF)
                else:
                    time.sleep(0)  # hand the GIL over: the launching thread may still be queueing work
                if time.monotonic() > deadline:
                    missing = np.flatnonzero(pending)
                    self.errors.append(
                        f"timed out after {self.timeout_s:.0f} s: {missing.size} tile(s) never flagged with "
                        f"epoch {epoch} (first missing: {missing[:8].tolist()})"
                    )
                    return
            self.completed += 1

    def join_checked(self, timeout_s: float | None = None) -> None:
        """Join; ``RuntimeError`` if the thread is still running after ``timeout_s`` or recorded an error."""
        self.join(timeout_s)
        if self.is_alive():
            raise RuntimeError(f"the tile consumer is still waiting after {timeout_s} s")
        if self.errors:
            raise RuntimeError("; ".join(self.errors))


__all__ = ["TileConsumer"]
