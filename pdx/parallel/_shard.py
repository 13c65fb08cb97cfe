"""Placing Layers, optimizers and activations on a HybridConfig's mesh.

Every parameter carries logical axis names (pdx.nn.axes); the config's rules
turn them into a PartitionSpec, and the ZeRO stage adds the "sharding" mesh
axis to optimizer state (stage >= 1), gradients (stage >= 2) and parameters
(stage 3). The chosen placement is recorded on each Variable (a
`pdx._placement.Placement`: the value's NamedSharding and, on parameters, the
gradient's) so the optimizer's step keeps new values where they belong
inside a compiled step (the constraint is what makes XLA emit
reduce-scatters and all-gathers).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np
from flax import nnx
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from pdx import _placement, _trace_context
from pdx._placement import Placement, active_mesh, constrain, logical_to_spec  # noqa: F401  (re-exported: the floor holds the rule)
from pdx.nn import axes
from pdx.parallel._config import HybridConfig


class ActiveMesh:
    """The mesh and config of the innermost `use_mesh`; unpacks as `mesh, config = active`.

    Part of the jit key of every compiled call inside `use_mesh`, so hashed once.
    """

    __slots__ = ("mesh", "config", "_hash")

    def __init__(self, mesh: Mesh, config: HybridConfig):
        self.mesh, self.config = mesh, config
        self._hash = hash((mesh, config))

    def __iter__(self):
        return iter((self.mesh, self.config))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return self is other or (isinstance(other, ActiveMesh) and self._hash == other._hash
                                 and self.mesh == other.mesh and self.config == other.config)

    def __repr__(self) -> str:
        return f"ActiveMesh(mesh={self.mesh!r}, config={self.config!r})"


# One object per distinct (mesh, config): a jit key compares each call's with the cached one,
# and the identical object compares without looking inside.
_INTERNED: dict[ActiveMesh, ActiveMesh] = {}


_MESH = _trace_context.PARALLEL_MESH


def zero_spec(spec: PartitionSpec, shape, mesh: Mesh, logical_names=None, *, axis: str = "sharding") -> PartitionSpec:
    """`spec` with the ZeRO mesh `axis` ("sharding") added on the largest free dimension it divides.

    A stacked-layers dimension (logical name "layers") is skipped: split there,
    every step of a scan over the layers would gather a whole layer.
    """
    degree = mesh.shape.get(axis, 1)
    entries = list(spec) + [None] * (len(shape) - len(spec))
    flat = [a for e in entries for a in ((e,) if isinstance(e, str) else (e or ()))]
    if degree == 1 or axis in flat:
        return PartitionSpec(*entries)
    names = tuple(logical_names) if logical_names is not None else (None,) * len(shape)
    free = [i for i, e in enumerate(entries)
            if e is None and shape[i] % degree == 0 and names[i] != axes.LAYERS]
    if not free:
        return PartitionSpec(*entries)
    dim = max(free, key=lambda i: shape[i])
    entries[dim] = axis
    return PartitionSpec(*entries)


class ZeroPlacement(NamedTuple):
    """Where one parameter's values go under a ZeRO stage (PartitionSpecs)."""

    param: PartitionSpec   # the parameter itself (split at stage 3: FSDP)
    grad: PartitionSpec    # its gradient (reduce-scattered from stage 2)
    state: PartitionSpec   # optimizer state shaped like it: moments, master weights (split from stage 1)


def zero_placement(spec: PartitionSpec, shape, mesh: Mesh, logical_names=None, *, stage: int,
                   axis: str = "sharding") -> ZeroPlacement:
    """The ZeRO rule, the one place it is written: what stage `stage` splits over `axis`.

    Stage 1 splits optimizer state, stage 2 also gradients, stage 3 also the
    parameters, each on the dimension `zero_spec` picks; `spec` is the
    parameter's placement without ZeRO (from its logical names).
    `pdx.parallel.shard`, `pdx.train.state_shardings` and
    `pdx.distributed.shard_optimizer` all place by it.

    Example:
      >>> import jax, pdx
      >>> from jax.sharding import PartitionSpec as P
      >>> mesh = pdx.parallel.HybridConfig(sharding_degree=2).mesh(jax.devices()[:2])
      >>> pdx.parallel.zero_placement(P(None, None), (8, 4), mesh, stage=2)
      ZeroPlacement(param=P(None, None), grad=P('sharding', None), state=P('sharding', None))
    """
    if stage not in (0, 1, 2, 3):
        raise ValueError(f"zero_placement: stage must be 0, 1, 2 or 3; got {stage!r}")
    zero = zero_spec(spec, shape, mesh, logical_names, axis=axis)
    param = zero if stage == 3 else spec
    return ZeroPlacement(param=param, grad=zero if stage >= 2 else param, state=zero if stage >= 1 else spec)


def _variables(obj):
    """Every nnx.Variable reachable from obj, once."""
    seen, out = set(), []
    for _, node in nnx.iter_graph(obj):
        if isinstance(node, nnx.Variable) and id(node) not in seen:
            seen.add(id(node))
            out.append(node)
    return out


