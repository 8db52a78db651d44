"""pipes.cute.cache_hint: the TMA load policies, and a clear error for anything that is not one."""

from __future__ import annotations

import pytest

from pipes.cute import TmaCacheHint, tma_cache_policy


def test_a_policy_must_be_a_tma_cache_hint():
    # A bare int would be passed through as an arbitrary (undefined) policy word: refuse it by name.
    with pytest.raises(
        TypeError, match=r"hint = 0 is invalid: allowed \['EVICT_NORMAL', 'EVICT_FIRST', 'EVICT_LAST'\]"
    ):
        tma_cache_policy(0)
    # CUTLASS's CacheHintSm90 encodings, in the kernel as a 64-bit constant operand.
    assert [h.value >> 56 for h in TmaCacheHint] == [0x10, 0x12, 0x14]
    assert int(tma_cache_policy(TmaCacheHint.EVICT_LAST)) == 0x14F0000000000000


@pytest.mark.parametrize(
    "readers, hint", [(1, TmaCacheHint.EVICT_FIRST), (2, TmaCacheHint.EVICT_NORMAL), (66, TmaCacheHint.EVICT_NORMAL)]
)
def test_read_once_policy_lets_lines_read_by_one_reader_go_first(readers, hint, capfd):
    """``read_once_policy(n)`` on a run-time count, compiled and run on the host: EVICT_FIRST for one
    reader, EVICT_NORMAL for more (lines other readers will re-read from L2)."""
    import sys
    from pathlib import Path

    from cutlass import Int32

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from cache_hint_probe import print_policy

    print_policy(Int32(readers))
    assert capfd.readouterr().out.strip() == f"policy {int(hint)}"
