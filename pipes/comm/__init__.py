"""pipes.comm: the host half of shipping tiles while a kernel runs (the device half: :mod:`pipes.cute.comm`).

* :class:`Epochs` — a fresh epoch per launch (:mod:`pipes.epoch` is the arithmetic, shared with the
  device code and the CPU models);
* :class:`Receiver` — receive buffer, ready flags and credits in page-locked host memory
  (:meth:`Receiver.host`), this GPU's memory (:meth:`Receiver.on_device`) or another GPU's
  (:class:`PeerChannel`, :class:`PeerGroup`: torch symmetric memory), validated when made;
* :class:`CopyEngineShipper` — the copy engines ship each finished step of tiles (step counters, copy
  streams, one captured CUDA graph per launch variant, a ready flag per step);
* :class:`ChunkPusher` — an all-gather's pushes: this rank's row block to every peer in chunks by the copy
  engines, each chunk's flag raised after its copy, a credit per sender and launch
  (:class:`GatherBuffers`: every rank's gathered matrix, flags and credits in symmetric memory);
* :class:`TileConsumer` — a host thread that calls a function per tile as it lands, grants credits and
  stops cleanly;
* :func:`ship_args` — the comm role's run-time arguments for one launch into a receiver.

``import pipes`` never needs torch; these objects do, and say so when it is missing.
"""

from .args import fake_gate_args, fake_push_gate_args, fake_ship_args, gate_args, push_gate_args, ship_args
from .chunk_pusher import ChunkCopy, ChunkPusher, grant_credits, push_plan, queue_push
from .consumer import TileConsumer
from .copy_engine import (
    SPREADS,
    CopyEngineShipper,
    CopyTarget,
    CreditTake,
    Step,
    copy_groups,
    credit_takes,
    plan_steps,
    step_of_tiles,
    streams_of_copies,
    streams_of_steps,
)
from .epochs import Epochs, reached_all
from .gather_buffers import GatherBuffers, GatherTarget
from .peer import PeerChannel, PeerGroup
from .receivers import KINDS, Receiver, device_pointer

__all__ = [
    "KINDS",
    "ChunkCopy",
    "ChunkPusher",
    "CopyEngineShipper",
    "CopyTarget",
    "CreditTake",
    "Epochs",
    "GatherBuffers",
    "GatherTarget",
    "PeerChannel",
    "PeerGroup",
    "Receiver",
    "SPREADS",
    "Step",
    "TileConsumer",
    "device_pointer",
    "fake_gate_args",
    "fake_push_gate_args",
    "fake_ship_args",
    "gate_args",
    "grant_credits",
    "plan_steps",
    "push_gate_args",
    "push_plan",
    "queue_push",
    "reached_all",
    "ship_args",
    "step_of_tiles",
    "streams_of_copies",
    "streams_of_steps",
    "copy_groups",
    "credit_takes",
]
