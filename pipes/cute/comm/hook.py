"""The one interface through which a persistent kernel lets a comm role ship its finished tiles.

A kernel that TMA-stores output tiles from one storing warp calls a :class:`CommHook` at five places
and nowhere else::

    declare(roles, storing_warp)                  # building its declarations: the store→notify
                                                  # pipeline and the "store" / "comm" roles
    producer = begin_tile(producer, is_storer, args, tm, tn, columns)   # before the tile's first TMA store
    ...                                            # the tile's TMA stores (the storing warp's bulk groups)
    producer = end_tile(producer, is_storer, args, tm, tn, columns)     # after its last bulk commit
    finish(producer, is_storer)                   # after the last tile: end-of-stream, every release
    run(notify, out, args)                        # in the comm warp: the role's whole loop

``args`` is the role's own run-time arguments (pointers, the launch's epoch), opaque to the kernel,
which passes them through. ``registers`` is the ``setmaxnreg`` pair the role needs (None: the kernel's
own). :class:`pipes.cute.comm.TileShipper` is the library's implementation; a kernel author types a
hook parameter as ``CommHook`` and accepts any of them.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..roles import Warps
from ..store_notify import StoreNotifyPipeline


@runtime_checkable
class CommHook(Protocol):
    """What a kernel calls so that a comm warp can ship its finished tiles while it runs."""

    @property
    def registers(self) -> tuple[int, int] | None:
        """``setmaxnreg`` (producer warpgroup, math warpgroups) the role needs; None: the kernel's own."""
        ...

    def declare(self, roles: dict[str, Warps], storing_warp: int) -> tuple[StoreNotifyPipeline, dict[str, Warps]]:
        """The store→notify pipeline and ``roles`` with ``store`` (= ``storing_warp``) and ``comm`` added."""
        ...

    def begin_tile(self, producer: Any, is_storer: Any, args: Any, tm: Any, tn: Any, columns: Any) -> Any:
        """Before tile ``(tm, tn)``'s first TMA store, in every epilogue thread (the storing warp acts)."""
        ...

    def end_tile(self, producer: Any, is_storer: Any, args: Any, tm: Any, tn: Any, columns: Any) -> Any:
        """After tile ``(tm, tn)``'s last bulk commit, in every epilogue thread (the storing warp acts)."""
        ...

    def finish(self, producer: Any, is_storer: Any) -> None:
        """After the last tile, in every epilogue thread (the storing warp acts)."""
        ...

    def run(self, notify: Any, out: Any, args: Any) -> None:
        """The comm warp's loop until end-of-stream (the whole comm warp)."""
        ...


__all__ = ["CommHook"]
