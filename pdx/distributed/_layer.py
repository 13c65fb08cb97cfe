"""Layers, data and local functions on a mesh: `shard_layer`, `shard_dataloader`, `local_map`."""

from __future__ import annotations

from collections.abc import Mapping

import jax
import numpy as np
from flax import nnx
from jax.sharding import PartitionSpec

from pdx import _placement
from pdx.distributed import _hooks
from pdx.distributed._api import PartialArray, default_mesh, get_placements, reshard, shard_tensor
from pdx.distributed._mesh import ProcessMesh
from pdx.nn import Layer
from pdx.distributed._placements import Replicate, Shard, check_placements, partial_dims, placements_to_spec

__all__ = ["ShardDataloader", "local_map", "shard_dataloader", "shard_layer", "shard_scaler"]


def _variables(layer):
    seen, out = set(), []
    for _, node in nnx.iter_graph(layer):
        if isinstance(node, nnx.Variable) and id(node) not in seen and hasattr(node.get_value(), "shape"):
            seen.add(id(node))
            out.append(node)
    return out


def _on_mesh(var, mesh: ProcessMesh) -> bool:
    placement = _placement.placement_of(var)
    return placement is not None and placement.value.mesh == mesh.jax_mesh


def replicate_rest(layer, mesh: ProcessMesh) -> None:
    """Place every Variable of `layer` that has no placement on `mesh` as Replicate there."""
    for var in _variables(layer):
        if not _on_mesh(var, mesh):
            shard_tensor(var, mesh, [Replicate() for _ in mesh.dim_names])


def shard_layer(layer, process_mesh: ProcessMesh, shard_fn=None, input_fn=None, output_fn=None):
    """Place `layer`'s parameters and buffers on `process_mesh` (Paddle's `dist.shard_layer`).

    `shard_fn(name, sublayer, process_mesh)` is called for every sublayer
    (the layer itself as ""), typically assigning
    `sublayer.weight = dist.shard_tensor(sublayer.weight, mesh, [...])`;
    every Variable it leaves unplaced is replicated over the mesh. The
    placements are recorded on the Variables (the mechanism
    `pdx.parallel.shard` uses), so optimizer steps and `TrainState` keep them.
    `input_fn(inputs, mesh)` / `output_fn(outputs, mesh)` run before / after
    the layer's forward.

    Returns:
      `layer`, placed in place.

    Example:
      >>> import pdx, pdx.distributed as dist
      >>> mesh = dist.ProcessMesh([0, 1], dim_names=["mp"])
      >>> def shard_fn(name, sub, mesh):
      ...     if isinstance(sub, pdx.nn.Linear):
      ...         sub.weight = dist.shard_tensor(sub.weight, mesh, [dist.Shard(1)])
      >>> net = dist.shard_layer(pdx.nn.Linear(4, 8), mesh, shard_fn)
      >>> dist.get_placements(net.weight), dist.get_placements(net.bias)
      ([Shard(dim=1)], [Replicate()])
    """
    if not isinstance(process_mesh, ProcessMesh):
        raise TypeError(f"shard_layer: process_mesh must be a dist.ProcessMesh; got {type(process_mesh).__name__}")
    if not isinstance(layer, nnx.Module):
        raise TypeError(f"shard_layer: layer must be a pdx.nn.Layer; got {type(layer).__name__}")
    if shard_fn is not None:
        for name, sub in [("", layer)] + list(layer.named_sublayers()):
            shard_fn(name, sub, process_mesh)
    replicate_rest(layer, process_mesh)
    if input_fn is not None:
        _hooks.add_forward_pre_hook(layer, lambda _layer, inputs: input_fn(inputs, process_mesh))
    if output_fn is not None:
        _hooks.add_forward_post_hook(layer, lambda _layer, inputs, outputs: output_fn(outputs, process_mesh))
    return layer


def shard_scaler(scaler):
    """Paddle's `dist.shard_scaler`: the scaler unchanged (its non-finite check is one global reduction under SPMD)."""
    return scaler


