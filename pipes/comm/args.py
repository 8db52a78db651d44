"""The comm role's run-time arguments, built on the host from a receiver (:class:`pipes.cute.comm.ShipArgs`)."""

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


__all__ = ["fake_ship_args", "pointer_args", "ship_args"]
