"""A compiled kernel's launch with its arguments converted once: each later call writes the stream only.

A compiled CuTe DSL function converts every argument on every call: for the GEMM's CuTe tensors that
is tens of µs of Python (more on a slow host), as long as the whole kernel at 256×8192² (60 µs), so
back-to-back launches left the GPU idle between kernels and the measured time was the host's. A
:class:`PreparedLaunch` converts the arguments once (``generate_execution_args``), swaps the stream's
entry of the address list (the last one: the stream is the last argument) for a ctypes cell it owns,
packs the list once into its own executor's argument array (as ``streaming.launch.ArgPack`` does), and
each call writes the current stream and calls the host function. Measured per GEMM launch on the GPU
runner's host (2026-11-25): 14 µs with ``torch.cuda.current_stream()`` (5 with torch's raw getter)
against 37 when ``run_compiled_program`` repacks the list on every call, and 52–66 for the DSL's own call.

It relies on that layout, so :meth:`PreparedLaunch.build` checks it: the entry must hold the stream that
was passed. A DSL version that lays the list out otherwise gets None, and the caller keeps the DSL's
own call. :meth:`PreparedLaunch.build_with` is the general form: any named :class:`Cell` of the list
(tile_comm's fused kernel owns its stream, epoch, ``delay_ns`` and ``options`` this way), each checked
against the value it was built with.

``build(..., pointers=...)`` makes a launch whose tensors can be re-pointed: a runtime tensor's entry
points at its memref descriptor, whose first word is the data pointer. ``build`` checks that each of
the first ``len(pointers)`` entries holds the pointer given, keeps only the descriptors (so a cached
launch holds no caller's tensor alive) and :meth:`PreparedLaunch.rebind` writes new pointers into them:
``gemm()`` keeps one such launch per call signature (:mod:`gemm_modes.call_cache`).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any


def _address(entry: Any) -> int:
    return entry.value if isinstance(entry, ctypes.c_void_p) else entry


def read_cell(address: Any, kind: type) -> int | None:
    """The ``kind`` value an address-list entry points at (None for an entry that is no address)."""
    value = _address(address)
    if not isinstance(value, int) or value == 0:
        return None
    return kind.from_address(value).value


@dataclass(frozen=True)
class Cell:
    """An address-list entry a :class:`PreparedLaunch` owns and writes per call: a ``kind`` (ctypes type)
    at ``index`` (negative: from the end), built with ``value`` — ``build`` checks the converted list
    holds it there, which is how a layout this does not know is caught."""

    index: int
    kind: type
    value: int


class PreparedLaunch:
    """``launch(stream, **cells)``: one launch of a compiled kernel on the arguments it was built with,
    its cells (the stream, and any others named at :meth:`build_with`) written first. Not thread-safe
    (its argument array is its own)."""

    __slots__ = ("_keep", "_cells", "_args", "_executor", "_packed", "_result", "_pointer_cells")

    def __init__(
        self, executor: Any, exe_args: list[Any], keep: Any, cells: dict[str, Cell], pointer_cells: tuple = ()
    ) -> None:
        self._keep = keep  # the converted arguments the addresses point into
        self._pointer_cells = pointer_cells
        self._args = list(exe_args)
        self._cells = {}
        for name, cell in cells.items():
            self._cells[name] = owned = cell.kind(cell.value)
            self._args[cell.index] = ctypes.c_void_p(ctypes.addressof(owned))
        self._executor = executor
        pack = getattr(executor, "_get_invoke_packed_args", None)
        self._packed = None
        if pack is not None and hasattr(executor, "capi_func"):
            packed = pack(self._args)  # the executor's per-thread buffer: copied, so this launch owns its own
            self._packed = type(packed).from_buffer_copy(packed)
        self._result = getattr(executor, "cuda_result", None) if self._packed is not None else None

    @classmethod
    def build(cls, compiled: Any, args: tuple, stream: Any, *, pointers: tuple[int, ...] = ()) -> PreparedLaunch | None:
        """Convert ``(*args, stream)`` once; None unless the address list ends with the stream's entry.

        ``pointers``: the data pointers of the first ``len(pointers)`` arguments (runtime tensors); the
        launch can then be re-pointed (:meth:`rebind`) and keeps their descriptors rather than the tensors.
        None unless every such entry is a descriptor that starts with the pointer given.
        """
        stream_cell = Cell(-1, ctypes.c_uint64, int(stream))
        return cls.build_with(compiled, (*args, stream), {"stream": stream_cell}, pointers=pointers)

    @classmethod
    def build_with(
        cls, compiled: Any, args: tuple, cells: dict[str, Cell], *, pointers: tuple[int, ...] = ()
    ) -> PreparedLaunch | None:
        """Convert ``args`` (the stream among them) once, owning ``cells`` (one named ``"stream"``); None
        unless every cell's entry holds its value and every ``pointers`` entry its pointer (see :meth:`build`)."""
        generate = getattr(compiled, "generate_execution_args", None)
        if generate is None or getattr(compiled, "to", None) is None or "stream" not in cells:
            return None
        exe_args, keep = generate(*args)
        count = len(pointers)
        if len(exe_args) <= max([count, *(c.index if c.index >= 0 else -c.index - 1 for c in cells.values())]):
            return None
        if any(read_cell(exe_args[c.index], c.kind) != c.value for c in cells.values()):
            return None
        # ``compiled`` owns the loaded module: once it is collected, the executor's function (and a CUDA
        # graph that captured a launch of it) points at unloaded code.
        if not pointers:
            return cls(compiled.to(), exe_args, (keep, args, compiled), cells)
        descriptors = [getattr(t, "_memref_desc", None) for t in args[:count]]
        if any(d is None for d in descriptors):
            return None
        if any(read_cell(exe_args[i], ctypes.c_uint64) != pointers[i] for i in range(count)):
            return None
        pointer_cells = tuple(ctypes.c_uint64.from_address(_address(exe_args[i])) for i in range(count))
        return cls(compiled.to(), exe_args, (keep, descriptors, args[count:], compiled), cells, pointer_cells)

    def rebind(self, pointers: tuple[int, ...]) -> None:
        """Point the tensors given to :meth:`build` as ``pointers`` at new data (same shapes and strides)."""
        if len(pointers) != len(self._pointer_cells):
            raise ValueError(
                f"rebind got {len(pointers)} pointers; this launch was built with {len(self._pointer_cells)}"
            )
        for cell, pointer in zip(self._pointer_cells, pointers, strict=True):
            cell.value = pointer

    def __call__(self, stream: int, **values: int) -> None:
        self._cells["stream"].value = stream
        for name, value in values.items():
            cell = self._cells.get(name)
            if cell is None:
                raise ValueError(f"PreparedLaunch has no cell {name!r}: it owns {sorted(self._cells)}")
            cell.value = value
        if self._packed is None:  # an executor without the packed entry point: its own (slower) run
            self._executor.run_compiled_program(self._args)
            return
        self._executor.capi_func(self._packed)
        if self._result is not None and self._result.value:
            raise RuntimeError(f"launch failed: CUDA error {self._result.value}")


__all__ = ["Cell", "PreparedLaunch", "read_cell"]
