"""Checkpoints under real process deaths: SIGKILL mid-save, disk full, SIGTERM, resume, topology.

Each test starts `ckpt_worker.py` as a real subprocess (JAX on CPU), kills or
signals it, and checks the directory from this process.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pdx.checkpoint import CheckpointIncompleteError, CheckpointManager

WORKER = str(Path(__file__).with_name("ckpt_worker.py"))
sys.path.insert(0, str(Path(__file__).parent))
from ckpt_worker import small_state  # noqa: E402


def _env(devices: int = 1) -> dict:
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}")
    env.pop("PDX_CKPT_TEST_PAUSE_AT", None)
    return env


def _run(*args, devices: int = 1, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, WORKER, *map(str, args)], env=_env(devices), capture_output=True,
                          text=True, timeout=timeout)


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"worker exited early ({proc.returncode}): {proc.stderr.read()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"worker never reached {path.name}")
        time.sleep(0.05)


def _assert_bitwise(restored, expected):
    for key in ("w", "b"):
        got, want = np.asarray(restored["params"][key]), expected["params"][key]
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    assert int(restored["step"]) == int(expected["step"])


@pytest.mark.parametrize("point", ["copy", "write", "commit"])
def test_sigkill_during_save_keeps_previous_step(tmp_path, point):
    directory, signal_file = tmp_path / "ckpts", tmp_path / "paused"
    proc = subprocess.Popen([sys.executable, WORKER, "kill", str(directory), point, str(signal_file)],
                            env=_env(), stderr=subprocess.PIPE, text=True)
    _wait_for(signal_file, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    assert (directory / "2.incomplete").is_dir()  # the half-written step is there ...
    with CheckpointManager(directory, handle_sigterm=False) as mgr:
        assert mgr.all_steps() == [1]  # ... but never listed
        assert mgr.latest_step() == 1
        ckpt = mgr.restore()
        _assert_bitwise(ckpt.state, small_state(1))
        assert ckpt.data_state == {"pos": 1}
        with pytest.raises(CheckpointIncompleteError, match="never committed"):
            mgr.restore(2)
        mgr.save(2, small_state(2))  # the restarted job saves the step again
        mgr.wait_until_finished()
        assert mgr.all_steps() == [1, 2]
        _assert_bitwise(mgr.restore(2).state, small_state(2))
    assert not (directory / "2.incomplete").exists()


def test_disk_full_async_save_surfaces_and_keeps_old_step(tmp_path):
    directory = tmp_path / "ckpts"
    out = _run("diskfull", directory)
    # the failure of step 2 surfaced at the next save; step 1 stayed latest and was not deleted (keep=1)
    assert "SURFACED step=2 latest=1" in out.stdout, out.stdout + out.stderr
    assert "SAVED latest=3 steps=[3]" in out.stdout  # later saves still happen
    # step 4 fails too and surfaces at close(): the process exits non-zero
    assert out.returncode != 0 and "CheckpointSaveError" in out.stderr and "step 4" in out.stderr
    with CheckpointManager(directory, handle_sigterm=False) as mgr:
        assert mgr.all_steps() == [3]  # keep=1 with a failing next save: the old step survives
        _assert_bitwise(mgr.restore().state, small_state(3))


def test_sigterm_saves_at_step_boundary_and_restart_resumes(tmp_path):
    directory, ready = tmp_path / "ckpts", tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, WORKER, "sigterm", str(directory), str(ready)], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(ready, proc)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    step = int(stdout.split("PREEMPTED ")[1].split()[0])
    with CheckpointManager(directory, handle_sigterm=False) as mgr:
        assert mgr.all_steps() == [step]  # save_interval_steps=1000: only the preemption save
        _assert_bitwise(mgr.restore().state, small_state(step))

    ready.unlink()
    proc = subprocess.Popen([sys.executable, WORKER, "sigterm", str(directory), str(ready)], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(ready, proc)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert f"RESUMED {step}" in stdout
    assert int(stdout.split("PREEMPTED ")[1].split()[0]) > step


def test_deterministic_resume_after_sigkill(tmp_path):
    straight, resumed = tmp_path / "straight.txt", tmp_path / "resumed.txt"
    # the uninterrupted run, in a process like the others (one device: oneDNN matmuls, whose
    # bits differ from XLA's dots in this 8-device process)
    assert _run("train", tmp_path / "a", 40, 0, straight).returncode == 0
    out = _run("train", tmp_path / "b", 40, 23, resumed)
    assert out.returncode == -signal.SIGKILL, out.stderr
    out = _run("train", tmp_path / "b", 40, 0, resumed)
    assert out.returncode == 0, out.stderr
    # saves every 5 steps, asynchronously: step 20's save may still be in flight when the
    # process dies at step 23, and then the restart resumes from step 15
    resumed_from = int(out.stdout.split("RESUMED ")[1].split()[0])
    assert resumed_from in (15, 20), out.stdout

    want = [line.split() for line in straight.read_text().splitlines()]
    got = [line.split() for line in resumed.read_text().splitlines()]
    assert len(want) == 40 and len(got) == 23 + 40 - resumed_from
    # per-step losses, as exact float hex, equal before the kill and after the resume
    assert got[:23] == want[:23]
    assert got[23:] == want[resumed_from:]


def test_restore_on_fewer_devices_needs_shardings(tmp_path):
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    mesh = Mesh(np.asarray(jax.devices()), ("fsdp",))  # the 8 devices of this test process
    w = np.arange(64 * 3, dtype=np.float32).reshape(64, 3)
    with CheckpointManager(tmp_path, async_save=False, handle_sigterm=False) as mgr:
        mgr.save(5, {"w": jax.device_put(w, NamedSharding(mesh, P("fsdp")))})
    out = _run("topology", tmp_path, devices=2)
    assert out.returncode == 0, out.stderr
    assert "TOPOLOGY" in out.stdout and "shardings=" in out.stdout  # names the fix
    assert "RESTORED P('x',)" in out.stdout
    np.testing.assert_array_equal(np.load(tmp_path / "restored_w.npy"), w)


def test_two_processes_write_their_own_shards(tmp_path):
    import socket

    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    directory = tmp_path / "ckpts"
    procs = [subprocess.Popen([sys.executable, WORKER, "multiprocess", str(directory), str(port), str(i)],
                              env=_env(devices=2), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    for i, (p, (stdout, stderr)) in enumerate(zip(procs, outs)):
        assert p.returncode == 0 and f"PROCESS {i} OK steps=[1]" in stdout, stderr[-2000:]
    # each process wrote its own OCDBT shard set; process 0 committed once both were done
    state_dir = directory / "1" / "state"
    assert (state_dir / "ocdbt.process_0").is_dir() and (state_dir / "ocdbt.process_1").is_dir()
    with CheckpointManager(directory, handle_sigterm=False) as mgr:
        mgr.verify(1)
        mesh = Mesh(np.asarray(jax.devices()), ("x",))  # 8 devices in one process now
        restored = mgr.restore(shardings=NamedSharding(mesh, P("x"))).state
    np.testing.assert_array_equal(np.asarray(restored["w"]), np.arange(48, dtype=np.float32).reshape(16, 3))