# -- data ------------------------------------------------------------------------------------------
class ShardDataloader:
    """Iterates a dataloader, placing each batch's tensors split along the batch on `shard_dims`.

    Made by `shard_dataloader`. Batches are global (the loader's batch
    size), or each process's part with `is_dataset_splitted=True`; each array goes to its mesh with `Shard(0)` on the shard
    dimension and `Replicate()` on the others.
    """

    def __init__(self, dataloader, meshes, input_keys=None, shard_dims=None, is_dataset_splitted=False,
                 dense_tensor_idx=None):
        meshes = list(meshes) if isinstance(meshes, (list, tuple)) else [meshes]
        if not meshes or not all(isinstance(m, ProcessMesh) for m in meshes):
            raise TypeError(f"shard_dataloader: meshes must be a dist.ProcessMesh or a list of them; got {meshes!r}")
        if isinstance(shard_dims, (list, tuple)):
            if len(shard_dims) != len(meshes):
                raise ValueError(f"shard_dataloader: shard_dims has {len(shard_dims)} entries but there are "
                                 f"{len(meshes)} meshes; give one per mesh or a single name")
            dims = list(shard_dims)
        else:
            dims = [shard_dims] * len(meshes)
        for mesh, dim in zip(meshes, dims):
            if dim is not None:
                mesh.get_dim_size(dim)  # ValueError naming the mesh's dims
        self._dataloader = dataloader
        self._meshes, self._dims = meshes, dims
        self._input_keys = list(input_keys) if input_keys is not None else None
        self._dense = dense_tensor_idx
        self._splitted = bool(is_dataset_splitted)
        self.batch_size = getattr(dataloader, "batch_size", None)

    def __len__(self) -> int:
        return len(self._dataloader)

    def _placements(self, i: int):
        k = i if len(self._meshes) > 1 else 0
        mesh, dim = self._meshes[min(k, len(self._meshes) - 1)], self._dims[min(k, len(self._dims) - 1)]
        placements = [Replicate() for _ in mesh.dim_names]
        if dim is not None:
            placements[mesh.dim_names.index(dim) if isinstance(dim, str) else dim] = Shard(0)
        return mesh, placements

    def _place(self, value, i: int):
        if isinstance(value, (list, tuple)):
            return type(value)(self._place(v, i) for v in value)
        if not hasattr(value, "shape") or not hasattr(value, "dtype"):
            return value
        mesh, placements = self._placements(i)
        if self._splitted and jax.process_count() > 1:  # this process's batch is its part of the global one
            from pdx.distributed._api import _full_sharding

            sharding = _full_sharding(mesh, placements, len(value.shape))
            return jax.make_array_from_process_local_data(sharding, np.asarray(value))
        return shard_tensor(value, mesh, placements)

    def _batch(self, batch):
        if isinstance(batch, Mapping):
            keys = self._input_keys or list(batch)
            if len(self._meshes) > 1 and len(keys) != len(self._meshes):
                raise ValueError(f"shard_dataloader: {len(self._meshes)} meshes but input_keys {keys} has {len(keys)}")
            return {k: (self._place(v, keys.index(k)) if k in keys else v) for k, v in batch.items()}
        if isinstance(batch, (list, tuple)):
            if len(self._meshes) > 1 and len(batch) != len(self._meshes):
                raise ValueError(f"shard_dataloader: {len(self._meshes)} meshes but the batch has {len(batch)} items; "
                                 "give one mesh per batch item (or one mesh for all)")
            dense = set(self._dense or ())
            return type(batch)(v if i in dense else self._place(v, i) for i, v in enumerate(batch))
        return self._place(batch, 0)

    def __iter__(self):
        for batch in self._dataloader:
            yield self._batch(batch)

    def __call__(self):
        return iter(self)


