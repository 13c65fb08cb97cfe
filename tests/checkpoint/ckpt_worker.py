"""Subprocess side of the checkpoint tests: each mode is one real process that a test
starts, signals or SIGKILLs, then inspects from outside.

    python ckpt_worker.py kill DIR POINT SIGNAL_FILE   save step 1, then pause step 2 at POINT
    python ckpt_worker.py diskfull DIR                  async saves that hit RLIMIT_FSIZE
    python ckpt_worker.py train DIR TOTAL KILL_AT LOSSES deterministic training with resume
    python ckpt_worker.py sigterm DIR READY_FILE         loop until SIGTERM, save, exit 0
    python ckpt_worker.py topology DIR                   restore an 8-device checkpoint on 2 devices
    python ckpt_worker.py multiprocess DIR PORT ID       one of two jax.distributed processes saving shards
"""

import os
import resource
import signal
import sys
import time

import numpy as np


def small_state(step: int) -> dict:
    """A state whose every value is a known function of `step` (checked bitwise by the tests)."""
    rng = np.random.default_rng(step)
    return {"params": {"w": rng.standard_normal((8, 4)).astype(np.float32),
                       "b": rng.standard_normal(4).astype(np.float32)},
            "step": np.int32(step)}


def kill_mode(directory, point, signal_file):
    from pdx.checkpoint import CheckpointManager

    mgr = CheckpointManager(directory)
    mgr.save(1, small_state(1), data_state={"pos": 1})
    mgr.wait_until_finished()
    os.environ["PDX_CKPT_TEST_PAUSE_AT"] = point
    os.environ["PDX_CKPT_TEST_SIGNAL"] = signal_file
    mgr.save(2, small_state(2), data_state={"pos": 2})
    mgr.wait_until_finished()
    print("the pause point was never reached", file=sys.stderr)
    sys.exit(3)


def diskfull_mode(directory):
    from pdx.checkpoint import CheckpointManager, CheckpointSaveError

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    big = {"w": np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)}  # 4 MiB > 1 MiB limit
    mgr = CheckpointManager(directory, max_to_keep=1)
    mgr.save(1, small_state(1))
    mgr.wait_until_finished()
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, hard))
    mgr.save(2, big)  # returns: the failure happens in the background write
    try:
        mgr.save(3, small_state(3))
    except CheckpointSaveError as e:
        print(f"SURFACED step={e.step} latest={mgr.latest_step()}", flush=True)
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    mgr.save(3, small_state(3))
    mgr.wait_until_finished()
    print(f"SAVED latest={mgr.latest_step()} steps={mgr.all_steps()}", flush=True)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, hard))
    mgr.save(4, big)
    mgr.close()  # raises CheckpointSaveError: the process exits non-zero


# -- deterministic training -------------------------------------------------------------------------
class NumpyStream:
    """Batches drawn from a seeded numpy stream; `state()` is the position in it."""

    def __init__(self, seed: int, position: int = 0):
        self.seed, self.position = seed, position

    def next(self):
        rng = np.random.default_rng([self.seed, self.position])
        self.position += 1
        x = rng.standard_normal((16, 4)).astype(np.float32)
        return x, (x.sum(axis=1, keepdims=True) > 0).astype(np.float32)

    def state(self) -> dict:
        return {"seed": self.seed, "position": self.position}


