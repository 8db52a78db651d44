"""Launch epochs: the value a ready flag holds, and how a waiter tells this launch's flag from an old one.

A flag word that is only ever 0/1 cannot say *which* launch raised it: the second launch's waiter sees the
first launch's 1 and reads a tile that is not there yet. So every launch takes a fresh **epoch** and its flags are
released with it; a waiter waits until the flag has *reached* its epoch. Epochs run 2, 3, …, 0xFFFFFFFF,
then 2 again: never 0 (a fresh word) or 1, so "reached" (compared modulo 2³², the flag at most 2³¹
launches ahead) and "the launch before" (:func:`previous`) mean the same on both sides of the wrap,
and parity alternates across it (0xFFFFFFFF is odd, 2 even).

The copy engines cannot write an epoch that changes every launch from a replayed CUDA graph without a
memory barrier and a copy; they write a constant per launch parity instead, :func:`parity_token` (1 or 2,
never the fresh 0). Two values suffice only with credits: a sender takes the receiver's credit for launch
``e`` once the receiver has consumed launch ``e − 1``, so a flag holds this launch's token or the
previous one's, never one two launches old.

Every function here works on Python ints (the host, :mod:`pipes.check`) and on CuTe DSL ``Int32`` values
(device code), so the producer, the consumer and the checker run the same arithmetic.
"""

from __future__ import annotations

from typing import Any

#: The value of a flag word nobody has written: no epoch and no parity token is ever this.
FRESH = 0
MASK = 0xFFFFFFFF
#: The first epoch of a sequence (:func:`next_epoch` of :data:`FRESH`), and the one after 0xFFFFFFFF.
FIRST = 2


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch`` (host side: Python ints): ``epoch + 1``, or :data:`FIRST` after
    0xFFFFFFFF and after :data:`FRESH` (a sequence not yet started)."""
    _check_epoch(epoch)
    return epoch + 1 if FIRST <= epoch < MASK else FIRST


def reached(value: Any, epoch: Any) -> Any:
    """Whether a flag holding ``value`` has reached ``epoch``: ``value − epoch ≥ 0`` modulo 2³² (within 2³¹
    of each other). On DSL ``Int32`` values the subtraction wraps by itself; a fresh flag (0) has not
    reached any epoch in ``[1, 2³¹)``."""
    if isinstance(value, int) and isinstance(epoch, int):
        return ((value - epoch) & MASK) < 1 << 31
    return (value - epoch) >= 0


def parity_token(epoch: Any) -> Any:
    """The constant a copy engine raises a flag to in the launch of ``epoch``: 1 or 2 by its parity."""
    return 1 + (epoch & 1)


def previous(epoch: Any) -> Any:
    """The epoch before ``epoch``: what a receiver's credit must have reached before launch ``epoch`` may
    overwrite its buffer (0xFFFFFFFF before :data:`FIRST`; a fresh credit, 0, has reached it, so the
    first launch of a sequence waits for nothing)."""
    if isinstance(epoch, int):
        return epoch - 1 if epoch != FIRST else MASK
    import cutlass

    # On the device 0xFFFFFFFF is the Int32 -1: FIRST - 3.
    return epoch - 1 - cutlass.select_(epoch == FIRST, 2, 0)


def as_int32(epoch: int) -> int:
    """``epoch`` (uint32) as the signed 32-bit integer with the same bits: what a kernel's ``Int32``
    argument takes and what an ``int32`` tensor holding the flag reads back."""
    epoch &= MASK
    return epoch - (1 << 32) if epoch >= 1 << 31 else epoch


def _check_epoch(epoch: Any) -> None:
    if isinstance(epoch, bool) or not isinstance(epoch, int) or not 0 <= epoch <= MASK:
        raise ValueError(f"epoch = {epoch!r} is invalid: allowed an int in [0, 0xFFFFFFFF]")


__all__ = ["FIRST", "FRESH", "MASK", "as_int32", "next_epoch", "parity_token", "previous", "reached"]
