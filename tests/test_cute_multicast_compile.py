"""CPU: the cluster multicast stress kernel compiles for sm_90a, with multicast TMA and remote releases."""

import re

import cute_kernels as ck
import cute_kernels_multicast as ckm
import pytest

from pipes import ArrivalUnit
from pipes.cute import Multicast


def _ptx(multicast: Multicast, stages: int, unit: ArrivalUnit, remote_release: bool = True) -> str:
    built = ckm.build_multicast_load(
        multicast, stages, consumer_unit=unit, slow_rank=multicast.cluster_size - 1, remote_release=remote_release
    )
    size = multicast.cluster_size
    args = (ck.fake_out(size * 2 * 32, 32), ck.fake_out(size * 2 * 32, 32), ck.fake_out(size, 1, 32, 2), 2, 0)
    return ck.ptx_of(ck.compile_fake(built.launcher, *args))


@pytest.mark.parametrize(
    ("multicast", "unit"),
    [
        (Multicast(1, 2, a=True, b=False), ArrivalUnit.WARP),
        (Multicast(2, 1, a=False, b=True), ArrivalUnit.ELECTED_PER_WARP),
        (Multicast(2, 2, a=True, b=True), ArrivalUnit.ELECTED_PER_WARP),
    ],
)
def test_multicast_kernel_compiles_to_multicast_tma_and_remote_release(multicast: Multicast, unit) -> None:
    ptx = _ptx(multicast, 2, unit)
    multicast_loads = re.findall(r"cp\.async\.bulk\.tensor\.\dd\.shared::cluster\.global[^\n]*multicast::cluster", ptx)
    assert multicast_loads, "no multicast TMA load in the kernel"
    assert "mapa.shared::cluster" in ptx and "mbarrier.arrive.shared::cluster" in ptx
    assert "barrier.cluster.arrive" in ptx and "barrier.cluster.wait" in ptx


def test_planted_local_only_release_keeps_multicast_but_drops_remote_arrivals() -> None:
    """The GPU control kernel differs only in the release: multicast copies stay, remote arrivals go."""
    ptx = _ptx(Multicast(1, 2, a=True, b=False), 2, ArrivalUnit.WARP, remote_release=False)
    assert re.search(r"cp\.async\.bulk\.tensor[^\n]*multicast::cluster", ptx)
    assert "mbarrier.arrive.shared::cluster" not in ptx and "mapa.shared::cluster" not in ptx
