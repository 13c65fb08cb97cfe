"""`pdx launch` runs real processes on jax.distributed (gloo on CPU)."""

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from pdx.parallel._launch import _first_slurm_host

WORKER = os.path.join(os.path.dirname(__file__), "launch_worker.py")


def _launch(tmp_path, *args, timeout=240):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)
    cmd = [sys.executable, "-m", "pdx.cli", "launch", "--log_dir", str(tmp_path / "log"), *args]
    return subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=timeout)


def test_two_processes_train_like_one_device(tmp_path):
    from test_parallel_hybrid import _run

    out = tmp_path / "out.json"
    result = _launch(tmp_path, "--nproc_per_node", "2", "--devices_per_proc", "2", WORKER, str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    got = json.loads(out.read_text())
    assert got["world"] == 2 and got["devices"] == 4
    _, _, reference = _run()
    np.testing.assert_allclose(got["losses"], reference, rtol=1e-5)
    assert "losses" in (tmp_path / "log" / "workerlog.1").read_text()  # per-rank log files


def test_a_dying_rank_stops_the_job(tmp_path):
    start = time.monotonic()
    result = _launch(tmp_path, "--nproc_per_node", "2", "--grace_s", "2", WORKER, str(tmp_path / "o.json"),
                     "--die-rank", "1", timeout=100)
    elapsed = time.monotonic() - start
    assert result.returncode == 1
    assert "rank 1 exited with code 1" in result.stderr
    assert "failing on purpose" in result.stderr  # the end of its log is shown
    assert elapsed < 60  # rank 0 sleeps 120 s: it was stopped, not waited for


@pytest.mark.parametrize("args, message", [
    (["--nproc_per_node", "0", "x.py"], "--nproc_per_node"),
    (["--nnodes", "2", "x.py"], "--node_rank must be in|--master"),
    (["--master", "nohostport", "x.py"], "HOST:PORT"),
    (["missing_script.py"], "not found"),
])
def test_usage_errors_exit_2(tmp_path, args, message):
    result = _launch(tmp_path, *args, timeout=60)
    assert result.returncode == 2
    assert any(m in result.stderr for m in message.split("|")), result.stderr


def test_init_times_out_with_a_clear_message(tmp_path):
    env = dict(os.environ, JAX_PLATFORMS="cpu", PDX_COORDINATOR="127.0.0.1:1", PDX_NUM_PROCESSES="2",
               PDX_PROCESS_ID="1")
    code = "import pdx; pdx.parallel.init(timeout_s=2)"
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "TimeoutError: pdx.parallel.init: process 1 of 2 could not reach the coordinator at 127.0.0.1:1" in result.stderr


@pytest.mark.parametrize("nodelist, host", [
    ("node001", "node001"), ("node[003-005,9]", "node003"), ("gpu[12,14],cpu1", "gpu12"), ("a,b", "a"),
])
def test_slurm_nodelist_first_host(nodelist, host):
    assert _first_slurm_host(nodelist) == host
