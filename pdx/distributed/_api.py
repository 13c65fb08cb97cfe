"""Distributed tensors: `shard_tensor`, `reshard`, `PartialArray` and reading placements back.

A distributed tensor is a `jax.Array` whose sharding is a `NamedSharding`
on a ProcessMesh's `jax_mesh`; its placements are read back from that
sharding. `Shard`/`Replicate` need nothing else. A `Partial` value is not a
sharding JAX has, so it is stored honestly as a `PartialArray`: the
per-device contributions as one array with an extra leading dimension per
partial mesh dimension, split over that mesh axis (device k along the axis
holds contribution k). Reducing it (`reshard` to `Replicate`/`Shard`, or
`PartialArray.full_value()`) sums (or max/min/...) over that dimension;
under jit XLA turns that into an all-reduce or a reduce-scatter.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec

from pdx import _placement
from pdx.distributed._mesh import ProcessMesh, get_mesh
from pdx.distributed._placements import (
    Placement,
    ReduceType,
    Replicate,
    check_placements,
    partial_dims,
    placements_to_spec,
    spec_to_placements,
)

__all__ = [
    "PartialArray",
    "dtensor_from_fn",
    "get_placements",
    "get_process_mesh",
    "is_dist",
    "reshard",
    "shard_tensor",
    "unshard_dtensor",
]


@jax.tree_util.register_pytree_node_class
class PartialArray:
    """A tensor with `Partial` placements: per-device contributions awaiting a reduction.

    Attributes:
      contributions: an array of shape `(n_1, ..., n_k, *shape)`, one leading
        dimension per Partial mesh dimension (in mesh order, of that mesh
        dimension's size, split over it).
      process_mesh: the ProcessMesh.
      placements: the placements (Partial at the mesh dimensions above).

    Pass it through `dist.reshard` (or `full_value()`) before using it in
    ops: pdx has no implicit reshard before an op.

    Example:
      >>> import jax.numpy as jnp, pdx.distributed as dist
      >>> mesh = dist.ProcessMesh([0, 1], dim_names=["x"])
      >>> p = dist.shard_tensor(jnp.ones(4), mesh, [dist.Partial()])
      >>> p.contributions.shape, p.full_value().tolist()
      ((2, 4), [1.0, 1.0, 1.0, 1.0])
    """

    def __init__(self, contributions, process_mesh: ProcessMesh, placements):
        self.contributions = contributions
        self.process_mesh = process_mesh
        self.placements = list(placements)

    def tree_flatten(self):
        return (self.contributions,), (self.process_mesh, tuple(self.placements))

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(children[0], aux[0], aux[1])

    @property
    def _k(self) -> int:
        return len(partial_dims(self.placements))

    @property
    def shape(self) -> tuple:
        return tuple(self.contributions.shape[self._k:])

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def dtype(self):
        return self.contributions.dtype

    def full_value(self) -> jax.Array:
        """The reduced value (every Partial mesh dimension replicated)."""
        return reshard(self, self.process_mesh,
                       [Replicate() if p.is_partial() else p for p in self.placements])

    def numpy(self) -> np.ndarray:
        return np.asarray(self.full_value())

    def is_dist(self) -> bool:
        return True

    def __repr__(self) -> str:
        return (f"PartialArray(shape={list(self.shape)}, dtype={self.dtype}, placements={self.placements}, "
                f"process_mesh=[{self.process_mesh}])")


# -- placing values --------------------------------------------------------------------------------
def _traced(x) -> bool:
    return isinstance(x, jax.core.Tracer)


def _put(value, sharding: NamedSharding):
    """`value` on `sharding`: a constraint inside a trace, else a transfer (multi-process: each fills its shards)."""
    if _traced(value):
        return jax.lax.with_sharding_constraint(value, sharding)
    if sharding.is_fully_addressable:
        return jax.device_put(value, sharding)
    host = np.asarray(value)
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])


def _full_sharding(mesh: ProcessMesh, placements, ndim: int) -> NamedSharding:
    """Sharding of the stored array: leading Partial dims on their mesh axes, then the tensor's spec."""
    names = mesh.dim_names
    lead = [names[i] for i, _ in partial_dims(placements)]
    spec = placements_to_spec(placements, ndim, names)
    return NamedSharding(mesh.jax_mesh, PartitionSpec(*lead, *spec))


_IDENTITY = {ReduceType.kRedSum: 0, ReduceType.kRedProd: 1}  # others: every part holds the value


def _reduce(x, axis: int, reduce_type: ReduceType):
    fn = {ReduceType.kRedSum: jnp.sum, ReduceType.kRedMax: jnp.max, ReduceType.kRedMin: jnp.min,
          ReduceType.kRedProd: jnp.prod, ReduceType.kRedAvg: jnp.mean, ReduceType.kRedAny: jnp.any,
          ReduceType.kRedAll: jnp.all}[reduce_type]
    out = fn(x, axis=axis)
    return out.astype(x.dtype)


def _expand(x, size: int, reduce_type: ReduceType):
    """A new leading axis of `size` parts reducing to `x`: part 0 holds x, the rest the identity
    (sum, prod), or every part holds x (avg, max, min, any, all) -- Paddle's choice."""
    parts = jnp.broadcast_to(x, (size, *x.shape))
    if reduce_type in _IDENTITY:
        first = (jnp.arange(size) == 0).reshape((size,) + (1,) * x.ndim)
        parts = jnp.where(first, parts, jnp.asarray(_IDENTITY[reduce_type], x.dtype))
    return parts


def _convert_body(x, src: tuple, dst: tuple, sizes: tuple, sharding: NamedSharding):
    """Stored array with partial dims `src` -> stored array with partial dims `dst`, constrained to `sharding`.

    src, dst: ((mesh dim, ReduceType), ...) in mesh order; sizes: mesh dim sizes.
    """
    kept = [entry for entry in src if entry in dst]
    # reduce the partial dims that go away, last leading axis first
    for pos in reversed(range(len(src))):
        if src[pos] not in kept:
            x = _reduce(x, pos, src[pos][1])
    current = list(kept)
    for entry in dst:
        if entry in current:
            continue
        x = _expand(x, sizes[entry[0]], entry[1])
        current.insert(0, entry)
        order = sorted(range(len(current)), key=lambda i: current[i][0])
        lead = len(current)
        x = jnp.transpose(x, order + list(range(lead, x.ndim)))
        current = [current[i] for i in order]
    return jax.lax.with_sharding_constraint(x, sharding)


@functools.partial(jax.jit, static_argnames=("src", "dst", "sizes", "sharding"))
def _convert_jit(x, *, src, dst, sizes, sharding):
    return _convert_body(x, src, dst, sizes, sharding)


def _convert(x, src, dst, sizes, sharding):
    if _traced(x):
        return _convert_body(x, src, dst, sizes, sharding)
    return _convert_jit(x, src=src, dst=dst, sizes=sizes, sharding=sharding)


def _as_array(data, dtype=None):
    from pdx._dtype import convert_dtype

    if isinstance(data, nnx.Variable):
        data = data.get_value()
    if dtype is not None:
        return jnp.asarray(data, dtype=convert_dtype(dtype))
    if isinstance(data, (jax.Array, np.ndarray)) or _traced(data):
        return data if isinstance(data, jax.Array) or _traced(data) else jnp.asarray(data)
    import pdx

    return pdx.to_tensor(data)


def _check_mesh(mesh, what: str) -> ProcessMesh:
    if not isinstance(mesh, ProcessMesh):
        raise TypeError(f"{what}: mesh must be a dist.ProcessMesh; got {type(mesh).__name__}")
    return mesh


# -- public API -----------------------------------------------------------------------------------
def shard_tensor(data, mesh: ProcessMesh, placements, dtype=None, place=None, stop_gradient=None):
    """Place `data` on `mesh` as `placements` say (Paddle's `dist.shard_tensor`).

    `placements[i]` is what mesh dimension i does: `Shard(d)` splits tensor
    dimension d over it, `Replicate()` copies the tensor along it,
    `Partial()` makes the value the sum of per-device parts (part 0 holds
    the value, the others zeros; a `PartialArray` is returned).

    Given a parameter or buffer (`layer.weight`), it is placed in place and
    returned, with its placement recorded for the optimizer and TrainState
    (the mechanism `pdx.parallel.shard` uses), so Paddle's
    `layer.weight = dist.shard_tensor(layer.weight, mesh, [...])` works.

    Args:
      data: an array, numpy array, nested list, or an nnx Variable (Param/Buffer).
      mesh: the ProcessMesh.
      placements: one `Shard`/`Replicate`/`Partial` per mesh dimension.
      dtype: cast to this dtype first (not for Variables).
      place, stop_gradient: accepted for Paddle compatibility and ignored
        (placement is the mesh; pdx tensors have no gradient tape).

    Returns:
      A `jax.Array` with a `NamedSharding` on `mesh.jax_mesh` (a
      `PartialArray` when a placement is Partial; the Variable itself for a Variable).

    Example:
      >>> import jax.numpy as jnp, pdx.distributed as dist
      >>> mesh = dist.ProcessMesh([[0, 1, 2, 3], [4, 5, 6, 7]], dim_names=["dp", "mp"])
      >>> x = dist.shard_tensor(jnp.ones((4, 8)), mesh, [dist.Shard(0), dist.Shard(1)])
      >>> tuple(x.sharding.spec), dist.get_placements(x)
      (('dp', 'mp'), [Shard(dim=0), Shard(dim=1)])
    """
    mesh = _check_mesh(mesh, "shard_tensor")
    if isinstance(data, PartialArray):
        return reshard(data, mesh, placements)
    if isinstance(data, nnx.Variable):
        value = data.get_value()
        shape = tuple(value.shape)
        placements = check_placements(placements, len(shape), mesh.shape, mesh.dim_names, shape, "shard_tensor: placements")
        if partial_dims(placements):
            raise ValueError(f"shard_tensor: a parameter or buffer cannot be Partial (placements {placements}); "
                             "use Shard or Replicate")
        sharding = _full_sharding(mesh, placements, len(shape))
        grad = sharding if isinstance(data, nnx.Param) else None
        _placement.place(data, _placement.Placement(sharding, grad))
        data.set_value(_put(value, sharding))
        return data
    value = _as_array(data, dtype)
    shape = tuple(value.shape)
    placements = check_placements(placements, len(shape), mesh.shape, mesh.dim_names, shape, "shard_tensor: placements")
    dst = partial_dims(placements)
    if not dst:
        return _put(value, _full_sharding(mesh, placements, len(shape)))
    if not _traced(value):  # one device set for the conversion below
        value = _put(value, NamedSharding(mesh.jax_mesh, PartitionSpec()))
    out = _convert(value, (), dst, tuple(mesh.shape), _full_sharding(mesh, placements, len(shape)))
    return PartialArray(out, mesh, placements)


def dtensor_from_fn(fn, mesh: ProcessMesh, placements, *args, **kwargs):
    """`shard_tensor(fn(*args, **kwargs), mesh, placements)` (Paddle's `dist.dtensor_from_fn`).

    Example:
      >>> import pdx, pdx.distributed as dist
      >>> mesh = dist.ProcessMesh([0, 1], dim_names=["x"])
      >>> tuple(dist.dtensor_from_fn(pdx.ones, mesh, [dist.Shard(0)], shape=[4, 2]).sharding.spec)
      ('x', None)
    """
    return shard_tensor(fn(*args, **kwargs), mesh, placements)


def _source(x):
    """(stored array, ProcessMesh or None, placements or None) of a tensor."""
    if isinstance(x, PartialArray):
        return x.contributions, x.process_mesh, x.placements
    mesh, placements = get_process_mesh(x), get_placements(x)
    return x, mesh, placements


def reshard(dist_tensor, mesh: ProcessMesh, placements):
    """`dist_tensor` moved to `placements` on `mesh`, value unchanged (Paddle's `dist.reshard`).

    Any placements to any: Shard <-> Replicate (gather / slice),
    Shard(i) -> Shard(j) (all-to-all), Partial -> Replicate (sum over the
    mesh dimension: all-reduce), Partial -> Shard (reduce-scatter),
    Replicate/Shard -> Partial, and to another mesh. Inside a compiled
    function it is a sharding constraint XLA satisfies with collectives.

    Example:
      >>> import jax.numpy as jnp, pdx.distributed as dist
      >>> mesh = dist.ProcessMesh([0, 1], dim_names=["x"])
      >>> p = dist.shard_tensor(jnp.ones(4), mesh, [dist.Partial()])
      >>> dist.reshard(p, mesh, [dist.Shard(0)]).tolist()
      [1.0, 1.0, 1.0, 1.0]
    """
    mesh = _check_mesh(mesh, "reshard")
    if isinstance(dist_tensor, nnx.Variable):
        dist_tensor = dist_tensor.get_value()
    stored, src_mesh, src_placements = _source(dist_tensor)
    if not isinstance(dist_tensor, PartialArray):
        stored = _as_array(stored)
    src = partial_dims(src_placements) if src_placements is not None else ()
    shape = tuple(stored.shape[len(src):])
    placements = check_placements(placements, len(shape), mesh.shape, mesh.dim_names, shape, "reshard: placements")
    dst = partial_dims(placements)
    target = _full_sharding(mesh, placements, len(shape))
    same_devices = src_mesh is not None and (
        src_mesh.jax_mesh.devices.shape == mesh.jax_mesh.devices.shape
        and (src_mesh.jax_mesh.devices == mesh.jax_mesh.devices).all()
        and src_mesh.dim_names == mesh.dim_names)
    if same_devices or _traced(stored):
        if src_mesh is not None and not same_devices and src:
            raise ValueError("reshard: a Partial tensor cannot move to another mesh inside a compiled function; "
                             "reshard it to Replicate on its own mesh first")
        out = _put(stored, target) if not src and not dst else _convert(stored, src, dst, tuple(mesh.shape), target)
    else:
        if src:  # reduce on the source mesh, then move
            reduced = [Replicate() if p.is_partial() else p for p in src_placements]
            stored = _convert(stored, src, (), tuple(src_mesh.shape), _full_sharding(src_mesh, reduced, len(shape)))
        plain = [Replicate() if p.is_partial() else p for p in placements]
        stored = _put(stored, _full_sharding(mesh, plain, len(shape)))
        out = _convert(stored, (), dst, tuple(mesh.shape), target) if dst else stored
    return PartialArray(out, mesh, placements) if dst else out


def unshard_dtensor(dist_tensor):
    """The whole value, replicated on every device of its mesh (Paddle's `dist.unshard_dtensor`).

    Example:
      >>> import jax.numpy as jnp, pdx.distributed as dist
      >>> mesh = dist.ProcessMesh([0, 1], dim_names=["x"])
      >>> x = dist.shard_tensor(jnp.arange(4.0), mesh, [dist.Shard(0)])
      >>> dist.unshard_dtensor(x).sharding.is_fully_replicated
      True
    """
    if isinstance(dist_tensor, nnx.Variable):
        dist_tensor = dist_tensor.get_value()
    mesh = get_process_mesh(dist_tensor)
    if mesh is None:
        return dist_tensor
    return reshard(dist_tensor, mesh, [Replicate() for _ in mesh.dim_names])


def is_dist(x) -> bool:
    """Whether `x` is a distributed tensor (a NamedSharding array or a PartialArray)."""
    return isinstance(x, PartialArray) or isinstance(getattr(x, "sharding", None), NamedSharding)


@functools.lru_cache(maxsize=64)
def _mesh_of(jax_mesh) -> ProcessMesh:
    return ProcessMesh.from_jax_mesh(jax_mesh)


def get_process_mesh(x) -> ProcessMesh | None:
    """The ProcessMesh `x` lives on (Paddle's `x.process_mesh`), or None for a non-distributed tensor."""
    if isinstance(x, PartialArray):
        return x.process_mesh
    if isinstance(x, nnx.Variable):
        x = x.get_value()
    sharding = None if _traced(x) else getattr(x, "sharding", None)
    if not isinstance(sharding, NamedSharding):
        return None
    return _mesh_of(sharding.mesh)


def get_placements(x) -> list[Placement] | None:
    """`x`'s placements, one per mesh dimension (Paddle's `x.placements`), or None if not distributed.

    Read back from the array's `NamedSharding`: a mesh axis named in the
    spec at tensor dimension d is `Shard(d)`, any other `Replicate()`; a
    `PartialArray` carries its own. Inside a compiled function placements
    are XLA's to choose and read as None.

    Example:
      >>> import jax.numpy as jnp, pdx.distributed as dist
      >>> mesh = dist.ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])
      >>> dist.get_placements(dist.shard_tensor(jnp.ones((2, 4)), mesh, [dist.Replicate(), dist.Shard(1)]))
      [Replicate(), Shard(dim=1)]
    """
    if isinstance(x, PartialArray):
        return list(x.placements)
    if isinstance(x, nnx.Variable):
        x = x.get_value()
    mesh = get_process_mesh(x)
    if mesh is None:
        return None
    return spec_to_placements(x.sharding.spec, x.ndim, mesh.dim_names)


def default_mesh(what: str, mesh: ProcessMesh | None = None) -> ProcessMesh:
    """`mesh`, else the global mesh, else a ValueError naming `what`."""
    mesh = mesh if mesh is not None else get_mesh()
    if mesh is None:
        raise ValueError(f"{what}: no mesh given and no global mesh set; pass mesh= or call dist.set_mesh(mesh) first")
    return _check_mesh(mesh, what)

