"""Collectives equal numpy: eager across two real jax.distributed processes (gloo), and inside local_map.

The two-process job is started with `python -m pdx.distributed.launch`
(Paddle's spelling) and with `dist.spawn`; each rank records what every
collective gave it and the test recomputes it with numpy from the ranks'
inputs. The same job trains a DataParallel model with each rank feeding half
of every batch: losses and weights must equal one process on the whole batch.
"""

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import collective_worker as worker  # noqa: E402

WORLD = 2


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    out = tmp_path_factory.mktemp("collectives")
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run([sys.executable, "-m", "pdx.distributed.launch", "--nproc_per_node", str(WORLD),
                           "--devices_per_proc", "2", "--log_dir", str(out / "log"),
                           os.path.join(HERE, "collective_worker.py"), str(out)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:] + open(out / "log" / "workerlog.1").read()[-3000:]
    return [dict(np.load(out / f"rank{r}.npz")) for r in range(WORLD)]


def test_every_collective_across_two_processes_equals_numpy(job):
    xs = [worker.rank_input(r) for r in range(WORLD)]
    stacked = np.stack(xs)
    pieces = [[x + 10 * i for i in range(WORLD)] for x in xs]  # pieces[rank][i]
    for r, got in enumerate(job):
        assert int(got["world"]) == WORLD and int(got["env_rank"]) == r
        np.testing.assert_allclose(got["all_reduce_SUM"], stacked.sum(0))
        np.testing.assert_allclose(got["all_reduce_MAX"], stacked.max(0))
        np.testing.assert_allclose(got["all_reduce_MIN"], stacked.min(0))
        np.testing.assert_allclose(got["all_reduce_PROD"], stacked.prod(0))
        np.testing.assert_allclose(got["all_reduce_AVG"], stacked.mean(0))
        np.testing.assert_allclose(got["all_gather"], stacked)
        np.testing.assert_allclose(got["broadcast"], xs[1])
        np.testing.assert_allclose(got["reduce"], stacked.sum(0) if r == 0 else xs[r])
        np.testing.assert_allclose(got["reduce_scatter"], sum(pieces[k][r] for k in range(WORLD)))
        np.testing.assert_allclose(got["scatter"], pieces[0][r])
        np.testing.assert_allclose(got["alltoall"], np.stack([pieces[k][r] for k in range(WORLD)]))
        np.testing.assert_allclose(got["alltoall_single"], np.concatenate([pieces[k][r] for k in range(WORLD)]))
        assert int(got["gather_count"]) == (WORLD if r == 1 else 0)
        np.testing.assert_allclose(got["group_all_reduce"], stacked.sum(0))
        assert got["all_gather_object_ok"] and got["broadcast_object_ok"] and got["scatter_object_ok"]
    np.testing.assert_allclose(job[1]["recv"], xs[0] * 7)
    assert job[1]["recv_object_ok"]


def test_data_parallel_across_processes_equals_one_process(job):
    model = worker.dp_model()
    opt = pdx.optimizer.SGD(learning_rate=0.5, parameters=model.parameters())
    losses = worker.dp_train(model, opt, worker.dp_batches())
    for got in job:
        np.testing.assert_allclose(got["dp_losses"], losses, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got["dp_weight"], np.asarray(model.state_dict()["2.weight"]), rtol=1e-5, atol=1e-6)


def test_spawn_runs_a_function_as_ranks(tmp_path):
    env_flags = os.environ.get("XLA_FLAGS")
    try:
        dist.spawn(worker.spawned, args=(str(tmp_path),), nprocs=WORLD)
    finally:
        if env_flags is not None:
            os.environ["XLA_FLAGS"] = env_flags
    for r in range(WORLD):
        assert (tmp_path / f"spawned{r}.txt").read_text() == f"{WORLD} 3.0"


def test_collectives_inside_local_map_equal_numpy():
    mesh = dist.ProcessMesh(np.arange(8).reshape(2, 4).tolist(), dim_names=["dp", "mp"])
    x = (np.arange(24, dtype=np.float32).reshape(2, 4, 3) % 7) + 1
    t = dist.shard_tensor(x, mesh, [dist.Shard(0), dist.Shard(1)])  # device k = (i, j) holds x[i, j]: (3,)
    rows = x.reshape(8, 3)

    def run(fn):
        """fn(v) on each device's (3,) vector; results stacked as (8, *fn's shape) in device order."""
        def local(a):
            r = fn(a.reshape(3))
            return r.reshape((1, 1) + r.shape)

        out = np.asarray(dist.local_map(local, [[dist.Shard(0), dist.Shard(1)]])(t))
        return out.reshape((8,) + out.shape[2:])

    everywhere = lambda v: np.broadcast_to(v, (8,) + v.shape)  # noqa: E731
    for op, ref in ((dist.ReduceOp.SUM, rows.sum(0)), (dist.ReduceOp.MAX, rows.max(0)),
                    (dist.ReduceOp.MIN, rows.min(0)), (dist.ReduceOp.PROD, rows.prod(0)),
                    (dist.ReduceOp.AVG, rows.mean(0))):
        np.testing.assert_allclose(run(lambda v, op=op: dist.all_reduce(v, op=op)), everywhere(ref), rtol=1e-5,
                                   err_msg=str(op))
    np.testing.assert_allclose(run(lambda v: jnp.stack(dist.all_gather([], v))), everywhere(rows))
    np.testing.assert_allclose(run(lambda v: dist.broadcast(v, src=5)), everywhere(rows[5]))
    want = rows.copy()
    want[2] = rows.sum(0)
    np.testing.assert_allclose(run(lambda v: dist.reduce(v, dst=2)), want, rtol=1e-6)
    # device k's list: [v + 100 k + j for j in 0..7]; piece j goes to device j
    index = lambda: jax.lax.axis_index(("dp", "mp")).astype(jnp.float32)  # noqa: E731
    sent = lambda v: [v + index() * 100 + j for j in range(8)]  # noqa: E731
    receiver, sender = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    got = run(lambda v: jnp.stack(dist.alltoall([], sent(v))))  # got[j, k]: what device j got from device k
    np.testing.assert_allclose(got, rows[None, :, :] + (100 * sender + receiver)[:, :, None])
    np.testing.assert_allclose(run(lambda v: dist.alltoall_single(None, jnp.concatenate(sent(v)))).reshape(8, 8, 3),
                               got)
    np.testing.assert_allclose(run(lambda v: dist.reduce_scatter(v, sent(v))),
                               rows.sum(0)[None] + 100 * 28 + 8 * np.arange(8)[:, None])
    np.testing.assert_allclose(run(lambda v: dist.scatter(v, sent(v), src=3)), rows[3][None] + 300 + np.arange(8)[:, None])

    # LocalLayer: forward on local pieces, Partial outputs reduce to the global sum
    class LocalSum(dist.LocalLayer):
        def forward(self, a):
            return dist.all_reduce(a.sum(keepdims=True).reshape([1]), op=dist.ReduceOp.MAX) * 0 + a.sum()

    part = LocalSum([(mesh, [dist.Partial(), dist.Partial()])], [None])(t)
    assert isinstance(part, dist.PartialArray)
    np.testing.assert_allclose(float(dist.reshard(part, mesh, [dist.Replicate(), dist.Replicate()])[0]), x.sum())

    # an explicit group over one mesh axis: sums the two dp rows, per mp column
    dp = dist.new_group(axis_name="dp")
    by_dp = x.sum(0)  # (4, 3)
    np.testing.assert_allclose(run(lambda v: dist.all_reduce(v, group=dp)), np.concatenate([by_dp, by_dp]))


def test_process_info_checkpoint_and_bad_input(tmp_path):
    assert dist.init_parallel_env().nranks == 1 and dist.is_initialized()
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "GLOO")
    env = dist.ParallelEnv()
    assert (env.rank, env.world_size, env.local_rank, env.nranks) == (0, 1, 0, 1)
    x = jnp.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(dist.all_reduce(x), x)  # one process: its own value
    parts = dist.all_gather([], x)
    assert len(parts) == 1
    box = []
    dist.all_gather_object(box, {"a": 1})
    assert box == [{"a": 1}]
    dist.barrier()

    # sharded save on a 2 x 4 mesh, load into differently placed arrays
    mesh = dist.ProcessMesh(np.arange(8).reshape(2, 4).tolist(), dim_names=["dp", "mp"])
    w = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    saved = {"fc.weight": dist.shard_tensor(w, mesh, [dist.Shard(0), dist.Shard(1)]), "fc.bias": jnp.ones(4)}
    dist.save_state_dict(saved, str(tmp_path / "ckpt"))
    target = {"fc.weight": dist.shard_tensor(np.zeros_like(w), mesh, [dist.Replicate(), dist.Shard(0)]),
              "fc.bias": jnp.zeros(4)}
    dist.load_state_dict(target, str(tmp_path / "ckpt"))
    np.testing.assert_array_equal(np.asarray(target["fc.weight"]), w)
    assert dist.get_placements(target["fc.weight"]) == [dist.Replicate(), dist.Shard(0)]
    np.testing.assert_array_equal(np.asarray(target["fc.bias"]), np.ones(4))

    with pytest.raises(ValueError, match=r"ranks must be distinct process ranks in \[0, 1\); got \[0, 3\]"):
        dist.new_group([0, 3])
    with pytest.raises(ValueError, match=r"src=2 is not a rank of the group \[0\]"):
        dist.broadcast(x, src=2)
    with pytest.raises(ValueError, match="op must be a dist.ReduceOp"):
        dist.all_reduce(x, op=9)
    with pytest.raises(ValueError, match=r"tensor_list must hold one tensor per rank of the group \(1\); got 2"):
        dist.reduce_scatter(x, [x, x])
    with pytest.raises(RuntimeError, match="outside dist.local_map"):
        jax.jit(lambda a: dist.all_reduce(a))(x)
    with pytest.raises(ValueError, match=r"batch \(6 rows\) must be divisible by the 8 devices"):
        pdx.DataParallel(pdx.nn.Linear(3, 2))(jnp.ones((6, 3)))
    bad = subprocess.run([sys.executable, "-m", "pdx.distributed.launch", "--nproc_per_node", "0", "x.py"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--nproc_per_node must be >= 1; got 0" in bad.stderr
