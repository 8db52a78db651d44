"""The fused kernel's launch with its arguments converted once: a launcher's later calls write four cells.

A compiled CuTe DSL function converts every argument on every call (the fused kernel's 19 arguments:
~40 µs of Python on a fast host, ~100 µs on the GPU runner's, measured 2026-11-24), and a launch of the
epilogue-comm GEMM changes only four of them: the stream, and the communication arguments' epoch,
``delay_ns`` and ``options``. :class:`CachedLaunch` is a :class:`gemm_modes.prepared.PreparedLaunch`
(the GEMM's own: converted once, the address list packed once) that owns those four entries as cells;
a call writes them and calls the host function.

A double-buffered inbox (``TensorParallelGemmRS(inbox_buffers=2)``) also swaps the inbox's two
pointers, ``inbox`` and ``inbox_flags``, by the launch's parity: built with ``inbox=``, two more cells.

This module owns where those entries are (one address per argument leaf, the communication tuple last,
the stream before it); ``PreparedLaunch.build_with`` checks each holds the value that was passed, so a
DSL version that lays the list out otherwise gets None and the caller keeps the DSL's own call.
"""

from __future__ import annotations

import ctypes
from typing import Any

from gemm_modes.prepared import Cell, PreparedLaunch

from pipes.epoch import as_int32

#: From the end of the address list: the stream, then the communication tuple's 11 leaves (kernel_args).
_STREAM, _EPOCH, _DELAY, _OPTIONS, _INBOX, _INBOX_FLAGS = -12, -5, -4, -3, -2, -1


class CachedLaunch:
    """``(stream, epoch, delay_ns, options)`` → one launch of a compiled fused kernel on fixed operands."""

    __slots__ = ("prepared",)

    def __init__(self, prepared: PreparedLaunch) -> None:
        self.prepared = prepared

    @classmethod
    def build(
        cls, compiled: Any, operands: tuple, stream: Any, comm_args: tuple, inbox: tuple[int, int] | None = None
    ) -> CachedLaunch | None:
        """Convert ``(*operands, stream, comm_args)`` once; None unless the address list has the layout
        whose entries this owns (checked against the values passed). ``inbox``: the (inbox, inbox flags)
        addresses ``comm_args`` was built with, to own their cells too (a double-buffered inbox)."""
        cells = {
            "stream": Cell(_STREAM, ctypes.c_uint64, int(stream)),
            "epoch": Cell(_EPOCH, ctypes.c_int32, int(comm_args[6])),
            "delay_ns": Cell(_DELAY, ctypes.c_int32, int(comm_args[7])),
            "options": Cell(_OPTIONS, ctypes.c_int32, int(comm_args[8])),
        }
        if inbox is not None:
            cells["inbox"] = Cell(_INBOX, ctypes.c_uint64, inbox[0])
            cells["inbox_flags"] = Cell(_INBOX_FLAGS, ctypes.c_uint64, inbox[1])
        prepared = PreparedLaunch.build_with(compiled, (*operands, stream, comm_args), cells)
        return None if prepared is None else cls(prepared)

    def __call__(
        self, stream: int, epoch: int, delay_ns: int = 0, options: int = 0, inbox: tuple[int, int] | None = None
    ) -> None:
        """One launch; ``inbox``: this launch's (inbox, inbox flags) addresses (built with ``inbox=`` only)."""
        if inbox is None:
            self.prepared(stream, epoch=as_int32(epoch), delay_ns=delay_ns, options=options)
        else:
            data, flags = inbox
            self.prepared(
                stream, epoch=as_int32(epoch), delay_ns=delay_ns, options=options, inbox=data, inbox_flags=flags
            )
