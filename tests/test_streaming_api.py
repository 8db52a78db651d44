"""The torch entry points of examples/streaming on the CPU: every bad input is a clear ValueError before
anything compiles or launches, and the fast argument path hands the compiled program the same bytes as the
DSL's own argument conversion."""

import ctypes

import pytest

torch = pytest.importorskip("torch")

from streaming import axpby, rmsnorm  # noqa: E402
from streaming.build import compile_kernel  # noqa: E402
from streaming.launch import ARG_TYPES  # noqa: E402
from streaming.plan import Op, make_plan  # noqa: E402


def bf16(*shape):
    return torch.randn(*shape).to(torch.bfloat16)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: rmsnorm(bf16(4, 8192).double(), bf16(8192)), r"rmsnorm: x.dtype = torch.float64: allowed"),
        (lambda: rmsnorm([1.0], bf16(8192)), "rmsnorm: x is a list: allowed a torch.Tensor"),
        (lambda: rmsnorm(bf16(4, 8192), bf16(8192).half()), r"weight.dtype = torch.float16: allowed the dtype of x"),
        (lambda: rmsnorm(bf16(4, 8192), bf16(4096)), r"weight.shape = \(4096,\): allowed \(8192,\)"),
        (lambda: rmsnorm(bf16(8192, 4).t(), bf16(4)), "x is not contiguous"),
        (lambda: rmsnorm(bf16(4, 8192), bf16(8192), out=bf16(4, 4096)), r"out.shape = \(4, 4096\)"),
        (lambda: rmsnorm(bf16(4, 128), bf16(128)), "rmsnorm: plan.N = 128 is invalid: allowed an int >= 256"),
        (lambda: rmsnorm(bf16(4, 1004), bf16(1004)), "a multiple of 8 for bf16"),
        (lambda: rmsnorm(bf16(2, 1 << 17), bf16(1 << 17)), "at most 65536 for bf16"),
        (lambda: rmsnorm(bf16(4, 8192), bf16(8192), eps=-1.0), "eps = -1.0: allowed a float >= 0"),
        (lambda: rmsnorm(bf16(4, 8192), bf16(8192)), "rmsnorm: x is on cpu: allowed a CUDA tensor"),
        (lambda: axpby(bf16(4, 8192), bf16(4, 4096)), r"axpby: y.shape = \(4, 4096\): allowed \(4, 8192\)"),
        (lambda: axpby(bf16(4, 8192), bf16(4, 8192), alpha="2"), "alpha = '2': allowed a Python float"),
        (lambda: axpby(bf16(4, 8192), bf16(4, 8192)), "axpby: x is on cpu: allowed a CUDA tensor"),
    ],
)
def test_bad_inputs_are_value_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("op", [Op.RMSNORM, Op.AXPBY])
def test_argument_cells_carry_the_bytes_the_executor_would(op):
    """A launch writes plain values into fixed ctypes cells (:mod:`streaming.launch`); their bytes
    must equal what the DSL's own conversion of typed arguments produces, argument by argument. (Plain
    Python ints are no reference: the executor converts them to Int32 and loses the upper half of an
    address.)"""
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    kernel = compile_kernel(make_plan(op, "bf16", 8192))
    values = (0x7F0000001000, 0x7F0000002000, 0x7F0000003000, 4097, 1e-5)
    values += (0.25, 264, 0xABCDEF) if op is Op.AXPBY else (264, 0xABCDEF)
    cells = tuple(t() for t in ARG_TYPES[op])
    for cell, value in zip(cells, values, strict=True):
        cell.value = value
    typed = [make_ptr(cutlass.BFloat16, v, cute.AddressSpace.gmem, assumed_align=16) for v in values[:3]]
    typed += [cutlass.Int32(values[3]), cutlass.Float32(values[4])]
    typed += [cutlass.Float32(values[5]), cutlass.Int32(values[6])] if op is Op.AXPBY else [cutlass.Int32(values[5])]
    theirs, _ = kernel.compiled.execution_args.generate_execution_args((*typed, cuda.CUstream(values[-1])), {})
    assert len(theirs) == len(values)
    for cell, b in zip(cells, theirs, strict=True):
        size = ctypes.sizeof(cell)
        b_addr = b if isinstance(b, int) else b.value
        assert ctypes.string_at(ctypes.addressof(cell), size) == ctypes.string_at(b_addr, size)
