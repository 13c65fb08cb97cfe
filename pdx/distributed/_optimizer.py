"""`shard_optimizer` and the ZeRO stages `ShardingStage1/2/3` on a ProcessMesh dimension."""

from __future__ import annotations

from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec

from pdx import _placement
from pdx.distributed._api import _put, default_mesh, get_process_mesh
from pdx.distributed._mesh import ProcessMesh
from pdx.distributed._placements import Replicate
from pdx.parallel import zero_placement

__all__ = ["ShardingStage1", "ShardingStage2", "ShardingStage3", "shard_optimizer"]


class _ShardingStage:
    stage = 0

    def __init__(self, sharding_mesh_dim: int | str = "dp", mesh: ProcessMesh | None = None):
        if mesh is not None and not isinstance(mesh, ProcessMesh):
            raise TypeError(f"{type(self).__name__}: mesh must be a dist.ProcessMesh; got {type(mesh).__name__}")
        self.sharding_mesh_dim = sharding_mesh_dim
        self._mesh = mesh

    def axis(self, mesh: ProcessMesh) -> str:
        """The mesh axis name the state is split over (ValueError naming the mesh's dims)."""
        return mesh.dim_names[mesh._dim_index(self.sharding_mesh_dim)]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(sharding_mesh_dim={self.sharding_mesh_dim!r})"


class ShardingStage1(_ShardingStage):
    """ZeRO stage 1: optimizer state (moments, master weights) split over `sharding_mesh_dim`.

    The same split `pdx.parallel.HybridConfig(sharding_stage=1)` makes over
    its "sharding" axis (`pdx.parallel.zero_placement`), here over a named mesh
    dimension (usually "dp").

    Example: `opt = dist.shard_optimizer(opt, dist.ShardingStage1("dp", mesh))`.
    """

    stage = 1


class ShardingStage2(_ShardingStage):
    """ZeRO stage 2: stage 1 plus gradients reduce-scattered over `sharding_mesh_dim`."""

    stage = 2


class ShardingStage3(_ShardingStage):
    """ZeRO stage 3 (FSDP): stage 2 plus parameters split over `sharding_mesh_dim`, gathered for compute."""

    stage = 3


def _param_of(path, by_name: dict):
    """The name of the parameter an optimizer-state Variable at `path` belongs to (or None)."""
    for key in reversed(path):
        if isinstance(key, str) and key in by_name:
            return key
    return None


def shard_optimizer(optimizer, shard_fn=None, gradient_accumulation_steps: int = 1):
    """Place `optimizer`'s state like its (already placed) parameters (Paddle's `dist.shard_optimizer`).

    Call it after the model's parameters are placed (`shard_layer`,
    `shard_tensor`, `parallelize`). Each moment / master weight follows its
    parameter's placement; with `shard_fn=ShardingStage1/2/3(dim, mesh)`
    it is also split over mesh dimension `dim` (stage 2: gradients too,
    stage 3: parameters too), exactly as `pdx.parallel`'s ZeRO stages. A
    callable `shard_fn(key, param, state) -> placed state` places each state
    array itself (`key`: its dotted path in the optimizer state).

    Returns:
      `optimizer` (placed in place; its `step()` keeps the placements).

    Example:
      >>> import jax, pdx, pdx.distributed as dist
      >>> mesh = dist.ProcessMesh([0, 1], dim_names=["dp"])
      >>> net = dist.shard_layer(pdx.nn.Linear(4, 8), mesh)
      >>> opt = dist.shard_optimizer(pdx.optimizer.Adam(1e-3, parameters=net), dist.ShardingStage1("dp", mesh))
      >>> [dist.get_placements(s) for s in jax.tree.leaves(opt.opt_state) if s.ndim == 2]
      [[Shard(dim=1)], [Shard(dim=1)]]
    """
    if not callable(getattr(optimizer, "trainable_parameters", None)):
        raise TypeError(f"shard_optimizer: expected a pdx optimizer; got {type(optimizer).__name__}")
    if not isinstance(gradient_accumulation_steps, int) or gradient_accumulation_steps < 1:
        raise ValueError(f"shard_optimizer: gradient_accumulation_steps must be a positive int; got {gradient_accumulation_steps!r}")
    if gradient_accumulation_steps != 1:
        raise NotImplementedError("shard_optimizer: gradient_accumulation_steps > 1 is not supported; accumulate "
                                  "gradients in the train step (pdx.parallel pipelines take accumulate_steps)")
    stage = shard_fn if isinstance(shard_fn, _ShardingStage) else None
    if shard_fn is not None and stage is None and not callable(shard_fn):
        raise TypeError(f"shard_optimizer: shard_fn must be a ShardingStage1/2/3 or a callable; got {shard_fn!r}")
    params = dict(optimizer.trainable_parameters())
    unplaced = [n for n, v in params.items() if _placement.placement_of(v) is None]
    if unplaced and stage is None:
        raise ValueError(f"shard_optimizer: parameters {unplaced[:4]}{'...' if len(unplaced) > 4 else ''} are not "
                         "placed; shard the model first (dist.shard_layer / dist.shard_tensor / dist.parallelize)")
    if unplaced:
        from pdx.distributed._api import shard_tensor

        mesh = default_mesh("shard_optimizer", stage._mesh)
        for n in unplaced:
            shard_tensor(params[n], mesh, [Replicate() for _ in mesh.dim_names])

    state_specs = {}
    for name, var in params.items():
        placement = _placement.placement_of(var)
        jax_mesh = placement.value.mesh
        if stage is None:
            state_specs[name] = placement.value
            continue
        mesh = stage._mesh if stage._mesh is not None else ProcessMesh.from_jax_mesh(jax_mesh)
        axis = stage.axis(mesh)
        shape = tuple(var.get_value().shape)
        names = _placement.logical_axes(var)
        own = placement.value.spec if stage.stage < 3 or placement.grad is None else placement.grad.spec
        zero = zero_placement(own, shape, jax_mesh, names, stage=stage.stage, axis=axis)
        value = NamedSharding(jax_mesh, zero.param)
        _placement.place(var, _placement.Placement(value, NamedSharding(jax_mesh, zero.grad)))
        var.set_value(_put(var.get_value(), value))
        state_specs[name] = NamedSharding(jax_mesh, zero.state)

    default = next(iter(state_specs.values()), None)
    for path, node in nnx.iter_graph(optimizer):
        if not isinstance(node, nnx.Variable) or isinstance(node, nnx.Param):
            continue
        value = node.get_value()
        if not hasattr(value, "shape"):
            continue
        name = _param_of(path, params)
        if name is not None and tuple(value.shape) == tuple(params[name].get_value().shape):
            if stage is None and shard_fn is not None:
                key = ".".join(str(k) for k in path)
                placed = shard_fn(key, params[name], value)
                mesh = get_process_mesh(placed)
                if mesh is None:
                    raise ValueError(f"shard_optimizer: shard_fn returned an unplaced array for {key!r}; "
                                     "return dist.shard_tensor(state, mesh, placements)")
                sharding = placed.sharding
            else:
                sharding = state_specs[name]
        elif default is not None:
            sharding = NamedSharding(default.mesh, PartitionSpec())
        else:
            continue
        _placement.place(node, _placement.Placement(sharding))
        node.set_value(_put(value, sharding))
    return optimizer

