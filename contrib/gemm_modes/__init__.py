"""Performance modes of the teaching GEMM (``examples/hopper_gemm``) that do not teach pipes.

They plug into :class:`hopper_gemm.kernel.GemmKernel` at the points its ``KernelModes`` protocol names
(:class:`~gemm_modes.hooks.ModeHooks`), and ``gemm(schedule="auto")`` picks among them from what was
measured (:mod:`~gemm_modes.autotable`). Modules, one job each:

* :mod:`.modes`     — :class:`Modes` and :class:`TunedConfig`: what each mode changes, validated.
* :mod:`.splits`    — the work splits (stream-K, the aligned split, split-K) on ints and DSL ints alike.
* :mod:`.stream_k`, :mod:`.split_k` — the math warpgroups' split units and their fix-up through global memory.
* :mod:`.deferred_store` — the deferred epilogue: a tile stored under the next tile's first k-tiles.
* :mod:`.hooks`     — the kernel hooks: the plan, the load warp's split loads, the math role of the modes.
* :mod:`.stream_k_protocol`, :mod:`.split_k_protocol` — the fix-ups written down for ``pipes.check``.
* :mod:`.autotable`, :mod:`.choice` — ``schedule="auto"``'s measured table and the overrides.
* :mod:`.launch`, :mod:`.entry`, :mod:`.prepared`, :mod:`.call_cache` — the launch: grid, workspace,
  compile entry and cache, arguments converted once per call signature (``gemm()``'s :func:`~.call_cache.cached_call`).
"""

from .modes import Modes, TunedConfig, tuned, tuned_config

__all__ = ["Modes", "TunedConfig", "tuned", "tuned_config"]
