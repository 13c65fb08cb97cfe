"""fleet's collective mode: a DistributedStrategy's hybrid_configs become one HybridConfig mesh.

`fleet.init(is_collective=True, strategy=s)` joins the job, turns
`s.hybrid_configs` (dp/mp/pp/sharding/sep degrees) and
`s.pipeline_configs` (accumulate_steps) into a `pdx.parallel.HybridConfig`
and makes it the active mesh (as `pdx.parallel.use_mesh` does, until
`dist.destroy_process_group()`). `distributed_model` places the model's
parameters by their logical names (ColumnParallelLinear & co. carry them)
and wraps it so the batch is split over the data-parallel axes;
`distributed_optimizer` places the optimizer's state (ZeRO over
"sharding"). Everything after that is one compiled step: `pdx.jit` with
`pdx.value_and_grad` as usual, or `model.train_batch` for a PipelineLayer.

Ranks in the HybridCommunicateGroup are device positions on the mesh (a
Paddle rank is one device); this process's coordinates are those of its
first device.
"""

from __future__ import annotations

import copy
import math

import jax
import numpy as np

from pdx.nn import Layer, axes
from pdx.parallel import HybridConfig, constrain, shard, use_mesh

__all__ = [
    "CommunicateTopology", "DistributedStrategy", "HybridCommunicateGroup", "ParallelMode", "barrier_worker",
    "distributed_model", "distributed_optimizer", "get_hybrid_communicate_group", "init", "is_first_worker",
    "local_rank", "worker_index", "worker_num", "world_size",
]

_HYBRID_DEFAULTS = {"dp_degree": -1, "mp_degree": 1, "pp_degree": 1, "sharding_degree": 1, "sep_degree": 1,
                    "ep_degree": 1,
                    "mp_configs": {}, "pp_configs": {}, "sharding_configs": {}, "dp_configs": {}, "sep_configs": {}}
_PIPELINE_DEFAULTS = {"micro_batch_size": 1, "accumulate_steps": 1, "schedule_mode": "1F1B",
                      "p2p_cache_shape": True, "enable_partial_send_recv": True}
# Paddle's topology names, outermost first, and the mesh axis each is.
_TOPOLOGY = (("data", "dp"), ("pipe", "pp"), ("sharding", "sharding"), ("sep", "sep"), ("model", "mp"))


class ParallelMode:
    """What `HybridCommunicateGroup.get_parallel_mode()` answers (Paddle's values)."""

    DATA_PARALLEL = 0
    TENSOR_PARALLEL = 1
    PIPELINE_PARALLEL = 2
    SHARDING_PARALLEL = 3
    SEGMENT_PARALLEL = 4


def _merge(what: str, defaults: dict, given) -> dict:
    if not isinstance(given, dict):
        raise TypeError(f"DistributedStrategy.{what} must be a dict; got {type(given).__name__}")
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise ValueError(f"DistributedStrategy.{what}: unknown keys {unknown}; known: {sorted(defaults)}")
    out = copy.deepcopy(defaults)
    out.update(given)
    return out


