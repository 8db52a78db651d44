"""Receivers: where shipped tiles land, with their ready flags and credits, as the device sees them.

Three kinds, one class (:class:`Receiver`); the kind decides the memory and the scope its flags need:

===========  ======================================  ==========================  =====
kind         memory                                  reader                      scope
===========  ======================================  ==========================  =====
``host``     page-locked host memory, mapped         a host thread               sys
``peer``     another GPU's memory (torch symmetric   a kernel or copy on that    sys
             memory, mapped into this GPU)           GPU
``device``   this GPU's memory                       a later kernel, a stream    gpu
===========  ======================================  ==========================  =====

A receiver holds ``data`` (the receive buffer: any shape the sender agrees on), ``flags`` (``uint32``
words, one per tile or per step: the epoch of the launch that shipped it) and ``credits`` (``uint32``
words, one per tile or per launch: the last epoch the reader consumed). Words are ``int32`` tensors
holding the ``uint32`` bits (:func:`pipes.epoch.as_int32`). Every check runs when the receiver is made:
a pageable host buffer, a buffer on another GPU, a flag scope too narrow for the reader
(:meth:`Receiver.check_scope`) each raise ``ValueError`` naming the problem.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..epoch import as_int32
from ..memory_scope import check_reaches, needed_scope
from ._torch import require_torch
from .epochs import reached_all

KINDS = ("host", "peer", "device")


def device_pointer(tensor: Any) -> int:
    """The address the device uses for ``tensor``: its own for CUDA tensors, the mapped one for
    page-locked host memory; ``ValueError`` for pageable host memory."""
    if tensor.device.type == "cuda":
        return tensor.data_ptr()
    from cuda.bindings import runtime as cudart

    err, attrs = cudart.cudaPointerGetAttributes(tensor.data_ptr())
    if int(err) != 0 or attrs.type != cudart.cudaMemoryType.cudaMemoryTypeHost:
        raise ValueError(
            "the host buffer is not page-locked memory the device can reach (allocate it with "
            f"torch.empty(..., pin_memory=True)); cudaPointerGetAttributes: {err}, type {getattr(attrs, 'type', None)}"
        )
    return int(attrs.devicePointer)


@dataclass
class Receiver:
    """A receive buffer ``data`` with ``flags`` and ``credits`` words, of ``kind`` host / peer / device.

    ``device``: the sending GPU (whose kernel or copy engines write here). Build one with
    :meth:`host`, :meth:`on_device` or :class:`PeerChannel`; or adopt your own tensors with the
    constructor (validated).
    """

    kind: str
    data: Any
    flags: Any
    credits: Any
    device: Any

    def __post_init__(self) -> None:
        torch = require_torch("pipes.comm.Receiver")
        if self.kind not in KINDS:
            raise ValueError(f"Receiver.kind = {self.kind!r} is invalid: allowed one of {KINDS}")
        self.device = torch.device(self.device)
        if self.device.type == "cuda" and self.device.index is None:  # "cuda": the current device, by index
            self.device = torch.device("cuda", torch.cuda.current_device())
        if self.device.type != "cuda":
            raise ValueError(f"Receiver.device = {self.device} is invalid: allowed the sending CUDA device")
        for name in ("data", "flags", "credits"):
            tensor = getattr(self, name)
            if not isinstance(tensor, torch.Tensor):
                raise ValueError(f"Receiver.{name} must be a torch.Tensor, got {type(tensor).__name__}")
            if not tensor.is_contiguous():
                raise ValueError(f"Receiver.{name} must be contiguous")
            self._check_memory(name, tensor)
        for name in ("flags", "credits"):
            if getattr(self, name).dtype != torch.int32:
                raise ValueError(f"Receiver.{name} must be int32 words (uint32 bits), got {getattr(self, name).dtype}")

    def _check_memory(self, name: str, tensor: Any) -> None:
        if self.kind == "host":
            if tensor.device.type != "cpu" or not tensor.is_pinned():
                got = "a pageable CPU tensor" if tensor.device.type == "cpu" else f"a tensor on {tensor.device}"
                raise ValueError(
                    f"a host receiver's {name} must be page-locked host memory the GPU can write "
                    f"(torch.empty(..., pin_memory=True)), got {got}"
                )
        elif tensor.device != self.device:
            where = "this GPU" if self.kind == "device" else "the peer's memory mapped into this GPU"
            raise ValueError(
                f"a {self.kind} receiver's {name} must be on {self.device} ({where}), got a tensor on {tensor.device}"
            )

    # --- construction ---------------------------------------------------------------------------------
    @classmethod
    def host(cls, shape: tuple[int, ...], dtype: Any, flags: int, credits: int = 1, device: Any = "cuda") -> Receiver:
        """Page-locked host buffers (zeroed) for a host thread to read."""
        torch = require_torch("Receiver.host")
        data = torch.zeros(shape, dtype=dtype, pin_memory=True)
        return cls("host", data, *_words(torch, flags, credits, pin_memory=True), device)

    @classmethod
    def on_device(
        cls, shape: tuple[int, ...], dtype: Any, flags: int, credits: int = 1, device: Any = "cuda"
    ) -> Receiver:
        """Buffers in the sending GPU's own memory (zeroed) for a later kernel or stream to read."""
        torch = require_torch("Receiver.on_device")
        data = torch.zeros(shape, dtype=dtype, device=device)
        return cls("device", data, *_words(torch, flags, credits, device=device), device)

    # --- what the sender needs ----------------------------------------------------------------------------
    @property
    def scope(self) -> str:
        """The scope the sender must release this receiver's flags at (and the reader acquire them)."""
        return needed_scope(self.kind)

    def check_scope(self, scope: str) -> None:
        """``ValueError`` unless flags released at ``scope`` order the data for this receiver's reader."""
        check_reaches(scope, self.kind)

    def addresses(self) -> tuple[int, int, int]:
        """Device-visible ``(data, flags, credits)`` addresses."""
        return device_pointer(self.data), device_pointer(self.flags), device_pointer(self.credits)

    # --- what the reader does ------------------------------------------------------------------------------
    def reached(self, epoch: int) -> np.ndarray:
        """Per flag, whether it has reached ``epoch`` (host memory only: the host reads it in place)."""
        return reached_all(self._host_words(self.flags), epoch)

    def grant(self, slots: Any, epoch: int) -> None:
        """The reader has consumed ``slots`` (credit indices) of launch ``epoch``: the sender may overwrite
        them in the next launch. Host receivers write in place (after the reads: x86 keeps stores in
        order); others with a copy on the current stream."""
        if self.kind == "host":
            self.credits.numpy()[slots] = as_int32(epoch)
        else:
            self.credits[slots] = as_int32(epoch)

    def grant_all(self, epoch: int) -> None:
        """Every credit to ``epoch`` (launches no reader consumed, e.g. warm-up or timing runs)."""
        self.credits.fill_(as_int32(epoch))

    def _host_words(self, words: Any) -> np.ndarray:
        if self.kind != "host":
            raise ValueError(f"a {self.kind} receiver's words live on a GPU: read them there (or copy them)")
        return words.numpy().view(np.uint32)


def _words(torch: Any, flags: int, credits: int, **where: Any) -> tuple[Any, Any]:
    for name, value in (("flags", flags), ("credits", credits)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} = {value!r} is invalid: allowed an int >= 1 (words to allocate)")
    return torch.zeros(flags, dtype=torch.int32, **where), torch.zeros(credits, dtype=torch.int32, **where)


__all__ = ["KINDS", "Receiver", "device_pointer"]
