"""``gemm()``'s launches: one prepared launch per call key, re-pointed at each call's tensors.

The DSL's own call of a compiled kernel converts every argument on every call: 52–66 µs of host time
per GEMM on the GPU runner, as long as the whole kernel at 256×8192²; ``gemm()``'s checks and its
configuration choice add ~12 µs more. Everything those depend on, except the data pointers, is in a
call's *key* (:func:`call_key`): each tensor's shape, strides, dtype and device, ``alpha`` (and its
type), ``b_layout``, the configuration overrides, the current device (the checks require the tensors
on it) and stream (stream-K's workspace is per stream).
:class:`LaunchCache` maps a key to a :class:`CachedCall` — a :class:`~.prepared.PreparedLaunch` built
by the first call that passed every check — so a later call with the same key checks only what the key
leaves out (16-byte aligned pointers), writes four pointers and the stream, and launches.

Only keys whose call passed ``validate`` are stored, so a bad argument still gets its ``ValueError``. A
cached launch holds the converted descriptors, never a caller's tensor (``PreparedLaunch.build`` with
``pointers``); a DSL whose argument list it does not recognise gets no entry and ``gemm()`` keeps the
DSL's own call. Rebinding and launching happen under one lock: two threads sharing a key cannot
interleave their pointers. The least recently used key is dropped beyond ``capacity``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

_ALIGN_BYTES = 16  # TMA: global addresses are multiples of 16 bytes


def _tensor_facts(t: Any) -> tuple | None:
    return None if t is None else (type(t), t.shape, t.stride(), t.dtype, t.device)


def call_key(tensors: tuple[Any, Any, Any, Any], values: tuple, where: Hashable) -> Hashable | None:
    """The key of a call on ``tensors`` = (a, b, bias, out) with the other arguments ``values``, launched
    ``where`` (the current device and stream); None for arguments that are no tensors or not hashable (the
    call then takes the checked path, which names what is wrong)."""
    try:
        key = (tuple(_tensor_facts(t) for t in tensors), tuple((type(v), v) for v in values), where)
        hash(key)
    except (AttributeError, TypeError):
        return None
    return key


@dataclass(frozen=True)
class CachedCall:
    """A prepared launch; the bias stand-in it points at for a call without bias; for a call without
    ``out``, the (M, N, padded N) of the result it allocates; ``swapped``: the launch computes Cᵀ = B·Aᵀ
    (its first operand is b, its second a)."""

    launch: Any  # PreparedLaunch
    bias_stand_in: Any
    result_shape: tuple[int, int, int] | None = None
    swapped: bool = False


class LaunchCache:
    """Prepared launches by call key (:func:`call_key`), least recently used dropped beyond ``capacity``."""

    def __init__(self, capacity: int = 64) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"LaunchCache capacity = {capacity!r} is invalid: allowed an int >= 1")
        self.capacity = capacity
        self._entries: OrderedDict[Hashable, CachedCall] = OrderedDict()
        self._lock = threading.Lock()
        self.builds = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable | None) -> CachedCall | None:
        if key is None:
            return None
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key: Hashable | None, entry: CachedCall) -> None:
        """Remember ``entry`` (built by a call that passed every check) under ``key`` (None: not cached)."""
        with self._lock:
            self.builds += 1
            if key is None:
                return
            self._entries[key] = entry
            self._entries.move_to_end(key)
            if len(self._entries) > self.capacity:
                self._entries.popitem(last=False)

    def launch(self, entry: CachedCall, pointers: tuple[int, ...], stream: int) -> None:
        """Re-point ``entry``'s launch at ``pointers`` and launch it on ``stream``."""
        with self._lock:
            entry.launch.rebind(pointers)
            entry.launch(stream)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def cached_call(tensors: tuple[Any, Any, Any, Any], options: tuple, checked: Callable[[], tuple]) -> Any:
    """``gemm()``'s launch on ``tensors`` = (a, b, bias, out); returns the result. A call whose key (the
    ``options`` and the current device and stream among it) was seen re-points that key's launch; a new
    key, or a pointer off 16-byte alignment, runs ``checked()`` (every check, then the configuration, the
    ``Operands`` and the (M, N, padded N) of a result to allocate, None with ``out``) and prepares one."""
    from .launch import LAUNCHES, launcher, prepare

    a, b, bias, out = tensors
    device, stream = current_device_and_stream()
    key = call_key(tensors, options, (device, stream))
    entry = LAUNCHES.get(key)
    result = out
    # A key holds everything the checks look at but the pointers' alignment: a cached key skips them.
    if entry is None or any(t is not None and t.data_ptr() % _ALIGN_BYTES for t in tensors):
        config, ops, result_shape = checked()
        result = out if out is not None else _new_result(a, result_shape)
        entry = prepare(config, ops, result, result_shape)
        if entry is None:  # a DSL whose argument list PreparedLaunch does not know: the DSL's own call
            launcher(config, ops, result)()
            return result
        LAUNCHES.put(key, entry)
    if result is None:
        result = _new_result(a, entry.result_shape)
    bias_data = bias if bias is not None else entry.bias_stand_in
    first, second = (b, a) if entry.swapped else (a, b)
    LAUNCHES.launch(entry, (first.data_ptr(), second.data_ptr(), result.data_ptr(), bias_data.data_ptr()), stream)
    return result


def _new_result(a: Any, shape: tuple[int, int, int]) -> Any:
    m, n, padded = shape
    if padded == n:  # no view to make: a slice costs a few µs of host time per call
        return a.new_empty((m, n))
    return a.new_empty((m, padded))[:, :n]


def current_device_and_stream() -> tuple[int, int]:
    """(current CUDA device index, its current torch stream as an integer handle), through torch's raw
    getters where it has them: ~0.3 µs of host time against ~4 for ``torch.cuda.current_stream()``."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    get_device = getattr(torch._C, "_cuda_getDevice", None)
    if raw is None or get_device is None:
        return torch.cuda.current_device(), torch.cuda.current_stream().cuda_stream
    device = get_device()
    return device, raw(device)


def current_stream_handle() -> int:
    """The current device's current torch stream as an integer handle (see :func:`current_device_and_stream`)."""
    return current_device_and_stream()[1]


__all__ = ["CachedCall", "LaunchCache", "cached_call", "call_key", "current_device_and_stream", "current_stream_handle"]
