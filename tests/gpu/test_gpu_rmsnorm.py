"""GPU correctness of examples/streaming (RMSNorm and axpby on the multi-stage TMA pipeline), H100.

Every output element is compared with a float64 reference (bound: one unit in the last place of the
output type plus fp32 noise); outputs start NaN-poisoned, so an element the kernel never wrote fails; a
second call must write the same bits. Shapes cover M = 1, odd M, N not a multiple of the chunk
(N = 1000: 8-column TMA boxes, tiles padded past N), N = 256, rows held over several chunks and the
largest N per dtype; every pipeline depth the benchmark sweeps runs on enough rows for each CTA to lap
its ring many times. A hang means a protocol bug: run with PIPES_DEBUG=1 to trap with the waiting slot.
"""

import pytest

torch = pytest.importorskip("torch")

from streaming import axpby, bind_rmsnorm, rmsnorm  # noqa: E402
from streaming.check import EPS, check_axpby, check_rmsnorm, same_bits  # noqa: E402
from streaming.plan import Op, Store, StreamConfig, make_plan, max_n  # noqa: E402
from streaming.reference import excess_error, rmsnorm_reference, torch_dtype  # noqa: E402

pytestmark = pytest.mark.gpu

DTYPES = ["bf16", "fp16", "fp32"]
RMSNORM_SHAPES = [(1, 8192), (37, 256), (300, 1000), (129, 1024), (65, 2048), (33, 4096), (17, 12288), (9, 32768)]


def _ok(result):
    assert result.bad == 0, f"{result}: {result.bad} elements off the bound or never written"
    assert result.repeatable, f"{result}: a second call wrote different bits"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("m", "n"), RMSNORM_SHAPES)
