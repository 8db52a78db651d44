"""``gemm()``'s launches: one prepared launch per call signature, re-pointed at each call's tensors.

The DSL's own call of a compiled kernel converts every argument on every call: 52–66 µs of host time
per GEMM on the GPU runner, as long as the whole kernel at 256×8192². What that conversion produces
depends only on the call's *signature* — configuration, problem, device, each operand's shape and
strides, ``alpha``, the cluster count, and for stream-K the stream (its workspace is per stream) — and on
four data pointers. So :class:`LaunchCache` keeps one :class:`~.prepared.PreparedLaunch` per signature
(least recently used dropped beyond ``capacity``) and a call writes the four pointers and the stream.

A cached launch holds the converted descriptors, never a caller's tensor (``PreparedLaunch.build`` with
``pointers``); a DSL whose argument list it does not recognise gets no entry and ``gemm()`` keeps the
DSL's own call. Rebinding and launching happen under one lock: two threads sharing a signature cannot
interleave their pointers.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .config import GemmConfig, Problem


@dataclass(frozen=True)
class CallSignature:
    """Everything a prepared GEMM launch depends on except the data pointers and the stream."""

    config: GemmConfig
    problem: Problem
    device: int
    layouts: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]  # (shape, strides) of a, b, out, bias
    alpha: float
    stream: int | None  # stream-K only: the workspace belongs to the stream

    @classmethod
    def of(cls, config: GemmConfig, ops: Any, out: Any, stream: int) -> CallSignature:
        tensors = (ops.a, ops.b_nk, out, ops.bias)
        layouts = tuple(((), ()) if t is None else (tuple(t.shape), tuple(t.stride())) for t in tensors)
        device = out.device.index or 0
        return cls(config, ops.problem, device, layouts, float(ops.alpha), stream if config.stream_k else None)


def call_pointers(ops: Any, out: Any, bias_stand_in: Any) -> tuple[int, int, int, int]:
    """The data pointers a launch is re-pointed at: a, b, out and the bias (or its stand-in)."""
    bias = ops.bias if ops.bias is not None else bias_stand_in
    return ops.a.data_ptr(), ops.b_nk.data_ptr(), out.data_ptr(), bias.data_ptr()


@dataclass(frozen=True)
class CachedCall:
    """A prepared launch and the bias stand-in it points at when the call has no bias."""

    launch: Any  # PreparedLaunch
    bias_stand_in: Any


class LaunchCache:
    """Prepared launches by :class:`CallSignature`; ``None`` entries remember that a signature could
    not be prepared (the caller then takes the DSL's own call without trying again)."""

    def __init__(self, capacity: int = 64) -> None:
        if capacity < 1:
            raise ValueError(f"LaunchCache capacity = {capacity} is invalid: allowed an int >= 1")
        self.capacity = capacity
        self._entries: OrderedDict[CallSignature, CachedCall | None] = OrderedDict()
        self._lock = threading.Lock()
        self.builds = 0

    def __len__(self) -> int:
        return len(self._entries)

    def run(
        self,
        signature: CallSignature,
        build: Callable[[], CachedCall | None],
        pointers: Callable[[CachedCall], tuple[int, ...]],
        stream: int,
    ) -> bool:
        """Launch the signature's prepared call on ``pointers(entry)`` and ``stream``, building it on first
        use; False when the signature cannot be prepared (nothing was launched)."""
        with self._lock:
            if signature in self._entries:
                self._entries.move_to_end(signature)
                entry = self._entries[signature]
            else:
                entry = build()
                self.builds += 1
                self._entries[signature] = entry
                if len(self._entries) > self.capacity:
                    self._entries.popitem(last=False)
            if entry is None:
                return False
            entry.launch.rebind(pointers(entry))
            entry.launch(stream)
            return True

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


__all__ = ["CachedCall", "CallSignature", "LaunchCache", "call_pointers"]
