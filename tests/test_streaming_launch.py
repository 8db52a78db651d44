"""The per-call host path of examples/streaming on the CPU (no GPU: a stand-in device layer accepts CPU
tensors, and the compiled kernel's argument packs call a recording C-callable instead of the compiled
host function). What a call hands the host function, byte for byte; that a repeated call signature skips
validation but never the alignment check; launch errors; bound calls; one pack per thread."""

import ctypes
import itertools
import struct
import sys
import threading

import pytest

torch = pytest.importorskip("torch")

from streaming import api, prepared  # noqa: E402
from streaming.device import DeviceLayer  # noqa: E402
from streaming.hostcost import STAND_IN_STREAM, stand_in  # noqa: E402
from streaming.launch import ARG_TYPES, LaunchError  # noqa: E402
from streaming.plan import Op, make_plan  # noqa: E402

N = 8192
PLAN = make_plan(Op.RMSNORM, "bf16", N)
AXPBY_PLAN = make_plan(Op.AXPBY, "bf16", N)
FORMATS = {ctypes.c_uint64: "<Q", ctypes.c_int32: "<i", ctypes.c_float: "<f"}


class Recorder:
    """A C-callable host function: decodes the argument array it is handed, writes ``code`` as the
    launch's CUDA result."""

    def __init__(self, op: Op = Op.RMSNORM, code: int = 0) -> None:
        self.types = ARG_TYPES[op]
        self.code = code
        self.calls: list[tuple] = []
        self.function = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(self._record)

    def _record(self, packed: int) -> int:
        count = len(self.types)
        addresses = (ctypes.c_void_p * (count + 1)).from_address(packed)
        values = tuple(
            struct.unpack(FORMATS[t], ctypes.string_at(addresses[i], ctypes.sizeof(t)))[0]
            for i, t in enumerate(self.types)
        )
        ctypes.c_int32.from_address(addresses[count]).value = self.code  # the executor's result cell
        self.calls.append(values)
        return 0


def bf16(*shape):
    return torch.randn(*shape).to(torch.bfloat16)


@pytest.fixture(autouse=True)
def fresh_calls():
    prepared.forget()
    yield
    prepared.forget()


def test_a_call_hands_the_host_function_its_arguments():
    rec = Recorder()
    x, w = bf16(3, N), bf16(N)
    out = torch.empty_like(x)
    with stand_in([PLAN], rec.function):
        assert api.rmsnorm(x, w, 0.5, out=out) is out
        y = api.rmsnorm(x, w, 0.5)
    grid = PLAN.grid(3, 132)
    assert rec.calls == [
        (x.data_ptr(), w.data_ptr(), out.data_ptr(), 3, 0.5, grid, STAND_IN_STREAM),
        (x.data_ptr(), w.data_ptr(), y.data_ptr(), 3, 0.5, grid, STAND_IN_STREAM),
    ]


def test_axpby_writes_alpha_and_beta_on_every_call():
    rec = Recorder(Op.AXPBY)
    x, y = bf16(5, N), bf16(5, N)
    with stand_in([AXPBY_PLAN], rec.function):
        api.axpby(x, y, 2.0, -1.0)
        api.axpby(x, y, 0.25, 3)
    assert [c[3:6] for c in rec.calls] == [(5, 2.0, -1.0), (5, 0.25, 3.0)]


def test_a_repeated_signature_skips_validation(monkeypatch):
    checked = []
    real = api.v.check_tensor

    def counting(op, name, *args, **kwargs):
        checked.append(name)
        return real(op, name, *args, **kwargs)

    monkeypatch.setattr(api.v, "check_tensor", counting)
    rec = Recorder()
    x, w, out = bf16(4, N), bf16(N), bf16(4, N)
    with stand_in([PLAN], rec.function):
        api.rmsnorm(x, w, 1e-6, out=out)
        assert checked == ["x", "weight", "out"]
        api.rmsnorm(bf16(4, N), bf16(N), 1e-6, out=bf16(4, N))  # other tensors, same signature
        assert checked == ["x", "weight", "out"]
        api.rmsnorm(x, w, 1e-5, out=out)  # another eps
        api.rmsnorm(bf16(6, N), w, 1e-6, out=bf16(6, N))  # another M
        assert checked.count("x") == 3
        assert len(prepared.calls()) == 3
    assert [c[3] for c in rec.calls] == [4, 4, 4, 6]