def test_rmsnorm_matches_float64(dtype, m, n):
    _ok(check_rmsnorm(m, n, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_rmsnorm_at_the_largest_n(dtype):
    n = max_n(Op.RMSNORM, dtype)  # 65536 (16-bit: weight re-read per chunk), 32768 fp32
    _ok(check_rmsnorm(5, n, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("m", "n"), [(1, 256), (300, 1000), (77, 8192), (5, 32768)])
def test_axpby_matches_float64(dtype, m, n):
    _ok(check_axpby(m, n, dtype))


def _sweep_configs():
    for op in (Op.RMSNORM, Op.AXPBY):
        for ctas in (1, 2):
            for stages in (1, 2, 3, 4, 5, 6):
                config = StreamConfig(stages=stages, ctas_per_sm=ctas)
                try:
                    make_plan(op, "bf16", 8192, config)
                except ValueError:
                    continue  # two CTAs this deep do not fit one SM
                yield pytest.param(op, 8192, config, id=f"{op.value}-s{stages}-c{ctas}")
    for op, n in ((Op.RMSNORM, 8192), (Op.RMSNORM, 1024), (Op.RMSNORM, 32768), (Op.AXPBY, 8192)):
        yield pytest.param(op, n, StreamConfig(store=Store.ST_GLOBAL), id=f"{op.value}-{n}-st_global")
    for stages, size in ((5, 16_384), (6, 16_384), (10, 16_384), (12, 8_192), (16, 8_192)):  # the long-row table
        config = StreamConfig(stages=stages, stage_bytes=size)
        yield pytest.param(Op.RMSNORM, 32768, config, id=f"rmsnorm-32768-s{stages}-{size // 1024}k")


@pytest.mark.parametrize(("op", "n", "config"), list(_sweep_configs()))
def test_every_benchmarked_configuration_laps_its_ring(op, n, config):
    """~2^24 elements in an odd number of rows: each persistent CTA takes ten or more row blocks, so every
    slot's phase flips many times."""
    fn = check_rmsnorm if op is Op.RMSNORM else check_axpby
    m = 2_731 * max(1, 8192 // n)
    for seed in range(3):  # one launch can hide a race
        _ok(fn(m, n, "bf16", config, seed=seed))


@pytest.mark.parametrize("n", [1024, 32768])
def test_st_global_output_path(n):
    _ok(check_rmsnorm(1_031, n, "bf16", StreamConfig(store=Store.ST_GLOBAL)))


@pytest.mark.parametrize("m", [1, 2, 4, 8, 16, 32, 64])
def test_small_m(m):
    _ok(check_rmsnorm(m, 8192, "bf16"))


def test_leading_dimensions_and_in_place():
    x = torch.randn(2, 3, 1024, device="cuda").to(torch.bfloat16)
    w = torch.randn(1024, device="cuda").to(torch.bfloat16)
    ref = rmsnorm_reference(x, w, EPS)
    out = rmsnorm(x, w, EPS, out=x)  # in place: each row block is read before its tiles are stored
    torch.cuda.synchronize()
    assert out is x
    worst, bad = excess_error(out, ref, "bf16")
    assert bad == 0, worst


def test_zero_rows_launch_nothing():
    x = torch.empty(0, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, device="cuda").to(torch.bfloat16)
    assert rmsnorm(x, w).shape == (0, 4096)


def test_runs_on_the_callers_stream():
    """Inputs produced on a side stream, the kernel called there: it must be ordered after them."""
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(2_000_000)  # keep the side stream busy so a launch elsewhere would race
        x = torch.randn(4096, 8192, device="cuda").to(torch.bfloat16)
        w = torch.randn(8192, device="cuda").to(torch.bfloat16)
        out = rmsnorm(x, w, EPS)
    side.synchronize()
    worst, bad = excess_error(out, rmsnorm_reference(x, w, EPS), "bf16")
    assert bad == 0, worst


def test_large_persistent_run_matches_torch_rms_norm_closely():
    """2^25 elements, the benchmark's kernel: against float64 on every row, and bitwise stable over launches."""
    x = torch.randn(4096, 8192, device="cuda").to(torch.bfloat16)
    w = torch.randn(8192, device="cuda").to(torch.bfloat16)
    first = rmsnorm(x, w, EPS)
    worst, bad = excess_error(first, rmsnorm_reference(x, w, EPS), "bf16")
    assert bad == 0, worst
    for _ in range(4):
        assert same_bits(rmsnorm(x, w, EPS), first)
    torch_out = torch.nn.functional.rms_norm(x, (8192,), w, EPS)
    assert (first.float() - torch_out.float()).abs().max() <= 2**-6 * torch_out.float().abs().max()


def test_axpby_with_beta_one_matches_torch_add():
    x = torch.randn(1000, 4096, device="cuda").to(torch_dtype("bf16"))
    y = torch.randn(1000, 4096, device="cuda").to(torch_dtype("bf16"))
    ours = axpby(x, y, 0.5, 1.0)
    theirs = torch.add(y, x, alpha=0.5)
    assert (ours.float() - theirs.float()).abs().max() <= 2**-7 * theirs.float().abs().max()


def test_a_repeated_signature_launches_on_each_calls_tensors():
    """The second and later calls of a signature reuse a prepared argument pack: each must still read its own
    x and write its own out (new pointers every call), in place included."""
    w = torch.randn(8192, device="cuda").to(torch.bfloat16)
    for _ in range(3):
        x = torch.randn(7, 8192, device="cuda").to(torch.bfloat16)
        ref = rmsnorm_reference(x, w, EPS)
        for out in (rmsnorm(x, w, EPS), rmsnorm(x, w, EPS, out=torch.full_like(x, float("nan")))):
            torch.cuda.synchronize()
            worst, bad = excess_error(out, ref, "bf16")
            assert bad == 0, worst


@pytest.mark.parametrize("graph", [False, True], ids=["bound", "graph"])
def test_a_bound_call_reads_its_inputs_anew_and_follows_the_stream(graph):
    x = torch.randn(3, 8192, device="cuda").to(torch.bfloat16)
    w = torch.randn(8192, device="cuda").to(torch.bfloat16)
    call = bind_rmsnorm(x, w, EPS, graph=graph)
    side = torch.cuda.Stream()
    for stream in (side, torch.cuda.current_stream(), side):
        fresh = torch.randn(3, 8192, device="cuda").to(torch.bfloat16)
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            torch.cuda._sleep(1_000_000)
            x.copy_(fresh)  # same storage, new values, after the sleep: a launch elsewhere reads the old ones
            out = call()
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()
        assert out is call.out
        worst, bad = excess_error(out, rmsnorm_reference(x, w, EPS), "bf16")
        assert bad == 0, worst


def test_a_call_captured_in_a_cuda_graph_replays_on_new_inputs():
    x = torch.randn(16, 8192, device="cuda").to(torch.bfloat16)
    w = torch.randn(8192, device="cuda").to(torch.bfloat16)
    out = torch.full_like(x, float("nan"))
    rmsnorm(x, w, EPS, out=out)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        rmsnorm(x, w, EPS, out=out)
    torch.cuda.current_stream().wait_stream(stream)
    x.copy_(torch.randn(16, 8192, device="cuda").to(torch.bfloat16))
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    worst, bad = excess_error(out, rmsnorm_reference(x, w, EPS), "bf16")
    assert bad == 0, worst
