"""hopper_gemm.prepared without a GPU: the converted address list is packed once, only the stream changes."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from hopper_gemm.prepared import PreparedLaunch, read_cell  # noqa: E402


class FakeExecutor:
    """A JitExecutor's launch surface: pack an address list once, call the host function on the array."""

    def __init__(self, packed_entry: bool = True) -> None:
        self.cuda_result = ctypes.c_int32(0)
        self.calls: list[tuple[int, ...]] = []
        self.packs = 0
        if packed_entry:
            self._get_invoke_packed_args = self._pack

    def _pack(self, exe_args):
        self.packs += 1
        return (ctypes.c_void_p * len(exe_args))(*[a.value for a in exe_args])

    def capi_func(self, packed):
        last = len(packed) - 1
        self.calls.append(
            tuple(read_cell(packed[i], ctypes.c_uint64 if i == last else ctypes.c_int32) for i in range(len(packed)))
        )

    def run_compiled_program(self, exe_args):
        self.capi_func(self._pack(exe_args))


class FakeCompiled:
    """What a compiled CuTe DSL function offers: argument conversion, and an executor."""

    def __init__(self, stream_last: bool = True, packed_entry: bool = True) -> None:
        self.stream_last = stream_last
        self.executor = FakeExecutor(packed_entry)
        self.conversions = 0

    def generate_execution_args(self, *args):
        self.conversions += 1
        cells = [ctypes.c_int32(a) for a in args[:-1]] + [ctypes.c_uint64(args[-1])]
        if not self.stream_last:
            cells.append(ctypes.c_int32(7))  # an entry after the stream: a layout PreparedLaunch does not know
        return [ctypes.c_void_p(ctypes.addressof(c)) for c in cells], cells

    def to(self):
        return self.executor


@pytest.mark.parametrize("packed_entry", [True, False])
def test_a_prepared_launch_converts_once_and_writes_only_the_stream(packed_entry):
    compiled = FakeCompiled(packed_entry=packed_entry)
    launch = PreparedLaunch.build(compiled, (11, 22), 0xABC)
    assert launch is not None and compiled.conversions == 1
    launch(0x1234)
    launch(0x5678)
    assert compiled.conversions == 1  # no per-call conversion
    assert compiled.executor.calls == [(11, 22, 0x1234), (11, 22, 0x5678)]
    if packed_entry:
        assert compiled.executor.packs == 1  # packed once, the stream written in place


def test_a_failed_launch_raises_with_the_cuda_error():
    compiled = FakeCompiled()
    launch = PreparedLaunch.build(compiled, (11, 22), 0xABC)
    compiled.executor.cuda_result.value = 98
    with pytest.raises(RuntimeError, match="CUDA error 98"):
        launch(0x1)


def test_an_unknown_argument_layout_falls_back_to_the_dsls_call():
    assert PreparedLaunch.build(FakeCompiled(stream_last=False), (11, 22), 0xABC) is None
    assert PreparedLaunch.build(object(), (11, 22), 0xABC) is None  # no generate_execution_args
    assert read_cell(ctypes.c_void_p(None), ctypes.c_uint64) is None
