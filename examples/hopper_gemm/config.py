"""What one compiled GEMM kernel is: :class:`Problem`, what the caller's tensors fix (dtypes, B's layout,
the epilogue terms), and :class:`GemmConfig`, the kernel's choices (tile, cluster, schedule, raster,
stages from the shared-memory budget). Both are frozen; a bad value is a ``ValueError`` naming the field
and the allowed values.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Any

#: Hopper's opt-in shared memory per CTA (sm_90: 227 KiB).
SMEM_CAPACITY = 232_448
#: Bytes the kernel keeps for barriers and alignment padding besides the A/B ring and the staging buffers.
SMEM_RESERVED = 2_048
WARPGROUP_THREADS = 128
ELEMENT_BYTES = {"fp16": 2, "bf16": 2}
#: Elementwise activations the epilogue applies last (None: none); ``"gelu_tanh"`` is torch's
#: ``gelu(x, approximate="tanh")`` computed on the fp32 accumulator before rounding.
ACTIVATIONS = (None, "gelu_tanh")
#: The most A/B stages a default stage count takes. Small tiles stream better the deeper the ring (H100:
#: ping-pong 64×64 at 128×4096² ran 17.5 / 16.2 / 15.7 µs with 8 / 10 / 12 stages).
MAX_AB_STAGES = 16
#: The largest fp32 accumulator fragment per thread that still leaves room for the epilogue under 232 registers.
MAX_ACC_REGISTERS = 192
#: The A/B stages below which a default ``epi_n`` narrows (32 → 16 → 8 columns, each dividing the width)
#: where the smaller staging buffers free the shared memory for one more stage. NVIDIA H200, 2026-11-29,
#: swapped cooperative 256×160 on 18 projections: 3 stages with 32-column subtiles ran 0.81–1.00 of torch,
#: 4 with 16-column ones 0.93–1.02, 4–15 % faster on every shape; with 4 stages the widths 144, 152, 160
#: and 176 ran the same share of what their tile fill allows (within 2 %) where 160 and 176 with 3 had run
#: 4–5 % below it.
NARROW_SUBTILES_BELOW_STAGES = 4


class Schedule(str, enum.Enum):
    """How the two math warpgroups share the work."""

    COOPERATIVE = "cooperative"
    """Both warpgroups compute one tile (each half of its rows), then both run its epilogue."""
    PINGPONG = "pingpong"
    """Each warpgroup owns every other tile; an ordered barrier alternates MMA and epilogue turns, so
    one warpgroup's epilogue runs under the other's MMAs."""


def _bad(owner: str, name: str, value: object, allowed: str) -> ValueError:
    return ValueError(f"{owner}.{name} = {value!r} is invalid: allowed {allowed}")


def _int_in(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


@dataclass(frozen=True)
class Problem:
    """The static facts of a call that change the compiled code. ``b_major``: ``"k"`` for B (N, K) row-major
    (``nn.Linear``'s weight), ``"n"`` for B (K, N) row-major. ``bias``: a per-column vector is added;
    ``scaled``: the accumulator is multiplied by a run-time ``alpha`` (off: no multiply is emitted).
    ``c_major``: ``"n"`` for C (M, N) row-major, ``"m"`` for C stored column by column (M contiguous): what
    computing Cᵀ = B·Aᵀ into a row-major C's memory takes (:func:`hopper_gemm.api.swapped`).
    ``activation``: applied to each value after the scale and the bias (:data:`ACTIVATIONS`).
    ``a_rows_rotated_by``: C's row r is computed from A's row (r + this) mod M, a multiple of the tile's
    rows (the load warp rotates A's tile rows; a tensor-parallel GEMM whose rank reads its row blocks in a
    rotated order reads them in place)."""

    dtype: str = "bf16"
    b_major: str = "k"
    out_dtype: str | None = None
    bias: bool = False
    scaled: bool = False
    c_major: str = "n"
    activation: str | None = None
    a_rows_rotated_by: int = 0

    def __post_init__(self) -> None:
        if self.dtype not in ELEMENT_BYTES:
            raise _bad("Problem", "dtype", self.dtype, f"one of {sorted(ELEMENT_BYTES)}")
        if self.b_major not in ("k", "n"):
            raise _bad("Problem", "b_major", self.b_major, "'k' (B is (N, K)) or 'n' (B is (K, N))")
        if self.c_major not in ("n", "m"):
            raise _bad("Problem", "c_major", self.c_major, "'n' (C row-major) or 'm' (C column-major)")
        if self.c_major == "m" and self.bias:
            raise _bad(
                "Problem", "c_major", "m", "'n' with a bias (the bias term adds along N, the rows of a column-major C)"
            )
        if self.activation not in ACTIVATIONS:
            raise _bad("Problem", "activation", self.activation, f"one of {list(ACTIVATIONS)}")
        if not _int_in(self.a_rows_rotated_by, 0, 2**31 - 1):
            raise _bad("Problem", "a_rows_rotated_by", self.a_rows_rotated_by, "an int ≥ 0 (rows of A)")
        if self.out_dtype is None:
            object.__setattr__(self, "out_dtype", self.dtype)
        if self.out_dtype not in ELEMENT_BYTES:
            raise _bad("Problem", "out_dtype", self.out_dtype, f"one of {sorted(ELEMENT_BYTES)}")

    @property
    def element_bytes(self) -> int:
        return ELEMENT_BYTES[self.dtype]

    @property
    def out_bytes(self) -> int:
        return ELEMENT_BYTES[self.out_dtype]


@dataclass(frozen=True)
class GemmConfig:
    """The kernel's shape: CTA tile, cluster, schedule, tile order and pipeline depths.

    ``raster``: consecutive tiles walk ``"m"`` (down a band of ``group`` cluster columns) or ``"n"`` (along
    a band of ``group`` cluster rows). ``ab_stages``: None = as many as shared memory holds beside the
    staging buffers, at most :data:`MAX_AB_STAGES`; ``epi_stages``: None = 4 (cooperative) or 2 (ping-pong).
    ``epi_n``: columns of one staged subtile (one TMA store); None = 32, or 16 where 32 does not divide
    ``tile_n``, narrower where that adds an A/B stage to a ring of fewer than 4 (``epi_n_default``); also an
    odd multiple of 8 dividing the width, staged as plain rows (``epilogue_store.staging_layout``; a
    row-major C only: ``check_subtiles``).
    ``epi_batch``: subtiles staged per ``acquire`` of the staging ring (one wait and one barrier pair for
    that many buffers). ``pdl``: programmatic dependent launch (docs/gemm.md, "Extension points").
    ``wg_split``: how the cooperative schedule's two warpgroups share a tile: ``"m"`` (each takes half the
    rows, 64 or 128) or ``"n"`` (each takes every row, three m64 wgmmas for 192, and half the columns: tiles
    such as cuBLAS's 192×192 whose rows two warpgroups cannot halve into m64 blocks).
    """

    tile_m: int = 128
    tile_n: int = 256
    cluster_m: int = 2
    cluster_n: int = 1
    schedule: Schedule = Schedule.COOPERATIVE
    raster: str = "m"
    group: int = 8
    tile_k: int = 64
    ab_stages: int | None = None
    epi_stages: int | None = None
    epi_n: int | None = None
    epi_batch: int = 1
    pdl: bool = False
    wg_split: str = "m"

    def __post_init__(self) -> None:
        object.__setattr__(self, "schedule", _schedule(self.schedule))
        owner = "GemmConfig"
        if self.tile_k != 64:
            raise _bad(owner, "tile_k", self.tile_k, "64 (four 16-deep wgmma k-blocks per stage)")
        if not _int_in(self.tile_n, 64, 256) or self.tile_n % 8:
            # Any wgmma N extent: the widths between the powers of two give the tile count finer steps
            # against the SMs (docs/gemm-auto.md, "Tile widths between the powers of two").
            raise _bad(owner, "tile_n", self.tile_n, "a multiple of 8 in [64, 256] (a wgmma N extent)")
        if self.wg_split not in ("m", "n"):
            raise _bad(owner, "wg_split", self.wg_split, "'m' (the warpgroups halve the rows) or 'n' (the columns)")
        if self.wg_split == "n":
            if self.schedule is not Schedule.COOPERATIVE:
                raise _bad(owner, "wg_split", "n", "'m' with ping-pong (one warpgroup owns the tile)")
            if self.tile_n % 16:
                raise _bad(
                    owner, "tile_n", self.tile_n, "a multiple of 16 with wg_split='n' (each half a wgmma N extent)"
                )
            if self.tile_m not in (128, 192, 256):
                allowed = "128, 192 or 256 with wg_split='n' (every warpgroup issues tile_m / 64 m64 wgmmas)"
                raise _bad(owner, "tile_m", self.tile_m, allowed)
            if self.epi_batch != 1:
                raise _bad(
                    owner,
                    "epi_batch",
                    self.epi_batch,
                    "1 with wg_split='n' (each acquire takes one buffer per warpgroup)",
                )
        if self.epi_n is None:
            object.__setattr__(self, "epi_n", self.epi_n_default)
        if self.schedule is Schedule.COOPERATIVE and self.wg_split == "m" and self.tile_m not in (128, 256):
            allowed = "128 or 256 with the cooperative schedule (two warpgroups, 64 or 128 rows each), or 192 "
            allowed += "with wg_split='n'"
            raise _bad(owner, "tile_m", self.tile_m, allowed)
        if self.schedule is Schedule.PINGPONG and self.tile_m not in (64, 128, 192):
            raise _bad(owner, "tile_m", self.tile_m, "64, 128 or 192 with ping-pong (one warpgroup owns the tile)")
        if self.acc_registers > MAX_ACC_REGISTERS:
            raise ValueError(
                f"GemmConfig tile {self.tile_m}×{self.tile_n} with {self.schedule.value} is invalid: each math thread "
                f"would hold {self.tile_m}×{self.tile_n} / ({self.warpgroups_per_tile} warpgroup(s) × 128 threads) = "
                f"{self.acc_registers} fp32 accumulators; allowed at most {MAX_ACC_REGISTERS} (registers for the "
                "epilogue and addresses must fit under setmaxnreg 232)"
            )
        for name in ("cluster_m", "cluster_n"):
            value = getattr(self, name)
            if value not in (1, 2, 4):
                raise _bad(owner, name, value, "1, 2 or 4 (clusters of at most 8 CTAs: 4×1, 1×4, 2×2, 4×2, …)")
        if self.cluster_m * self.cluster_n > 8:
            raise _bad(owner, "cluster_m × cluster_n", self.cluster_m * self.cluster_n, "at most 8 CTAs (portable)")
        if self.raster not in ("m", "n"):
            raise _bad(owner, "raster", self.raster, "'m' or 'n'")
        if not _int_in(self.group, 1, 64):
            raise _bad(owner, "group", self.group, "an int in [1, 64] (cluster rows/columns per raster band)")
        odd_eights = _int_in(self.epi_n, 8, 256) and self.epi_n % 16 == 8  # plain rows: staging_layout
        if not (self.epi_n in (16, 32, 64) or odd_eights) or self.mma_tile[1] % self.epi_n:
            cols = f"tile_n = {self.tile_n}" if self.wg_split == "m" else f"a warpgroup's {self.mma_tile[1]} columns"
            allowed = f"None, 16, 32, 64 or an odd multiple of 8, dividing {cols} (columns per TMA store)"
            raise _bad(owner, "epi_n", self.epi_n, allowed)
        for name in ("ab_stages", "epi_stages"):
            value = getattr(self, name)
            if value is not None and not _int_in(value, 1, 16):
                raise _bad(owner, name, value, f"None (from the smem budget) or an int in [1, {MAX_AB_STAGES}]")
        buffers = self.staging_buffers
        if self.wg_split == "n" and buffers % 2:
            allowed = "an even count with wg_split='n' (each acquire takes one buffer per warpgroup)"
            raise _bad(owner, "epi_stages", self.epi_stages, allowed)
        if not _int_in(self.epi_batch, 1, buffers) or self.subtiles % self.epi_batch:
            allowed = f"an int in [1, {buffers}] (the staging buffers) dividing the tile's {self.subtiles} subtiles"
            raise _bad(owner, "epi_batch", self.epi_batch, allowed)
        if not isinstance(self.pdl, bool):
            raise _bad(owner, "pdl", self.pdl, "True or False")

    # --- derived shape -------------------------------------------------------------------------
    @property
    def warpgroups_per_tile(self) -> int:
        return 2 if self.schedule is Schedule.COOPERATIVE else 1

    @property
    def acc_registers(self) -> int:
        return self.tile_m * self.tile_n // (self.warpgroups_per_tile * WARPGROUP_THREADS)

    @property
    def cluster_size(self) -> int:
        return self.cluster_m * self.cluster_n

    @property
    def mma_tile(self) -> tuple[int, int]:
        """The (rows, columns) one tiled MMA covers: the tile, or a warpgroup's half of its columns
        (``wg_split="n"``)."""
        return (self.tile_m, self.tile_n // 2) if self.wg_split == "n" else (self.tile_m, self.tile_n)

    @property
    def epi_tile(self) -> tuple[int, int]:
        """The (rows, columns) of one staged output subtile: one TMA store."""
        rows = 64 * self.warpgroups_per_tile if self.wg_split == "m" else 64
        return (min(rows, self.tile_m), self.epi_n)

    @property
    def epi_n_default(self) -> int:
        """The ``epi_n`` that None stands for: :func:`default_epi_n` of the warpgroup's width, narrowed to
        16 or 8 columns where that adds an A/B stage to a default ring of fewer than
        :data:`NARROW_SUBTILES_BELOW_STAGES` (256×160: 32-column subtiles leave 3 stages, 16-column 4)."""
        width = self.mma_tile[1]
        columns = default_epi_n(width)
        for narrower in (16, 8) if self.ab_stages is None else ():
            if self._default_ab_stages(columns) >= NARROW_SUBTILES_BELOW_STAGES:
                break
            more = narrower < columns and width % narrower == 0
            if more and self._default_ab_stages(narrower) > self._default_ab_stages(columns):
                columns = narrower
        return columns

    def _default_ab_stages(self, epi_n: int) -> int:
        """:meth:`stages`' default A/B stage count with ``epi_n``-column subtiles (bf16: every dtype of
        ``ELEMENT_BYTES`` takes 2 bytes, in and out)."""
        return replace(self, epi_n=epi_n).stages(Problem("bf16"))[0]

    @property
    def subtiles(self) -> int:
        rows, cols = self.epi_tile
        return (self.tile_m // rows) * (self.tile_n // cols)

    @property
    def mma_subtiles(self) -> int:
        """The staged subtiles of the tile one tiled MMA covers (``mma_tile``): all of them, or with
        ``wg_split="n"`` a warpgroup's half, each stored beside the other half's twin."""
        rows, cols = self.epi_tile
        return (self.mma_tile[0] // rows) * (self.mma_tile[1] // cols)

    def cluster_grid(self, m: int, n: int) -> tuple[int, int]:
        """(cluster rows, cluster columns) of an M×N output, as ``TileOrder.cluster_grid`` counts them."""
        rows, cols = -(-m // self.tile_m), -(-n // self.tile_n)
        return -(-rows // self.cluster_m), -(-cols // self.cluster_n)

    def cluster_tiles(self, m: int, n: int) -> int:
        """The cluster-tiles of an M×N output, what the persistent clusters walk."""
        rows, cols = self.cluster_grid(m, n)
        return rows * cols

    def stage_bytes(self, problem: Problem) -> int:
        """Shared memory of one A/B stage."""
        return (self.tile_m + self.tile_n) * self.tile_k * problem.element_bytes

    def staging_bytes(self, problem: Problem) -> int:
        """Shared memory of one output staging buffer."""
        rows, cols = self.epi_tile
        return rows * cols * problem.out_bytes

    @property
    def staging_buffers(self) -> int:
        """The epilogue's staging buffers: ``epi_stages``, or 4 (cooperative) / 2 (ping-pong)."""
        return self.epi_stages if self.epi_stages is not None else 4 if self.schedule is Schedule.COOPERATIVE else 2

    def stages(self, problem: Problem, own_staging: bool = True) -> tuple[int, int]:
        """``(ab_stages, epi_stages)``: the given ones, or what fits the shared-memory budget (``own_staging``
        False: the staging buffers borrow the A ring's memory, a mode of ``gemm_modes``)."""
        epi = self.staging_buffers
        staging = epi * self.staging_bytes(problem) if own_staging else 0
        budget = SMEM_CAPACITY - SMEM_RESERVED - staging
        fit = budget // self.stage_bytes(problem)
        ab = self.ab_stages if self.ab_stages is not None else min(fit, MAX_AB_STAGES)
        if ab < 2 or ab > fit:
            raise ValueError(
                f"GemmConfig {self.tile_m}×{self.tile_n}×{self.tile_k} ({problem.dtype}): ab_stages = {ab} is invalid: "
                f"shared memory holds ({SMEM_CAPACITY} - {SMEM_RESERVED} reserved - {staging} B of staging) "
                f"// {self.stage_bytes(problem)} B per stage = {fit} stages; allowed 2..{fit}"
            )
        return ab, epi

    def with_(self, **changes: object) -> GemmConfig:
        """A copy with ``changes``; a new ``tile_n`` without an ``epi_n`` re-derives a default ``epi_n``."""
        reshaped = "tile_n" in changes or "wg_split" in changes
        if reshaped and "epi_n" not in changes and self.epi_n == self.epi_n_default:
            changes["epi_n"] = None
        return replace(self, **changes)

    def describe(self) -> str:
        return (
            f"{self.schedule.value} tile {self.tile_m}×{self.tile_n}×{self.tile_k} cluster {self.cluster_m}×"
            f"{self.cluster_n} raster {self.raster}/{self.group}"
            + (f" epilogue {self.epi_tile[0]}×{self.epi_n}" if self.epi_n != self.epi_n_default else "")
            + (f" {self.epi_batch} subtiles per acquire" if self.epi_batch > 1 else "")
            + (" PDL" if self.pdl else "")
            + (" warpgroups along N" if self.wg_split == "n" else "")
        )


