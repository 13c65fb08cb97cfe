"""`parallelize`: Paddle's dp/mp/pp config and tensor-parallel plans, lowered onto placements.

Each plan becomes placements on the global mesh (recorded on the
Variables through `shard_tensor`, the mechanism `pdx.parallel.shard`
uses) and, where Paddle moves activations (gather_output, sequence
parallel, PrepareLayerInput/Output), forward hooks that reshard them:
sharding constraints inside a compiled step.
"""

from __future__ import annotations

import enum
import re
import warnings
from collections.abc import Callable

import jax
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec

from pdx import _placement
from pdx.distributed import _hooks
from pdx.distributed._api import default_mesh, get_placements, reshard, shard_tensor
from pdx.distributed._layer import replicate_rest
from pdx.distributed._mesh import ProcessMesh, set_mesh
from pdx.distributed._optimizer import ShardingStage1, ShardingStage2, ShardingStage3, shard_optimizer
from pdx.distributed._placements import Replicate, Shard
from pdx.nn import axes

__all__ = [
    "ColWiseParallel",
    "PlanBase",
    "PrepareLayerInput",
    "PrepareLayerOutput",
    "RowWiseParallel",
    "SequenceParallelBegin",
    "SequenceParallelDisable",
    "SequenceParallelEnable",
    "SequenceParallelEnd",
    "SplitPoint",
    "parallelize",
]


class SplitPoint(enum.Enum):
    """Where `pp_config`'s `split_spec` splits: before (BEGINNING) or after (END) the named layer."""

    BEGINNING = 0
    END = 1


# -- activations -------------------------------------------------------------------------------------
def _mesh_dim(mesh: ProcessMesh, name: str, what: str) -> int:
    if name not in mesh.dim_names:
        raise ValueError(f"{what} needs a mesh dimension named {name!r}; the mesh has {mesh.dim_names}")
    return mesh.dim_names.index(name)


def _set_axis(x, mesh: ProcessMesh, axis: str, tensor_dim: int | None, batch_dim: int | None = None):
    """`x` with mesh dim `axis` splitting `tensor_dim` (None: replicated over it); other dims left as they are.

    Inside a trace this is a sharding constraint (dimensions not named stay
    XLA's choice); eagerly a `reshard`.
    """
    if isinstance(x, jax.core.Tracer):
        spec = [PartitionSpec.UNCONSTRAINED] * x.ndim
        if tensor_dim is not None:
            spec[tensor_dim % x.ndim] = axis
        else:
            spec[-1] = None
        if batch_dim is not None and "dp" in mesh.dim_names and axis != "dp":
            dp = mesh.get_dim_size("dp")
            if x.shape[batch_dim] % dp == 0:
                spec[batch_dim] = "dp"
        return jax.lax.with_sharding_constraint(x, NamedSharding(mesh.jax_mesh, PartitionSpec(*spec)))
    placements = get_placements(x)
    if placements is None or get_placements(x) is None or len(placements) != mesh.ndim:
        placements = [Replicate() for _ in mesh.dim_names]
    placements = list(placements)
    placements[mesh.dim_names.index(axis)] = Shard(tensor_dim % x.ndim) if tensor_dim is not None else Replicate()
    return reshard(x, mesh, placements)


def _first(value, fn):
    """Apply `fn` to a tensor or to the first element of a tuple/list of them (Paddle's hook inputs)."""
    if isinstance(value, (tuple, list)):
        return type(value)([fn(value[0]), *value[1:]])
    return fn(value)


def _seq_split(mesh: ProcessMesh, need_transpose: bool):
    def split(x):
        if x.ndim != 3:
            raise ValueError(f"sequence parallel expects a 3-d activation [b, s, h] or [s, b, h]; got shape {tuple(x.shape)}")
        if need_transpose:
            x = x.transpose([1, 0, 2])
        return _set_axis(x, mesh, "mp", 0, batch_dim=1)

    return split


