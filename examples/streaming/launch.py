"""The host side of one launch: argument values in fixed ctypes cells, handed to the compiled host function.

A compiled CuTe DSL launcher is a host function (it builds the TMA descriptors and calls
``cudaLaunchKernelEx``) that takes one array of argument addresses. The DSL's own call path converts
every Python argument on every call (about 17 µs for 7 arguments), then its executor takes a lock and
repacks the address array. :class:`ArgPack` does that work once: the cells keep their addresses, so a
call writes the values that changed and calls the host function with the same array (about 0.4 µs of
Python besides the driver's own launch cost).

The address array is laid out by the executor itself (``_get_invoke_packed_args``: the argument
addresses, then the address of its result cell, then any kernel pointers), so a DSL that adds entries
still gets them. Each pack has its own executor: the result cell and the array are not shared between
packs or threads.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

from .plan import Op

#: ctypes storage of each launcher argument, in the launcher's order: pointers and the stream handle are
#: 8 bytes, Int32 and Float32 4. (A Python int for a pointer parameter would be converted to Int32 by
#: the DSL, losing the upper half of the address.)
ARG_TYPES: dict[Op, tuple[type, ...]] = {
    Op.RMSNORM: (ctypes.c_uint64,) * 3 + (ctypes.c_int32, ctypes.c_float, ctypes.c_int32, ctypes.c_uint64),
    Op.AXPBY: (ctypes.c_uint64,) * 3
    + (ctypes.c_int32, ctypes.c_float, ctypes.c_float, ctypes.c_int32, ctypes.c_uint64),
}


class LaunchError(RuntimeError):
    """The host function returned a CUDA error code (the launch did not happen)."""

    def __init__(self, code: int) -> None:
        self.code = code
        super().__init__(f"kernel launch failed: {_error_name(code)} ({code})")


def _error_name(code: int) -> str:
    try:
        from cuda.bindings import runtime

        return runtime.cudaError_t(code).name
    except Exception:  # noqa: BLE001 - the name is a courtesy; the code is the fact
        return "cudaError"


class ArgPack:
    """One launcher's arguments in ctypes cells and the address array its host function takes.

    ``cells[i].value = v`` sets argument ``i``; :meth:`launch` calls the host function. Not thread-safe:
    one pack per thread (the API keeps its packs in a thread-local cache).
    """

    __slots__ = ("cells", "_executor", "_capi", "_packed", "_result", "_addresses")

    def __init__(self, executor: Any, arg_types: Sequence[type]) -> None:
        self.cells = tuple(t() for t in arg_types)
        self._addresses = [ctypes.c_void_p(ctypes.addressof(cell)) for cell in self.cells]
        self._executor = executor  # keeps the loaded module alive as long as the pack
        pack = getattr(executor, "_get_invoke_packed_args", None)
        if pack is None or not hasattr(executor, "capi_func"):  # another DSL version: its own (slower) call
            self._packed = self._capi = self._result = None
            return
        self._packed = pack(self._addresses)
        self._capi = executor.capi_func
        self._result = executor.cuda_result if getattr(executor, "_has_cuda_result", False) else None

    @property
    def addresses(self) -> list[int]:
        """The argument addresses the host function receives, in order."""
        return [a.value for a in self._addresses]

    def launch(self) -> None:
        capi = self._capi
        if capi is None:
            self._executor.run_compiled_program(self._addresses)
            return
        capi(self._packed)
        result = self._result
        if result is not None and result.value:
            raise LaunchError(result.value)


def executor_for(compiled: Any) -> Any:
    """A fresh executor of ``compiled`` (its own result cell and address array). The module is shared and
    loaded once, for every device: the CUDA-dialect launcher uses context-free CUDA libraries."""
    return compiled.to()
