"""A census of a kernel's synchronization instructions, for the whole kernel and per loop.

``census(ptx)`` counts each *kind* of synchronization instruction: mbarrier ops (init; arrive, local or
remote, ``.release.cluster`` or the default ``.release.cta``; arrive.expect_tx; try_wait),
``tcgen05.commit`` forms (cta_group, multicast), the TMEM allocation instructions, fences, ``elect.sync``,
CTA and warp barriers, cluster barriers and bulk-group ops. Operands and the wait's suspend-hint form are
left out: two kernels with the same census synchronize the same way.
``loop_censuses(ptx)`` is the census of each natural loop of the kernel (tests/ptx_check.py), sorted, so
two kernels can be compared loop by loop without caring how their blocks are laid out.
"""

from __future__ import annotations

import re
from collections import Counter

from ptx_check import kernel_body, loops

__all__ = ["census", "difference", "kind", "loop_censuses"]

_GUARD = re.compile(r"^@!?%p\w+\s+")


def kind(instruction: str) -> str | None:
    """The synchronization kind of one PTX instruction, or None when it is not one."""
    text = _GUARD.sub("", instruction)
    op = text.split()[0].rstrip(";") if text.split() else ""
    if op.startswith("mbarrier."):
        return _mbarrier_kind(op)
    if op.startswith("tcgen05.commit"):
        group = "cta_group::2" if "cta_group::2" in op else "cta_group::1"
        return f"tcgen05.commit.{group}" + (".multicast" if "multicast" in op else "")
    if op.startswith(("tcgen05.alloc", "tcgen05.dealloc", "tcgen05.relinquish_alloc_permit")):
        return ".".join(op.split(".")[:2])
    if op.startswith("fence."):
        return op
    if op.startswith("elect.sync"):
        return "elect.sync"
    if op.startswith("bar.warp.sync"):
        return "bar.warp.sync"
    if op.startswith("barrier.cluster."):
        return "barrier.cluster." + ("arrive" if ".arrive" in op else "wait")
    if op.startswith(("bar.sync", "barrier.sync")):
        return "bar.sync"
    if op.startswith(("bar.arrive", "barrier.arrive")):
        return "bar.arrive"
    if op.startswith("cp.async.bulk.commit_group"):
        return "cp.async.bulk.commit_group"
    if op.startswith("cp.async.bulk.wait_group"):
        return "cp.async.bulk.wait_group" + (".read" if ".read" in op else "")
    if op.startswith("clusterlaunchcontrol.try_cancel"):
        return "clusterlaunchcontrol.try_cancel"
    return None


def _mbarrier_kind(op: str) -> str:
    for name in ("try_wait", "test_wait", "arrive.expect_tx", "arrive", "init", "expect_tx", "inval"):
        if f".{name}" in op:
            if "arrive" not in name:
                return f"mbarrier.{name}"
            scope = ".release.cluster" if ".release.cluster" in op else ""  # the default is .release.cta
            remote = " (remote)" if "shared::cluster" in op else ""
            return f"mbarrier.{name}{scope}{remote}"
    return op


def _count(instructions: list[str]) -> Counter:
    return Counter(k for k in map(kind, instructions) if k is not None)


def census(ptx: str) -> Counter:
    """Synchronization instructions of the first kernel of ``ptx``, by kind."""
    return _count(kernel_body(ptx))


def loop_censuses(ptx: str) -> list[tuple[tuple[str, int], ...]]:
    """The census of each loop that synchronizes at all, as sorted ``(kind, count)`` tuples, sorted."""
    found = [_count(body) for body in loops(kernel_body(ptx))]
    return sorted(tuple(sorted(c.items())) for c in found if c)


def difference(mine: Counter, theirs: Counter) -> dict[str, int]:
    """``mine − theirs`` per kind, zero entries left out."""
    return {k: mine[k] - theirs[k] for k in sorted(set(mine) | set(theirs)) if mine[k] != theirs[k]}