def _seq_concat(mesh: ProcessMesh, need_transpose: bool):
    def concat(x):
        x = _set_axis(x, mesh, "mp", None)
        return x.transpose([1, 0, 2]) if need_transpose else x

    return concat


# -- plans --------------------------------------------------------------------------------------------
class PlanBase:
    """A tensor-parallel plan for the layers a `parallelize_plan` key names."""

    def apply(self, layer, process_mesh: ProcessMesh, shard_param_list: list[str]) -> None:
        raise NotImplementedError(f"{type(self).__name__}.apply")


def _stacked(var) -> bool:
    names = _placement.logical_axes(var)
    return bool(names) and names[0] == axes.LAYERS


def _shard_param(layer, name: str, mesh: ProcessMesh, dim_of_ndim: Callable[[int], int], plan: str) -> None:
    var = getattr(layer, name, None)
    if not isinstance(var, nnx.Variable):
        return
    value = var.get_value()
    offset = 1 if _stacked(var) else 0  # a LayerStack's (N, ...) weights: the layer's own dims come after N
    ndim = value.ndim - offset
    dim = dim_of_ndim(ndim)
    if dim is None:
        raise ValueError(f"{plan}: {type(layer).__name__}.{name} has shape {list(value.shape)}; "
                         f"{plan} splits 2-d weights (and 1-d biases)")
    placements = [Replicate() for _ in mesh.dim_names]
    placements[_mesh_dim(mesh, "mp", plan)] = Shard(dim + offset)
    shard_tensor(var, mesh, placements)


class ColWiseParallel(PlanBase):
    """Split a Linear/Embedding weight's columns (dim 1) and the bias over "mp".

    Args:
      gather_output: replicate the output over "mp" afterwards (else it stays
        split along its last dimension).

    Example: `{"llama.layers.*.self_attn.q_proj": dist.ColWiseParallel()}`.
    """

    def __init__(self, gather_output: bool = False) -> None:
        self.gather_output = gather_output

    def apply(self, layer, process_mesh, shard_param_list):
        names = shard_param_list or ["weight", "bias"]
        for name in names:
            _shard_param(layer, name, process_mesh, lambda n: {2: 1, 1: 0}.get(n), "ColWiseParallel")
        if self.gather_output:
            _hooks.add_forward_post_hook(
                layer, lambda _l, _i, out: _first(out, lambda x: _set_axis(x, process_mesh, "mp", None)))


class RowWiseParallel(PlanBase):
    """Split a Linear/Embedding weight's rows (dim 0) over "mp"; the output is summed over "mp".

    Args:
      is_input_parallel: the input already arrives split along its last
        dimension (the output of a ColWiseParallel layer); False splits it first.
    """

    def __init__(self, is_input_parallel: bool = True) -> None:
        self.is_input_parallel = is_input_parallel

    def apply(self, layer, process_mesh, shard_param_list):
        names = [n for n in (shard_param_list or ["weight"]) if n != "bias"] or ["weight"]
        for name in names:
            _shard_param(layer, name, process_mesh, lambda n: 0 if n == 2 else None, "RowWiseParallel")
        if not self.is_input_parallel:
            _hooks.add_forward_pre_hook(
                layer, lambda _l, inputs: _first(inputs, lambda x: _set_axis(x, process_mesh, "mp", -1)))


class PrepareLayerInput(PlanBase):
    """Run `fn(process_mesh=mesh)` -> `hook(layer, inputs) -> inputs` before the layer."""

    def __init__(self, fn=None) -> None:
        if not callable(fn):
            raise TypeError(f"PrepareLayerInput: fn must be callable; got {fn!r}")
        self.fn = fn

    def apply(self, layer, process_mesh, shard_param_list):
        _hooks.add_forward_pre_hook(layer, self.fn(process_mesh=process_mesh))


