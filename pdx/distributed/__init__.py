"""pdx.distributed: Paddle's `paddle.distributed` as views over pdx.parallel's one mesh.

Auto-parallel (Paddle 3.x's `dist.shard_tensor` / `shard_layer` / `parallelize` API):

    ProcessMesh, get_mesh, set_mesh          a named device mesh (owns a jax.sharding.Mesh)
    Shard, Replicate, Partial, ReduceType    placements, one per mesh dimension
    shard_tensor, dtensor_from_fn, reshard, unshard_dtensor, PartialArray
    get_placements, get_process_mesh, is_dist   placements read back from a jax.Array's sharding
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
from pdx.distributed._mesh import ProcessMesh, get_mesh, set_mesh
from pdx.distributed._placements import Partial, Placement, ReduceType, Replicate, Shard

__all__ = [
    "Partial",
    "PartialArray",
    "Placement",
    "ProcessMesh",
    "ReduceType",
    "Replicate",
    "Shard",
    "dtensor_from_fn",
    "get_mesh",
    "get_placements",
    "get_process_mesh",
    "is_dist",
    "reshard",
    "set_mesh",
    "shard_tensor",
    "unshard_dtensor",
]
