"""A rank of a 2-process job for the collective tests: every eager collective, then DataParallel training.

    python -m pdx.distributed.launch --nproc_per_node 2 --devices_per_proc 2 collective_worker.py OUT_DIR

Each rank writes OUT_DIR/rank<r>.npz with what it received; the test checks
those against numpy. Inputs depend only on the rank (see `rank_input`).
"""

import os
import sys

import numpy as np


def rank_input(rank: int, shape=(2, 3)) -> np.ndarray:
    return (np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + 1) * (rank + 1) + rank


def dp_batches(steps: int = 3, batch: int = 8):
    rng = np.random.default_rng(0)
    return [(rng.standard_normal((batch, 6)).astype(np.float32), rng.integers(0, 3, batch).astype(np.int32))
            for _ in range(steps)]


def dp_model():
    import pdx

    pdx.seed(3)
    return pdx.nn.Sequential(pdx.nn.Linear(6, 16), pdx.nn.Tanh(), pdx.nn.Linear(16, 3))


def dp_train(model, opt, batches):
    import pdx
    import pdx.nn.functional as F

    @pdx.jit
    def step(model, opt, x, y):
        loss, grads = pdx.value_and_grad(lambda m: F.cross_entropy(m(x), y))(model)
        opt.step(grads)
        return loss

    return [float(step(model, opt, x, y)) for x, y in batches]


def collectives(out_dir: str) -> None:
    import jax.numpy as jnp

    import pdx.distributed as dist

    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    x = jnp.asarray(rank_input(rank))
    got = {"world": np.array(world), "env_rank": np.array(dist.ParallelEnv().rank)}
    for name in ("SUM", "MAX", "MIN", "PROD", "AVG"):
        got[f"all_reduce_{name}"] = dist.all_reduce(x, op=getattr(dist.ReduceOp, name))
    parts = []
    dist.all_gather(parts, x)
    got["all_gather"] = jnp.stack(parts)
    got["broadcast"] = dist.broadcast(x, src=1)
    got["reduce"] = dist.reduce(x, dst=0)
    pieces = [x + 10 * i for i in range(world)]
    got["reduce_scatter"] = dist.reduce_scatter(jnp.zeros_like(x), pieces)
    got["scatter"] = dist.scatter(jnp.zeros_like(x), pieces if rank == 0 else None, src=0)
    received = []
    dist.alltoall(received, pieces)
    got["alltoall"] = jnp.stack(received)
    got["alltoall_single"] = dist.alltoall_single(None, jnp.concatenate(pieces))
    gathered = []
    dist.gather(x, gathered if rank == 1 else None, dst=1)
    got["gather_count"] = np.array(len(gathered))
    if rank == 0:
        dist.send(x * 7, dst=1)
        dist.send_object_list([{"from": 0}, "hello"], dst=1)
    else:
        got["recv"] = dist.recv(jnp.zeros_like(x), src=0)
        objs = [None]
        dist.recv_object_list(objs, src=0)
        got["recv_object_ok"] = np.array(objs == [{"from": 0}, "hello"])
    objects = []
    dist.all_gather_object(objects, {"rank": rank, "tag": "r" * (rank + 1)})
    got["all_gather_object_ok"] = np.array(objects == [{"rank": r, "tag": "r" * (r + 1)} for r in range(world)])
    box = [f"from {rank}", rank]
    dist.broadcast_object_list(box, src=1)
    got["broadcast_object_ok"] = np.array(box == ["from 1", 1])
    mine = []
    dist.scatter_object_list(mine, [f"item {i}" for i in range(world)] if rank == 0 else None, src=0)
    got["scatter_object_ok"] = np.array(mine == [f"item {rank}"])
    sub = dist.new_group([0, 1])
    got["group_all_reduce"] = dist.all_reduce(x, group=sub)
    dist.barrier()

    # DataParallel: each rank feeds its half of every batch; the step sees the global batch
    import pdx

    model = pdx.DataParallel(dp_model())
    opt = pdx.optimizer.SGD(learning_rate=0.5, parameters=model.parameters())
    half = [(bx[rank * 4:(rank + 1) * 4], by[rank * 4:(rank + 1) * 4]) for bx, by in dp_batches()]
    # a compiled step takes global arrays: each process's half becomes its part of the global batch
    import jax

    mesh = dist.ProcessMesh(list(range(jax.device_count())), dim_names=["dp"])
    loader = dist.shard_dataloader(half, mesh, shard_dims="dp", is_dataset_splitted=True)
    got["dp_losses"] = np.array(dp_train(model, opt, loader))
    got["dp_weight"] = np.asarray(model.state_dict()["2.weight"])
    np.savez(os.path.join(out_dir, f"rank{rank}.npz"), **{k: np.asarray(v) for k, v in got.items()})


def spawned(out_dir: str) -> None:
    """The function `dist.spawn` runs in each process."""
    import jax.numpy as jnp

    import pdx.distributed as dist

    dist.init_parallel_env()
    total = dist.all_reduce(jnp.asarray(float(dist.get_rank() + 1)))
    with open(os.path.join(out_dir, f"spawned{dist.get_rank()}.txt"), "w") as f:
        f.write(f"{dist.get_world_size()} {float(total)}")


if __name__ == "__main__":
    collectives(sys.argv[1])