class PrepareLayerOutput(PlanBase):
    """Run `fn(process_mesh=mesh)` -> `hook(layer, inputs, output) -> output` after the layer."""

    def __init__(self, fn=None) -> None:
        if not callable(fn):
            raise TypeError(f"PrepareLayerOutput: fn must be callable; got {fn!r}")
        self.fn = fn

    def apply(self, layer, process_mesh, shard_param_list):
        _hooks.add_forward_post_hook(layer, self.fn(process_mesh=process_mesh))


class SequenceParallelBegin(PlanBase):
    """Mark the last layer before a sequence-parallel range: its output [b, s, h] becomes [s/mp, b, h]
    (need_transpose=True) or [s, b, h] -> [s/mp, b, h]."""

    def __init__(self, need_transpose: bool = True) -> None:
        self.need_transpose = need_transpose

    def apply(self, layer, process_mesh, shard_param_list):
        split = _seq_split(process_mesh, self.need_transpose)
        _hooks.add_forward_post_hook(layer, lambda _l, _i, out: _first(out, split))


class SequenceParallelEnd(PlanBase):
    """Mark the first layer after a sequence-parallel range: its input [s/mp, b, h] becomes [b, s, h]
    (need_transpose=True) or [s, b, h]."""

    def __init__(self, need_transpose: bool = True) -> None:
        self.need_transpose = need_transpose

    def apply(self, layer, process_mesh, shard_param_list):
        concat = _seq_concat(process_mesh, self.need_transpose)
        _hooks.add_forward_pre_hook(layer, lambda _l, inputs: _first(inputs, concat))


class SequenceParallelEnable(PlanBase):
    """Run one layer sequence-parallel: input [b, s, h] split to [s/mp, b, h], output gathered back to [b, s, h]."""

    def apply(self, layer, process_mesh, shard_param_list):
        split, concat = _seq_split(process_mesh, True), _seq_concat(process_mesh, True)
        _hooks.add_forward_pre_hook(layer, lambda _l, inputs: _first(inputs, split))
        _hooks.add_forward_post_hook(layer, lambda _l, _i, out: _first(out, concat))


class SequenceParallelDisable(PlanBase):
    """Run one layer inside a sequence-parallel range on whole sequences (gather before, split after)."""

    def __init__(self, need_transpose: bool = True) -> None:
        self.need_transpose = need_transpose

    def apply(self, layer, process_mesh, shard_param_list):
        split, concat = _seq_split(process_mesh, self.need_transpose), _seq_concat(process_mesh, self.need_transpose)
        _hooks.add_forward_pre_hook(layer, lambda _l, inputs: _first(inputs, concat))
        _hooks.add_forward_post_hook(layer, lambda _l, _i, out: _first(out, split))


# -- config -------------------------------------------------------------------------------------------
def _named_layers(model):
    seen, out = set(), []
    for name, layer in [("", model)] + list(model.named_sublayers()):
        if id(layer) not in seen:
            seen.add(id(layer))
            out.append((name, layer))
    return out


def _match(plan: dict, name: str, layer):
    """(plans, parameter names) of the plan keys naming `layer` (Paddle's regex match, whole name)."""
    found = []
    for key, value in plan.items():
        attr = key.rsplit(".", 1)[-1]
        params = []
        if "." in key and isinstance(getattr(layer, attr, None), nnx.Variable):
            key = key[: -len(attr) - 1]
            params = [attr]
        if key == name or re.fullmatch(key, name):
            found.append((value if isinstance(value, list) else [value], params))
    return found


