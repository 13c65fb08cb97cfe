"""A script for `pdx launch` tests: joins the job, trains the tiny LM data-parallel
over every device of every process, and rank 0 writes the losses as JSON.

    launch_worker.py OUT.json [--die-rank R]
"""

import json
import os
import sys
import time

import pdx

rank, world = pdx.parallel.init(timeout_s=60)
if "--die-rank" in sys.argv and rank == int(sys.argv[sys.argv.index("--die-rank") + 1]):
    raise RuntimeError(f"rank {rank}: failing on purpose")
if "--die-rank" in sys.argv:
    time.sleep(120)  # the launcher must stop this rank when the other one dies

import jax  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_parallel_hybrid import _build, _data, _train_step  # noqa: E402

config = pdx.parallel.HybridConfig(dp_degree=-1)
mesh = config.mesh()
model, opt = _build()
pdx.parallel.shard([model, opt], config, mesh=mesh)
tokens, labels = _data()
losses = []
for i in range(3):
    sharding = pdx.parallel.named_sharding(("batch", "seq"), tokens[i].shape, config, mesh)
    x = jax.make_array_from_callback(tokens[i].shape, sharding, lambda idx, a=tokens[i]: a[idx])
    y = jax.make_array_from_callback(labels[i].shape, sharding, lambda idx, a=labels[i]: a[idx])
    losses.append(float(_train_step(model, opt, x, y)))
print(f"rank {rank}/{world}: devices {jax.device_count()} losses {losses}", flush=True)
if rank == 0:
    with open(sys.argv[1], "w") as f:
        json.dump({"losses": losses, "world": world, "devices": jax.device_count()}, f)
