"""gemm_modes.prepared without a GPU: the converted address list is packed once, only the stream changes."""

from __future__ import annotations

import ctypes

import pytest
from gemm_modes.prepared import PreparedLaunch, read_cell


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


class FakeTensor:
    """A runtime tensor's conversion: a memref descriptor whose first word is the data pointer."""

    def __init__(self, pointer: int) -> None:
        self._memref_desc = (ctypes.c_uint64 * 3)(pointer, 64, 1)  # data pointer, then shape and stride words


class FakeTensorCompiled(FakeCompiled):
    """Converts FakeTensors to their descriptors' addresses, ints to int32 cells, the stream last."""

    def generate_execution_args(self, *args):
        self.conversions += 1
        cells = [a._memref_desc if isinstance(a, FakeTensor) else ctypes.c_int32(a) for a in args[:-1]]
        cells.append(ctypes.c_uint64(args[-1]))
        return [ctypes.c_void_p(ctypes.addressof(c)) for c in cells], cells  # the DSL's keep-alive list


def test_a_rebindable_launch_writes_new_data_pointers_and_keeps_no_tensor():
    import gc
    import weakref

    compiled = FakeTensorCompiled()
    tensors = [FakeTensor(0x1000), FakeTensor(0x2000)]
    watch = [weakref.ref(t) for t in tensors]
    launch = PreparedLaunch.build(compiled, (*tensors, 5), 0xABC, pointers=(0x1000, 0x2000))
    assert launch is not None
    del tensors
    gc.collect()
    assert all(w() is None for w in watch)  # only the descriptors are kept, not the tensors
    seen = []
    kinds = (ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int32)
    compiled.executor.capi_func = lambda packed: seen.append(tuple(read_cell(packed[i], kinds[i]) for i in range(3)))
    launch(0x1)
    launch.rebind((0x3000, 0x4000))
    launch(0x1)
    assert seen == [(0x1000, 0x2000, 5), (0x3000, 0x4000, 5)]
    assert compiled.conversions == 1 and compiled.executor.packs == 1
    with pytest.raises(ValueError, match="rebind got 1 pointers; this launch was built with 2"):
        launch.rebind((0x5000,))


def test_a_rebindable_launch_needs_descriptors_that_start_with_the_given_pointers():
    compiled = FakeTensorCompiled()
    # the descriptor holds another pointer than the caller's: a layout this does not know
    assert PreparedLaunch.build(compiled, (FakeTensor(0x1000), 5), 0xABC, pointers=(0x1008,)) is None
    # an argument without a descriptor (an int here) cannot be re-pointed
    assert PreparedLaunch.build(compiled, (5, 6), 0xABC, pointers=(5,)) is None


def test_named_cells_anywhere_in_the_list_are_checked_then_written_per_call():
    from gemm_modes.prepared import Cell

    class MixedCompiled(FakeCompiled):
        """(a, stream, epoch, b): the stream in the middle, as in the fused comm kernel's list."""

        def generate_execution_args(self, *args):
            self.conversions += 1
            kinds = (ctypes.c_int32, ctypes.c_uint64, ctypes.c_int32, ctypes.c_int32)
            cells = [kind(v) for kind, v in zip(kinds, args, strict=True)]
            return [ctypes.c_void_p(ctypes.addressof(c)) for c in cells], cells

    compiled = MixedCompiled()
    cells = {"stream": Cell(1, ctypes.c_uint64, 0xABC), "epoch": Cell(-2, ctypes.c_int32, 7)}
    launch = PreparedLaunch.build_with(compiled, (11, 0xABC, 7, 22), cells)
    assert launch is not None
    kinds = (ctypes.c_int32, ctypes.c_uint64, ctypes.c_int32, ctypes.c_int32)
    seen = []
    compiled.executor.capi_func = lambda packed: seen.append(tuple(read_cell(packed[i], kinds[i]) for i in range(4)))
    launch(0x1, epoch=-3)
    launch(0x2)  # a cell not named keeps its last value
    assert seen == [(11, 0x1, -3, 22), (11, 0x2, -3, 22)]
    with pytest.raises(ValueError, match=r"no cell 'delay'.*\['epoch', 'stream'\]"):
        launch(0x3, delay=1)
    # a cell whose entry holds another value than the one built with: a layout this does not know
    assert PreparedLaunch.build_with(compiled, (11, 0xABC, 8, 22), cells) is None
    # no stream cell, or an index past the list: refused
    assert PreparedLaunch.build_with(compiled, (11, 0xABC, 7, 22), {"epoch": cells["epoch"]}) is None
    far = {"stream": Cell(9, ctypes.c_uint64, 0xABC)}
    assert PreparedLaunch.build_with(compiled, (11, 0xABC, 7, 22), far) is None


def test_the_packed_array_is_the_launchs_own_copy():
    """The DSL's executor packs into one per-thread buffer; two launches on one executor must not share it."""
    compiled = FakeCompiled()
    shared = (ctypes.c_void_p * 3)()

    def pack_into_one_buffer(exe_args):
        for i, a in enumerate(exe_args):
            shared[i] = a.value
        return shared

    compiled.executor._get_invoke_packed_args = pack_into_one_buffer
    first = PreparedLaunch.build(compiled, (11, 22), 0xABC)
    second = PreparedLaunch.build(compiled, (33, 44), 0xABC)
    first(0x1)
    second(0x2)
    assert compiled.executor.calls == [(11, 22, 0x1), (33, 44, 0x2)]