def _tensor_parallel(model, mesh: ProcessMesh, mp_config: dict) -> None:
    plan = mp_config.get("parallelize_plan")
    if plan is None:
        warnings.warn("parallelize: mp_config has no parallelize_plan; tensor parallel does nothing", stacklevel=3)
        return
    if not isinstance(plan, dict):
        raise TypeError(f"parallelize: mp_config['parallelize_plan'] must be a dict name -> plan; got {type(plan).__name__}")
    _mesh_dim(mesh, "mp", "parallelize: mp_config")
    for key, value in plan.items():
        for p in value if isinstance(value, list) else [value]:
            if not isinstance(p, PlanBase):
                raise TypeError(f"parallelize: the plan for {key!r} must be a dist.ColWiseParallel / RowWiseParallel / "
                                f"... instance (or a list of them); got {p!r}")
    matched = set()
    for name, layer in _named_layers(model):
        for plans, params in _match(plan, name, layer):
            for p in plans:
                p.apply(layer, mesh, list(params))
            matched.add(name)
    if not matched:
        raise ValueError(f"parallelize: no layer matches the parallelize_plan keys {list(plan)}; layer names look "
                         f"like {[n for n, _ in _named_layers(model)][1:6]}")


def _pipeline(model, mesh: ProcessMesh, pp_config: dict) -> None:
    from pdx.nn import LayerStack
    from pdx.parallel import HybridConfig, use_mesh

    pp = _mesh_dim(mesh, "pp", "parallelize: pp_config")
    split_spec = pp_config.get("split_spec")
    if split_spec is None:
        warnings.warn("parallelize: pp_config has no split_spec; pipeline parallel does nothing", stacklevel=3)
        return
    layers: dict = {}
    for name, layer in _named_layers(model):
        layers.setdefault(name, layer)  # a LayerStack and its block share a name: the stack comes first
    if isinstance(split_spec, dict):
        raise NotImplementedError("parallelize: pp_config split_spec as a dict of SplitPoints places stages on "
                                  "separate sub-meshes, which one compiled program cannot hold; give the name of a "
                                  "pdx.nn.LayerStack (e.g. 'model.layers') instead")
    prefixes = [split_spec] if isinstance(split_spec, str) else list(split_spec)
    stacks = [layers.get(p) for p in prefixes]
    if not all(isinstance(s, LayerStack) for s in stacks):
        listed = [p for p, s in zip(prefixes, stacks) if not isinstance(s, LayerStack)]
        raise NotImplementedError(
            f"parallelize: pp_config split_spec {listed} does not name a pdx.nn.LayerStack. Stages on separate "
            "sub-meshes cannot share one compiled program; store the repeated layers as a LayerStack "
            "(pdx.models.llama: LlamaConfig(scan_layers=True)) and run them with pdx.parallel.run_layers, "
            "whose pipeline splits the stacked layers over the 'pp' mesh dimension")
    size = mesh.shape[pp]
    for prefix, stack in zip(prefixes, stacks):
        for var in (v for _, v in nnx.iter_graph(stack) if isinstance(v, nnx.Variable)):
            value = var.get_value()
            if not hasattr(value, "shape") or not value.ndim:
                continue
            if value.shape[0] % size:
                raise ValueError(f"parallelize: {prefix} stacks {value.shape[0]} layers, which the {size} pipeline "
                                 "stages ('pp') do not divide")
            placements = list(get_placements(var) or [Replicate() for _ in mesh.dim_names])
            if len(placements) != mesh.ndim:
                placements = [Replicate() for _ in mesh.dim_names]
            placements[pp] = Shard(0)
            shard_tensor(var, mesh, placements)
    sizes = dict(zip(mesh.dim_names, mesh.shape))
    known = {"dp", "pp", "mp", "sep", "sharding"}
    other = {k: v for k, v in sizes.items() if k not in known and v > 1}
    if other:
        raise ValueError(f"parallelize: pp_config runs pdx.parallel's pipeline, which knows mesh dimensions "
                         f"{sorted(known)}; the mesh also splits {other}")
    config = HybridConfig(dp_degree=sizes.get("dp", 1), pp_degree=sizes["pp"], mp_degree=sizes.get("mp", 1),
                          sep_degree=sizes.get("sep", 1), sharding_degree=sizes.get("sharding", 1),
                          accumulate_steps=int(pp_config.get("accumulate_steps", 1)))
    jax_mesh = mesh.jax_mesh
    _hooks.add_context(model, lambda: use_mesh(config, jax_mesh))


