"""What one compiled streaming kernel is: the tile geometry, the pipeline depths, the shared memory.

Pure Python (no CuTe import), so the host API, the CLI and the tests validate shapes and budgets
without compiling anything. :func:`make_plan` turns ``(op, dtype, n, StreamConfig)`` into a frozen
:class:`Plan` or raises ``ValueError`` naming the field and the allowed values.

Geometry. Rows of the ``(M, N)`` tensors are cut into *row blocks* of ``rows`` rows; a row block is
streamed as ``chunks`` tiles of ``rows × chunk`` elements, one tile per pipeline stage. TMA sees each
row as ``(N / box_inner, box_inner)`` so one ``cp.async.bulk.tensor.3d`` moves a whole tile (a 2-D
box is limited to 256 elements per dimension: a 16 KiB row would take 32 TMA instructions).
Columns past ``N`` and rows past ``M`` are outside the tensor: TMA fills them with zeros on load and
clips them on store, so the consumers never predicate.

Threads. ``consumer_warps`` warps share a tile: ``warps_per_row`` warps per row when a tile has fewer
rows than warps, else each warp owns ``rows_per_warp`` rows. A thread reads ``vectors`` 16-byte vectors
per row and chunk, consecutive threads on consecutive vectors (conflict-free ``ld.shared.v4``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace

#: Hopper's opt-in shared memory per CTA (227 KiB) and per SM (228 KiB, 1 KiB of it reserved per CTA).
SMEM_PER_CTA = 232_448
SMEM_PER_SM = 233_472
SMEM_RESERVED_PER_CTA = 1_024
#: Bytes the kernel keeps for barriers, the reduction scratch and alignment besides the tiles.
SMEM_OVERHEAD = 1_024
REGISTERS_PER_SM = 65_536
#: Chunks of one row an RMSNorm consumer holds at most: the chunk loops are unrolled, and past 8 chunks
#: ptxas runs out of registers (12 chunks of a 98304-element bf16 row spill 160 bytes).
MAX_CHUNKS = 8
#: Weight registers a thread may hold for the whole kernel; a longer weight streams from L2 per chunk.
MAX_WEIGHT_REGISTERS = 32
TMA_BOX_MAX = 256
VECTOR_BYTES = 16
WARP = 32
ELEMENT_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4}
MIN_N = 256


class Op(str, enum.Enum):
    RMSNORM = "rmsnorm"
    """``out = x * rsqrt(mean(x², row) + eps) * weight``; a row's chunks are held until its sum is known."""
    AXPBY = "axpby"
    """``out = alpha * x + beta * y``; every tile is independent."""

    @property
    def operands(self) -> int:
        """Input tiles per pipeline stage."""
        return 2 if self is Op.AXPBY else 1


#: One operand tile per stage: 16 KiB for rmsnorm (a row of 8192 bf16), 8 KiB × 2 inputs for axpby.
DEFAULT_STAGE_BYTES = {Op.RMSNORM: 16_384, Op.AXPBY: 8_192}


class Store(str, enum.Enum):
    TMA = "tma"
    """Consumers write a staging buffer, one thread TMA-stores it (``pipes.cute.TmaStoreStaging``)."""
    ST_GLOBAL = "st_global"
    """Consumers write their 16-byte vectors straight to global memory (``st.global.v4``)."""


def _bad(owner: str, name: str, value: object, allowed: str) -> ValueError:
    return ValueError(f"{owner}.{name} = {value!r} is invalid: allowed {allowed}")


