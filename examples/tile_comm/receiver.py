"""Where the tiles land: the receive buffer, the per-tile ready flags, the per-CTA start/end flags, credits.

``host``: page-locked host memory (``torch`` pinned tensors) that the device writes through its mapped
device pointer (``cudaHostGetDevicePointer``); ``local``: device memory; ``none``: one placeholder the
kernel never touches. Flags hold the epoch of the launch that set them; :meth:`Receiver.next_epoch`
hands out a fresh one per launch, so back-to-back launches need no reset.

Two layouts of the received data: ``tiles`` (tile-major: what the communication warp writes, one tile
after another) and ``rows`` (C itself, row-major, padded to whole tiles: what the copy engine writes,
one DMA per step of tiles). Checksums per tile (:meth:`Receiver.checksums`) read either.

Ready flags: one per tile, except with the copy engine, which raises one flag per *step* (each write it
queues carries a system-wide memory barrier, about a microsecond apiece): ``flag_index[tile]`` names the
flag word that covers a tile (None: the tile's own), and :meth:`Receiver.tile_flags` reads them per tile.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pipes.comm import device_pointer
from pipes.epoch import as_int32, next_epoch

from .args import MAX_TRACED_CTAS, Addresses, stamp_words
from .config import Transport

#: Per-CTA start/end flags for at most this many CTAs (one persistent CTA per SM).
MAX_CTAS = MAX_TRACED_CTAS


def _torch() -> Any:
    import torch

    return torch


@dataclass
class Receiver:
    """The receiving side of one output shape: ``data`` (``tiles``: (tiles, tile_m, tile_n); ``rows``:
    (tiles_m·tile_m, tiles_n·tile_n)), flags, credits, stamps, and the copy engine's step counters."""

    transport: Transport
    tiles_m: int
    tiles_n: int
    tile_m: int
    tile_n: int
    data: Any
    words: Any  # int32: flags[tiles], ctas[2 * MAX_CTAS], credits[tiles]
    stamps: Any  # int64 on the device (timestamps, OPT_STAMPS)
    counters: Any  # uint32 as int32 on the device: this launch's tiles counted per step (engine copy)
    layout: str = "tiles"
    flag_index: np.ndarray | None = None  # tile → the flag word that covers it (None: its own)
    epoch: int = 0
    # Reduce-scatter with CommConfig.adds_received: this GPU's own receive buffer (rows, a slot per other
    # GPU) and the per-step flags the other GPUs raise there (read by the math warpgroups' epilogue).
    inbox: Any = None
    inbox_flags: Any = None
    # Reduce-scatter over more than two GPUs: the copy engine's pipes.comm.CopyTarget per shipped row
    # block (each goes to another GPU); None: every step goes to ``data``.
    copy_targets: list[Any] | None = None
    # A double-buffered inbox (TensorParallelGemmRS(inbox_buffers=2)): the odd launches' CopyTargets
    # (sending), and this GPU's second inbox and its flags, which the odd launches' kernels read.
    odd_copy_targets: list[Any] | None = None
    odd_inbox: Any = None
    odd_inbox_flags: Any = None
    _addresses: dict[int, Addresses] = field(default_factory=dict, repr=False)

    @classmethod
    def create(
        cls,
        transport: Transport,
        m: int,
        n: int,
        tile: tuple[int, int],
        dtype: Any,
        device: Any,
        data: Any = None,
        layout: str = "tiles",
    ) -> Receiver:
        """Allocate (or adopt ``data``, validated) the receiver of an ``m × n`` output in ``tile`` tiles."""
        torch = _torch()
        if transport is Transport.PEER:
            raise ValueError(
                "transport 'peer' writes into another GPU's memory: build its Receiver with "
                "tile_comm.peer.peer_receiver (symmetric memory), not Receiver.create"
            )
        tile_m, tile_n = tile
        tiles_m, tiles_n = -(-m // tile_m), -(-n // tile_n)
        tiles = tiles_m * tiles_n
        if layout not in ("tiles", "rows"):
            raise ValueError(f"layout = {layout!r} is invalid: allowed 'tiles' or 'rows'")
        shape = (tiles, tile_m, tile_n) if layout == "tiles" else (tiles_m * tile_m, tiles_n * tile_n)
        words = 2 * tiles + 2 * MAX_CTAS
        if data is not None:
            _validate_data(transport, data, shape, dtype, device)  # before allocating anything
        if transport is Transport.HOST:
            data = torch.zeros(shape, dtype=dtype, pin_memory=True) if data is None else data
            flags = torch.zeros(words, dtype=torch.int32, pin_memory=True)
        elif transport is Transport.LOCAL:
            data = torch.zeros(shape, dtype=dtype, device=device) if data is None else data
            flags = torch.zeros(words, dtype=torch.int32, device=device)
        else:  # NONE: the kernel writes nothing
            data = torch.zeros((1, 1, 8), dtype=dtype, device=device) if data is None else data
            flags = torch.zeros(words, dtype=torch.int32, device=device)
        stamps = torch.zeros(stamp_words(tiles_m, tiles_n), dtype=torch.int64, device=device)
        # One counter per tile bounds every step count (a step holds at least one tile).
        counters = torch.zeros(tiles if layout == "rows" else 1, dtype=torch.int32, device=device)
        return cls(transport, tiles_m, tiles_n, tile_m, tile_n, data, flags, stamps, counters, layout)

    @property
    def tiles(self) -> int:
        return self.tiles_m * self.tiles_n

    @property
    def flags(self) -> Any:
        return self.words[: self.tiles]

    def tile_flags(self) -> Any:
        """Each tile's ready flag (a CPU int32 tensor of ``tiles`` values)."""
        flags = self.flags.cpu()
        if self.flag_index is None:
            return flags
        return flags[_torch().as_tensor(self.flag_index, dtype=_torch().long)]

    @property
    def ctas(self) -> Any:
        return self.words[self.tiles : self.tiles + 2 * MAX_CTAS]

    @property
    def credits(self) -> Any:
        return self.words[self.tiles + 2 * MAX_CTAS :]

    @property
    def double_buffered(self) -> bool:
        """Whether the odd launches read a second inbox (:attr:`odd_inbox`)."""
        return self.odd_inbox is not None

    def addresses(self, parity: int = 0) -> Addresses:
        """The kernel's addresses; ``parity``: the launch's epoch parity (which inbox, if double-buffered)."""
        parity = parity & 1 if self.double_buffered else 0
        if parity not in self._addresses:
            base = device_pointer(self.words)
            inbox, flags = (self.odd_inbox, self.odd_inbox_flags) if parity else (self.inbox, self.inbox_flags)
            self._addresses[parity] = Addresses(
                dst=device_pointer(self.data),
                flags=base,
                ctas=base + 4 * self.tiles,
                credits=base + 4 * (self.tiles + 2 * MAX_CTAS),
                stamps=self.stamps.data_ptr(),
                counters=self.counters.data_ptr(),
                inbox=None if inbox is None else inbox.data_ptr(),
                inbox_flags=None if flags is None else flags.data_ptr(),
            )
        return self._addresses[parity]

    def next_epoch(self) -> int:
        """A fresh epoch (:func:`pipes.epoch.next_epoch` of the last)."""
        self.epoch = next_epoch(self.epoch)
        return self.epoch

    def acknowledge_all(self) -> None:
        """Credit every tile up to the current epoch (launches no host thread consumed): a later launch
        with credits then waits only for what is consumed from now on."""
        self.credits.fill_(as_int32(self.epoch))

    def untiled(self, m: int, n: int) -> Any:
        """The received tiles as the (m, n) matrix (a copy, on the receiver's memory)."""
        if self.layout == "rows":
            return self.data[:m, :n].clone()
        t = self.data.view(self.tiles_m, self.tiles_n, self.tile_m, self.tile_n).permute(0, 2, 1, 3)
        return t.reshape(self.tiles_m * self.tile_m, self.tiles_n * self.tile_n)[:m, :n]

    def expected(self, c: Any) -> Any:
        """``c`` (M, N) in this receiver's layout (zero padding, as the fresh buffer)."""
        torch = _torch()
        m, n = c.shape
        padded = torch.zeros(self.tiles_m * self.tile_m, self.tiles_n * self.tile_n, dtype=c.dtype, device=c.device)
        padded[:m, :n] = c
        if self.layout == "rows":
            return padded
        t = padded.view(self.tiles_m, self.tile_m, self.tiles_n, self.tile_n).permute(0, 2, 1, 3)
        return t.reshape(self.tiles, self.tile_m, self.tile_n)

    def checksums(self, tiles: Any = None, data: Any = None) -> np.ndarray:
        """One uint64 per tile (the wrapping sum of its bytes as 64-bit words) of ``data`` (a CPU tensor in
        this receiver's layout; default: the receive buffer, which must be in host memory), for the tile
        indices ``tiles`` (default: all)."""
        data = self.data if data is None else data
        raw = data.view(_torch().uint8).numpy()
        index = np.arange(self.tiles) if tiles is None else np.asarray(tiles)
        if self.layout == "rows":
            grid = raw.reshape(self.tiles_m, self.tile_m, self.tiles_n, -1)
            blocks = grid[index // self.tiles_n, :, index % self.tiles_n, :]
        else:
            blocks = raw.reshape(self.tiles, -1)[index]
        return np.ascontiguousarray(blocks).reshape(len(index), -1).view(np.uint64).sum(axis=1, dtype=np.uint64)


def _validate_data(transport: Transport, data: Any, shape: tuple[int, ...], dtype: Any, device: Any) -> None:
    torch = _torch()
    if not isinstance(data, torch.Tensor):
        raise ValueError(f"the receive buffer must be a torch.Tensor, got {type(data).__name__}")
    if transport is Transport.NONE:
        return
    if tuple(data.shape) != shape or data.dtype != dtype or not data.is_contiguous():
        what = "(tiles, tile_m, tile_n)" if len(shape) == 3 else "(tiles_m·tile_m, tiles_n·tile_n), row-major"
        raise ValueError(
            f"the receive buffer must be a contiguous {dtype} tensor of shape {what} = {shape}, "
            f"got {data.dtype} {tuple(data.shape)}{'' if data.is_contiguous() else ' (not contiguous)'}"
        )
    if transport is Transport.HOST:
        if data.device.type != "cpu" or not data.is_pinned():
            raise ValueError(
                "transport 'host' needs page-locked host memory the device can write: allocate the receive "
                "buffer with torch.empty(..., pin_memory=True) (got "
                f"{'a pageable CPU tensor' if data.device.type == 'cpu' else f'a tensor on {data.device}'})"
            )
    elif data.device != torch.device(device):
        raise ValueError(f"transport 'local' needs the receive buffer on {device}, got {data.device}")