def parallelize(model, optimizer=None, mesh: ProcessMesh | None = None, config: dict | None = None):
    """Parallelize a single-device model and optimizer (Paddle's `dist.parallelize`).

    Args:
      model: the pdx Layer.
      optimizer: its optimizer (or None).
      mesh: the global mesh (default: `dist.get_mesh()`; given, it becomes the global mesh).
      config: `{"dp_config": {"sharding_level": 0-3, "sharding_mesh_dim": "dp"},
        "mp_config": {"parallelize_plan": {name or regex: plan or [plans]}},
        "pp_config": {"split_spec": "model.layers", "accumulate_steps": 1}}`.
        Plan keys match layer names as regular expressions over the whole
        name ("llama.layers.*.self_attn.q_proj"); a key ending in a
        parameter name ("lm_head.weight") places that parameter only.
        `pp_config` needs the named layers stored as a `pdx.nn.LayerStack`
        run through `pdx.parallel.run_layers` (its layers are split over the
        "pp" mesh dimension and run as a GPipe pipeline of
        `accumulate_steps` microbatches).

    Returns:
      (model, optimizer), placed in place.

    Example:
      >>> import pdx, pdx.distributed as dist
      >>> mesh = dist.ProcessMesh([[0, 1, 2, 3], [4, 5, 6, 7]], dim_names=["dp", "mp"])
      >>> net = pdx.nn.Sequential(pdx.nn.Linear(4, 8), pdx.nn.ReLU(), pdx.nn.Linear(8, 4))
      >>> opt = pdx.optimizer.AdamW(1e-3, parameters=net)
      >>> net, opt = dist.parallelize(net, opt, mesh, {"mp_config": {"parallelize_plan": {
      ...     "0": dist.ColWiseParallel(), "2": dist.RowWiseParallel()}}, "dp_config": {"sharding_level": 1}})
      >>> dist.get_placements(net[0].weight), dist.get_placements(net[2].weight)
      ([Replicate(), Shard(dim=1)], [Replicate(), Shard(dim=0)])
    """
    if config is None:
        warnings.warn("parallelize does nothing since the config is None", stacklevel=2)
        return model, optimizer
    if not isinstance(config, dict):
        raise TypeError(f"parallelize: config must be a dict with dp_config / mp_config / pp_config; got {type(config).__name__}")
    unknown = sorted(set(config) - {"dp_config", "mp_config", "pp_config"})
    if unknown:
        raise ValueError(f"parallelize: unknown config keys {unknown}; use dp_config, mp_config, pp_config")
    if mesh is not None:
        set_mesh(mesh)
    mesh = default_mesh("parallelize", mesh)
    if "mp_config" in config:
        _tensor_parallel(model, mesh, dict(config["mp_config"]))
    if "pp_config" in config:
        _pipeline(model, mesh, dict(config["pp_config"]))
    replicate_rest(model, mesh)
    if optimizer is not None:
        dp_config = dict(config.get("dp_config") or {})
        level = dp_config.get("sharding_level", 0)
        level = int(level) if not isinstance(level, str) else {"os": 1, "os_g": 2, "p_g_os": 3}.get(level, level)
        stages = {0: None, 1: ShardingStage1, 2: ShardingStage2, 3: ShardingStage3}
        if level not in stages:
            raise ValueError(f"parallelize: dp_config sharding_level must be 0, 1, 2 or 3; got {dp_config.get('sharding_level')!r}")
        stage = stages[level]
        if stage is not None:
            dim = dp_config.get("sharding_mesh_dim", "dp")
            if isinstance(dim, str):
                _mesh_dim(mesh, dim, "parallelize: dp_config")
            optimizer = shard_optimizer(optimizer, stage(dim, mesh))
        else:
            optimizer = shard_optimizer(optimizer)
    return model, optimizer
