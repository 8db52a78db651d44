"""CPU: every kernel of the hand-off benchmark (benchmarks/handoff.py, diagnostics included) compiles for
sm_90a, and the rows that justify a default differ from it where they claim to:
the multicast consumer release (ELECTED_PER_WARP: 16 arrivals per stage, like the stock code; WARPGROUP:
512) and each kind's other wait flavour (suspending vs polling)."""

from __future__ import annotations

import re

import cutlass.cute as cute
import handoff
import handoff_kernels as hk
import pytest
from cutlass import Int32
from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

BLOCKS = 2
HINTED = re.compile(r"mbarrier\.try_wait\.parity[^\n]*, \d{5,};")


def _ptx(case: handoff.Case, launch) -> str:
    out = make_fake_compact_tensor(Int32, (BLOCKS * case.outputs,))
    aux = make_fake_compact_tensor(Int32, hk.aux_shape(case.kind, case.stages, BLOCKS), stride_order=(1, 0))
    compiled = cute.compile(launch, out, aux, Int32(10), make_fake_stream(), options="--gpu-arch sm_90a --keep-ptx")
    return compiled.artifacts.PTX


@pytest.fixture(scope="module")
def compiled() -> dict[tuple[str, int, str], str]:
    return {
        (case.kind, case.stages, name): _ptx(case, launch)
        for case in handoff.CASES
        for name, launch in case.launchers(BLOCKS, diagnostics=True).items()
    }


def test_every_case_and_diagnostic_compiles(compiled) -> None:
    kinds = {kind for kind, _, _ in compiled}
    assert kinds == set(hk.KINDS) and "TMA load multicast" in kinds
    for (kind, stages, name), ptx in compiled.items():
        assert ".entry" in ptx, (kind, stages, name)


def _empty_count(ptx: str, stages: int) -> int:
    inits = re.findall(r"mbarrier\.init\.shared(?:::cta)?\.b64\s+\[[^\]]+\], (%r\d+|\d+);", ptx)
    value = inits[-1]
    if not value.isdigit():
        value = re.search(rf"mov\.b32\s+{re.escape(value)}, (\d+);", ptx).group(1)
    return int(value)


@pytest.mark.parametrize("stages", [1, 4])
def test_multicast_rows_compare_16_and_512_remote_arrivals(compiled, stages: int) -> None:
    assert _empty_count(compiled[("TMA load multicast", stages, "pipes")], stages) == 16
    assert _empty_count(compiled[("TMA load multicast", stages, "pipes WARPGROUP")], stages) == 512
    for name in ("cutlass", "pipes", "pipes WARPGROUP"):
        ptx = compiled[("TMA load multicast", stages, name)]
        assert "multicast::cluster" in ptx and "mbarrier.arrive.shared::cluster" in ptx, name


@pytest.mark.parametrize(
    ("kind", "default_suspends", "other"),
    [
        ("async", False, "pipes suspending waits"),
        ("TMA load", False, "pipes suspending waits"),
        ("ordered", False, "pipes suspending waits"),
        ("store-notify", True, "pipes polling waits"),
    ],
)
def test_each_default_has_its_other_wait_flavour_next_to_it(
    compiled, kind: str, default_suspends: bool, other: str
) -> None:
    for (k, stages, name), ptx in compiled.items():
        if k != kind:
            continue
        if name == "pipes":
            assert bool(HINTED.search(ptx)) is default_suspends, (kind, stages)
        if name == other:
            assert bool(HINTED.search(ptx)) is not default_suspends, (kind, stages)