def check_wg_split(config: GemmConfig, problem: Problem, comm: object = None, modes: object = None) -> None:
    """``ValueError`` unless the kernel can run ``config``'s warpgroups along N for ``problem``: each warpgroup
    reads its half of every B stage, which must start on a whole swizzle atom, and no comm role or mode but
    split-K (the others address the accumulators of a whole-width warpgroup; not built with halves)."""
    if config.wg_split != "n":
        return
    half = config.mma_tile[1]
    if problem.b_major == "n" and half % 64:
        raise ValueError(
            f"GemmConfig {config.tile_m}×{config.tile_n} with wg_split='n' and B N-major is invalid: a warpgroup's "
            f"half of B starts {half} columns in, inside a 64-column swizzle atom; allowed with B K-major, or a "
            "tile_n that is a multiple of 128"
        )
    if comm is not None or (modes is not None and not modes.split_k_alone):
        raise ValueError(
            "wg_split='n' runs on the plain kernel or with split-K alone: no comm role, stream-K, deferred "
            "epilogue or ring staging (they address a warpgroup's accumulators as whole-width rows)"
        )


def check_c_major(problem: Problem, comm: object = None, modes: Any = None, gate: object = None) -> None:
    """``ValueError`` unless the kernel can store ``problem``'s C column by column: on the plain kernel, or
    with modes whose stores all go through its store path (``modes.split_k_alone``). A comm
    role's tiles, the all-gather's rows and the other modes' stores address C's rows as contiguous."""
    if problem.c_major != "m":
        return
    if comm is not None or gate is not None or (modes is not None and not modes.split_k_alone):
        raise ValueError(
            "Problem.c_major = 'm' runs on the plain kernel or with split-K alone: no comm role, gate, stream-K, "
            "deferred epilogue or ring staging (they address C's rows as contiguous)"
        )


