"""DataLoader across real processes (`pdx launch`, jax.distributed on CPU)."""

import json
import os
import subprocess
import sys

import numpy as np

from pdx import io

WORKER = os.path.join(os.path.dirname(__file__), "io_launch_worker.py")


def test_two_processes_assemble_global_batches_from_their_shards(tmp_path):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)
    out = tmp_path / "out.json"
    cmd = [sys.executable, "-m", "pdx.cli", "launch", "--log_dir", str(tmp_path / "log"), "--nproc_per_node", "2",
           "--devices_per_proc", "2", WORKER, str(out)]
    result = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    got = json.loads(out.read_text())
    assert got["world"] == 2 and got["devices"] == 4 and got["rank_samplers"] == [2, 0]

    # what each rank's shard is, computed here by the sampler with explicit ranks
    data = list(range(12))
    shards = [list(io.DistributedBatchSampler(data, 2, num_replicas=2, rank=r, shuffle=True)) for r in range(2)]
    want = [s0 + s1 for s0, s1 in zip(*shards)]  # the global batch: rank 0's rows, then rank 1's
    assert [b["labels"] for b in got["batches"]] == want
    x = np.arange(24, dtype=np.float32).reshape(12, 2)
    assert [b["sum"] for b in got["batches"]] == [float(x[idx].sum()) for idx in want]
