"""Per-call cost of `pdx.jit` against `jax.jit`, measured to survive a busy machine.

Runs the tiny-MLP cases of `train_step.py --only overhead` (32 -> 32 -> 32,
batch 8: a forward, and a full AdamW train step) and times pdx.jit and
jax.jit in interleaved rounds in one process. Each round gives a pdx/jax
ratio; the medians of those per-round ratios are reported, twice:

  wall  seconds per call (what a training loop sees)
  cpu   CPU seconds of the calling thread per call (time.thread_time): the
        Python work around the compiled call plus dispatch, and less
        sensitive than wall time to other processes taking the cores

    python benchmarks/jit_overhead.py [--calls 4000] [--rounds 21]

Target: mlp-forward pdx.jit / jax.jit <= 1.2 (wall, idle machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import train_step  # the same cases as train_step.py --only overhead

TARGET = train_step.TARGET_OVERHEAD


def _timed(call, block, calls: int, clock) -> float:
    t0 = clock()
    for _ in range(calls):
        out = call()
    block(out)
    return (clock() - t0) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=4000, help="calls per round (default 4000)")
    parser.add_argument("--rounds", type=int, default=21, help="interleaved rounds (default 21)")
    args = parser.parse_args()

    cases = train_step.overhead_cases(train_step.MLPConfig(), ("pdx", "jax"), donate=False)
    cases = {key: case for key, case in cases.items() if key[1] in ("jax.jit", "pdx.jit")}
    for call, block in cases.values():  # compile and warm up
        block(call())
        _timed(call, block, 500, time.perf_counter)
    load = os.getloadavg()
    print(f"# {os.cpu_count()} CPUs; load average at start {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}; "
          f"{args.rounds} rounds x {args.calls} calls")
    print("| case | clock | jax.jit us | pdx.jit us | pdx / jax (median of per-round ratios) |")
    print("|---|---|---:|---:|---:|")
    for clock_name, clock in (("wall", time.perf_counter), ("cpu", time.thread_time)):
        times = train_step.round_robin(cases, lambda case, clock=clock: _timed(*case, args.calls, clock),
                                       rounds=args.rounds)
        for kind in ("forward", "train"):
            jax_t, pdx_t = times[kind, "jax.jit"], times[kind, "pdx.jit"]
            ratio = statistics.median(p / j for p, j in zip(pdx_t, jax_t))
            verdict = (f" (target <= {TARGET}: {'met' if ratio <= TARGET else 'MISSED'})"
                       if kind == "forward" and clock_name == "wall" else "")
            print(f"| mlp-{kind} | {clock_name} | {1e6 * statistics.median(jax_t):.1f} | "
                  f"{1e6 * statistics.median(pdx_t):.1f} | {ratio:.3f}{verdict} |")
    load = os.getloadavg()
    print(f"# load average at end {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}")


if __name__ == "__main__":
    main()
