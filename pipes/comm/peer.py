"""Two GPUs: each rank's receive buffers in torch symmetric memory, mapped into the other rank.

``PeerChannel.create`` allocates, on every rank of a two-rank group, one symmetric buffer holding the
receive data, the flags and the credits, and maps the other rank's into this one: ``outbox`` is the
other rank's buffers as this GPU writes them (a :class:`~pipes.comm.Receiver` of kind ``peer``: plain
device pointers, system scope), ``inbox`` this rank's own, which the other rank writes. Collective:
every rank calls it with the same arguments.
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
        torch = require_torch("PeerChannel")
        import torch.distributed as dist

        try:
            import torch.distributed._symmetric_memory as symm_mem
        except ImportError as exc:
            raise RuntimeError(f"PeerChannel needs torch.distributed symmetric memory: {exc}") from exc
        if not dist.is_initialized() or dist.get_world_size(group) != 2:
            raise ValueError("PeerChannel needs an initialized torch.distributed group of exactly 2 ranks")
        device = torch.device("cuda", torch.cuda.current_device()) if device is None else torch.device(device)
        elements = 1
        for extent in shape:
            elements *= extent
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
        remote = handle.get_buffer(1 - rank, (total,), torch.uint8, 0)
        torch.cuda.synchronize(device)
        dist.barrier(group)

        def split(buffer: Any) -> Receiver:
            data = buffer[:data_bytes].view(dtype)[:elements].view(shape)
            words = buffer[data_bytes:].view(torch.int32)
            flag_words = _round(4 * flags) // 4
            return Receiver("peer", data, words[:flags], words[flag_words : flag_words + credits], device)

        return cls(split(local), split(remote), rank)


__all__ = ["PeerChannel"]