class DistributedStrategy:
    """Paddle's strategy object; pdx reads `hybrid_configs`, `pipeline_configs` and `sharding_configs`.

    Other switches (amp, recompute, gradient_merge, ...) are kept as plain
    attributes for ported code; in pdx they are chosen in the program
    (`pdx.amp.auto_cast`, `pdx.nn.recompute`, `HybridConfig`).

    Example:
      >>> from pdx.distributed import fleet
      >>> s = fleet.DistributedStrategy()
      >>> s.hybrid_configs = {"dp_degree": 2, "mp_degree": 4}
      >>> s.hybrid_configs["mp_degree"], s.hybrid_configs["pp_degree"]
      (4, 1)
    """

    def __init__(self):
        self._hybrid = copy.deepcopy(_HYBRID_DEFAULTS)
        self._pipeline = dict(_PIPELINE_DEFAULTS)
        self._sharding = {"stage": 1}
        self.amp = False
        self.amp_configs = {}
        self.recompute = False
        self.recompute_configs = {}
        self.sharding = False
        self.gradient_merge = False
        self.gradient_merge_configs = {}
        self.find_unused_parameters = False
        self.fuse_all_reduce_ops = True

    @property
    def hybrid_configs(self) -> dict:
        return self._hybrid

    @hybrid_configs.setter
    def hybrid_configs(self, value) -> None:
        self._hybrid = _merge("hybrid_configs", _HYBRID_DEFAULTS, value)

    @property
    def pipeline_configs(self) -> dict:
        return self._pipeline

    @pipeline_configs.setter
    def pipeline_configs(self, value) -> None:
        self._pipeline = _merge("pipeline_configs", _PIPELINE_DEFAULTS, value)

    @property
    def sharding_configs(self) -> dict:
        return self._sharding

    @sharding_configs.setter
    def sharding_configs(self, value) -> None:
        if not isinstance(value, dict):
            raise TypeError(f"DistributedStrategy.sharding_configs must be a dict; got {type(value).__name__}")
        self._sharding = {**self._sharding, **value}

    def hybrid_config(self) -> HybridConfig:
        """The pdx.parallel.HybridConfig these settings describe."""
        h = self._hybrid
        pp = {**self._pipeline, **h.get("pp_configs", {})}
        stage = int(h.get("sharding_configs", {}).get("stage", self._sharding.get("stage", 1)))
        degrees = {k: h[k] for k in ("dp_degree", "mp_degree", "pp_degree", "sharding_degree", "sep_degree",
                                     "ep_degree")}
        for name, value in degrees.items():
            if not isinstance(value, int) or (value < 1 and not (name == "dp_degree" and value == -1)):
                raise ValueError(f"DistributedStrategy.hybrid_configs: {name} must be a positive int"
                                 f"{' or -1' if name == 'dp_degree' else ''}; got {value!r}")
        return HybridConfig(**degrees, sharding_stage=stage, accumulate_steps=int(pp.get("accumulate_steps", 1)),
                            virtual_pp_degree=int(pp.get("virtual_pp_degree", 1)))

    def __repr__(self) -> str:
        return f"DistributedStrategy(hybrid_configs={self._hybrid}, pipeline_configs={self._pipeline})"


class CommunicateTopology:
    """Paddle's Cartesian rank topology: names ("data", "pipe", "sharding", "sep", "model") and sizes."""

    def __init__(self, hybrid_group_names=("data", "pipe", "sharding", "sep", "model"), dims=(1, 1, 1, 1, 1)):
        self._names = list(hybrid_group_names)
        self._dims = [int(d) for d in dims]
        self._grid = np.arange(math.prod(self._dims)).reshape(self._dims)

    def get_hybrid_group_names(self) -> list[str]:
        return list(self._names)

    def get_dim(self, axis_name: str) -> int:
        return self._dims[self._names.index(axis_name)]

    get_dim_size = get_dim

    def world_size(self) -> int:
        return int(self._grid.size)

    def get_rank(self, **coords) -> int:
        return int(self._grid[tuple(coords[n] for n in self._names)])

    def get_coord(self, rank: int):
        return tuple(int(c) for c in np.unravel_index(rank, self._dims))

    def get_axis_list(self, axis_name: str, index: int) -> list[int]:
        """Ranks whose coordinate on `axis_name` is `index`."""
        return sorted(int(r) for r in np.take(self._grid, index, axis=self._names.index(axis_name)).flatten())

    def get_comm_list(self, axis_name: str) -> list[list[int]]:
        """The groups along `axis_name`: ranks that differ only in that coordinate."""
        axis = self._names.index(axis_name)
        moved = np.moveaxis(self._grid, axis, -1).reshape(-1, self._dims[axis])
        return [[int(r) for r in row] for row in moved]


