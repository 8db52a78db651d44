"""L2 eviction priorities for TMA loads: the ``cache_policy`` of ``cute.copy`` on a TMA load atom.

``cute.copy`` on a TMA load emits ``cp.async.bulk.tensor ... .L2::cache_hint`` and, when it is not given
``cache_policy=``, passes a policy word of **0** rather than one of the encodings below; CUTLASS C++
(``SM90_TMA_LOAD``) passes ``EVICT_NORMAL`` unless told otherwise. The values below are CUTLASS's
``CacheHintSm90`` encodings. Measured on H100s (``benchmarks/RESULTS.md``, persistent GEMM, bf16, two
cards): ``EVICT_NORMAL`` against the DSL's 0 was 0.0 … +1.5 % faster at 4096³, 6144³, 1024×8192² and
8192²×1024, never slower; ``EVICT_FIRST`` on both operands lost 5–7 % where tiles re-read the operands
from L2 (6144³, 8192²×1024), so it is for data read once. :func:`read_once_policy` gives it, at run
time, to an operand whose every tile one reader loads (the GEMM's B when one cluster row covers M:
256×8192² +1.0 … +5.6 %, 128×8192² +3.6 … +4.0 %; at 1024×8192², where four cluster rows re-read B from
L2, EVICT_FIRST lost 0.3–0.8 %).

Inside a kernel::

    cute.copy(atom, src, dst, tma_bar_ptr=producer.barrier(slot), cache_policy=tma_cache_policy())
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

import cutlass.cute as cute
from cutlass import Int64


class TmaCacheHint(IntEnum):
    """L2 eviction priority of a TMA load's lines (CUTLASS ``CacheHintSm90``)."""

    EVICT_NORMAL = 0x1000000000000000
    EVICT_FIRST = 0x12F0000000000000  # read once: streamed operands
    EVICT_LAST = 0x14F0000000000000  # re-read often: keep resident


def tma_cache_policy(hint: TmaCacheHint = TmaCacheHint.EVICT_NORMAL) -> Int64:
    """The in-kernel ``cache_policy`` operand for ``hint`` (call inside a ``@cute.jit`` function)."""
    if not isinstance(hint, TmaCacheHint):
        raise TypeError(f"hint = {hint!r} is invalid: allowed {[h.name for h in TmaCacheHint]} (a TmaCacheHint)")
    return Int64(int(hint))


@cute.jit
def read_once_policy(readers: Any) -> Int64:
    """The ``cache_policy`` for TMA loads of an operand whose tiles ``readers`` CTAs or clusters each load
    (a run-time count is fine): EVICT_FIRST when one does (its lines are read once: let them go first and
    keep L2 for what is re-read), EVICT_NORMAL when several re-read them from L2."""
    policy = tma_cache_policy(TmaCacheHint.EVICT_NORMAL)
    if readers == 1:
        policy = tma_cache_policy(TmaCacheHint.EVICT_FIRST)
    return policy


__all__ = ["TmaCacheHint", "read_once_policy", "tma_cache_policy"]
