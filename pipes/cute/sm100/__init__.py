"""pipes.cute.sm100: the Blackwell (sm_100a) pipeline kinds, beside the Hopper ones in :mod:`pipes.cute`.

Declared from the same :class:`pipes.PipelineSpec`, initialized by the same
:func:`pipes.cute.init_pipelines`, with the same handles (acquire/commit, wait/release, try_, tail, count,
``suspend_waits``, debug and trace):

* :class:`TmaUmmaPipeline` — TMA load → ``tcgen05.mma`` (the mainloop); the release is a ``tcgen05.commit``
  multicast to every CTA whose stage the MMAs read (``cutlass.pipeline.PipelineTmaUmma``);
* :class:`UmmaAccPipeline` — ``tcgen05.mma`` → epilogue through tensor-memory accumulator stages; the
  commit is the producer's arrival (``PipelineUmmaAsync``);
* :class:`ClcFetchPipeline` — cluster-launch-control responses for a dynamic persistent scheduler
  (``PipelineClcFetchAsync``);
* :class:`UmmaCluster` — the cluster shape and ``cta_group`` (1 or 2) every count and mask derives from;
* :class:`TmemAllocation` — the tensor-memory allocation handshake between the allocating warp and the
  warps that use the accumulator.

The store → notify hand-off (:class:`pipes.cute.StoreNotifyPipeline`) and the TMA-store staging ring
(:class:`pipes.cute.TmaStoreStaging`) are architecture-neutral and compile for sm_100a as they are.
"""

from .clc import CLC_RESPONSE_BYTES, ClcConsumer, ClcFetchOps, ClcFetchPipeline
from .cluster import UmmaCluster
from .commit import umma_commit
from .tma_umma import TmaUmmaOps, TmaUmmaPipeline
from .tmem import TmemAllocation
from .umma_acc import UmmaAccOps, UmmaAccPipeline

__all__ = [
    "CLC_RESPONSE_BYTES",
    "ClcConsumer",
    "ClcFetchOps",
    "ClcFetchPipeline",
    "TmaUmmaOps",
    "TmaUmmaPipeline",
    "TmemAllocation",
    "UmmaAccOps",
    "UmmaAccPipeline",
    "UmmaCluster",
    "umma_commit",
]