class HybridCommunicateGroup:
    """Ranks, sizes and groups per parallel axis of the fleet mesh (`fleet.get_hybrid_communicate_group()`).

    Groups carry their mesh axis (`group.axis_name`), so `dist.all_reduce(x,
    group=hcg.get_model_parallel_group())` inside `dist.local_map` reduces
    over "mp".
    """

    def __init__(self, config: HybridConfig, mesh):
        from pdx.distributed._collective import Group

        self._config, self._mesh = config, mesh
        sizes = config.degrees(mesh.devices.size)
        self._topo = CommunicateTopology([n for n, _ in _TOPOLOGY], [sizes[a] for _, a in _TOPOLOGY])
        order = list(mesh.axis_names)
        grid = np.vectorize(lambda d: d.id)(mesh.devices)
        # this process's first device, as a coordinate in Paddle's topology order
        mine = min(jax.local_devices(), key=lambda d: d.id).id
        where = dict(zip(order, (int(c[0]) for c in np.nonzero(grid == mine))))
        self._coord = {name: where[axis] for name, axis in _TOPOLOGY}
        self._global_rank = self._topo.get_rank(**self._coord)
        self._groups = {}
        for i, (name, axis) in enumerate(_TOPOLOGY):
            ranks = [self._topo.get_rank(**{**self._coord, name: k}) for k in range(self._topo.get_dim(name))]
            self._groups[name] = Group(ranks, 100 + i, name=f"{name}_parallel", axis_name=axis)

    def topology(self) -> CommunicateTopology:
        return self._topo

    def get_global_rank(self) -> int:
        return self._global_rank

    def get_parallel_mode(self) -> int:
        t = self._topo
        if t.get_dim("pipe") > 1:
            return ParallelMode.PIPELINE_PARALLEL
        if t.get_dim("model") > 1:
            return ParallelMode.TENSOR_PARALLEL
        if t.get_dim("sep") > 1:
            return ParallelMode.SEGMENT_PARALLEL
        if t.get_dim("sharding") > 1:
            return ParallelMode.SHARDING_PARALLEL
        return ParallelMode.DATA_PARALLEL

    def _rank(self, name):
        return self._coord[name]

    def _size(self, name):
        return self._topo.get_dim(name)

    def _src(self, name):
        return self._groups[name].ranks[0]

    def get_data_parallel_rank(self): return self._rank("data")
    def get_data_parallel_world_size(self): return self._size("data")
    def get_data_parallel_group(self): return self._groups["data"]
    def get_data_parallel_group_src_rank(self): return self._src("data")
    def get_model_parallel_rank(self): return self._rank("model")
    def get_model_parallel_world_size(self): return self._size("model")
    def get_model_parallel_group(self): return self._groups["model"]
    def get_model_parallel_group_src_rank(self): return self._src("model")
    def get_stage_id(self): return self._rank("pipe")
    def get_pipe_parallel_world_size(self): return self._size("pipe")
    def get_pipe_parallel_group(self): return self._groups["pipe"]
    def get_sharding_parallel_rank(self): return self._rank("sharding")
    def get_sharding_parallel_world_size(self): return self._size("sharding")
    def get_sharding_parallel_group(self): return self._groups["sharding"]
    def get_sharding_parallel_group_src_rank(self): return self._src("sharding")
    def get_sep_parallel_rank(self): return self._rank("sep")
    def get_sep_parallel_world_size(self): return self._size("sep")
    def get_sep_parallel_group(self): return self._groups["sep"]
    def get_sep_parallel_group_src_rank(self): return self._src("sep")

    def get_rank_from_stage(self, stage_id: int, **kwargs) -> int:
        return self._topo.get_rank(**{**self._coord, "pipe": stage_id, **kwargs})

    def __repr__(self) -> str:
        dims = ", ".join(f"{n}={self._topo.get_dim(n)}" for n, _ in _TOPOLOGY)
        return f"HybridCommunicateGroup({dims}, global_rank={self._global_rank})"


class _Fleet:
    def __init__(self):
        self.strategy = None
        self.config = None
        self.mesh = None
        self.hcg = None
        self._scope = None

    def release(self) -> None:
        if self._scope is not None:
            self._scope.__exit__(None, None, None)
        self.__init__()


_FLEET = _Fleet()