def train_mode(directory, total, kill_at, losses_path):
    import jax
    from flax import nnx

    import pdx
    import pdx.nn.functional as F
    from pdx import nn
    from pdx.checkpoint import CheckpointManager

    pdx.seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.25), nn.Linear(16, 1))
    opt = pdx.optimizer.AdamW(learning_rate=1e-2, parameters=model.parameters())

    @pdx.jit
    def step_fn(model, opt, x, y):
        loss, grads = pdx.value_and_grad(lambda m: F.binary_cross_entropy_with_logits(m(x), y))(model)
        opt.step(grads)
        return loss

    def snapshot():
        return {"model": nnx.to_pure_dict(nnx.state(model)), "opt": opt.state_dict(), "rng": pdx.get_rng_state()}

    mgr = CheckpointManager(directory, save_interval_steps=5)
    stream = NumpyStream(seed=7)
    start = 0
    if mgr.latest_step() is not None:
        ckpt = mgr.restore(target=snapshot())
        state = nnx.state(model)
        nnx.replace_by_pure_dict(state, ckpt.state["model"])
        nnx.update(model, state)
        opt.set_state_dict(ckpt.state["opt"])
        pdx.set_rng_state(ckpt.state["rng"])
        stream = NumpyStream(**ckpt.data_state)
        start = ckpt.step
        print(f"RESUMED {start}", flush=True)
    with open(losses_path, "a") as out:
        for step in range(start + 1, total + 1):
            x, y = stream.next()
            loss = step_fn(model, opt, x, y)
            out.write(f"{step} {float(jax.device_get(loss)).hex()}\n")
            out.flush()
            if mgr.should_save(step):  # snapshot only when it will be written
                mgr.save(step, snapshot(), data_state=stream.state())
            if step == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
    mgr.close()


def sigterm_mode(directory, ready_file):
    from pdx.checkpoint import CheckpointManager

    mgr = CheckpointManager(directory, save_interval_steps=1000)
    start = mgr.latest_step() or 0
    if start:
        restored = mgr.restore(target=small_state(start)).state
        assert int(restored["step"]) == start
        print(f"RESUMED {start}", flush=True)
    for step in range(start + 1, start + 100000):
        time.sleep(0.01)  # one "training step"
        if step == start + 3:
            open(ready_file, "w").close()
        mgr.save(step, small_state(step))
        if mgr.reached_preemption(step):
            mgr.wait_until_finished()
            print(f"PREEMPTED {step}", flush=True)
            mgr.close()
            sys.exit(0)
    sys.exit(4)


def topology_mode(directory):
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    from pdx.checkpoint import CheckpointManager, CheckpointTopologyError

    assert jax.device_count() == 2, jax.devices()
    mgr = CheckpointManager(directory)
    try:
        mgr.restore()
        print("NO ERROR")
    except CheckpointTopologyError as e:
        print(f"TOPOLOGY {e}")
    mesh = Mesh(np.asarray(jax.devices()), ("x",))
    state = mgr.restore(shardings=NamedSharding(mesh, P("x"))).state
    np.save(os.path.join(directory, "restored_w.npy"), np.asarray(state["w"]))
    print(f"RESTORED {state['w'].sharding.spec}")


def multiprocess_mode(directory, port, process_id):
    """One of two jax.distributed processes (2 CPU devices each) saving an FSDP-sharded array."""
    import jax

    jax.distributed.initialize(coordinator_address=f"localhost:{port}", num_processes=2,
                               process_id=int(process_id), local_device_ids=[0, 1])
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    from pdx.checkpoint import CheckpointManager

    assert jax.process_count() == 2 and jax.device_count() == 4
    mesh = Mesh(np.asarray(jax.devices()), ("fsdp",))
    sharding = NamedSharding(mesh, P("fsdp"))
    full = np.arange(16 * 3, dtype=np.float32).reshape(16, 3)
    w = jax.make_array_from_callback(full.shape, sharding, lambda idx: full[idx])
    with CheckpointManager(directory) as mgr:
        mgr.save(1, {"w": w}, data_state={"pos": 1})
        mgr.wait_until_finished()
        back = mgr.restore(target={"w": jax.ShapeDtypeStruct(full.shape, full.dtype, sharding=sharding)})
        for shard in back.state["w"].addressable_shards:
            assert np.array_equal(np.asarray(shard.data), full[shard.index])
        print(f"PROCESS {jax.process_index()} OK steps={mgr.all_steps()}", flush=True)


if __name__ == "__main__":
    mode, *rest = sys.argv[1:]
    {"kill": kill_mode, "diskfull": diskfull_mode, "sigterm": sigterm_mode, "topology": topology_mode,
     "multiprocess": multiprocess_mode,
     "train": lambda d, t, k, p: train_mode(d, int(t), int(k), p)}[mode](*rest)
