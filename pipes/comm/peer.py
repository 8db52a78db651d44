"""Peer GPUs: each rank's receive buffers in torch symmetric memory, mapped into the other ranks.

``PeerChannel.create`` allocates, on every rank of a two-rank group, one symmetric buffer holding the
receive data, the flags and the credits, and maps the other rank's into this one: ``outbox`` is the
other rank's buffers as this GPU writes them (a :class:`~pipes.comm.Receiver` of kind ``peer``: plain
device pointers, system scope), ``inbox`` this rank's own, which the other rank writes. Collective:
every rank calls it with the same arguments. :class:`PeerGroup` is the same for a group of any size
(an all-gather's): ``inbox`` this rank's buffers, ``outboxes`` every other rank's.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from ._torch import require_torch
from .receivers import Receiver

_ALIGN = 256


def _round(nbytes: int) -> int:
    return (nbytes + _ALIGN - 1) // _ALIGN * _ALIGN


def _elements(shape: tuple[int, ...]) -> int:
    elements = 1
    for extent in shape:
        elements *= extent
    return elements


def _symmetric(
    shape: tuple[int, ...], dtype: Any, flags: int, credits: int, group: Any, device: Any, world: int | None
) -> tuple[int, dict[int, Receiver]]:
    """Allocate one symmetric buffer per rank of ``group`` (data, then flags, then credits, each rounded to
    256 bytes), zeroed, and map every rank's here: ``(this rank, {rank: its buffers as a peer receiver})``,
    this rank's own included. ``world``: the group size required (None: any of at least 2)."""
    what = "PeerChannel" if world == 2 else "PeerGroup"
    torch = require_torch(what)
    import torch.distributed as dist

    try:
        import torch.distributed._symmetric_memory as symm_mem
    except ImportError as exc:
        raise RuntimeError(f"{what} needs torch.distributed symmetric memory: {exc}") from exc
    size = dist.get_world_size(group) if dist.is_initialized() else 1
    if world is not None and size != world:
        raise ValueError(f"PeerChannel needs an initialized torch.distributed group of exactly {world} ranks")
    if size < 2:
        raise ValueError(
            f"PeerGroup needs an initialized torch.distributed group of at least 2 ranks, got {size}: "
            "with one rank there is no peer to share buffers with"
        )
    device = torch.device("cuda", torch.cuda.current_device()) if device is None else torch.device(device)
    elements = _elements(shape)
    data_bytes = _round(elements * torch.empty((), dtype=dtype).element_size())
    total = data_bytes + _round(4 * flags) + _round(4 * credits)
    name = group.group_name if group is not None else dist.group.WORLD.group_name
    if hasattr(symm_mem, "enable_symm_mem_for_group"):  # needed before torch 2.11, deprecated since
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            symm_mem.enable_symm_mem_for_group(name)
    local = symm_mem.empty(total, dtype=torch.uint8, device=device)
    local.zero_()
    handle = symm_mem.rendezvous(local, name)
    rank = dist.get_rank(group)
    buffers = {r: local if r == rank else handle.get_buffer(r, (total,), torch.uint8, 0) for r in range(size)}
    torch.cuda.synchronize(device)
    dist.barrier(group)

    def split(buffer: Any) -> Receiver:
        data = buffer[:data_bytes].view(dtype)[:elements].view(shape)
        words = buffer[data_bytes:].view(torch.int32)
        flag_words = _round(4 * flags) // 4
        return Receiver("peer", data, words[:flags], words[flag_words : flag_words + credits], device)

    return rank, {r: split(b) for r, b in buffers.items()}


@dataclass
class PeerChannel:
    """This rank's ``inbox`` (written by the other rank) and ``outbox`` (the other rank's inbox, mapped)."""

    inbox: Receiver
    outbox: Receiver
    rank: int

    @classmethod
    def create(
        cls, shape: tuple[int, ...], dtype: Any, flags: int, credits: int = 1, group: Any = None, device: Any = None
    ) -> PeerChannel:
        """Allocate and exchange the buffers of a two-rank ``group`` (default: the world)."""
        rank, receivers = _symmetric(shape, dtype, flags, credits, group, device, world=2)
        return cls(receivers[rank], receivers[1 - rank], rank)


@dataclass
class PeerGroup:
    """Every rank's buffers of a group of any size, mapped here: ``inbox`` is this rank's own (its peers
    write it), ``outboxes[r]`` rank ``r``'s (a ``peer`` receiver: this GPU writes it over NVLink).
    Collective: every rank calls :meth:`create` with the same arguments."""

    inbox: Receiver
    outboxes: dict[int, Receiver]
    rank: int

    @property
    def world(self) -> int:
        return len(self.outboxes) + 1

    @classmethod
    def create(
        cls, shape: tuple[int, ...], dtype: Any, flags: int, credits: int = 1, group: Any = None, device: Any = None
    ) -> PeerGroup:
        """Allocate and exchange the buffers of ``group`` (default: the world; at least two ranks)."""
        rank, receivers = _symmetric(shape, dtype, flags, credits, group, device, world=None)
        inbox = receivers.pop(rank)
        return cls(inbox, receivers, rank)


__all__ = ["PeerChannel", "PeerGroup"]
