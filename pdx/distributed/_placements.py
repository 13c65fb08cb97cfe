"""Paddle's placements (`Shard`, `Replicate`, `Partial`) and their one translation to PartitionSpecs.

A placements list is indexed by mesh dimension: `placements[i]` says what
mesh dimension i does with the tensor (split dimension `d` of it, hold a
copy, or hold an unreduced part). A `jax.sharding.PartitionSpec` is indexed
by tensor dimension: `spec[d]` names the mesh axes dimension d is split
over. `placements_to_spec` and `spec_to_placements` are the only code that
converts between the two; every pdx.distributed function goes through them,
exactly as `pdx.parallel.logical_to_spec` is the only code that turns
logical axis names into a spec.

Partial mesh dimensions do not appear in the tensor's spec: a partial value
is stored with one extra leading dimension per partial mesh dimension (the
per-device contributions, split over that mesh axis; see `PartialArray`).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from jax.sharding import PartitionSpec

__all__ = [
    "Partial",
    "Placement",
    "ReduceType",
    "Replicate",
    "Shard",
    "placements_to_spec",
    "spec_to_placements",
]


class ReduceType(enum.IntEnum):
    """How a `Partial` tensor's parts combine (Paddle's `dist.ReduceType`, same values)."""

    kRedSum = 0
    kRedMax = 1
    kRedMin = 2
    kRedProd = 3
    kRedAvg = 4
    kRedAny = 5
    kRedAll = 6


_REDUCE_NAMES = {ReduceType.kRedSum: "SUM", ReduceType.kRedMax: "MAX", ReduceType.kRedMin: "MIN",
                 ReduceType.kRedProd: "PROD", ReduceType.kRedAvg: "AVG", ReduceType.kRedAny: "ANY",
                 ReduceType.kRedAll: "ALL"}


class Placement:
    """Base of `Shard`, `Replicate` and `Partial` (Paddle's `dist.Placement`)."""

    def is_shard(self, dim: int | None = None) -> bool:
        return False

    def is_replicated(self) -> bool:
        return False

    def is_partial(self) -> bool:
        return False


class Shard(Placement):
    """Split tensor dimension `dim` over this mesh dimension.

    Args:
      dim: the tensor dimension (negative counts from the end).
      shard_order: when several mesh dimensions split the same tensor
        dimension, the order in which they do (lower first; default: mesh
        dimension order).

    Example:
      >>> import pdx.distributed as dist
      >>> dist.Shard(0)
      Shard(dim=0)
    """

    def __init__(self, dim: int, *, shard_order: int | None = None, split_factor: int = 1):
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise TypeError(f"Shard: dim must be an int; got {dim!r}")
        if split_factor != 1:
            raise ValueError(f"Shard: split_factor={split_factor} is not supported (only 1); "
                             "reshape the tensor so the split is a dimension of its own")
        self._dim = dim
        self._shard_order = shard_order

    def get_dim(self) -> int:
        return self._dim

    def get_co_shard_order(self) -> int | None:
        return self._shard_order

    def get_split_factor(self) -> int:
        return 1

    def is_shard(self, dim: int | None = None) -> bool:
        return dim is None or dim == self._dim

    def __eq__(self, other) -> bool:
        return isinstance(other, Shard) and other._dim == self._dim

    def __hash__(self) -> int:
        return hash(("Shard", self._dim))

    def __repr__(self) -> str:
        return f"Shard(dim={self._dim})"


class Replicate(Placement):
    """Every device of this mesh dimension holds the whole tensor.

    Example:
      >>> import pdx.distributed as dist
      >>> dist.Replicate() == dist.Replicate()
      True
    """

    def is_replicated(self) -> bool:
        return True

    def __eq__(self, other) -> bool:
        return isinstance(other, Replicate)

    def __hash__(self) -> int:
        return hash("Replicate")

    def __repr__(self) -> str:
        return "Replicate()"


class Partial(Placement):
    """Devices along this mesh dimension hold parts that `reduce_type` combines into the value.

    Example:
      >>> import pdx.distributed as dist
      >>> dist.Partial()
      Partial(reduce_type=SUM)
    """

    def __init__(self, reduce_type: ReduceType = ReduceType.kRedSum):
        try:
            self._reduce_type = ReduceType(int(reduce_type))
        except (TypeError, ValueError):
            raise ValueError(f"Partial: reduce_type must be a dist.ReduceType (kRedSum, kRedMax, ...); "
                             f"got {reduce_type!r}") from None

    def reduce_type(self) -> ReduceType:
        return self._reduce_type

    def is_partial(self) -> bool:
        return True

    def __eq__(self, other) -> bool:
        return isinstance(other, Partial) and other._reduce_type == self._reduce_type

    def __hash__(self) -> int:
        return hash(("Partial", int(self._reduce_type)))

    def __repr__(self) -> str:
        return f"Partial(reduce_type={_REDUCE_NAMES[self._reduce_type]})"


def check_placements(placements, ndim: int, mesh_shape: Sequence[int], dim_names: Sequence[str],
                     shape: Sequence[int] | None = None, what: str = "placements") -> list[Placement]:
    """`placements` as a list, validated against a tensor of rank `ndim` on a mesh (ValueError otherwise)."""
    if isinstance(placements, Placement) or not isinstance(placements, Sequence):
        raise TypeError(f"{what} must be a list of dist.Shard / dist.Replicate / dist.Partial, one per mesh "
                        f"dimension; got {placements!r}")
    placements = list(placements)
    if len(placements) != len(mesh_shape):
        raise ValueError(f"{what} has {len(placements)} entries {placements} but the mesh has {len(mesh_shape)} "
                         f"dimensions {list(dim_names)} (shape {list(mesh_shape)}); give one placement per mesh dimension")
    for i, p in enumerate(placements):
        if not isinstance(p, Placement):
            raise TypeError(f"{what}[{i}] must be a dist.Shard / dist.Replicate / dist.Partial; got {p!r}")
        if isinstance(p, Shard):
            if not -ndim <= p.get_dim() < ndim:
                raise ValueError(f"{what}[{i}] is Shard(dim={p.get_dim()}) but the tensor has {ndim} dimensions"
                                 + (f" (shape {list(shape)})" if shape is not None else "")
                                 + f"; the dim must be in [{-ndim}, {ndim})")
    if shape is not None:
        spec = placements_to_spec(placements, ndim, dim_names)
        sizes = dict(zip(dim_names, mesh_shape))
        for d, entry in enumerate(spec):
            axes = (entry,) if isinstance(entry, str) else tuple(entry or ())
            parts = 1
            for a in axes:
                parts *= sizes[a]
            if shape[d] % parts:
                raise ValueError(f"{what}: tensor dimension {d} of size {shape[d]} (shape {list(shape)}) is split "
                                 f"over mesh dimensions {list(axes)} of {parts} devices, which do not divide it; "
                                 "pick a placement whose mesh dimensions divide the size")
    return placements


def placements_to_spec(placements: Sequence[Placement], ndim: int, dim_names: Sequence[str]) -> PartitionSpec:
    """The PartitionSpec of the tensor's own dimensions (Partial mesh dims left out).

    Example:
      >>> import pdx.distributed as dist
      >>> from pdx.distributed._placements import placements_to_spec
      >>> tuple(placements_to_spec([dist.Shard(0), dist.Shard(1)], 2, ["dp", "mp"]))
      ('dp', 'mp')
    """
    per_dim: list[list[tuple[int, int, str]]] = [[] for _ in range(ndim)]
    for i, p in enumerate(placements):
        if isinstance(p, Shard):
            order = p.get_co_shard_order()
            per_dim[p.get_dim() % ndim].append((i if order is None else order, i, dim_names[i]))
    out = []
    for entries in per_dim:
        names = [name for _, _, name in sorted(entries)]
        out.append(None if not names else names[0] if len(names) == 1 else tuple(names))
    return PartitionSpec(*out)


def partial_dims(placements: Sequence[Placement]) -> tuple[tuple[int, ReduceType], ...]:
    """(mesh dim, reduce type) for each Partial placement, in mesh order."""
    return tuple((i, p.reduce_type()) for i, p in enumerate(placements) if isinstance(p, Partial))


def spec_to_placements(spec: PartitionSpec, ndim: int, dim_names: Sequence[str],
                       partial: Sequence[tuple[int, ReduceType]] = ()) -> list[Placement]:
    """The placements list a PartitionSpec (plus Partial mesh dims) describes.

    Example:
      >>> from jax.sharding import PartitionSpec as P
      >>> from pdx.distributed._placements import spec_to_placements
      >>> spec_to_placements(P(None, "mp"), 2, ["dp", "mp"])
      [Replicate(), Shard(dim=1)]
    """
    out: list[Placement] = [Replicate() for _ in dim_names]
    entries = list(spec) + [None] * (ndim - len(spec))
    for d, entry in enumerate(entries):
        axes = (entry,) if isinstance(entry, str) else tuple(entry or ())
        for order, axis in enumerate(axes):
            if axis in dim_names:
                i = list(dim_names).index(axis)
                out[i] = Shard(d, shard_order=order if len(axes) > 1 else None)
    for i, reduce_type in partial:
        out[i] = Partial(reduce_type)
    return out
