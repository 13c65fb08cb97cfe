"""Run under `pdx launch` by test_io_multihost.py: every rank loads its
DistributedBatchSampler shard and the loader assembles global batches over
all processes' devices; rank 0 writes what the global batches hold.

    io_launch_worker.py OUT.json
"""

import json
import sys

import numpy as np

import pdx
from pdx import io

rank, world = pdx.parallel.init(timeout_s=60)

import jax  # noqa: E402
from jax.experimental import multihost_utils  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec  # noqa: E402

mesh = Mesh(np.array(jax.devices()), ("data",))
x = np.arange(24, dtype=np.float32).reshape(12, 2)
ds = io.TensorDataset([x, np.arange(12, dtype=np.int32)])
sampler = io.DistributedBatchSampler(ds, batch_size=2, shuffle=True)  # num_replicas/rank from jax
loader = io.DataLoader(ds, batch_sampler=sampler, places=NamedSharding(mesh, PartitionSpec("data")))
batches = []
for bx, by in loader:
    assert bx.shape == (2 * world, 2) and not bx.is_fully_addressable
    total = float(jax.jit(lambda a: a.sum())(bx))  # a computation over the global batch
    batches.append({"labels": multihost_utils.process_allgather(by, tiled=True).tolist(), "sum": total})
if rank == 0:
    with open(sys.argv[1], "w") as f:
        json.dump({"world": world, "devices": jax.device_count(), "rank_samplers": [sampler.nranks, sampler.local_rank],
                   "batches": batches}, f)
