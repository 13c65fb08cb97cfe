"""fleet: Paddle's collective hybrid-parallel API, lowered to one pdx.parallel HybridConfig mesh.

    init, DistributedStrategy                 hybrid_configs -> HybridConfig, made the active mesh
    distributed_model, distributed_optimizer  place parameters / optimizer state on that mesh
    get_hybrid_communicate_group              ranks, sizes and groups per parallel axis
    worker_index, worker_num, is_first_worker, barrier_worker, local_rank, world_size
    meta_parallel                             ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding,
                                              ParallelCrossEntropy, PipelineLayer, LayerDesc, SharedLayerDesc
    utils.recompute                           activation recompute, called at once as in Paddle
"""

from pdx.distributed.fleet import meta_parallel, utils
from pdx.distributed.fleet._fleet import (
    CommunicateTopology,
    DistributedStrategy,
    HybridCommunicateGroup,
    ParallelMode,
    barrier_worker,
    distributed_model,
    distributed_optimizer,
    get_hybrid_communicate_group,
    init,
    is_first_worker,
    local_rank,
    worker_index,
    worker_num,
    world_size,
)
from pdx.distributed.fleet.utils import recompute

__all__ = [
    "CommunicateTopology",
    "DistributedStrategy",
    "HybridCommunicateGroup",
    "ParallelMode",
    "barrier_worker",
    "distributed_model",
    "distributed_optimizer",
    "get_hybrid_communicate_group",
    "init",
    "is_first_worker",
    "local_rank",
    "meta_parallel",
    "recompute",
    "utils",
    "worker_index",
    "worker_num",
    "world_size",
]
