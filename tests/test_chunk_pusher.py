"""CPU tests of the all-gather's host side (:mod:`pipes.comm.chunk_pusher`): the push plan, the order of
every queued stream operation (recorded by a fake queue) and the checks on the buffers, with fake
tensors where torch is absent."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from pipes.chunks import ChunkPlan
from pipes.comm import ChunkPusher, GatherBuffers, GatherTarget, push_plan, queue_push
from pipes.comm.chunk_pusher import check_push
from pipes.epoch import FIRST, as_int32, next_epoch, parity_token


@dataclass(frozen=True)
class Device:
    type: str
    index: int | None = None

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"


@dataclass
class Tensor:
    """What the pusher reads of a torch tensor: shape, strides, dtype, device, pinning."""

    shape: tuple[int, ...]
    device: Device = Device("cuda", 0)
    dtype: str = "bfloat16"
    strides: tuple[int, ...] | None = None
    pinned: bool = False

    def dim(self) -> int:
        return len(self.shape)

    def stride(self, i: int | None = None):
        strides = self.strides or (self.shape[1], 1)
        return strides if i is None else strides[i]

    def is_pinned(self) -> bool:
        return self.pinned

    def element_size(self) -> int:
        return 2


def buffers(plan: ChunkPlan, rank: int, columns: int = 64) -> GatherBuffers:
    """Rank ``rank``'s buffers: word addresses 0x1000·(r+1) for rank r's flags, +0x800 for its credits."""

    def target(r: int) -> GatherTarget:
        return GatherTarget(Tensor((plan.rows, columns)), 0x1000 * (r + 1), 0x1000 * (r + 1) + 0x800)

    return GatherBuffers(rank, target(rank), {r: target(r) for r in range(plan.world) if r != rank})


# --- the plan ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("world", [2, 4])
def test_every_own_chunk_goes_to_every_peer_once_the_soonest_reader_first(world):
    """Peer by peer, rank − 1 first (it reads this block right after its own rows), each peer's chunks first
    rows first."""
    plan = ChunkPlan(rows=world * 512, world=world, chunk_rows=128)
    for rank in range(world):
        copies = push_plan(plan, rank, row_bytes=128, src_pitch=128, dst_pitch=256)
        pairs = [(c.peer, c.chunk) for c in copies]
        peers = [p for p in range(world) if p != rank]
        assert sorted(pairs) == sorted((p, c) for c in plan.chunks_of(rank) for p in peers)
        order = [(rank - i) % world for i in range(1, world)]
        assert [c.peer for c in copies] == [p for p in order for _ in plan.chunks_of(rank)]
        assert [c.chunk for c in copies] == list(plan.chunks_of(rank)) * (world - 1)  # first rows first
        assert plan.push_peers(rank) == order
        for c in copies:
            local = c.chunk - plan.chunks_of(rank)[0]
            assert c.src_offset == local * 128 * 128 and c.dst_offset == plan.rows_of(c.chunk)[0] * 256
            assert (c.rows, c.width_bytes) == (128, 128)


# --- the queued order -----------------------------------------------------------------------------------------
@dataclass
class Recorder:
    """A :class:`pipes.comm.chunk_pusher.StreamQueue` that writes down what would be queued, per stream."""

    ops: list[tuple] = field(default_factory=list)

    def take_credit(self, stream, address):
        self.ops.append(("credit", stream, address))

    def copy(self, stream, copy):
        self.ops.append(("copy", stream, (copy.peer, copy.chunk)))

    def raise_flag(self, stream, address, value):
        self.ops.append(("flag", stream, address, value))

    def fork(self, streams):
        self.ops.append(("fork", streams))

    def join(self, streams):
        self.ops.append(("join", streams))


@pytest.mark.parametrize("world,streams", [(2, 1), (2, 2), (4, 3)])
def test_credits_come_first_and_each_flag_follows_its_chunk_on_the_same_stream(world, streams):
    plan = ChunkPlan(rows=world * 256, world=world, chunk_rows=64)
    rank = 1
    mine = buffers(plan, rank)
    copies = push_plan(plan, rank, 128, 128, 128)
    epoch = next_epoch(FIRST)
    queue = Recorder()
    queue_push(queue, copies, mine, parity_token(epoch), streams)
    ops = queue.ops
    fork = ops.index(("fork", streams))
    credits = ops[:fork]
    # Every peer's credit for this rank, on stream 0, before the fork (so before any copy on any stream).
    assert credits == [("credit", 0, mine.peers[p].credit(rank)) for p in plan.push_peers(rank)]
    assert ops[-1] == ("join", streams)
    body = ops[fork + 1 : -1]
    assert [op[0] for op in body] == ["copy", "flag"] * len(copies)
    for (_, s_copy, (peer, chunk)), (_, s_flag, address, value) in zip(body[::2], body[1::2], strict=True):
        assert s_copy == s_flag  # the flag follows its copy in the same stream: the write's fence orders them
        assert address == mine.peers[peer].flag(chunk) and value == parity_token(epoch) == 1 + (epoch & 1)
    assert {op[1] for op in body} == set(range(min(streams, len(copies))))


def test_flag_value_is_the_parity_token_as_int32():
    pusher = object.__new__(ChunkPusher)  # the value needs no CUDA
    assert pusher.flag_value(FIRST) == as_int32(parity_token(FIRST)) == 1
    assert pusher.flag_value(next_epoch(FIRST)) == 2


# --- the checks -------------------------------------------------------------------------------------------------
def test_push_checks_name_what_does_not_fit():
    plan = ChunkPlan(rows=1024, world=2, chunk_rows=128)
    good = Tensor((512, 64))
    check_push(good, plan, buffers(plan, 0))
    with pytest.raises(ValueError, match="pageable host memory: the copy engines push from this GPU's memory"):
        check_push(Tensor((512, 64), Device("cpu")), plan, buffers(plan, 0))
    with pytest.raises(ValueError, match="page-locked host memory"):
        check_push(Tensor((512, 64), Device("cpu"), pinned=True), plan, buffers(plan, 0))
    with pytest.raises(ValueError, match="the source block is on cuda:1, the rank's gathered buffer on cuda:0"):
        check_push(Tensor((512, 64), Device("cuda", 1)), plan, buffers(plan, 0))
    with pytest.raises(ValueError, match="has 256 rows; rank 0 holds rows / world = 1024 / 2 = 512"):
        check_push(Tensor((256, 64)), plan, buffers(plan, 0))
    with pytest.raises(ValueError, match="holds bfloat16, the source float16"):
        check_push(Tensor((512, 64), dtype="float16"), plan, buffers(plan, 0))
    with pytest.raises(ValueError, match="this rank's gathered buffer is \\(1024, 64\\).*allowed \\(1024, 32\\)"):
        check_push(Tensor((512, 32)), plan, buffers(plan, 0))
    narrow = buffers(plan, 0, columns=32)
    wide_peer = GatherBuffers(0, narrow.local, {1: buffers(plan, 1).local})
    with pytest.raises(ValueError, match="rank 1's gathered buffer is \\(1024, 64\\)"):
        check_push(Tensor((512, 32)), plan, wide_peer)
    alone = GatherBuffers(0, buffers(plan, 0).local, {})
    with pytest.raises(ValueError, match="hold 1 \\(this rank and 0 peer\\(s\\)\\): an all-gather needs at least two"):
        check_push(good, plan, alone)
    four = ChunkPlan(rows=1024, world=4, chunk_rows=128)
    with pytest.raises(ValueError, match="the plan gathers 4 ranks but the buffers hold 2"):
        check_push(Tensor((256, 64)), four, buffers(plan, 0))
    with pytest.raises(ValueError, match="streams = 0 is invalid"):
        ChunkPusher(good, plan, buffers(plan, 0), streams=0)
    with pytest.raises(ValueError, match=r"graph = 1 is invalid: allowed True, False or None"):
        ChunkPusher(good, plan, buffers(plan, 0), graph=1)
    with pytest.raises(ValueError, match=r"graph = True with streams = 4 is invalid: allowed at most 3 streams"):
        ChunkPusher(good, plan, buffers(plan, 0), streams=4, graph=True)


def test_chunk_rows_that_do_not_divide_a_block_are_refused_before_any_buffer_exists():
    with pytest.raises(ValueError, match="chunk_rows = 96 does not divide a rank's 512 rows .*512 = 5 × 96 \\+ 32"):
        ChunkPlan(rows=1024, world=2, chunk_rows=96)
    with pytest.raises(ValueError, match="at least two ranks"):
        ChunkPlan(rows=1024, world=1, chunk_rows=128)


def test_copy_only_queues_the_same_copies_on_the_same_streams_without_credits_or_with_flags_only():
    plan = ChunkPlan(rows=4 * 256, world=4, chunk_rows=64)
    rank, streams = 2, 3
    mine = buffers(plan, rank)
    copies = push_plan(plan, rank, 128, 128, 128)
    signalled, bare = Recorder(), Recorder()
    queue_push(signalled, copies, mine, parity_token(FIRST), streams)
    queue_push(bare, copies, mine, parity_token(FIRST), streams, credits=False, flags=False)
    assert bare.ops == [op for op in signalled.ops if op[0] not in ("credit", "flag")]
    assert [op[0] for op in bare.ops] == ["fork"] + ["copy"] * len(copies) + ["join"]
    flagged = Recorder()
    queue_push(flagged, copies, mine, parity_token(FIRST), streams, credits=False)
    assert flagged.ops == [op for op in signalled.ops if op[0] != "credit"]
