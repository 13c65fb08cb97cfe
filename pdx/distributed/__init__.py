"""pdx.distributed: Paddle's `paddle.distributed` as views over pdx.parallel's one mesh.

Auto-parallel (Paddle 3.x's `dist.shard_tensor` / `shard_layer` / `parallelize` API):

    ProcessMesh, get_mesh, set_mesh          a named device mesh (owns a jax.sharding.Mesh)
    Shard, Replicate, Partial, ReduceType    placements, one per mesh dimension
    shard_tensor, dtensor_from_fn, reshard, unshard_dtensor, PartialArray
    get_placements, get_process_mesh, is_dist   placements read back from a jax.Array's sharding
    shard_layer, shard_optimizer, ShardingStage1/2/3, shard_dataloader, shard_scaler, local_map
    to_static, DistModel, Strategy           one compiled train/eval/predict step
    parallelize, ColWiseParallel, RowWiseParallel, SequenceParallel*, PrepareLayerInput/Output, SplitPoint
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
from pdx.distributed._layer import ShardDataloader, local_map, shard_dataloader, shard_layer, shard_scaler
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
from pdx.distributed._static import DistModel, Strategy, to_static

__all__ = [
    "ColWiseParallel",
    "DistModel",
    "Partial",
    "PartialArray",
    "Placement",
    "PlanBase",
    "PrepareLayerInput",
    "PrepareLayerOutput",
    "ProcessMesh",
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
    "dtensor_from_fn",
    "get_mesh",
    "get_placements",
    "get_process_mesh",
    "is_dist",
    "local_map",
    "parallelize",
    "reshard",
    "set_mesh",
    "shard_dataloader",
    "shard_layer",
    "shard_optimizer",
    "shard_scaler",
    "shard_tensor",
    "to_static",
    "unshard_dtensor",
]
