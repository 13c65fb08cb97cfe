"""What `import pdx` costs plain JAX code, now that pdx registers Paddle's Tensor methods.

pdx adds Paddle's methods to `jax.Array` and extends some of JAX's own (`sum`,
`mean`, `reshape`, `transpose`, ...) with a Python check that routes Paddle's
call forms (`keepdim=`, `flatten(0, 1)`, ...) to pdx and everything else to
JAX's method. This measures the per-call cost of ordinary JAX code three ways,
each in its own fresh process:

  jax       plain JAX, pdx never imported
  pdx       after `import pdx` (methods registered)
  pdx off   after `import pdx` with PDX_TENSOR_METHODS=0 (nothing registered)

Rows: eager ops (operators, extended methods, untouched methods, jnp functions)
on a small array, a jitted step called eagerly, and tracing a function with 24
method calls (`jax.make_jaxpr`, where the checks run once per trace). Times are
process CPU time (`time.process_time`, all threads), so a loaded machine skews
them less than wall time; each process keeps the fastest of its timed loops.
Rounds alternate the three sides (order rotated each round); the table shows
the median over rounds in microseconds of CPU per call and pdx / jax.

  python benchmarks/tensor_methods.py [--rounds 5] [--calls 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

SIDES = {"jax": (False, "1"), "pdx": (True, "1"), "pdx off": (True, "0")}


def _worker(import_pdx: bool, calls: int, repeats: int) -> dict[str, float]:
    import jax
    import jax.numpy as jnp

    if import_pdx:
        import pdx  # noqa: F401

    x = jnp.arange(256.0, dtype=jnp.float32).reshape(16, 16) / 256
    y = jnp.ones((16, 16), jnp.float32)

    @jax.jit
    def step(x, y):
        h = jnp.tanh(x @ y.T)
        return h.sum(axis=1).mean() + h.reshape(-1).max() + h.transpose().min(axis=0).sum()

    def traced(x, y):
        for _ in range(3):
            x = (x.reshape(256).reshape(16, 16).transpose() + y.sum(axis=0)).astype(jnp.float32)
            x = x - x.mean(axis=1, keepdims=True) + x.max() - x.min(axis=0) + x.std()
            x = jnp.clip(x.squeeze(), -1, 1).flatten().reshape((16, 16)) * x.prod()
        return x.sum()

    cases = {
        "x + y": lambda: x + y,
        "x * 2.0": lambda: x * 2.0,
        "x.sum()": lambda: x.sum(),
        "x.sum(axis=0)": lambda: x.sum(axis=0),
        "x.mean(1, keepdims=True)": lambda: x.mean(1, keepdims=True),
        "x.max()": lambda: x.max(),
        "x.reshape(4, 64)": lambda: x.reshape(4, 64),
        "x.reshape((256,))": lambda: x.reshape((256,)),
        "x.transpose()": lambda: x.transpose(),
        "x.flatten()": lambda: x.flatten(),
        "x.squeeze()": lambda: x.squeeze(),
        "x.T": lambda: x.T,
        "x.astype(bf16)": lambda: x.astype(jnp.bfloat16),
        "x[0]": lambda: x[0],
        "jnp.tanh(x)": lambda: jnp.tanh(x),
        "jnp.sum(x, 0)": lambda: jnp.sum(x, 0),
        "x.shape (attr)": lambda: x.shape,
        "jitted step(x, y)": lambda: step(x, y),
    }
    out = {}
    for name, fn in cases.items():
        r = fn()
        jax.block_until_ready(r)
        samples = []
        for _ in range(repeats):
            t0 = time.process_time()
            for _ in range(calls):
                r = fn()
            jax.block_until_ready(r)
            samples.append((time.process_time() - t0) / calls * 1e6)
        out[name] = min(samples)
    samples = []
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(max(calls // 100, 5)):
            jax.make_jaxpr(traced)(x, y)
        samples.append((time.process_time() - t0) / max(calls // 100, 5) * 1e6)
    out["trace 24 method calls"] = min(samples)
    return out


def _run_side(side: str, calls: int, repeats: int) -> dict[str, float]:
    import_pdx, switch = SIDES[side]
    env = dict(os.environ, PDX_TENSOR_METHODS=switch, JAX_PLATFORMS="cpu")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "1" if import_pdx else "0",
           "--calls", str(calls), "--repeats", str(repeats)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if res.returncode:
        raise SystemExit(f"{side} worker failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="fresh processes per side")
    ap.add_argument("--calls", type=int, default=2000, help="calls per timed loop")
    ap.add_argument("--repeats", type=int, default=5, help="timed loops per process (median taken)")
    ap.add_argument("--worker", choices=["0", "1"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker is not None:
        print(json.dumps(_worker(args.worker == "1", args.calls, args.repeats)))
        return

    sides = list(SIDES)
    per_side: dict[str, list[dict[str, float]]] = {s: [] for s in sides}
    for r in range(args.rounds):
        order = sides[r % len(sides):] + sides[: r % len(sides)]
        for side in order:
            per_side[side].append(_run_side(side, args.calls, args.repeats))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    med = {s: {k: statistics.median(run[k] for run in per_side[s]) for k in per_side[s][0]} for s in sides}
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, "
          f"rounds={args.rounds}, calls={args.calls}, repeats={args.repeats}\n")
    print("| case | jax CPU us | pdx CPU us | pdx off CPU us | pdx / jax | pdx off / jax |")
    print("|---|---:|---:|---:|---:|---:|")
    for case in med["jax"]:
        j, p, o = med["jax"][case], med["pdx"][case], med["pdx off"][case]
        print(f"| `{case}` | {j:.2f} | {p:.2f} | {o:.2f} | {p / j:.2f} | {o / j:.2f} |")


if __name__ == "__main__":
    main()
