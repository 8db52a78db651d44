"""Kernels' run-time comm arguments built on the host: the comm role's from a receiver
(:class:`pipes.cute.comm.ShipArgs`), the all-gather load warp's gate's (:class:`pipes.cute.comm.GateArgs`)."""

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


__all__ = ["fake_gate_args", "fake_ship_args", "gate_args", "pointer_args", "ship_args"]
