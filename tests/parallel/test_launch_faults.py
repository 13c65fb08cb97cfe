"""`pdx launch` owns its job: real launcher processes, tiny worker scripts, one fault each.

Every scenario runs a real `pdx launch` (or `python -m pdx.distributed.launch`) on a worker that
writes the pids of itself and of the children it starts to files; after the job, /proc must show
none of them alive. All scenarios run at once (the launchers' start-up dominates), and each one's
bound is measured from the moment its ranks were all up.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

WORKER = textwrap.dedent('''
    import os, signal, subprocess, sys, time
    rank = int(os.environ["PDX_PROCESS_ID"])
    mode, out = sys.argv[1], sys.argv[2]
    kids = []
    if mode in ("raise", "sigkill", "launcher_kill", "launcher_hup", "success"):
        # a child that ignores SIGTERM: only SIGKILL of the rank's process group ends it
        code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(1000)"
        kids.append(subprocess.Popen([sys.executable, "-c", code]).pid)
        kids.append(subprocess.Popen(["sleep", "1000"]).pid)
    with open(f"{out}/pids.{rank}.tmp", "w") as f:
        f.write(" ".join(map(str, [os.getpid(), *kids])))
    os.rename(f"{out}/pids.{rank}.tmp", f"{out}/pids.{rank}")
    print(f"rank {rank} up in mode {mode}", flush=True)
    world = int(os.environ["PDX_NUM_PROCESSES"])
    while len([n for n in os.listdir(out) if n.startswith("pids.") and not n.endswith(".tmp")]) < world:
        time.sleep(0.05)  # every rank is up
    if mode == "raise" and rank == 1:
        for i in range(30):
            print(f"rank 1 line {i}")
        raise RuntimeError("rank 1 failing on purpose")
    if mode == "sigkill" and rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "cascade":  # rank 1 fails first; rank 0 fails because of it (a collective error), rank 2 hangs
        if rank == 1:
            time.sleep(0.5)
            os._exit(1)
        if rank == 0:  # exits moments after rank 1 is dead: a launcher polling in rank order would blame rank 0
            other = int(open(f"{out}/pids.1").read().split()[0])
            while True:
                try:
                    state = open(f"/proc/{other}/stat").read().rsplit(")", 1)[1].split()[0]
                except OSError:
                    break
                if state in ("Z", "X"):
                    break
                time.sleep(0.001)
            time.sleep(0.1)  # as a peer's collective error would, a moment later
            os._exit(2)
    if mode == "stall" and rank == 0:
        while True:  # busy and talking: not stalled
            print("rank 0 working", flush=True)
            time.sleep(0.2)
    if mode == "success":
        sys.exit(0)  # leaves its children running: the launcher ends them
    time.sleep(1000)
''')

def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")  # an unreaped zombie is dead (this machine's init may not reap)


def _pids(out, n):
    pids = []
    for r in range(n):
        path = out / f"pids.{r}"
        if path.exists():
            pids += [int(p) for p in path.read_text().split()]
    return pids


def test_every_fault_ends_the_whole_job(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONUNBUFFERED="1")
    # name -> (extra launcher args, number of ranks, entry point)
    scenarios = {
        "raise": ([], 2, "pdx"),
        "sigkill": ([], 2, "paddle"),
        "cascade": ([], 3, "pdx"),
        "stall": (["--timeout", "3"], 2, "pdx"),
        "launcher_kill": ([], 2, "pdx"),
        "launcher_hup": ([], 2, "paddle"),
        "success": ([], 2, "pdx"),
    }
    jobs = {}
    for name, (extra, n, entry) in scenarios.items():
        out = tmp_path / name
        out.mkdir()
        head = ["-m", "pdx.cli", "launch"] if entry == "pdx" else ["-m", "pdx.distributed.launch"]
        cmd = [sys.executable, *head, "--nproc_per_node", str(n), "--grace_s", "1", "--log_dir", str(out / "log"),
               *extra, str(script), name, str(out)]
        proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        jobs[name] = {"proc": proc, "out": out, "n": n, "up": None}

    try:
        # one loop watches every job: ranks up (then the launcher signals), ranks gone, launcher exited
        deadline = time.monotonic() + 120  # seven launchers start at once on a busy machine
        while time.monotonic() < deadline and any("gone" not in j or "ended" not in j for j in jobs.values()):
            for name, j in jobs.items():
                pids = _pids(j["out"], j["n"])
                if j["up"] is None:
                    if len(pids) < (3 * j["n"] if name in (
                            "raise", "sigkill", "launcher_kill", "launcher_hup", "success") else j["n"]):
                        continue
                    j["up"] = time.monotonic()
                    if name == "launcher_kill":
                        j["proc"].send_signal(signal.SIGKILL)
                    elif name == "launcher_hup":
                        j["proc"].send_signal(signal.SIGHUP)
                if "gone" not in j and not any(_alive(p) for p in pids):
                    j["gone"] = time.monotonic() - j["up"]
                if "ended" not in j and j["proc"].poll() is not None:
                    j["ended"] = time.monotonic() - j["up"]
            time.sleep(0.02)
        assert all(j["up"] is not None for j in jobs.values()), {n: j["proc"].poll() for n, j in jobs.items()}
        survivors = {name: [p for p in _pids(j["out"], j["n"]) if _alive(p)] for name, j in jobs.items()}
        assert not any(survivors.values()), survivors
        results = {name: (j["proc"].returncode, j["proc"].communicate(timeout=30)[1]) for name, j in jobs.items()}
        bounds = {name: j["gone"] for name, j in jobs.items()}
        # seconds after the ranks were up (about 1-2 s on an idle machine; generous for a loaded one)
        assert all(t < 8 for name, t in bounds.items() if name != "stall"), bounds
        assert 3 <= bounds["stall"] < 12, bounds

        for name in ("raise", "sigkill", "cascade", "stall", "launcher_hup"):
            assert results[name][0] == 1, (name, results[name])
        err = results["raise"][1]
        assert "rank 1 exited with code 1 (the first rank to fail)" in err, err
        assert "RuntimeError: rank 1 failing on purpose" in err and "rank 1 line 29" in err, err
        assert "rank 1 line 5\n" not in err  # only the last 20 lines
        assert "rank 1 was killed by signal 9 (SIGKILL) (the first rank to fail)" in results["sigkill"][1]
        err = results["cascade"][1]
        assert "rank 1 exited with code 1 (the first rank to fail)" in err, err
        assert "rank 0 exited with code 2 (the first" not in err, err
        err = results["stall"][1]
        assert "rank 1 made no progress" in err and "--timeout 3" in err and "stopped ranks 0." in err, err
        assert "got SIGHUP" in results["launcher_hup"][1]
        assert results["launcher_kill"][0] == -signal.SIGKILL
        assert results["success"][0] == 0, results["success"]
        print("seconds from the ranks being up to every process of the job gone:", bounds)
    finally:  # a failed check leaves no launcher behind (SIGTERM: each ends its own ranks)
        for j in jobs.values():
            if j["proc"].poll() is None:
                j["proc"].terminate()
                j["proc"].wait(30)
