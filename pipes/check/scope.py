"""Where agents run and how far a release reaches: CTA, cluster, GPU and system scope.

Every agent runs somewhere — a CTA of a cluster on a device, or the host — and every release (an
mbarrier arrive, a flag signal or store) has a scope. A release publishes what its agent knew only to
readers inside its scope: a ``.release.cta`` arrive on a peer CTA's barrier, or a GPU-scope ready flag
read by a host thread, orders nothing for them. The acquire side needs a scope that includes the
releaser too (``ld.acquire.gpu`` does not synchronise with the host).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..errors import invalid

HOST = "host"


class Scope(enum.IntEnum):
    """PTX memory scopes, narrowest first (``.cta``, ``.cluster``, ``.gpu``, ``.sys``)."""

    CTA = 0
    CLUSTER = 1
    GPU = 2
    SYSTEM = 3

    @property
    def ptx(self) -> str:
        return {0: ".cta", 1: ".cluster", 2: ".gpu", 3: ".sys"}[self.value]


@dataclass(frozen=True, order=True)
class Place:
    """Where an agent runs (or a barrier lives): ``device`` (an int, or ``"host"``), ``cluster``, ``cta``."""

    device: int | str = 0
    cluster: int = 0
    cta: int = 0

    def __post_init__(self) -> None:
        if self.device != HOST and (isinstance(self.device, bool) or not isinstance(self.device, int)):
            raise invalid("Place", "device", self.device, f"a device index or {HOST!r}")
        for name in ("cluster", "cta"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise invalid("Place", name, value, "an int >= 0")

    @property
    def on_host(self) -> bool:
        return self.device == HOST

    def __str__(self) -> str:
        if self.on_host:
            return "on the host"
        return f"in CTA {self.cta} of cluster {self.cluster} on device {self.device}"


def needed(a: Place, b: Place) -> Scope:
    """The narrowest scope that includes both places."""
    if a.on_host or b.on_host or a.device != b.device:
        return Scope.SYSTEM
    if a.cluster != b.cluster:
        return Scope.GPU
    if a.cta != b.cta:
        return Scope.CLUSTER
    return Scope.CTA


def reaches(scope: Scope, a: Place, b: Place) -> bool:
    """Whether an operation at ``a`` with ``scope`` includes ``b``."""
    return scope >= needed(a, b)


def default_release(place: Place) -> Scope:
    """The scope a flag operation gets when none is given: the device's (``.gpu``), the host's system."""
    return Scope.SYSTEM if place.on_host else Scope.GPU
