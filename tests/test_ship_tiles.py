"""examples/ship_tiles.py on the CPU: the kernel compiles for sm_90a without spills, its PTX orders what it must
at the receiver's scope, its protocol passes pipes.check (and planted defects do not), the command line
without a GPU reports and proves, and bad input fails with a clear error before anything compiles.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

import ship_tiles as st  # noqa: E402
import ship_tiles_cli as cli  # noqa: E402
import ship_tiles_proof as proof  # noqa: E402
from ptx_check import kernel_body, path_states, unordered_flag_releases  # noqa: E402

SCOPE = {"host": "sys", "device": "gpu", "peer": "sys"}


def _compiled(receiver: str):
    """(PTX, registers, spill bytes) of the kernel for ``receiver`` (compiled once per scope: functools.cache)."""
    report = cli.compile_report(SCOPE[receiver])
    return report.ptx, report.registers, report.spills


def _code(ptx: str) -> str:
    return re.sub(r"//.*", "", ptx)


# --- the PTX -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("receiver", ["host", "device"])
def test_the_kernel_compiles_for_sm90a_without_spills(receiver):
    ptx, registers, spills = _compiled(receiver)
    assert spills == 0 and 0 < registers <= 64, (registers, spills)
    assert ".target sm_90a" in ptx
    assert "cp.async.bulk.tensor.2d.shared::cta.global" in ptx  # the TMA load of X
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in ptx  # the TMA store of Y
    assert "ld.global.cg.v4.b32" in ptx and "st.global.v4.b32" in ptx  # TileCopy: 16-byte vectors, L2-only loads
    assert "ld.shared.v4" in ptx and "st.shared.v4" in ptx  # the scaling moves 16-byte vectors
    assert re.search(r"cp\.async\.bulk\.wait_group\s+1;", ptx)  # lag 1: the tile before is complete, no .read


def test_a_host_receiver_gets_system_scope_releases():
    ptx = _compiled("host")[0]
    assert "st.release.sys.global.b32" in ptx and "fence.acq_rel.sys;" in ptx
    assert "ld.acquire.sys.global.b32" in ptx  # the credit wait
    assert "st.release.gpu" not in ptx and "fence.acq_rel.gpu" not in ptx


def test_a_device_receiver_gets_gpu_scope_releases_and_nothing_at_system_scope():
    ptx = _compiled("device")[0]
    assert "st.release.gpu.global.b32" in ptx and "fence.acq_rel.gpu;" in ptx
    assert "ld.acquire.gpu.global.b32" in ptx
    assert ".sys" not in _code(ptx)


@pytest.mark.parametrize("receiver", ["host", "device"])
def test_every_flag_follows_a_fence_at_its_scope_and_a_warp_sync(receiver):
    ptx = _compiled(receiver)[0]
    assert ptx.count("st.release.") >= 1 and unordered_flag_releases(ptx) == []
    assert unordered_flag_releases(re.sub(r"\tfence\.acq_rel\.\w+;\n", "", ptx))  # negative control: no fence


def _bulk_transfer(ins: str, state: str) -> str:
    """none → committed (commit_group) → waited (wait_group WITHOUT .read); .read waits change nothing."""
    if ins.startswith("cp.async.bulk.commit_group"):
        return "committed"
    if ins.startswith("cp.async.bulk.wait_group.read"):
        return state
    return "waited" if ins.startswith("cp.async.bulk.wait_group") and state == "committed" else state


def _early_notifies(ptx: str) -> list[str]:
    """mbarrier arrivals some path reaches with a committed bulk group not yet awaited without .read."""
    states = path_states(kernel_body(ptx), _bulk_transfer, "none")
    return [i for i, s in states if i.startswith("mbarrier.arrive.") and "expect_tx" not in i and "committed" in s]


@pytest.mark.parametrize("receiver", ["host", "device"])
def test_the_notify_waits_for_the_stores_without_read(receiver):
    ptx = _compiled(receiver)[0]
    assert _early_notifies(ptx) == []
    # Negative control: the stock .read wait (the smem source was read; the global writes may be in flight).
    stock = re.sub(r"cp\.async\.bulk\.wait_group(\s+\d+;)", r"cp.async.bulk.wait_group.read\1", ptx)
    assert _early_notifies(stock)


def _staging_transfer(ins: str, state: str) -> str:
    if ins.startswith("st.shared"):
        return "written"
    if ins.startswith("fence.proxy.async.shared::cta"):
        return "fenced"
    if ins.startswith("bar.sync") and state == "fenced":
        return "published"
    return state


def _unpublished_stores(ptx: str) -> list[str]:
    states = path_states(kernel_body(ptx), _staging_transfer, "none")
    return [i for i, s in states if i.startswith("cp.async.bulk.tensor.2d.global.shared") and "written" in s]


def test_every_tma_store_reads_a_buffer_fenced_for_the_async_proxy_and_published():
    ptx = _compiled("host")[0]
    assert _unpublished_stores(ptx) == []
    assert _unpublished_stores(re.sub(r"\tfence\.proxy\.async\.shared::cta;\n", "", ptx))  # negative control


def test_the_comm_warp_reads_tiles_only_after_a_barrier_wait():
    def transfer(ins: str, state: str) -> str:
        return "waited" if "mbarrier.try_wait" in ins else state

    states = path_states(kernel_body(_compiled("host")[0]), transfer, "none")
    reads = [s for i, s in states if i.startswith("ld.global")]
    assert reads and all(s == {"waited"} for s in reads)


# --- the protocol -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("receiver", st.RECEIVERS)
def test_the_protocol_passes_the_checker(receiver):
    report = proof.prove(receiver)
    assert report.ok and report.exhaustive, str(report)
    names = {a.name for a in proof.protocol(receiver).agents}
    assert names == {"store", "comm", receiver}


@pytest.mark.parametrize(
    "bug,kind",
    [
        ("notify_on_read", "READ_UNCOMMITTED"),  # notify after .read: the comm warp reads Y before it is written
        ("no_proxy_fence", "READ_UNCOMMITTED"),  # the TMA store reads a staging buffer the async proxy never saw
        ("narrow_scope", "READ_UNCOMMITTED"),  # a GPU-scope flag for the host: the data is not ordered before it
        ("no_credits", "OVERWRITE_UNRELEASED"),  # launch 2 overwrites a tile the reader still reads
    ],
)
@pytest.mark.parametrize("receiver", ["host", "device"])
def test_planted_defects_are_found(receiver, bug, kind):
    report = proof.prove(receiver, bug)
    assert not report.ok and report.findings[0].kind.name == kind, str(report)


def test_the_protocol_uses_the_kernels_own_declarations():
    kernel = st.ShipTiles("sys")
    proto = proof.protocol("host")
    assert [p.spec.stages for p in proto.pipelines] == [kernel.notify.spec.stages] * 2 == [st.SLOTS] * 2
    assert {p.lag for p in proto.pipelines} == {kernel.notify.lag} == {st.LAG}
    assert kernel.shipper.spec.scope == "sys" and st.ShipTiles("gpu").shipper.spec.scope == "gpu"
    assert set(kernel.layout.roles) == {"load", "xform", "store", "comm"}


# --- the command line and bad input ----------------------------------------------------------------------------
@pytest.mark.usefixtures("torch_without_gpu")
@pytest.mark.parametrize("receiver", st.RECEIVERS)
def test_without_a_gpu_main_compiles_reports_and_proves(capsys, receiver):
    assert cli.main(["--receiver", receiver]) == 0
    out = capsys.readouterr().out
    assert "no CUDA GPU here: compiling for sm_90a instead" in out
    assert re.search(rf"flags at {SCOPE[receiver]} scope: \d+ registers, spills 0 B", out), out
    assert f"pipes.check ship_tiles_{receiver}: OK" in out and "exhaustive" in out
    assert "planted narrow_scope   : READ_UNCOMMITTED" in out


@pytest.mark.parametrize(
    "args,message",
    [
        ((100, 256), "M = 100 is invalid: allowed a positive multiple of the tile's 64"),
        ((128, 200), "N = 200 is invalid: allowed a positive multiple of the tile's 128"),
        ((0, 128), "M = 0 is invalid"),
        ((128.0, 128), "M = 128.0 is invalid"),
        ((128, 128, "pigeon"), "receiver = 'pigeon' is invalid: allowed one of \\('host', 'device', 'peer'\\)"),
        ((128, 128, "host", 0), "launches = 0 is invalid: allowed an int >= 1"),
    ],
)
def test_bad_input_is_a_clear_value_error(args, message):
    with pytest.raises(ValueError, match=message):
        st.check_input(*args)


def test_bad_command_lines_exit_2_before_compiling(capsys, monkeypatch):
    monkeypatch.setattr(cli, "compile_kernel", lambda *a, **k: pytest.fail("compiled despite bad input"))
    monkeypatch.setattr(cli, "compile_report", lambda *a, **k: pytest.fail("compiled despite bad input"))
    assert cli.main(["--m", "100"]) == 2
    assert "M = 100 is invalid" in capsys.readouterr().err
    assert cli.main(["--launches", "0"]) == 2
    assert cli.main(["--rows", "64", "--cols", "96"]) == 2  # the spellings torchrun leaves alone
    assert "N = 96 is invalid" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse: not a receiver kind
        cli.main(["--receiver", "pigeon"])


def test_receivers_of_the_wrong_shape_or_dtype_are_refused_before_compiling(monkeypatch):
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    monkeypatch.setattr(st, "compile_kernel", lambda *a, **k: pytest.fail("compiled despite bad input"))
    words = torch.zeros(4, dtype=torch.int32)
    wrong = SimpleNamespace(data=torch.zeros(4, 64, 64, dtype=torch.bfloat16), flags=words, credits=words)
    with pytest.raises(ValueError, match=r"allowed torch.bfloat16 \(4, 64, 128\) \(tile-major\)"):
        st.Sender(wrong, 128, 256)
    few = SimpleNamespace(data=torch.zeros(4, 64, 128, dtype=torch.bfloat16), flags=words[:2], credits=words)
    with pytest.raises(ValueError, match="2 flag/credit words"):
        st.Sender(few, 128, 256)


def test_with_the_copy_engine_the_comm_warp_counts_tiles_and_copies_none():
    report = cli.compile_report("sys", "copy")
    assert report.spills == 0
    assert re.search(r"red\.release\.sys\.global\.add\.u32", report.ptx)  # one count per tile into its row's step
    assert "st.global.v4" not in report.ptx and "st.release" not in report.ptx  # no SM copy, no flag of its own
    assert st.ShipTiles("sys", "copy").shipper.spec.order == st.ROW_STEPS
