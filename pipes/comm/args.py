"""Kernels' run-time comm arguments built on the host: the comm role's from a receiver
(:class:`pipes.cute.comm.ShipArgs`), the all-gather load warp's gate's (:class:`pipes.cute.comm.GateArgs`),
and with SM pushes the gate's and the push warp's together (:class:`pipes.cute.comm.PushingGateArgs`)."""

from __future__ import annotations

from typing import Any

from ..epoch import as_int32

#: An address that compiling never dereferences (16-byte aligned).
FAKE_ADDRESS = 1 << 20


def ship_args(
    receiver: Any, epoch: int, *, counters: Any = None, credits: bool = False, element: Any = None
) -> tuple[Any, ...]:
    """``ShipArgs`` for one launch into ``receiver`` (a :class:`~pipes.comm.Receiver`): CuTe pointers to its
    data, flags and credits, ``counters`` (a device int32 tensor; engine ``copy``), the epoch, and the
    options (``credits``: wait for each tile's credit before overwriting it). ``element``: the data's
    CuTe type (default from its dtype)."""
    data, flags, credit_words = receiver.addresses()
    counter_address = counters.data_ptr() if counters is not None else flags
    return pointer_args(
        (data, flags, credit_words, counter_address), epoch, credits, element or _element(receiver.data.dtype)
    )


def fake_ship_args(element: Any) -> tuple[Any, ...]:
    """``ShipArgs`` for compiling without a GPU (the addresses are never dereferenced)."""
    return pointer_args((FAKE_ADDRESS,) * 4, 2, False, element)


def gate_args(flags: int, rank: int, value: int) -> Any:
    """The load warp's :class:`pipes.cute.comm.GateArgs`: a pointer to this rank's chunk flags (a device
    address), the rank, and ``value`` (:meth:`pipes.comm.ChunkPusher.flag_value` of the launch's epoch)."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    from ..cute.comm import GateArgs

    pointer = make_ptr(cutlass.Uint32, flags, cute.AddressSpace.gmem, assumed_align=4)
    return GateArgs(pointer, cutlass.Int32(rank), cutlass.Int32(value))


def fake_gate_args(rank: int = 0) -> Any:
    """:class:`pipes.cute.comm.GateArgs` for compiling without a GPU (the flags are never dereferenced)."""
    return gate_args(FAKE_ADDRESS, rank, 1)


def push_gate_args(buffers: Any, plan: Any, epoch: int) -> Any:
    """:class:`pipes.cute.comm.PushingGateArgs` for launch ``epoch`` on this rank of ``buffers`` (a
    :class:`pipes.comm.GatherBuffers`): this rank's flags, rank and epoch (the gate waits for flags that have
    reached it), this rank's block of the gathered matrix as the source, and every peer's gathered matrix,
    chunk flags and credit word for this rank, in :meth:`~pipes.chunks.ChunkPlan.push_peers` order."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack, make_ptr

    from ..cute.comm import PushingGateArgs

    gmem = cute.AddressSpace.gmem
    rank, rows = buffers.rank, plan.rows_per_rank
    local = buffers.local.data
    src = from_dlpack(local[rank * rows : (rank + 1) * rows], assumed_align=16).mark_layout_dynamic(leading_dim=1)
    element = _element(local.dtype)
    peers = [buffers.peers[p] for p in plan.push_peers(rank)]

    def words(address: int) -> Any:
        return make_ptr(cutlass.Uint32, address, gmem, assumed_align=4)

    value = cutlass.Int32(as_int32(epoch))
    return PushingGateArgs(
        words(buffers.local.flags),
        cutlass.Int32(rank),
        value,
        src,
        tuple(make_ptr(element, t.data.data_ptr(), gmem, assumed_align=16) for t in peers),
        tuple(words(t.flags) for t in peers),
        tuple(words(t.credit(rank)) for t in peers),
        value,
    )


def fake_push_gate_args(world: int, element: Any, rank: int = 0) -> Any:
    """:class:`pipes.cute.comm.PushingGateArgs` for compiling without a GPU: ``world - 1`` peers, a source of
    dynamic extents (the addresses are never dereferenced)."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_tensor, make_ptr

    from ..cute.comm import PushingGateArgs

    gmem = cute.AddressSpace.gmem
    src = make_fake_tensor(element, (cute.sym_int32(), cute.sym_int32()), (cute.sym_int64(), 1), assumed_align=16)
    words = make_ptr(cutlass.Uint32, FAKE_ADDRESS, gmem, assumed_align=4)
    data = make_ptr(element, FAKE_ADDRESS, gmem, assumed_align=16)
    peers, epoch = world - 1, cutlass.Int32(2)
    return PushingGateArgs(
        words, cutlass.Int32(rank), epoch, src, (data,) * peers, (words,) * peers, (words,) * peers, epoch
    )


def pointer_args(addresses: tuple[int, int, int, int], epoch: int, credits: bool, element: Any) -> tuple[Any, ...]:
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    from ..cute.comm import WAIT_CREDITS, ShipArgs

    gmem = cute.AddressSpace.gmem
    data, flags, credit_words, counters = addresses
    return ShipArgs(
        make_ptr(element, data, gmem, assumed_align=16),
        make_ptr(cutlass.Uint32, flags, gmem, assumed_align=4),
        make_ptr(cutlass.Uint32, credit_words, gmem, assumed_align=4),
        make_ptr(cutlass.Uint32, counters, gmem, assumed_align=4),
        cutlass.Int32(as_int32(epoch)),
        cutlass.Int32(WAIT_CREDITS if credits else 0),
    )


def _element(dtype: Any) -> Any:
    import cutlass

    name = str(dtype).removeprefix("torch.")
    elements = {"bfloat16": cutlass.BFloat16, "float16": cutlass.Float16}
    if name not in elements:
        raise ValueError(f"the receive buffer's dtype is {dtype}: allowed torch.bfloat16 or torch.float16")
    return elements[name]


__all__ = [
    "fake_gate_args",
    "fake_push_gate_args",
    "fake_ship_args",
    "gate_args",
    "pointer_args",
    "push_gate_args",
    "ship_args",
]