def shard_dataloader(dataloader, meshes, input_keys=None, shard_dims=None, is_dataset_splitted=False,
                     dense_tensor_idx=None) -> ShardDataloader:
    """Wrap `dataloader` so its batches arrive placed on `meshes` (Paddle's `dist.shard_dataloader`).

    Args:
      dataloader: any iterable of batches (a `pdx.io.DataLoader`, a list, ...).
      meshes: one ProcessMesh for every input, or one per batch item (e.g.
        the first and last pipeline stage's meshes for inputs and labels).
      input_keys: for dict batches, the keys to place (in mesh order).
      shard_dims: the mesh dimension (name or index) the batch is split over
        (per mesh or one for all); None replicates the batch.
      is_dataset_splitted: True when each process's loader yields its own
        part of the batch (a DistributedBatchSampler): in a multi-process job
        the parts become one global array (the form a compiled step needs).
        False: every process yields the whole global batch.
      dense_tensor_idx: batch items passed through unplaced.

    Example:
      >>> import numpy as np, pdx.distributed as dist
      >>> mesh = dist.ProcessMesh([[0, 1, 2, 3], [4, 5, 6, 7]], dim_names=["dp", "mp"])
      >>> loader = dist.shard_dataloader([[np.ones((4, 3), "float32")]], mesh, shard_dims="dp")
      >>> [dist.get_placements(x) for x, in loader]
      [[Shard(dim=0), Replicate()]]
    """
    return ShardDataloader(dataloader, meshes, input_keys, shard_dims, is_dataset_splitted, dense_tensor_idx)


# -- local_map -------------------------------------------------------------------------------------
def _is_tensor(x) -> bool:
    return isinstance(x, (jax.Array, np.ndarray, PartialArray)) or isinstance(x, jax.core.Tracer)


def local_map(func, out_placements, in_placements=None, process_mesh=None, reshard_inputs: bool = False):
    """Run `func` on each device's local pieces (Paddle's `dist.local_map`, on `jax.shard_map`).

    Args:
      func: a function of local tensors.
      out_placements: one placements list per output of `func`; a `Partial()`
        output means each device returned its own part (a `PartialArray`).
      in_placements: one placements list (or None for a non-tensor) per
        positional argument; default: each tensor's own placements.
      process_mesh: the mesh (default: the inputs' mesh, else the global one).
      reshard_inputs: reshard inputs whose placements differ from
        `in_placements` (else that is a ValueError).

    Returns:
      The wrapped function.

    Example:
      >>> import jax.numpy as jnp, pdx.distributed as dist
      >>> mesh = dist.ProcessMesh([0, 1], dim_names=["x"])
      >>> x = dist.shard_tensor(jnp.arange(4.0), mesh, [dist.Shard(0)])
      >>> local_sum = dist.local_map(lambda t: t.sum(), [[dist.Partial()]])
      >>> float(dist.reshard(local_sum(x), mesh, [dist.Replicate()]))
      6.0
    """
    if not isinstance(out_placements, (list, tuple)) or not out_placements:
        raise TypeError(f"local_map: out_placements must be a list of placements lists, one per output; got {out_placements!r}")
    outs = ([list(p) for p in out_placements] if all(isinstance(p, (list, tuple)) for p in out_placements)
            else [list(out_placements)])

    def wrapped(*args, **kwargs):
        from pdx.distributed._api import get_process_mesh
        from pdx.distributed._collective import local_axes

        tensors = [i for i, a in enumerate(args) if _is_tensor(a)]
        mesh = process_mesh
        if mesh is None:
            mesh = next((m for m in (get_process_mesh(args[i]) for i in tensors) if m is not None), None)
        mesh = default_mesh("local_map", mesh)
        names = mesh.dim_names
        ins = list(in_placements) if in_placements is not None else [None] * len(args)
        if len(ins) != len(args):
            raise ValueError(f"local_map: in_placements has {len(ins)} entries but the function got {len(args)} "
                             "positional arguments; give one per argument (None for non-tensors)")
        values, specs, leads = [], [], []
        for i in tensors:
            a, want, have = args[i], ins[i], get_placements(args[i])
            if want is None:
                want = have if have is not None else [Replicate() for _ in names]
            want = check_placements(want, len(a.shape), mesh.shape, names, tuple(a.shape), f"local_map: in_placements[{i}]")
            if have is not None and list(have) != list(want) and not reshard_inputs:
                raise ValueError(f"local_map: argument {i} has placements {have} but in_placements[{i}] is {want}; "
                                 "pass reshard_inputs=True or reshard it first")
            a = reshard(a, mesh, want)
            lead = [names[d] for d, _ in partial_dims(want)]
            values.append(a.contributions if isinstance(a, PartialArray) else a)
            specs.append(PartitionSpec(*lead, *placements_to_spec(want, len(a.shape), names)))
            leads.append(len(lead))
        returned_tuple = []

        def local(*local_values):
            full = list(args)
            for i, v, k in zip(tensors, local_values, leads):
                full[i] = v.reshape(v.shape[k:]) if k else v
            with local_axes(names):  # dist.all_reduce & co. inside func communicate over this mesh
                result = func(*full, **kwargs)
            returned_tuple[:] = [isinstance(result, (tuple, list))]
            results = list(result) if returned_tuple[0] else [result]
            if len(results) != len(outs):
                raise ValueError(f"local_map: the function returned {len(results)} outputs but out_placements "
                                 f"describes {len(outs)}")
            return tuple(r.reshape((1,) * len(partial_dims(p)) + tuple(r.shape)) for r, p in zip(results, outs))

        # Per-device output shapes, traced under shard_map so collectives inside func see their axes
        # (out_specs P(): a "replicated" output's global shape is the local one).
        shapes = jax.eval_shape(jax.shard_map(local, mesh=mesh.jax_mesh, in_specs=tuple(specs),
                                              out_specs=PartitionSpec(), check_vma=False), *values)
        out_specs = []
        for p, shape in zip(outs, shapes):
            k = len(partial_dims(p))
            ndim = len(shape.shape) - k
            p[:] = check_placements(p, ndim, mesh.shape, names, what="local_map: out_placements")
            out_specs.append(PartitionSpec(*[names[d] for d, _ in partial_dims(p)], *placements_to_spec(p, ndim, names)))
        mapped = jax.shard_map(local, mesh=mesh.jax_mesh, in_specs=tuple(specs), out_specs=tuple(out_specs),
                               check_vma=False)
        results = [PartialArray(r, mesh, p) if partial_dims(p) else r for r, p in zip(mapped(*values), outs)]
        return tuple(results) if returned_tuple[0] else results[0]

    return wrapped


