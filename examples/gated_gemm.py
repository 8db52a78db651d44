"""The all-gather GEMM as one launch: ``ChunkPusher`` (the copy engines) or the kernel's push warps bring the
other ranks' rows of A, and the gated persistent GEMM (``GemmKernel(gate=...)``) reads them as they land.
``GatedGemm`` is what ``examples/tp_ag_gemm.py`` measures and ``examples/tp_mlp.py`` chains; the
configuration helpers say which tile walk and chunks it takes (docs/comm.md, "All-gather")."""

from __future__ import annotations

from pipes.comm.chunk_pusher import PUSH_STREAMS


def alone_configuration(m: int, n: int, k: int, world: int):  # noqa: ANN201
    """Our GEMM alone on the gathered A (the baseline): the measured table's unsplit pick (a gated GEMM takes
    no workspace), clusters that never hang over a rank's rows."""
    from gemm_modes.choice import choose_config
    from hopper_gemm.config import Problem

    config = choose_config(Problem("bf16"), (m, n, k), "auto", None, None, stream_k=False)
    if (m // world) % (config.tile_m * config.cluster_m):
        config = config.reshaped(cluster_m=1, cluster_n=2 if config.cluster_size > 1 else 1)
    return config.with_(pdl=False)


def configuration(m: int, n: int, k: int, world: int):  # noqa: ANN201
    """The gated GEMM's configuration: :func:`alone_configuration` walking along N (``raster="n"``), bands of
    tile rows across every column, so every tile of the rank's own rows comes before any other rank's row
    and those follow in the order their chunks arrive. Walking along M (auto's raster for tall outputs) a
    band of columns takes every tile row before the next band: with two bands (8192×4096 on two GPUs) the
    walk reaches the other rank's rows a quarter into the kernel instead of half. A band never spans two
    ranks' rows: ``group`` is cut to a divisor of the cluster rows a rank holds. At 4096×7168×8192 on four
    GPUs, bands of 8 cluster rows paired every rank's 4 with the next rank's, so the first wave already
    took tiles of that rank's rows: 64–96 load warps per rank waited 72–92 µs for its chunk, and the launch
    ran +10 % over our GEMM alone (4×H200, 2026-11-28)."""
    config = alone_configuration(m, n, k, world).with_(raster="n")
    own_cluster_rows = (m // world) // (config.tile_m * config.cluster_m)
    if own_cluster_rows:
        group = max(g for g in range(1, config.group + 1) if own_cluster_rows % g == 0)
        config = config.with_(group=group)
    return config


def default_chunk_rows(pusher: str, m: int, world: int, workers: int) -> int:
    """Rows per chunk unless ``--chunk-rows`` says: 1024 for the copy engines; for SM pushes, chunks that
    deal about one push to each of the grid's ``workers`` push warps (:func:`pipes.cute.comm.sm_chunk_rows`)."""
    from pipes.cute.comm import sm_chunk_rows

    return 1024 if pusher == "copy" else sm_chunk_rows(m, world, workers)


def gated_kernel(  # noqa: ANN201
    config,  # noqa: ANN001
    problem,  # noqa: ANN001
    plan,  # noqa: ANN001
    k: int,
    pusher: str = "copy",
    push_warps: int = 1,
    record_waits: bool = False,
):
    """The gated GEMM, its gate and (``pusher="sm"``) its push warp: the copy engines raise each flag to a
    parity token (the gate waits for it exactly), the push warp to the launch's epoch. ``record_waits``:
    the gate counts its waits after the flags (``GateSpec.record_waits``)."""
    from gemm_modes.launch import hooks_for
    from hopper_gemm.kernel import GemmKernel

    from pipes.cute.comm import ChunkPushWarp, ChunkSender, GateSpec

    gate = GateSpec(plan, tile_m=config.tile_m, exact=pusher == "copy", record_waits=record_waits)
    push = ChunkPushWarp(ChunkSender(plan, k), warps=push_warps) if pusher == "sm" else None
    return GemmKernel(config.config, problem, modes=hooks_for(config), gate=gate, push=push), gate, push


class GatedGemm:
    """Our all-gather + GEMM on this rank: the gathered buffers, the pusher and the compiled gated kernel.
    ``a_r``, this rank's row block, is its rows of the gathered buffer: the layer before writes it there,
    and nothing copies it before the pushes. ``pusher="sm"``: the kernel's push warps push instead of the
    copy engines (its arguments carry the launch's epoch: a prepared launch rewrites it per call).
    ``activation``: applied in the epilogue (``Problem.activation``: an MLP's GELU)."""

    def __init__(  # noqa: ANN001
        self,
        w_r,
        m: int,
        chunk_rows: int | None,
        streams: int = PUSH_STREAMS,
        graph: bool | None = None,
        pusher: str = "copy",
        push_warps: int = 1,
        record_waits: bool = False,
        activation: str | None = None,
    ) -> None:
        import cutlass
        import cutlass.cute as cute
        import torch
        import torch.distributed as dist
        from gemm_modes.launch import clusters_to_launch
        from hopper_gemm.config import Problem
        from hopper_gemm.launch import current_stream, cute_operands

        from pipes.chunks import ChunkPlan
        from pipes.comm import ChunkPusher, Epochs, GatherBuffers, push_gate_args
        from pipes.epoch import FIRST

        world = dist.get_world_size()
        n, k = w_r.shape
        self.config = configuration(m, n, k, world)
        self.alone_config = alone_configuration(m, n, k, world)
        clusters = clusters_to_launch(self.config, m, n, w_r.device.index or 0)
        workers = clusters * self.config.cluster_size * push_warps
        chunk_rows = chunk_rows or default_chunk_rows(pusher, m, world, workers)
        self.plan = ChunkPlan(rows=m, world=world, chunk_rows=chunk_rows)
        problem = Problem("bf16", activation=activation)
        kernel, self.gate, _ = gated_kernel(self.config, problem, self.plan, k, pusher, push_warps, record_waits)
        self.buffers = GatherBuffers.create(self.plan, k, torch.bfloat16, flag_words=self.gate.flag_words)
        rank, rows = self.buffers.rank, self.plan.rows_per_rank
        self.a_r = self.buffers.local.data[rank * rows : (rank + 1) * rows]
        self.sm_push = pusher == "sm"
        self.pusher = None
        if not self.sm_push:
            self.pusher = ChunkPusher(self.a_r, self.plan, self.buffers, streams=streams, graph=graph)
        self.out = torch.empty(m, n, device=w_r.device, dtype=torch.bfloat16)
        self.head = (*cute_operands(self.buffers.local.data, w_r, self.out, None), cutlass.Float32(1.0))
        self.head = (*self.head, cutlass.Int32(clusters))
        self.epochs = Epochs()
        first = push_gate_args(self.buffers, self.plan, FIRST) if self.sm_push else self.pusher.gate_args(FIRST)
        self.compiled = cute.compile(kernel, *self.head, current_stream(), first)
        # Arguments converted once per flag value (the two parity tokens alternate): ~5 µs of host time per
        # launch instead of the DSL's per-call conversion (None: a DSL whose argument list is unknown).
        if self.sm_push:  # one launch; its epoch cells rewritten per call
            self.prepared = {"sm": self._prepare_sm(FIRST)}
        else:
            self.prepared = {self.pusher.flag_value(e): self._prepare(e) for e in (FIRST, FIRST + 1)}
        torch.cuda.synchronize()
        dist.barrier()  # every rank compiled: no gate waits for a peer that is still compiling

    def _prepare(self, epoch: int):  # noqa: ANN202
        import ctypes

        from gemm_modes.prepared import Cell, PreparedLaunch
        from hopper_gemm.launch import current_stream

        stream = current_stream()
        gate = self.pusher.gate_args(epoch)  # three entries after the stream: flags, rank, value
        cells = {"stream": Cell(-1 - len(gate), ctypes.c_uint64, int(stream))}
        return PreparedLaunch.build_with(self.compiled, (*self.head, stream, gate), cells)

    def _prepare_sm(self, epoch: int):  # noqa: ANN202
        """The push warp's launch with the gate's ``value`` and the ``epoch`` as cells: the address list ends
        with the :class:`PushingGateArgs` entries (epoch last; the source tensor's entries counted by trying
        1–3, each try checked against the stream's entry)."""
        import ctypes

        from gemm_modes.prepared import Cell, PreparedLaunch
        from hopper_gemm.launch import current_stream

        from pipes.comm import push_gate_args
        from pipes.epoch import as_int32

        stream, args = current_stream(), push_gate_args(self.buffers, self.plan, epoch)
        peers = len(args.peer_data)
        for src_entries in (1, 2, 3):
            after = 4 + src_entries + 3 * peers  # the entries after the stream's
            cells = {
                "stream": Cell(-1 - after, ctypes.c_uint64, int(stream)),
                "value": Cell(-after + 2, ctypes.c_int32, as_int32(epoch)),
                "epoch": Cell(-1, ctypes.c_int32, as_int32(epoch)),
            }
            prepared = PreparedLaunch.build_with(self.compiled, (*self.head, stream, args), cells)
            if prepared is not None:
                return prepared
        return None

    def launch(self, grant_beside: bool = True) -> None:
        """One launch: begin, the gated kernel, the pushes and the credits given back (``grant_beside``:
        from the pusher's own stream; False: on the launching stream, to compare)."""
        from gemm_modes.call_cache import current_stream_handle
        from hopper_gemm.launch import current_stream

        from pipes.comm import grant_credits, push_gate_args
        from pipes.epoch import as_int32

        epoch = self.epochs.next()
        if self.sm_push:  # the kernel pushes; after it, every sender's credit word holds this epoch
            prepared = self.prepared["sm"]
            if prepared is not None:
                prepared(current_stream_handle(), value=as_int32(epoch), epoch=as_int32(epoch))
            else:
                self.compiled(*self.head, current_stream(), push_gate_args(self.buffers, self.plan, epoch))
            grant_credits(self.buffers, epoch)
            return
        self.pusher.begin(epoch)
        prepared = self.prepared.get(self.pusher.flag_value(epoch))
        if prepared is not None:
            prepared(current_stream_handle())
        else:
            self.compiled(*self.head, current_stream(), self.pusher.gate_args(epoch))
        self.pusher.push(epoch)
        self.pusher.grant_beside = grant_beside
        self.pusher.grant()

    def launch_gated_only(self) -> None:
        """The gated kernel alone, every chunk already in place (copy engines): relaunched with the value the
        last launch raised the flags to, so each gate's acquire passes at once and nothing is pushed. Against
        our GEMM alone this is what the gates cost; against ``launch`` what waiting for the chunks costs.
        Every rank must run it in step (as the timing's batches do): a peer's next ``launch`` would push over
        the rows and flags this kernel reads."""
        from gemm_modes.call_cache import current_stream_handle
        from hopper_gemm.launch import current_stream

        from pipes.epoch import FRESH

        if self.sm_push or self.epochs.current == FRESH:
            raise ValueError("launch_gated_only needs the copy-engine pusher and one launch before it")
        value = self.pusher.flag_value(self.epochs.current)
        prepared = self.prepared.get(value)
        if prepared is not None:
            prepared(current_stream_handle())
        else:
            self.compiled(*self.head, current_stream(), self.pusher.gate_args(self.epochs.current))
