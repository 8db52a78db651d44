"""The tensor-core model of pipes.check (pipes/check/umma.py): what it accepts, and what its commits mean.

The catalogue (pipes/check/catalogue/blackwell.py) runs the full protocols; these tests pin the model's own
rules: a commit arrives only after the MMAs issued before it, in a pair only once both tensor cores are done.
"""

from __future__ import annotations

import pytest

from pipes import ProtocolError
from pipes.check import FindingKind, check
from pipes.check.catalogue.blackwell import umma_gemm, umma_pair
from pipes.check.umma import Commit, Mma, UmmaStream, Wait, tmem_cell


def test_a_commit_covers_only_the_mmas_issued_before_it() -> None:
    clean = check(umma_gemm())
    assert clean.ok and clean.exhaustive
    early = check(umma_gemm(defect="commit_before_mma"))
    assert early.findings[0].kind is FindingKind.OVERWRITE_UNRELEASED
    assert "mma_tc" in early.findings[0].message


def test_a_pair_has_one_tensor_core_per_cta_meeting_at_each_commit() -> None:
    stream = UmmaStream("mma", [Mma((("a", None),), "acc", 0, False, 1, acc_ctas=(0, 1)), Commit(("f",))], pair=(0, 1))
    names = [agent.name for agent in stream.agents()]
    assert names == ["mma", "mma_tc0", "mma_tc1"]
    assert [c.name for c in stream.counters()] == ["mma.issued", "mma_tc0.done", "mma_tc1.done"]
    assert tmem_cell("acc", 1, cta=1) == "tmem['acc'][1]@cta1"
    assert check(umma_pair()).ok


def test_bad_streams_are_refused_with_the_reason() -> None:
    with pytest.raises(ProtocolError, match=r"step 'mma' is invalid: allowed Wait, Arrive, Mma, Commit"):
        UmmaStream("mma", ["mma"])
    with pytest.raises(ProtocolError, match=r"the issuer's CTA 0 leads its pair"):
        UmmaStream("mma", [Wait("full[0]", 0)], pair=(1, 0))
    stream = UmmaStream("mma", [Commit(("empty_far[0]",))], pair=(0, 1))
    with pytest.raises(ProtocolError, match=r"a commit to empty_far\[0\] \(CTA 2\) is outside the pair \(0, 1\)"):
        stream.agents(lambda name: 2)
