"""Tools the examples share for looking at a kernel, not part of any kernel:

* :mod:`.timing`  — interleaved GPU timing (every contender in every round) and paired ratios.
* :mod:`.report`  — what the compiler made of the GEMM: registers, spills, shared memory, PTX and SASS
  (works without a GPU).
* :mod:`.tracing` — one traced launch of the GEMM, decoded for ``pipes.cute.timeline``.
"""
