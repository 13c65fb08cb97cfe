"""Checkpoint speed: pdx.checkpoint.CheckpointManager vs raw sequential file I/O.

A TrainState-shaped pytree (params + Adam mu/nu, float32, ~--gb GiB) is
saved and restored through CheckpointManager (orbax/tensorstore write,
fsync, sha256 manifest, commit rename; restore verifies every sha256 first)
and, as the floor, the same bytes are written with one sequential
`ndarray.tofile` per array + fsync and read back with `np.fromfile`, on the
same disk. Before every read both sides' files are dropped from the page
cache (posix_fadvise DONTNEED, no privileges needed), so reads hit the disk.

Then a training loop (a jitted step over the same state) saves once per
round: "blocked" is the time `save()` keeps the loop waiting, async vs sync,
and "step during write" the step time while the async write runs beside it
(both share this machine's cores).

    python benchmarks/ckpt.py [--gb 1.0] [--repeats 3] [--dir /tmp/pdx-ckpt-bench]

Goals (issue 4): save and restore at >= 0.5x raw throughput; an async save
blocks training <= 10% of what a sync save does.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from pdx.checkpoint import CheckpointManager  # noqa: E402


def make_state(gib: float) -> dict:
    """params, mu, nu: three equal parts of `gib` GiB float32, 8 tensors each."""
    per_tensor = int(gib * (1 << 30) / 4 / 3 / 8)
    cols = 1024
    rows = max(1, per_tensor // cols)
    rng = np.random.default_rng(0)
    base = rng.standard_normal((rows, cols), dtype=np.float32)
    part = lambda k: {f"layer{i}.weight": jnp.asarray(base + (k * 8 + i)) for i in range(8)}  # noqa: E731
    return {"params": part(0), "opt_state": {"mu": part(1), "nu": part(2)}, "step": jnp.int32(0)}


def nbytes(state) -> int:
    return sum(x.nbytes for x in jax.tree.leaves(state))


def load_average() -> str:
    """The 1-minute load average ("?" where /proc/loadavg is missing): timings on a busy machine drift."""
    try:
        with open("/proc/loadavg") as f:
            return f.read().split()[0]
    except OSError:
        return "?"


def raw_write(arrays: list[np.ndarray], directory: Path) -> float:
    directory.mkdir(parents=True)
    t = time.perf_counter()
    for i, a in enumerate(arrays):
        with open(directory / f"{i}.bin", "wb") as f:
            a.tofile(f)
            f.flush()
            os.fsync(f.fileno())
    return time.perf_counter() - t


def drop_cache(directory: Path) -> None:
    for path in directory.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def raw_read(arrays: list[np.ndarray], directory: Path) -> float:
    drop_cache(directory)
    t = time.perf_counter()
    for i, a in enumerate(arrays):
        np.fromfile(directory / f"{i}.bin", dtype=a.dtype).reshape(a.shape)
    return time.perf_counter() - t


def pdx_save(state, directory: Path) -> float:
    t = time.perf_counter()
    with CheckpointManager(directory, handle_sigterm=False) as mgr:
        mgr.save(1, state)
        mgr.wait_until_finished()
    return time.perf_counter() - t


def pdx_restore(state, directory: Path, verify: bool) -> float:
    drop_cache(directory)
    with CheckpointManager(directory, handle_sigterm=False) as mgr:
        t = time.perf_counter()
        restored = mgr.restore(target=state, verify=verify).state
        jax.block_until_ready(restored)
        return time.perf_counter() - t


def blocked_time(state, directory: Path, async_save: bool, rounds: int) -> dict:
    """Medians over rounds of: save() blocking time, step time idle, step time during the write."""

    @jax.jit
    def train_step(state):
        scale = jnp.float32(0.999)
        return jax.tree.map(lambda x: x * scale if x.dtype == jnp.float32 else x + 1, state)

    def timed_step(state):
        t = time.perf_counter()
        state = jax.block_until_ready(train_step(state))
        return state, time.perf_counter() - t

    state = jax.block_until_ready(train_step(state))
    out = {"blocked": [], "idle_step": [], "busy_step": []}
    with CheckpointManager(directory, async_save=async_save, handle_sigterm=False, max_to_keep=1) as mgr:
        for step in range(1, rounds + 1):
            state, dt = timed_step(state)
            out["idle_step"].append(dt)
            t = time.perf_counter()
            mgr.save(step, state)
            out["blocked"].append(time.perf_counter() - t)
            state, dt = timed_step(state)  # runs beside the background write (async)
            out["busy_step"].append(dt)
            mgr.wait_until_finished()  # not timed: the next round starts with no save in flight
    return {k: statistics.median(v) for k, v in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", default="/tmp/pdx-ckpt-bench")
    args = parser.parse_args()
    root = Path(args.dir)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)

    state = make_state(args.gb)
    jax.block_until_ready(state)
    host = [np.asarray(x) for x in jax.tree.leaves(state)]
    size = nbytes(state)
    gib = size / (1 << 30)
    print(f"# {platform.node()} {os.cpu_count()} CPUs, jax {jax.__version__} ({jax.default_backend()}); "
          f"state {gib:.2f} GiB in {len(host)} arrays; medians of {args.repeats}")

    results = {k: [] for k in ("raw_write", "raw_read", "save", "restore", "restore_noverify")}
    loads = []
    for r in range(args.repeats):
        raw_dir, ck_dir = root / f"raw{r}", root / f"ck{r}"
        results["raw_write"].append(raw_write(host, raw_dir))
        results["save"].append(pdx_save(state, ck_dir))
        results["raw_read"].append(raw_read(host, raw_dir))
        results["restore"].append(pdx_restore(state, ck_dir, verify=True))
        results["restore_noverify"].append(pdx_restore(state, ck_dir, verify=False))
        shutil.rmtree(raw_dir)
        shutil.rmtree(ck_dir)
        loads.append(load_average())
    med = {k: statistics.median(v) for k, v in results.items()}

    def ratio(mine: str, raw: str) -> float:
        # each round times both sides back to back: the median of per-round ratios cancels slow drifts in load
        return statistics.median(r / m for r, m in zip(results[raw], results[mine]))

    print(f"# load average (1 min) after each round: {', '.join(loads)}")
    print()
    print("| operation | pdx (s) | pdx GiB/s | raw (s) | raw GiB/s | raw/pdx time, median of rounds (goal >= 0.5) |")
    print("|---|---|---|---|---|---|")
    rows = [("save (write+fsync+sha256+commit)", "save", "raw_write"),
            ("restore (sha256 verify + read)", "restore", "raw_read"),
            ("restore, verify=False", "restore_noverify", "raw_read")]
    for label, mine, raw in rows:
        print(f"| {label} | {med[mine]:.2f} | {gib / med[mine]:.2f} | {med[raw]:.2f} | {gib / med[raw]:.2f} | "
              f"{ratio(mine, raw):.2f} |")

    a = blocked_time(state, root / "async", True, args.repeats)
    b = blocked_time(state, root / "sync", False, args.repeats)
    print()
    print("| save mode | training blocked per save (s) | step idle (s) | step during write (s) | blocked async/sync (goal <= 0.10) |")
    print("|---|---|---|---|---|")
    print(f"| async | {a['blocked']:.3f} | {a['idle_step']:.3f} | {a['busy_step']:.3f} | {a['blocked'] / b['blocked']:.3f} |")
    print(f"| sync | {b['blocked']:.3f} | {b['idle_step']:.3f} | - | 1 |")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
