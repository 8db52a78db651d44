"""Persistent tile order with grouped rasterization: which output tile a CTA computes next.

The launch has one cluster per slot the GPU can keep resident; each cluster walks the linear
*cluster-tile* indices ``c = cluster_id, cluster_id + clusters_launched, ...`` and maps each to a
(cluster row, cluster column) of the output. Consecutive indices run concurrently on the GPU, so the
map keeps them in a compact block (their A rows and B columns are shared in L2): the output's
cluster-tiles are cut into *bands* of ``group`` cluster columns (``raster="m"``) or rows
(``raster="n"``); inside a band the index walks across the band first, then down::

    raster "m", group 2, 3×4 cluster tiles       0  1 | 6  7
                                                 2  3 | 8  9
                                                 4  5 | 10 11

A CTA's own tile is its cluster's tile times the cluster shape plus its place in the cluster.

A *step* is one row of a band (``raster="m"``) or one column (``raster="n"``): the ``group``
consecutive cluster-tiles the walk takes before it moves on; with ``step_depth`` d, d such rows (columns)
together. Its tiles form a rectangle of the output,
and steps finish roughly in walk order, so a step is the unit a copy engine ships
(``tile_comm.copy_engine``): ``step`` maps a tile to its step, ``step_tiles`` a step to its rectangle.
Every function here is plain ``+ - * // %`` and ``min``, so the same code runs on Python ints (the
CPU tests prove every tile is visited once) and on CuTe DSL integers inside the kernel. The load
warp and the math warpgroups call the same functions, so they agree on the order by construction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cutlass


def _min(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    return cutlass.min(a, b)


def ceil_div(a: Any, b: int) -> Any:
    return (a + b - 1) // b


@dataclass(frozen=True)
class TileOrder:
    """Static part of the order: the cluster shape, the raster direction and the band width."""

    cluster_m: int
    cluster_n: int
    raster: str = "m"
    group: int = 8
    step_depth: int = 1  # band rows (raster "m") or columns ("n") per step: the walk ignores it

    def cluster_grid(self, tiles_m: Any, tiles_n: Any) -> tuple[Any, Any]:
        """Cluster-tiles along M and N (a cluster may hang over the edge: its outside CTAs compute
        tiles that TMA loads as zeros and stores nowhere, so they keep multicast uniform)."""
        return ceil_div(tiles_m, self.cluster_m), ceil_div(tiles_n, self.cluster_n)

    def cluster_tile(self, linear: Any, clusters_m: Any, clusters_n: Any) -> tuple[Any, Any]:
        """(cluster row, cluster column) of the ``linear``-th cluster-tile."""
        if self.raster == "m":
            across, along = _band_walk(linear, clusters_n, clusters_m, self.group)
            return along, across
        across, along = _band_walk(linear, clusters_m, clusters_n, self.group)
        return across, along

    def cta_tile(self, linear: Any, clusters_m: Any, clusters_n: Any, cta_m: Any, cta_n: Any) -> tuple[Any, Any]:
        """(tile row, tile column) the CTA at (cta_m, cta_n) of its cluster computes for cluster-tile ``linear``."""
        cm, cn = self.cluster_tile(linear, clusters_m, clusters_n)
        return cm * self.cluster_m + cta_m, cn * self.cluster_n + cta_n

    @classmethod
    def of(cls, config: Any) -> TileOrder:
        """The order of a ``GemmConfig``."""
        return cls(config.cluster_m, config.cluster_n, config.raster, config.group)

    def steps(self, clusters_m: Any, clusters_n: Any) -> Any:
        """How many steps the walk takes (bands × steps per band)."""
        if self.raster == "m":
            return ceil_div(clusters_n, self.group) * ceil_div(clusters_m, self.step_depth)
        return ceil_div(clusters_m, self.group) * ceil_div(clusters_n, self.step_depth)

    def step(self, tm: Any, tn: Any, clusters_m: Any, clusters_n: Any) -> Any:
        """The step that computes tile (tm, tn): steps are numbered in walk order."""
        cm, cn = tm // self.cluster_m, tn // self.cluster_n
        d = self.step_depth
        if self.raster == "m":
            return (cn // self.group) * ceil_div(clusters_m, d) + cm // d
        return (cm // self.group) * ceil_div(clusters_n, d) + cn // d

    def step_tiles(self, step: int, tiles_m: int, tiles_n: int) -> tuple[range, range]:
        """(tile rows, tile columns) of ``step``, clipped to the output (host side)."""
        clusters_m, clusters_n = self.cluster_grid(tiles_m, tiles_n)
        d = self.step_depth
        if self.raster == "m":
            band, row = divmod(step, ceil_div(clusters_m, d))
            rows = (row * d, min(row * d + d, clusters_m))
            cols = (band * self.group, min((band + 1) * self.group, clusters_n))
        else:
            band, col = divmod(step, ceil_div(clusters_n, d))
            rows = (band * self.group, min((band + 1) * self.group, clusters_m))
            cols = (col * d, min(col * d + d, clusters_n))
        return (
            range(rows[0] * self.cluster_m, min(rows[1] * self.cluster_m, tiles_m)),
            range(cols[0] * self.cluster_n, min(cols[1] * self.cluster_n, tiles_n)),
        )


def _band_walk(linear: Any, across_total: Any, along_total: Any, group: int) -> tuple[Any, Any]:
    """Position ``linear`` in bands ``group`` wide across ``across_total``, each ``along_total`` long.

    Returns ``(across, along)``: the walk goes across the band first (``width`` steps, the last band
    may be narrower), then one step along.
    """
    per_band = group * along_total
    band = linear // per_band
    first = band * group
    width = _min(across_total - first, group)
    inside = linear - band * per_band
    return first + inside % width, inside // width


@dataclass(frozen=True)
class StreamKSplit:
    """Which cluster computes which k-tiles of which cluster-tile, with stream-K after whole waves.

    With ``T`` cluster-tiles on ``C`` clusters and ``T mod C = R > 0`` (and ``T > C``), the last wave runs
    ``R`` of ``C`` clusters while the others idle: 3.88 waves at 4096³ (256×128 tiles, 66 clusters), 8.73
    at 6144³. Here the first ``T − C − R`` tiles are walked whole (data-parallel, as without stream-K),
    and the last ``C + R`` are laid end to end as one stream of k-tiles cut into ``C`` equal shares
    (``share`` = ⌈(C + R)·k_tiles / C⌉ ≥ k_tiles), cluster ``c`` taking k-tiles ``[c·share, (c+1)·share)``.
    A share is at least a tile, so a tile spans at most two clusters: the one whose share *starts* inside
    it computes its last k-tiles first and leaves a partial sum; the one whose share *ends* inside it
    (its k-tile 0, ``kb == 0``) computes its first k-tiles last, adds the partial and stores the tile.
    Every wait is for another cluster's first unit, which waits for nothing: no cycle.

    Plain ``+ - * //`` and ``min`` on ints or CuTe DSL integers, like :class:`TileOrder`: the load warp,
    the math warpgroups and the CPU tests run the same code.
    """

    dp_tiles: Any  # cluster-tiles walked whole, first
    sk_tiles: Any  # cluster-tiles split, after them
    share: Any  # k-tiles per cluster in the split phase (0: no split)

    @classmethod
    def of(cls, cluster_tiles: Any, clusters: Any, k_tiles: Any) -> StreamKSplit:
        full = cluster_tiles // clusters
        rem = cluster_tiles - full * clusters
        split = _min(rem, 1) * _min(full, 1)  # 1 when the waves are not whole and there is one at least
        sk_tiles = split * (clusters + rem)
        share = ceil_div(sk_tiles * k_tiles, clusters)
        return cls(cluster_tiles - sk_tiles, sk_tiles, share)

    def stream(self, cluster_id: Any, k_tiles: Any) -> tuple[Any, Any]:
        """``[begin, end)`` of this cluster's k-tiles in the split phase's stream (empty without a split)."""
        begin = cluster_id * self.share
        return begin, _min(self.sk_tiles * k_tiles, begin + self.share)

    @staticmethod
    def unit(at: Any, end: Any, k_tiles: Any) -> tuple[Any, Any, Any]:
        """The unit starting at stream position ``at`` (< ``end``): (split tile, first k-tile, end k-tile)."""
        tile = at // k_tiles
        kb = at - tile * k_tiles
        return tile, kb, _min(k_tiles, kb + end - at)

    def partials(self, tile: Any, k_tiles: Any) -> Any:
        """How many partial sums the storing unit of split ``tile`` adds: 1 if the tile spans two shares."""
        first = tile * k_tiles
        return (first + k_tiles - 1) // self.share - first // self.share
