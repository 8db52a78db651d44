"""What the torch API asks of the device runtime, behind one seam.

The API needs five things per device: which tensors count as on the device, the SM count and compute
capability, the current device, torch's current raw stream there, and a way to make a device current.
:func:`cuda_layer` answers them with torch's own fast entry points (what Triton's launcher uses).
:func:`use_layer` swaps in another answer, so the whole host path (validation, cache lookups, argument
writes, the call into the compiled host function) can be timed on a machine without a GPU, with only
the driver's launch left out (``benchmarks/streaming_kernels.py --host``).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DeviceLayer:
    device_type: str  # tensors must be on a device of this type ("cuda")
    facts: Callable[[int], tuple[int, tuple[int, int]]]  # index → (SM count, (major, minor))
    current_device: Callable[[], int]
    raw_stream: Callable[[int], int]  # index → torch's current stream there, as a handle
    guard: Callable[[int], contextlib.AbstractContextManager]  # makes a device index current


@functools.cache
def _cuda_facts(index: int) -> tuple[int, tuple[int, int]]:
    import torch

    props = torch.cuda.get_device_properties(index)
    return props.multi_processor_count, (props.major, props.minor)


@functools.cache
def cuda_layer() -> DeviceLayer:
    import torch

    get_device = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)
    raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw_stream is None:  # a torch build without the private entry point: the public one

        def raw_stream(index: int) -> int:
            return torch.cuda.current_stream(index).cuda_stream

    return DeviceLayer("cuda", _cuda_facts, get_device, raw_stream, torch.cuda.device)


_ACTIVE: list[DeviceLayer] = []
#: Called with no arguments when the layer changes (the API drops its prepared calls).
_ON_SWAP: list[Callable[[], Any]] = []


def active() -> DeviceLayer:
    return _ACTIVE[-1] if _ACTIVE else cuda_layer()


def on_swap(callback: Callable[[], Any]) -> None:
    _ON_SWAP.append(callback)


@contextlib.contextmanager
def use_layer(layer: DeviceLayer) -> Iterator[DeviceLayer]:
    """Run the API against ``layer`` inside the block (single-threaded measurement and tests: only the
    calling thread's prepared calls are dropped on entry and exit)."""
    _ACTIVE.append(layer)
    for callback in _ON_SWAP:
        callback()
    try:
        yield layer
    finally:
        _ACTIVE.pop()
        for callback in _ON_SWAP:
            callback()
