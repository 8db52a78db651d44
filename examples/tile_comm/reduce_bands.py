"""The owner's side of the two-GPU reduce-scatter with the copy engine: add each band of the other GPU's
partial to this GPU's rows as soon as that band has landed.

==================  ==========================================  ==========================================
role                waits for                                   then
==================  ==========================================  ==========================================
thread 0 of a CTA   ``flags[band] == epoch`` (``ld.acquire.sys``;  ``bar.sync``: the CTA's threads read the
                    the other GPU's copy stream wrote it after   band after the acquire
                    the band's DMA, with a memory barrier)
every thread        the ``bar.sync``                             ``own[v] += received[v]`` for its 8-element
                                                                 vectors of the band (fp32 add, rounded to
                                                                 the output dtype, as ``torch.add_``)
==================  ==========================================  ==========================================

Bands are taken in the order the other GPU ships them, every CTA a slice of each band, so the adds of
the first bands run while the last ones are still crossing NVLink: only the last band's add is left when
it lands (the ``await_flags`` + ``torch.add_`` pair it replaces waited for every band, then added all of
them). A flag that never arrives traps after ``timeout_ns`` instead of hanging the GPU.
"""

from __future__ import annotations

import functools
from typing import Any

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64, Uint32
from cutlass.experimental.primitives.nvvm_wrapper import nanosleep

from pipes.cute import trap

THREADS = 256
VECTOR = 8  # elements per 16-byte access (bf16/fp16)
POLL_NS = 64


class AddBandsAsTheyLand:
    """``(own, received, flags, bands, band_elems, epoch, timeout_ns, ctas, stream)``: for ``band`` in
    ``0 … bands−1``, once ``flags[band] == epoch``: ``own[band] += received[band]`` (each band
    ``band_elems`` contiguous elements, a multiple of 8)."""

    def __init__(self, element: type = cutlass.BFloat16) -> None:
        self.element = element

    @cute.jit
    def __call__(
        self,
        own: cute.Pointer,
        received: cute.Pointer,
        flags: cute.Pointer,
        bands: Int32,
        band_elems: Int32,
        epoch: Int32,
        timeout_ns: Int64,
        ctas: Int32,
        stream: Any,
    ) -> None:
        self.kernel(own, received, flags, bands, band_elems, epoch, timeout_ns).launch(
            grid=(ctas, 1, 1), block=(THREADS, 1, 1), stream=stream
        )

    @cute.kernel
    def kernel(
        self,
        own: cute.Pointer,
        received: cute.Pointer,
        flags: cute.Pointer,
        bands: Int32,
        band_elems: Int32,
        epoch: Int32,
        timeout_ns: Int64,
    ) -> None:
        tid, _, _ = cute.arch.thread_idx()
        cta, _, _ = cute.arch.block_idx()
        ctas, _, _ = cute.arch.grid_dim()
        vectors = band_elems // VECTOR
        start = cute.arch.globaltimer()
        for band in cutlass.range(0, bands, unroll=1):
            if tid == 0:
                got = Int32(cute.arch.load(flags + band, Uint32, sem="acquire", scope="sys"))
                while got != epoch:
                    if cute.arch.globaltimer() - start > timeout_ns:
                        cute.printf("add_bands: band %d flag %d != epoch %d after the timeout\n", band, got, epoch)
                        trap()
                    nanosleep(POLL_NS)
                    got = Int32(cute.arch.load(flags + band, Uint32, sem="acquire", scope="sys"))
            cute.arch.sync_threads()  # every thread's reads of the band come after thread 0's acquire
            base = Int64(band) * Int64(band_elems)
            for v in cutlass.range(cta * THREADS + tid, vectors, ctas * THREADS, unroll=1):
                offset = cute.assume(base + Int64(v) * VECTOR, divby=VECTOR)
                mine = cute.make_tensor(own + offset, cute.make_layout(VECTOR))
                theirs = cute.make_tensor(received + offset, cute.make_layout(VECTOR))
                total = mine.load().to(Float32) + theirs.load().to(Float32)
                mine.store(total.to(self.element))


def fake_args() -> tuple[Any, ...]:
    from cutlass.cute.runtime import make_fake_stream, make_ptr

    gmem = cute.AddressSpace.gmem
    own = make_ptr(cutlass.BFloat16, 1 << 20, gmem, assumed_align=16)
    received = make_ptr(cutlass.BFloat16, 1 << 21, gmem, assumed_align=16)
    flags = make_ptr(Uint32, 1 << 22, gmem, assumed_align=4)
    return (own, received, flags, Int32(1), Int32(8), Int32(1), Int64(1), Int32(1), make_fake_stream())


@functools.cache
def compiled(options: str = "--gpu-arch sm_90a") -> Any:
    return cute.compile(AddBandsAsTheyLand(), *fake_args(), options=options)
