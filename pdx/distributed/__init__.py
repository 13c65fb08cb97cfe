"""pdx.distributed: Paddle's `paddle.distributed` as views over pdx.parallel's one mesh.

Auto-parallel (Paddle 3.x's `dist.shard_tensor` / `shard_layer` / `parallelize` API):

    ProcessMesh, get_mesh, set_mesh          a named device mesh (owns a jax.sharding.Mesh)
    Shard, Replicate, Partial, ReduceType    placements, one per mesh dimension
    shard_tensor, dtensor_from_fn, reshard, unshard_dtensor, PartialArray
    get_placements, get_process_mesh, is_dist   placements read back from a jax.Array's sharding
    shard_layer, shard_optimizer, ShardingStage1/2/3, shard_dataloader, shard_scaler, local_map
    to_static, DistModel, Strategy           one compiled train/eval/predict step
    parallelize, ColWiseParallel, RowWiseParallel, SequenceParallel*, PrepareLayerInput/Output, SplitPoint

Processes and collectives (eager across jax.distributed processes; traced inside local_map):

    init_parallel_env, get_rank, get_world_size, ParallelEnv, new_group, get_group, barrier
    all_reduce (ReduceOp), all_gather, all_gather_object, reduce_scatter, broadcast, reduce, scatter,
    gather, alltoall, alltoall_single, send / recv, *_object_list
    DataParallel, spawn, launch (`python -m pdx.distributed.launch`)

Fleet's hybrid API: `from pdx.distributed import fleet` (fleet.init, DistributedStrategy,
distributed_model / distributed_optimizer, meta_parallel layers, PipelineLayer).
"""

from pdx.distributed._api import (
    PartialArray,
    dtensor_from_fn,
    get_placements,
    get_process_mesh,
    is_dist,
    reshard,
    shard_tensor,
    unshard_dtensor,
)
from pdx.distributed import fleet
from pdx.distributed._collective import (
    Group,
    ParallelEnv,
    ReduceOp,
    all_gather,
    all_gather_object,
    all_reduce,
    alltoall,
    alltoall_single,
    barrier,
    broadcast,
    broadcast_object_list,
    destroy_process_group,
    gather,
    get_backend,
    get_group,
    get_rank,
    get_world_size,
    gloo_barrier,
    gloo_init_parallel_env,
    gloo_release,
    init_parallel_env,
    irecv,
    is_available,
    is_initialized,
    isend,
    new_group,
    recv,
    recv_object_list,
    reduce,
    reduce_scatter,
    scatter,
    scatter_object_list,
    send,
    send_object_list,
    shutdown_process_group,
    wait,
)
from pdx.distributed._checkpoint import load_merged_state_dict, load_state_dict, save_state_dict
from pdx.distributed._data_parallel import DataParallel
from pdx.distributed._layer import LocalLayer, ShardDataloader, local_map, shard_dataloader, shard_layer, shard_scaler
from pdx.distributed._mesh import ProcessMesh, get_mesh, set_mesh
from pdx.distributed._optimizer import ShardingStage1, ShardingStage2, ShardingStage3, shard_optimizer
from pdx.distributed._parallelize import (
    ColWiseParallel,
    PlanBase,
    PrepareLayerInput,
    PrepareLayerOutput,
    RowWiseParallel,
    SequenceParallelBegin,
    SequenceParallelDisable,
    SequenceParallelEnable,
    SequenceParallelEnd,
    SplitPoint,
    parallelize,
)
from pdx.distributed._placements import Partial, Placement, ReduceType, Replicate, Shard
from pdx.distributed._spawn import spawn
from pdx.distributed._static import DistModel, Strategy, to_static
from pdx.distributed.fleet import ParallelMode
from pdx.distributed.launch import launch

__all__ = [
    "ColWiseParallel",
    "DataParallel",
    "LocalLayer",
    "DistModel",
    "Group",
    "ParallelEnv",
    "ParallelMode",
    "Partial",
    "PartialArray",
    "Placement",
    "PlanBase",
    "PrepareLayerInput",
    "PrepareLayerOutput",
    "ProcessMesh",
    "ReduceOp",
    "ReduceType",
    "Replicate",
    "RowWiseParallel",
    "SequenceParallelBegin",
    "SequenceParallelDisable",
    "SequenceParallelEnable",
    "SequenceParallelEnd",
    "Shard",
    "ShardDataloader",
    "ShardingStage1",
    "ShardingStage2",
    "ShardingStage3",
    "SplitPoint",
    "Strategy",
    "all_gather",
    "all_gather_object",
    "all_reduce",
    "alltoall",
    "alltoall_single",
    "barrier",
    "broadcast",
    "broadcast_object_list",
    "destroy_process_group",
    "dtensor_from_fn",
    "fleet",
    "gather",
    "get_backend",
    "get_group",
    "get_mesh",
    "get_placements",
    "get_process_mesh",
    "get_rank",
    "get_world_size",
    "gloo_barrier",
    "gloo_init_parallel_env",
    "gloo_release",
    "init_parallel_env",
    "irecv",
    "is_available",
    "is_dist",
    "is_initialized",
    "isend",
    "launch",
    "load_merged_state_dict",
    "load_state_dict",
    "local_map",
    "new_group",
    "parallelize",
    "recv",
    "recv_object_list",
    "reduce",
    "reduce_scatter",
    "reshard",
    "save_state_dict",
    "scatter",
    "scatter_object_list",
    "send",
    "send_object_list",
    "set_mesh",
    "shard_dataloader",
    "shard_layer",
    "shard_optimizer",
    "shard_scaler",
    "shard_tensor",
    "shutdown_process_group",
    "spawn",
    "to_static",
    "unshard_dtensor",
    "wait",
]
