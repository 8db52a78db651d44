"""Which output tiles a persistent kernel computes in which order, and which tiles form a *step*.

A persistent launch has one cluster per slot the GPU can keep resident; each cluster walks the linear
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
together. Its tiles form a rectangle of the output, and steps finish roughly in walk order, so a step is
the unit a copy engine ships (:mod:`pipes.comm.copy_engine`): :meth:`TileOrder.step` maps a tile to its
step (the comm warp counts the tile there), :meth:`TileOrder.step_tiles` a step to its rectangle (the
host plans the step's copy).

Every function here is plain ``+ - * // %`` and ``min``, so the same code runs on Python ints (the
host, the CPU tests, :mod:`pipes.check`) and on CuTe DSL integers inside a kernel: the load warp, the
math warpgroups, the comm warp and the copy engine's plan agree on the order by construction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def minimum(a: Any, b: Any) -> Any:
    """``min`` of two Python ints, or ``cutlass.min`` of DSL integers."""
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    import cutlass  # only for DSL values: the host side imports nothing heavy

    return cutlass.min(a, b)


def _max(a: Any, b: Any) -> Any:
    return a + b - minimum(a, b)


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

    def __post_init__(self) -> None:
        for name in ("cluster_m", "cluster_n", "group", "step_depth"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"TileOrder.{name} = {value!r} is invalid: allowed an int >= 1")
        if self.raster not in ("m", "n"):
            raise ValueError(f"TileOrder.raster = {self.raster!r} is invalid: allowed 'm' or 'n'")

    @classmethod
    def of(cls, config: Any, step_depth: int = 1) -> TileOrder:
        """The order of a kernel configuration with ``cluster_m``, ``cluster_n``, ``raster`` and ``group``."""
        return cls(config.cluster_m, config.cluster_n, config.raster, config.group, step_depth)

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
    width = minimum(across_total - first, group)
    inside = linear - band * per_band
    return first + inside % width, inside // width


__all__ = ["TileOrder", "ceil_div", "minimum"]
