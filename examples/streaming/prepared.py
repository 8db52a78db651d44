"""Prepared calls: a validated call signature with its kernel's argument pack, the fixed values written once.

A call of :func:`.api.rmsnorm` with tensors of a shape, dtype, device and layout it has seen before (and
the same ``eps`` and config) skips validation, the plan and the kernel lookup: it finds its
:class:`PreparedCall` in a per-thread dict keyed by exactly the facts validation looked at, writes the
three data pointers and torch's current stream into the pack and calls the compiled host function.
:class:`BoundCall` goes one step further for a caller that launches on the same tensors again and again
(a decode loop): the pointers are written once too, and a call writes only the stream.
:class:`GraphCall` goes the last step: the bound launch captured once into a one-node CUDA graph, so a
call is one ``cudaGraphLaunch`` on torch's current stream (no argument pack, no kernel-launch path).
"""

from __future__ import annotations

import threading
from typing import Any

from .device import DeviceLayer, on_swap
from .launch import ArgPack

#: Prepared calls one thread keeps; past this the dict starts over (a workload with ever-new shapes
#: pays the validation again, and memory stays bounded).
MAX_PREPARED = 256


class PreparedCall:
    """Launch one kernel with fixed (M, scalars, grid, device) on new data pointers, in the current stream.

    ``pack`` is None when there is nothing to launch (M = 0). Cells 0-2 are the data pointers, the last
    cell the stream; the others were written when the call was prepared.
    """

    __slots__ = ("pack", "cells", "index", "_current_device", "_raw_stream", "_guard")

    def __init__(self, pack: ArgPack | None, index: int, layer: DeviceLayer) -> None:
        self.pack = pack
        self.cells = pack.cells if pack is not None else ()
        self.index = index
        # The layer's functions, bound here: a call then does no global lookup to reach them.
        self._current_device = layer.current_device
        self._raw_stream = layer.raw_stream
        self._guard = layer.guard

    def launch(self, a: int, b: int, c: int) -> None:
        """Write the three data pointers, then :meth:`fire`."""
        cells = self.cells
        if not cells:
            return
        cells[0].value = a
        cells[1].value = b
        cells[2].value = c
        self.fire()

    def fire(self) -> None:
        """Launch with the pointers as they are, on the current stream of the call's device."""
        if self.pack is None:
            return
        index = self.index
        self.cells[-1].value = self._raw_stream(index)
        if index == self._current_device():
            self.pack.launch()
            return
        with self._guard(index):  # the stream belongs to that device
            self.pack.launch()


class BoundCall:
    """A zero-argument launch of one kernel on fixed tensors: ``call()`` launches it again on torch's current
    stream and returns the output. Holds references to its tensors; they must keep their storage (no
    ``resize_``/``set_``). One thread at a time."""

    __slots__ = ("_call", "_tensors", "out")

    def __init__(self, call: PreparedCall, tensors: tuple[Any, ...], out: Any) -> None:
        self._call = call
        self._tensors = tensors  # keeps the storage the written pointers point into alive
        self.out = out
        if call.cells:
            for cell, t in zip(call.cells[:3], tensors, strict=True):
                cell.value = t.data_ptr()

    def __call__(self) -> Any:
        self._call.fire()
        return self.out


class GraphCall:
    """A :class:`BoundCall` captured into a CUDA graph: ``call()`` replays it on torch's current stream and
    returns the output. Same contract as a bound call (the tensors keep their storage); the graph is
    captured on first use (after one eager launch, so the kernel's module is loaded outside capture)."""

    __slots__ = ("_bound", "_graph", "_replay", "out")

    def __init__(self, bound: BoundCall) -> None:
        self._bound = bound
        self._graph: Any = None
        self._replay: Any = None
        self.out = bound.out

    def capture(self) -> None:
        import torch

        self._bound()  # eager once: module load and first-launch costs stay out of the graph
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
            self._bound()
        torch.cuda.current_stream().wait_stream(stream)
        self._graph, self._replay = graph, graph.replay

    def __call__(self) -> Any:
        if self._replay is None:
            self.capture()
        self._replay()
        return self.out


_LOCAL = threading.local()


def calls() -> dict[tuple, PreparedCall]:
    """This thread's prepared calls."""
    try:
        return _LOCAL.calls
    except AttributeError:
        _LOCAL.calls = {}
        return _LOCAL.calls


def remember(key: tuple, call: PreparedCall) -> PreparedCall:
    table = calls()
    if len(table) >= MAX_PREPARED:
        table.clear()
    table[key] = call
    return call


def forget() -> None:
    """Drop this thread's prepared calls (the device layer changed)."""
    _LOCAL.calls = {}


on_swap(forget)