def _place(var: nnx.Variable, sharding: NamedSharding, grad_sharding: NamedSharding | None = None) -> None:
    _placement.place(var, Placement(sharding, grad_sharding))
    value = var.get_value()
    if sharding.is_fully_addressable:
        var.set_value(jax.device_put(value, sharding))
    else:  # a multi-process mesh: every process holds the same value and fills its own shards
        typed_key = jax.dtypes.issubdtype(value.dtype, jax.dtypes.prng_key)
        host = np.asarray(jax.random.key_data(value) if typed_key else value)
        if typed_key:
            sharding = NamedSharding(sharding.mesh, PartitionSpec())  # keys stay whole on every device
            data = jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])
            var.set_value(jax.random.wrap_key_data(data, impl=jax.random.key_impl(value)))
        else:
            var.set_value(jax.make_array_from_callback(host.shape, sharding, lambda index: host[index]))


def shard(target, config: HybridConfig, *, mesh: Mesh | None = None):
    """Place a Layer, an optimizer (or a list of them) on `config`'s mesh, in place.

    Parameters and buffers follow their logical axis names through the
    config's rules; optimizer state (moments, master weights) is also split
    over the ZeRO "sharding" axis at stage >= 1, gradients at stage >= 2
    (reduce-scatter instead of all-reduce), parameters at stage 3 (FSDP).
    Shard the model before the optimizer or together with it.

    Args:
      target: a `pdx.nn.Layer`, a pdx optimizer, or a list/tuple of them.
      config: the HybridConfig.
      mesh: the mesh to use (default `config.mesh()`).

    Returns:
      `target`, placed.

    Example:
      >>> import pdx
      >>> net = pdx.nn.Linear(8, 16)
      >>> cfg = pdx.parallel.HybridConfig(mp_degree=2)
      >>> _ = pdx.parallel.shard(net, cfg)
      >>> net.weight.get_value().sharding.spec
      PartitionSpec(None, 'mp')
    """
    from pdx.optimizer import Optimizer

    if not isinstance(config, HybridConfig):
        raise TypeError(f"shard: config must be a pdx.parallel.HybridConfig; got {type(config).__name__}")
    mesh = config.mesh() if mesh is None else mesh
    rules = config.axis_rules()
    stage = config.sharding_stage
    objs = list(target) if isinstance(target, (list, tuple)) else [target]
    for obj in objs:
        if not isinstance(obj, (nnx.Module, Optimizer)):
            raise TypeError(f"shard: expected a pdx.nn.Layer or a pdx optimizer; got {type(obj).__name__}. "
                            "Place plain arrays with jax.device_put(x, pdx.parallel.named_sharding(...))")
        for var in _variables(obj):
            value = var.get_value()
            if not hasattr(value, "shape"):
                continue
            shape = tuple(value.shape)
            names = _placement.logical_axes(var)
            spec = logical_to_spec(names, shape, mesh, rules)
            zero = zero_placement(spec, shape, mesh, names, stage=stage)
            if isinstance(var, nnx.OptArray):  # optimizer moments and master weights
                _place(var, NamedSharding(mesh, zero.state))
            elif isinstance(var, nnx.Param):
                _place(var, NamedSharding(mesh, zero.param), NamedSharding(mesh, zero.grad))
            else:
                _place(var, NamedSharding(mesh, spec))
    return target


class _MeshScope:
    def __init__(self, mesh, config):
        self._mesh = mesh
        active = ActiveMesh(mesh, config)
        self._scope = _MESH.set(_INTERNED.setdefault(active, active))

    def __enter__(self):
        self._scope.__enter__()
        return self._mesh

    def __exit__(self, *exc):
        return self._scope.__exit__(*exc)


def use_mesh(config: HybridConfig, mesh: Mesh | None = None) -> _MeshScope:
    """Context manager making `config` (and its mesh) the one `constrain` uses.

    The scope is a trace-context setting ("pdx.parallel.mesh",
    `pdx/_trace_context.py`): a function compiled outside the block (with
    `pdx.jit` or `jax.jit`) and called inside it traces once more, with the
    constraints of this mesh; the scope holds on the thread that entered it.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> cfg = pdx.parallel.HybridConfig()
      >>> with pdx.parallel.use_mesh(cfg):
      ...     y = pdx.parallel.constrain(jnp.ones((8, 4)), ("batch", "embed"))
      >>> y.shape
      (8, 4)
    """
    return _MeshScope(config.mesh() if mesh is None else mesh, config)


def named_sharding(logical_names, shape, config: HybridConfig, mesh: Mesh | None = None) -> NamedSharding:
    """The NamedSharding an array of `shape` with `logical_names` gets under `config`.

    Example: `jax.device_put(batch, named_sharding(("batch", None), batch.shape, cfg))`.
    """
    mesh = config.mesh() if mesh is None else mesh
    return NamedSharding(mesh, logical_to_spec(logical_names, shape, mesh, config.axis_rules()))
