"""IREE llvm-cpu compile flags, measured: batch-1 latency of vision models per flag set, XLA beside them.

Each model is exported once (static batch 1, parameters as arguments, as
`pdx.export` does) and compiled with every flag set below; rounds interleave
the variants (one call of each per round) so machine noise hits them alike.
Prints compile seconds, median ms over the rounds, the ratio to pdx's current
`iree-llvm-cpu` flags and the max |difference| from XLA.

    python benchmarks/iree_flags.py                               # ~5 min on an idle 2-core CPU
    python benchmarks/iree_flags.py --models resnet18@32 --rounds 10
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import jax
import numpy as np
from flax import nnx

import pdx
import pdx.models
from pdx.export._iree import IREE_TARGETS

BASE = ("--iree-opt-level=O3", "--iree-llvmcpu-target-cpu=host")
VARIANTS = {
    "pdx default": IREE_TARGETS["iree-llvm-cpu"][1],
    "O3 + host": BASE,
    "O3 + host + data tiling": BASE + ("--iree-opt-data-tiling",),
    "O3 + host + im2col": BASE + ("--iree-global-opt-use-im2col-for-convs",),
}


def program(name: str, size: int):
    """(StableHLO text, parameter arrays, input, jitted XLA function) of a zoo model at batch 1."""
    pdx.seed(0)
    model = pdx.models.create(name, num_classes=10)
    model.eval()
    graph, state = nnx.split(model)
    leaves, tree = jax.tree_util.tree_flatten(state)
    is_key = [jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key) for leaf in leaves]
    params = [leaf for leaf, key in zip(leaves, is_key) if not key]

    def forward(params, x):
        values = iter(params)
        full = [leaf if key else next(values) for leaf, key in zip(leaves, is_key)]
        return nnx.merge(graph, jax.tree_util.tree_unflatten(tree, full))(x)

    x = np.random.default_rng(0).normal(size=(1, 3, size, size)).astype(np.float32)
    fn = jax.jit(forward)
    structs = [jax.ShapeDtypeStruct(p.shape, p.dtype) for p in params]
    exported = jax.export.export(fn)(structs, jax.ShapeDtypeStruct(x.shape, x.dtype))
    return exported.mlir_module(), [np.asarray(p) for p in params], x, fn


def iree_callable(mlir: str, flags, params):
    import iree.compiler as ireec
    import iree.runtime as ireert

    start = time.perf_counter()
    vmfb = ireec.compile_str(mlir, target_backends=["llvm-cpu"], input_type="stablehlo", extra_args=list(flags))
    seconds = time.perf_counter() - start
    config = ireert.Config("local-task")
    context = ireert.SystemContext(config=config)
    module = ireert.VmModule.copy_buffer(config.vm_instance, vmfb)
    context.add_vm_module(module)
    main = context.modules[module.name]["main"]
    device_params = [ireert.asdevicearray(config.device, p) for p in params]
    return (lambda x: np.asarray(main(*device_params, x).to_host())), seconds


def measure(name: str, size: int, rounds: int) -> list[dict]:
    mlir, params, x, xla = program(name, size)
    reference = np.asarray(xla(params, x))
    runs = {"XLA (jax.jit)": (lambda v: np.asarray(xla(params, v)), 0.0)}
    failed = {}
    for label, flags in VARIANTS.items():
        try:
            runs[label] = iree_callable(mlir, flags, params)
        except Exception as e:  # noqa: BLE001 - a flag set that does not compile is a result
            failed[label] = str(e).strip().splitlines()[0][:120]
    times = {label: [] for label in runs}
    errors = {label: float(np.abs(call(x) - reference).max()) for label, (call, _) in runs.items()}
    for _ in range(rounds):
        for label, (call, _) in runs.items():
            start = time.perf_counter()
            call(x)
            times[label].append(time.perf_counter() - start)
    base = statistics.median(times["pdx default"]) if "pdx default" in times else None
    rows = []
    for label, (_, compile_s) in runs.items():
        ms = 1e3 * statistics.median(times[label])
        rows.append(dict(model=f"{name} {size}px", flags=label, compile_s=compile_s, ms=ms,
                         ratio=ms / (1e3 * base) if base else float("nan"), error=errors[label]))
    rows += [dict(model=f"{name} {size}px", flags=label, failed=reason) for label, reason in failed.items()]
    return rows


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet18@32,resnet18@224,mobilenet_v2@32,mobilenet_v2@224",
                        help="comma-separated zoo NAME@SIZE (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default %(default)s)")
    args = parser.parse_args(argv)
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
          f"jax {jax.__version__}, median of {args.rounds} interleaved rounds, batch 1, fp32\n")
    print("| model | flags | compile s | ms | / pdx default | max abs diff vs XLA |")
    print("|---|---|--:|--:|--:|--:|")
    rows = []
    for item in args.models.split(","):
        name, size = item.split("@")
        for row in measure(name, int(size), args.rounds):
            rows.append(row)
            if "failed" in row:
                print(f"| {row['model']} | {row['flags']} | compile failed: {row['failed']} | | | |")
            else:
                print(f"| {row['model']} | {row['flags']} | {row['compile_s']:.1f} | {row['ms']:.2f} | "
                      f"{row['ratio']:.2f} | {row['error']:.1e} |", flush=True)
    return rows


if __name__ == "__main__":
    main()