def init(role_maker=None, is_collective: bool = False, strategy: DistributedStrategy | None = None,
         log_level="INFO"):
    """Join the job and make the strategy's hybrid mesh the active one.

    Degrees must multiply to the number of devices of the job
    (`dp_degree=-1` takes what is left); otherwise a ValueError names the
    numbers. pdx has no parameter-server mode: `is_collective=False` runs
    the same collective training.

    Example:
      >>> from pdx.distributed import fleet
      >>> s = fleet.DistributedStrategy()
      >>> s.hybrid_configs = {"mp_degree": 1}          # dp_degree -1: every device
      >>> _ = fleet.init(is_collective=True, strategy=s)
      >>> fleet.get_hybrid_communicate_group().get_model_parallel_world_size()
      1
    """
    from pdx.distributed._collective import init_parallel_env

    init_parallel_env()
    strategy = DistributedStrategy() if strategy is None else strategy
    if not isinstance(strategy, DistributedStrategy):
        raise TypeError(f"fleet.init: strategy must be a fleet.DistributedStrategy; got {type(strategy).__name__}")
    config = strategy.hybrid_config()
    config.degrees()  # degrees that do not multiply to the device count fail here, naming the numbers
    _FLEET.release()
    _FLEET.strategy, _FLEET.config, _FLEET.mesh = strategy, config, config.mesh()
    _FLEET.hcg = HybridCommunicateGroup(config, _FLEET.mesh)
    _FLEET._scope = use_mesh(config, _FLEET.mesh)
    _FLEET._scope.__enter__()  # active until dist.destroy_process_group()
    return _FLEET


def _require(fn: str) -> _Fleet:
    if _FLEET.config is None:
        raise RuntimeError(f"fleet.{fn}: call fleet.init(is_collective=True, strategy=...) first")
    return _FLEET


def get_hybrid_communicate_group() -> HybridCommunicateGroup:
    """The HybridCommunicateGroup of the last `fleet.init`."""
    return _require("get_hybrid_communicate_group").hcg


def worker_index() -> int:
    """This process's rank in the job."""
    return jax.process_index()


def worker_num() -> int:
    """Processes in the job."""
    return jax.process_count()


world_size = worker_num


def local_rank() -> int:
    """This process's index on its node (the launcher's local rank)."""
    from pdx.distributed._collective import ParallelEnv

    return ParallelEnv().local_rank


def is_first_worker() -> bool:
    """Whether this process is rank 0."""
    return jax.process_index() == 0


def barrier_worker() -> None:
    """Wait until every process of the job reaches this call."""
    from pdx.distributed._collective import barrier

    barrier()


class _HybridModel(Layer):
    """What `fleet.distributed_model` returns for a plain Layer: forward splits the batch over "dp"/"sharding".

    `state_dict` / `set_state_dict` are the wrapped layer's (Paddle's names).
    """

    def __init__(self, layers):
        super().__init__()
        self._layers = layers

    def forward(self, *inputs, **kwargs):
        return self._layers(*_split_batch(inputs), **kwargs)

    def state_dict(self, *args, **kwargs):
        return self._layers.state_dict(*args, **kwargs)

    def set_state_dict(self, *args, **kwargs):
        return self._layers.set_state_dict(*args, **kwargs)


def _split_batch(inputs):
    """Constrain each array input's first dimension to the data-parallel axes (the rest replicated)."""
    out = []
    for x in inputs:
        if hasattr(x, "shape") and hasattr(x, "dtype") and len(x.shape) >= 1:
            x = constrain(x, (axes.BATCH,) + (None,) * (len(x.shape) - 1))
        out.append(x)
    return out


def distributed_model(model):
    """Place `model` on the fleet mesh; a PipelineLayer comes back as a PipelineParallel with train_batch.

    Example: `model = fleet.distributed_model(model)` after `fleet.init(...)`.
    """
    from pdx.distributed.fleet._pipeline import PipelineLayer, PipelineParallel

    fl = _require("distributed_model")
    if not isinstance(model, Layer):
        raise TypeError(f"fleet.distributed_model: expected a pdx.nn.Layer; got {type(model).__name__}")
    shard(model, fl.config, mesh=fl.mesh)
    if isinstance(model, PipelineLayer):
        return PipelineParallel(model, fl.hcg, fl.strategy)
    return _HybridModel(model)


def distributed_optimizer(optimizer, strategy: DistributedStrategy | None = None):
    """Place the optimizer's state on the fleet mesh (split over "sharding" by the ZeRO stage); returns it."""
    from pdx.optimizer import Optimizer

    fl = _require("distributed_optimizer")
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"fleet.distributed_optimizer: expected a pdx optimizer; got {type(optimizer).__name__}")
    shard(optimizer, fl.config, mesh=fl.mesh)
    return optimizer