def check_subtiles(config: GemmConfig, problem: Problem) -> None:
    """``ValueError`` unless the staging layouts serve ``config``'s subtiles for ``problem``'s C: plain rows
    for a row-major C's subtiles an odd multiple of 8 wide (``epilogue_store.staging_layout``); a
    column-major C's swizzled layouts take 8, 16, 32 or 64 columns."""
    if problem.c_major == "m" and config.epi_n not in (8, 16, 32, 64):
        raise ValueError(
            f"GemmConfig.epi_n = {config.epi_n} is invalid with Problem.c_major = 'm': allowed 8, 16, 32 or 64 "
            "(a column-major C's staging takes subtiles of those widths; wider odd multiples of 8 stage as "
            "plain rows of a row-major C only)"
        )


def check_a_rows_rotated(config: GemmConfig, problem: Problem, modes: object = None, gate: object = None) -> None:
    """``ValueError`` unless the load warp can rotate A's tile rows as ``problem`` asks: by whole tile rows,
    on whole tiles only (a mode's split k-loops and the all-gather's gate address A's rows as they are)."""
    shift = problem.a_rows_rotated_by
    if shift == 0:
        return
    if shift % config.tile_m:
        raise ValueError(
            f"Problem.a_rows_rotated_by = {shift} is not a multiple of tile_m = {config.tile_m}: the load warp "
            "rotates A by whole tile rows"
        )
    if modes is not None or gate is not None:
        raise ValueError(
            "Problem.a_rows_rotated_by runs without a gate, stream-K, split-K, deferred epilogue or ring staging "
            "(they address A's rows as they are)"
        )


def check_terms_before_partials(problem: Problem, adds_partials: bool) -> None:
    """``ValueError`` where the epilogue would apply a bias or an activation to a partial sum that other
    ranks' partials are added to after it (the reduce-scatter's owner): the sum's terms would be wrong."""
    if adds_partials and (problem.bias or problem.activation is not None):
        raise ValueError(
            f"a bias ({problem.bias}) or activation ({problem.activation!r}) with a comm role that adds other "
            "ranks' partial sums after the epilogue's terms: apply them to the reduced rows instead"
        )


def default_epi_n(tile_n: int) -> int:
    """The staged subtile's columns for a ``tile_n`` that asks for none: 32, or else the widest of 16 and 8 that
    divides it."""
    return 32 if tile_n % 32 == 0 else 16 if tile_n % 16 == 0 else 8


def _schedule(value: object) -> Schedule:
    try:
        return Schedule(value)
    except ValueError:
        raise _bad("GemmConfig", "schedule", value, f"one of {[s.value for s in Schedule]}") from None
