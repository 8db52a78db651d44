"""An all-gather's buffers: every rank's gathered matrix, chunk flags and credits, as this GPU addresses them.

Each rank owns a buffer holding the whole gathered matrix, its chunk flags (one ``uint32`` per chunk,
:class:`pipes.chunks.ChunkPlan`) and one credit word per sending rank, in torch symmetric memory
(:class:`pipes.comm.PeerGroup`); :class:`pipes.comm.ChunkPusher` pushes into the peers' and the gated
kernel reads its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..chunks import ChunkPlan


@dataclass(frozen=True)
class GatherTarget:
    """One rank's all-gather buffers as this GPU addresses them: ``data`` (the gathered matrix, ``rows × K``,
    a torch tensor), ``flags`` and ``credits`` (device addresses of ``uint32`` words: one flag per chunk,
    one credit per sending rank)."""

    data: Any
    flags: int
    credits: int

    def flag(self, chunk: int) -> int:
        return self.flags + 4 * chunk

    def credit(self, sender: int) -> int:
        return self.credits + 4 * sender


@dataclass(frozen=True)
class GatherBuffers:
    """This rank's all-gather buffers (``local``: its peers push into them, its kernel reads them) and every
    peer's, mapped here (``peers[p]``: this GPU's copy engines push into them)."""

    rank: int
    local: GatherTarget
    peers: Mapping[int, GatherTarget] = field(default_factory=dict)
    #: This rank's flag words as a torch ``int32`` tensor (the flags, then what a gate that records its
    #: waits writes after them: ``GateSpec.flag_words``); None where built by hand.
    local_flags: Any = None

    @property
    def world(self) -> int:
        return len(self.peers) + 1

    @classmethod
    def create(
        cls,
        plan: ChunkPlan,
        columns: int,
        dtype: Any,
        group: Any = None,
        device: Any = None,
        flag_words: int | None = None,
    ) -> GatherBuffers:
        """Allocate every rank's buffers in torch symmetric memory (:class:`pipes.comm.PeerGroup`; collective):
        the gathered matrix ``plan.rows × columns``, ``plan.chunks`` flags (``flag_words``: that many words
        instead, the gate's ``GateSpec.flag_words``), ``plan.world`` credits given (1: the first launch
        pushes at once)."""
        import torch
        import torch.distributed as dist

        from .peer import PeerGroup

        words = plan.chunks if flag_words is None else flag_words
        if words < plan.chunks:
            raise ValueError(f"flag_words = {words} is invalid: allowed at least the plan's {plan.chunks} chunks")
        peer_group = PeerGroup.create((plan.rows, columns), dtype, flags=words, credits=plan.world, group=group)
        if peer_group.world != plan.world:
            raise ValueError(f"the plan gathers {plan.world} ranks but the group has {peer_group.world}")
        peer_group.inbox.credits.fill_(1)
        torch.cuda.synchronize(peer_group.inbox.device)
        dist.barrier(group)

        def target(receiver: Any) -> GatherTarget:
            _, flags, credits = receiver.addresses()
            return GatherTarget(receiver.data, flags, credits)

        peers = {r: target(box) for r, box in peer_group.outboxes.items()}
        return cls(peer_group.rank, target(peer_group.inbox), peers, peer_group.inbox.flags)


__all__ = ["GatherBuffers", "GatherTarget"]