def _int_in(owner: str, name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _bad(owner, name, value, f"an int in [{low}, {high}]")


@dataclass(frozen=True)
class StreamConfig:
    """The kernel's choices. ``None`` fields take the default for the shape (:func:`make_plan`).

    ``stages``: depth of the TMA-load ring (tiles in flight); ``stage_bytes``: target bytes of one
    operand tile (default :data:`DEFAULT_STAGE_BYTES` of the op); ``store_stages``: TMA-store staging
    buffers; ``ctas_per_sm``: co-resident CTAs the grid and the register budget are sized for.
    """

    stages: int | None = None
    stage_bytes: int | None = None
    consumer_warps: int = 8
    store_stages: int = 2
    ctas_per_sm: int | None = None
    store: Store = Store.TMA

    def __post_init__(self) -> None:
        owner = "StreamConfig"
        if self.stages is not None:
            _int_in(owner, "stages", self.stages, 1, 32)
        if self.stage_bytes is not None:
            _int_in(owner, "stage_bytes", self.stage_bytes, 1_024, 65_536)
            if self.stage_bytes & (self.stage_bytes - 1):
                raise _bad(owner, "stage_bytes", self.stage_bytes, "a power of two in [1024, 65536]")
        if self.consumer_warps not in (4, 8, 16):
            raise _bad(owner, "consumer_warps", self.consumer_warps, "4, 8 or 16 (whole warpgroups)")
        _int_in(owner, "store_stages", self.store_stages, 1, 8)
        if self.ctas_per_sm is not None:
            _int_in(owner, "ctas_per_sm", self.ctas_per_sm, 1, 4)
        try:
            object.__setattr__(self, "store", Store(self.store))
        except ValueError:
            raise _bad(owner, "store", self.store, f"one of {[s.value for s in Store]}") from None


@dataclass(frozen=True)
class Plan:
    """Everything the kernel builder needs, all static. Built by :func:`make_plan` only."""

    op: Op
    dtype: str
    n: int
    config: StreamConfig
    rows: int
    chunk: int
    chunks: int
    box_inner: int
    stages: int
    ctas_per_sm: int
    warps_per_row: int
    rows_per_warp: int
    vectors: int
    notes: tuple[str, ...] = field(default=(), compare=False)

    # --- derived sizes -------------------------------------------------------------------------
    @property
    def element_bytes(self) -> int:
        return ELEMENT_BYTES[self.dtype]

    @property
    def vec(self) -> int:
        """Elements in one 16-byte vector."""
        return VECTOR_BYTES // self.element_bytes

    @property
    def box_groups(self) -> int:
        return self.chunk // self.box_inner

    @property
    def consumer_warps(self) -> int:
        return self.config.consumer_warps

    @property
    def consumer_threads(self) -> int:
        return self.consumer_warps * WARP

    @property
    def block_threads(self) -> int:
        """Consumer warps plus the TMA producer warp."""
        return self.consumer_threads + WARP

    @property
    def threads_per_row(self) -> int:
        return self.warps_per_row * WARP

    @property
    def tile_elements(self) -> int:
        return self.rows * self.chunk

    @property
    def tile_bytes(self) -> int:
        return self.tile_elements * self.element_bytes

    @property
    def stage_tx_bytes(self) -> int:
        """Bytes one stage's TMA loads write (the full barrier's transaction count)."""
        return self.tile_bytes * self.op.operands

    @property
    def store_stages(self) -> int:
        return self.config.store_stages if self.config.store is Store.TMA else 0

    @property
    def ring_bytes(self) -> int:
        return self.stages * self.stage_tx_bytes

    @property
    def staging_bytes(self) -> int:
        return self.store_stages * self.tile_bytes

    @property
    def reduce_bytes(self) -> int:
        """Cross-warp partial sums (two row blocks' worth, so consecutive blocks never share a word)."""
        return 2 * self.consumer_warps * 4 if self.op is Op.RMSNORM and self.warps_per_row > 1 else 0

    @property
    def smem_bytes(self) -> int:
        return self.ring_bytes + self.staging_bytes + SMEM_OVERHEAD

    @property
    def bytes_in_flight(self) -> int:
        """Load bytes the ring can have in flight per CTA (all stages empty and re-armed)."""
        return self.ring_bytes

    @property
    def weight_elements(self) -> int:
        """Weight elements each consumer thread keeps in registers (rmsnorm)."""
        return self.chunks * self.vectors * self.vec if self.op is Op.RMSNORM else 0

    @property
    def weight_registers(self) -> int:
        return self.weight_elements * self.element_bytes // 4

    @property
    def weight_resident(self) -> bool:
        """The weight stays in registers (loaded once per CTA); else it streams from L2, a chunk ahead."""
        return self.weight_registers <= MAX_WEIGHT_REGISTERS

    @property
    def register_limit(self) -> int:
        """Registers per thread that let ``ctas_per_sm`` CTAs be resident. ptxas sizes the budget for the
        block rounded up to whole warpgroups (288 threads count as 384) in units of 8 registers."""
        threads = -(-self.block_threads // 128) * 128
        return min(255, REGISTERS_PER_SM // (threads * self.ctas_per_sm) // 8 * 8)

    def row_blocks(self, m: int) -> int:
        return -(-m // self.rows)

    def work_items(self, m: int) -> int:
        """Items one CTA takes at a time: row blocks (rmsnorm) or tiles (axpby)."""
        return self.row_blocks(m) * (self.chunks if self.op is Op.AXPBY else 1)

    def grid(self, m: int, sm_count: int) -> int:
        """Persistent grid: at most ``ctas_per_sm`` CTAs per SM, never more CTAs than work items."""
        items = -(-m // self.rows) * (self.chunks if self.op is Op.AXPBY else 1)  # work_items, inlined: per call
        return max(1, min(items, sm_count * self.ctas_per_sm))

    def key(self) -> tuple:
        """What the compiled code depends on (a cache key)."""
        return (
            self.op,
            self.dtype,
            self.n,
            self.rows,
            self.chunk,
            self.chunks,
            self.box_inner,
            self.stages,
            self.ctas_per_sm,
            self.warps_per_row,
            self.rows_per_warp,
            self.vectors,
            self.config.consumer_warps,
            self.store_stages,
            self.config.store,
        )

    def describe(self) -> str:
        return (
            f"{self.op.value} {self.dtype} N={self.n}: {self.rows} row(s) × {self.chunk} cols per tile "
            f"({self.tile_bytes // 1024} KiB × {self.op.operands}), {self.chunks} chunk(s)/row, {self.stages} stages "
            f"({self.bytes_in_flight // 1024} KiB in flight), store={self.config.store.value}"
            f"{f' ×{self.store_stages}' if self.store_stages else ''}, {self.consumer_warps} consumer warps "
            f"({self.warps_per_row} per row), {self.ctas_per_sm} CTA/SM, smem {self.smem_bytes // 1024} KiB"
        )


def _pow2_floor(value: int) -> int:
    return 1 << (value.bit_length() - 1)


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def max_n(op: Op | str, dtype: str, config: StreamConfig | None = None) -> int:
    """The largest N (a power of two) that :func:`make_plan` accepts for ``op`` and ``dtype``."""
    n = MIN_N
    while True:
        try:
            make_plan(op, dtype, n * 2, config)
        except ValueError:
            return n
        n *= 2
        if n >= 1 << 22:
            return n


def make_plan(op: Op | str, dtype: str, n: int, config: StreamConfig | None = None) -> Plan:
    """The geometry of the kernel for rows of ``n`` elements of ``dtype``; ``ValueError`` if it cannot fit."""
    try:
        op = Op(op)
    except ValueError:
        raise _bad("plan", "op", op, f"one of {[o.value for o in Op]}") from None
    if dtype not in ELEMENT_BYTES:
        raise _bad("plan", "dtype", dtype, f"one of {sorted(ELEMENT_BYTES)}")
    config = config or StreamConfig()
    if not isinstance(config, StreamConfig):
        raise _bad("plan", "config", config, "a StreamConfig")
    if isinstance(n, bool) or not isinstance(n, int) or n < MIN_N:
        raise _bad("plan", "N", n, f"an int >= {MIN_N}")
    e = ELEMENT_BYTES[dtype]
    vec = VECTOR_BYTES // e
    if n % vec:
        raise _bad(
            "plan",
            "N",
            n,
            f"a multiple of {vec} for {dtype}: TMA needs each row to start on a 16-byte boundary",
        )
    notes: list[str] = []
    warps = config.consumer_warps
    # The widest power-of-two inner box dividing N: one TMA box then spans a whole tile.
    box_inner = min(TMA_BOX_MAX, n & -n)
    stage_bytes = config.stage_bytes or DEFAULT_STAGE_BYTES[op]
    tile_target = stage_bytes // e  # elements of one operand tile
    if n <= tile_target:
        rows = min(TMA_BOX_MAX, _pow2_floor(tile_target // n))
        chunks = 1
    else:
        rows = 1
        chunks = -(-n // tile_target)
    warps_per_row = max(1, warps // rows)
    rows_per_warp = max(1, rows // warps)
    threads_per_row = warps_per_row * WARP
    granule = max(box_inner, vec * threads_per_row)
    chunk = _round_up(-(-n // chunks), granule)
    if chunk // box_inner > TMA_BOX_MAX:
        raise _bad(
            "plan",
            "N",
            n,
            f"a row chunk of at most {TMA_BOX_MAX} TMA boxes of {box_inner} elements (N's largest power-of-two "
            f"divisor); got {chunk // box_inner}: use a smaller stage_bytes or an N with a larger power-of-two factor",
        )
    vectors = chunk // (vec * threads_per_row)
    if chunk * rows * e > 2 * stage_bytes:
        notes.append(f"tile padded to {chunk} columns ({chunk * rows * e} bytes): N={n} has no wider box")

    stages = config.stages
    if stages is None:
        held = chunks if op is Op.RMSNORM else 1  # chunks a consumer holds at once
        stages = 4 if held == 1 else held + 4
        while stages > max(2, chunks) and _smem(stages, rows * chunk * e, op, config) > SMEM_PER_CTA:
            stages -= 1
    if op is Op.RMSNORM and chunks > MAX_CHUNKS:
        raise _bad(
            "plan",
            "N",
            n,
            f"at most {MAX_CHUNKS * tile_target} for {dtype} with {stage_bytes}-byte stages: a row of {chunks} "
            f"chunks is held while its sum of squares is computed, and the kernel unrolls at most {MAX_CHUNKS}",
        )
    if op is Op.RMSNORM and stages < chunks:
        raise _bad(
            "StreamConfig",
            "stages",
            stages,
            f">= {chunks} for N={n}: a row is {chunks} chunks and all of them stay in shared memory until the "
            f"row's sum of squares is known (at least {chunks + 1} to load ahead while a row is held)",
        )
    smem = _smem(stages, rows * chunk * e, op, config)
    if smem > SMEM_PER_CTA:
        tile = rows * chunk * e * op.operands
        if op is Op.RMSNORM and stages == chunks:
            fit = (SMEM_PER_CTA - _smem(0, rows * chunk * e, op, config)) // tile
            raise _bad(
                "plan",
                "N",
                n,
                f"at most about {fit * chunk} for {dtype} with {stage_bytes}-byte stages: a row stays in shared "
                f"memory until its sum of squares is known, and {chunks} stages of {tile} bytes plus staging need "
                f"{smem} of {SMEM_PER_CTA} bytes",
            )
        raise _bad(
            "StreamConfig",
            "stages",
            stages,
            f"at most {(SMEM_PER_CTA - _smem(0, rows * chunk * e, op, config)) // tile} for {op.value} {dtype} "
            f"N={n}: {stages} stages of {tile} bytes plus staging need {smem} of {SMEM_PER_CTA} bytes of shared memory",
        )
    ctas = config.ctas_per_sm
    if ctas is None:
        # Two CTAs per SM when both fit: one CTA's reduction and staging barriers overlap the other's
        # work. Rows held over several chunks want the deepest ring one CTA can have instead.
        ctas = 2 if (chunks == 1 or op is Op.AXPBY) and 2 * (smem + SMEM_RESERVED_PER_CTA) <= SMEM_PER_SM else 1
    if ctas * (smem + SMEM_RESERVED_PER_CTA) > SMEM_PER_SM:
        raise _bad(
            "StreamConfig",
            "ctas_per_sm",
            ctas,
            f"at most {SMEM_PER_SM // (smem + SMEM_RESERVED_PER_CTA)}: each CTA needs {smem} bytes of shared memory",
        )
    return Plan(
        op,
        dtype,
        n,
        config,
        rows,
        chunk,
        chunks,
        box_inner,
        stages,
        ctas,
        warps_per_row,
        rows_per_warp,
        vectors,
        tuple(notes),
    )


def _smem(stages: int, tile_bytes: int, op: Op, config: StreamConfig) -> int:
    staging = config.store_stages * tile_bytes if config.store is Store.TMA else 0
    return stages * tile_bytes * op.operands + staging + SMEM_OVERHEAD


def with_stages(plan: Plan, stages: int) -> Plan:
    """The same shape with another ring depth (the benchmark's stages sweep)."""
    return make_plan(plan.op, plan.dtype, plan.n, replace(plan.config, stages=stages))