def _misaligned(shape):
    flat = bf16(torch.Size(shape).numel() + 8)
    return flat[1 : 1 + torch.Size(shape).numel()].view(shape)  # contiguous, 2 bytes past an aligned start


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (lambda: (_misaligned((4, N)), bf16(N), 1e-6), r"x.data_ptr\(\) = .* is not 16-byte aligned"),
        (lambda: (bf16(4, N), _misaligned((N,)), 1e-6), r"weight.data_ptr\(\) = .* is not 16-byte aligned"),
        (lambda: (bf16(N, 4).t(), bf16(N), 1e-6), "x is not contiguous"),
        (lambda: (bf16(4, N), bf16(N).half(), 1e-6), "weight.dtype = torch.float16"),
        (lambda: (bf16(4, N), bf16(N), -1.0), "eps = -1.0"),
        (lambda: (bf16(4, N), bf16(N), True), "eps = True"),
    ],
)
def test_a_known_signature_does_not_let_a_bad_input_through(bad, message):
    """Each bad call differs from a remembered good one (same shapes) in one fact only: pointer alignment
    (checked on every call), layout, dtype, the eps value, the eps type (True == 1.0 as a dict key)."""
    rec = Recorder()
    x, w, eps = bad()
    with stand_in([PLAN], rec.function):
        api.rmsnorm(bf16(*x.shape), bf16(*w.shape), 1.0 if eps is True else 1e-6)  # remembered
        with pytest.raises(ValueError, match=message):
            api.rmsnorm(x, w, eps)
    assert len(rec.calls) == 1


def test_a_failed_launch_raises_with_the_cuda_error():
    rec = Recorder(code=98)  # cudaErrorInvalidDeviceFunction
    with stand_in([PLAN], rec.function), pytest.raises(LaunchError, match=r"\(98\)") as err:
        api.rmsnorm(bf16(2, N), bf16(N))
    assert err.value.code == 98


def test_zero_rows_launch_nothing():
    rec = Recorder()
    with stand_in([PLAN], rec.function):
        assert api.rmsnorm(bf16(0, N), bf16(N)).shape == (0, N)
        api.bind_rmsnorm(bf16(0, N), bf16(N))()
    assert rec.calls == []


def test_every_call_follows_the_current_stream():
    """The stream is read on every call (prepared and bound): a caller that switches streams is followed."""
    streams = itertools.count(100)
    layer = DeviceLayer("cpu", lambda i: (132, (9, 0)), lambda: 0, lambda i: next(streams), lambda i: None)
    rec = Recorder()
    x, w = bf16(2, N), bf16(N)
    with stand_in([PLAN], rec.function, layer):
        api.rmsnorm(x, w)
        api.rmsnorm(x, w)
        bound = api.bind_rmsnorm(x, w)
        assert bound() is bound() is bound.out
    assert [c[-1] for c in rec.calls] == [100, 101, 102, 103]
    assert {c[:3] for c in rec.calls[2:]} == {(x.data_ptr(), w.data_ptr(), bound.out.data_ptr())}


def test_a_bound_call_is_not_disturbed_by_other_calls_of_its_signature():
    rec = Recorder()
    x, w = bf16(2, N), bf16(N)
    with stand_in([PLAN], rec.function):
        bound = api.bind_rmsnorm(x, w)
        other = api.rmsnorm(bf16(2, N), w)
        bound()
    assert rec.calls[-1][:3] == (x.data_ptr(), w.data_ptr(), bound.out.data_ptr())
    assert other.data_ptr() != bound.out.data_ptr()


def test_threads_do_not_share_argument_cells():
    """Two threads calling with the same signature: every recorded launch carries one thread's own x and
    out together (a shared pack would, now and then, pair one thread's x with the other's out)."""
    rec = Recorder()
    w = bf16(N)
    pairs = [(bf16(2, N), bf16(2, N)) for _ in range(2)]
    expected = {(x.data_ptr(), o.data_ptr()) for x, o in pairs}
    errors = []

    def work(x, o):
        try:
            for _ in range(2_000):
                api.rmsnorm(x, w, out=o)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can, between any two writes
    try:
        with stand_in([PLAN], rec.function):
            threads = [threading.Thread(target=work, args=pair) for pair in pairs]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors
    assert len(rec.calls) == 4_000
    assert {(c[0], c[2]) for c in rec.calls} == expected
