"""pipes.cute.comm: the device half of shipping finished tiles while a kernel runs.

After a :class:`~pipes.cute.StoreNotifyPipeline` ``wait()`` the comm warp holds a tile whose global
writes are complete. What it takes from there to a reader on the far side — the host, another GPU, the
copy engines, another kernel — is here, one object per job:

* :class:`ReadyFlags` — ``uint32`` flags published with the launch's epoch at a chosen scope
  (fence, warp sync, one ``st.release``), and the bounded wait that traps with a message naming the
  flag and the value it waited for;
* :class:`StepCounters` — a ``red.release.sys`` count per finished tile into its step, which a copy
  engine's stream waits for (:class:`pipes.comm.CopyEngineShipper`);
* :class:`Credits` — the receiver's "consumed launch e", which the sender waits for before launch e + 1
  overwrites the buffer;
* :class:`TileCopy` — the tile copy a comm warp does itself (``engine="sm"``);
* :class:`ChunkGate` (with :class:`GateSpec`) — an all-gather GEMM's load warp waits, once per chunk
  per launch, for the chunks of A another rank pushes (system-scope acquire, then the proxy fence its
  TMA loads need); :class:`ChunkSender` — the same chunks pushed by a warp's own copies (SM copies);
  :class:`ChunkPushWarp` (with :class:`PushingGateArgs`) — those pushes by a spare warp of the gated
  kernel itself;
* :class:`CommHook` — the interface a kernel calls the comm role through; :class:`TileShipper` (with
  :class:`ShipSpec`, :class:`ShipArgs`) is the library's comm role.

The epoch arithmetic (:mod:`pipes.epoch`) is shared with the host side (:mod:`pipes.comm`) and the CPU
models (:mod:`pipes.check.comm`). Guide: docs/comm.md.
"""

from .chunk_sender import ChunkSender
from .credits import CREDIT_TIMEOUT_NS, Credits
from .flags import AWAIT_TIMEOUT_NS, ReadyFlags, StepCounters
from .gate import GATE_TIMEOUT_NS, MAX_CHUNKS, WAITED_NS, ChunkGate, GateArgs, GateSpec, gate_waits
from .hook import CommHook
from .push_warp import ChunkPushWarp, PushingGateArgs, first_push, push_items, sm_chunk_rows
from .scope import SCOPES, check_reaches, check_scope, fence, needed_scope
from .shipper import ENGINES, WAIT_CREDITS, ShipArgs, ShipSpec, TileShipper
from .tile_copy import TileCopy

__all__ = [
    "AWAIT_TIMEOUT_NS",
    "CREDIT_TIMEOUT_NS",
    "ENGINES",
    "GATE_TIMEOUT_NS",
    "MAX_CHUNKS",
    "SCOPES",
    "WAITED_NS",
    "WAIT_CREDITS",
    "ChunkGate",
    "ChunkPushWarp",
    "ChunkSender",
    "CommHook",
    "Credits",
    "GateArgs",
    "GateSpec",
    "PushingGateArgs",
    "ReadyFlags",
    "ShipArgs",
    "ShipSpec",
    "StepCounters",
    "TileCopy",
    "TileShipper",
    "check_reaches",
    "check_scope",
    "fence",
    "first_push",
    "gate_waits",
    "needed_scope",
    "push_items",
    "sm_chunk_rows",
]