class LocalLayer(Layer):
    """A Layer whose `forward` sees each device's local pieces (Paddle's `dist.LocalLayer`).

    Subclass it and write `forward` on local tensors; calling the layer runs
    it through `local_map`, and the outputs come back as distributed tensors
    with `out_dist_attrs` = [(mesh, placements), ...] (a `Partial()` output is
    each device's own part, a `PartialArray`). Gradients flow back through
    shard_map, so `grad_dist_attrs` are accepted and follow the inputs.

    Example:
      >>> import jax.numpy as jnp, pdx.distributed as dist
      >>> mesh = dist.ProcessMesh([0, 1], dim_names=["x"])
      >>> class LocalSum(dist.LocalLayer):
      ...     def forward(self, t):
      ...         return t.sum(keepdims=True)
      >>> part = LocalSum([(mesh, [dist.Partial()])], [None])(dist.shard_tensor(jnp.arange(4.0), mesh, [dist.Shard(0)]))
      >>> float(dist.reshard(part, mesh, [dist.Replicate()])[0])
      6.0
    """

    def __init__(self, out_dist_attrs, grad_dist_attrs=None):
        super().__init__()
        if not isinstance(out_dist_attrs, (list, tuple)) or not out_dist_attrs or not all(
                isinstance(a, (list, tuple)) and len(a) == 2 and isinstance(a[0], ProcessMesh) for a in out_dist_attrs):
            raise TypeError("LocalLayer: out_dist_attrs must be a list of (ProcessMesh, placements) pairs, one per output")
        self._out_placements = tuple(tuple(p) for _, p in out_dist_attrs)
        self._out_mesh_ids = (tuple(out_dist_attrs[0][0].process_ids), tuple(out_dist_attrs[0][0].shape),
                              tuple(out_dist_attrs[0][0].dim_names))

    def __call__(self, *inputs, **kwargs):
        ids, shape, names = self._out_mesh_ids
        mesh = ProcessMesh(shape=list(shape), process_ids=list(ids), dim_names=list(names))
        run = local_map(lambda *a: Layer.__call__(self, *a, **kwargs), [list(p) for p in self._out_placements],
                        process_mesh=mesh)
        return run(*inputs)
