"""Epochs on the host: a fresh one per launch, and the receiver's view of which flags have reached it.

The arithmetic is :mod:`pipes.epoch` (shared with device code and the CPU models); this adds the
sequence a sender keeps and a vectorized ``reached`` over numpy flag words.
"""

from __future__ import annotations

import numpy as np

from ..epoch import FRESH, next_epoch


class Epochs:
    """The epochs of one sender's launches: :meth:`next` hands out a fresh one per launch.

    Both sides of a channel step the same sequence: a receiver that knows how many launches it has
    consumed knows the epoch of the next (``Epochs(start).next()``).
    """

    def __init__(self, start: int = FRESH) -> None:
        self.current = start

    def next(self) -> int:
        """The next launch's epoch (never 0 or 1; parity alternates across the wrap)."""
        self.current = next_epoch(self.current)
        return self.current

    def __repr__(self) -> str:
        return f"Epochs(current={self.current})"


def reached_all(words: np.ndarray, epoch: int) -> np.ndarray:
    """Per ``uint32`` word, whether it has reached ``epoch`` (cyclic, as :func:`pipes.epoch.reached`)."""
    values = np.asarray(words).view(np.uint32)
    return (values - np.uint32(epoch & 0xFFFFFFFF)).view(np.int32) >= 0


__all__ = ["Epochs", "reached_all"]
