"""IREE llvm-cpu compile choices, measured: batch-1 latency of vision models per variant, XLA beside them.

Each model is traced once as pdx.export traces it (`program(params, x)`)
and compiled at batch 1 per variant: a flag set, the program rewritten
(convolutions as patches + one matmul, optionally with bfloat16 operands
and float32 accumulation: `pdx.export._rewrite`), and the weights passed as
arguments or closed over as compile-time constants ("inline"). Rounds
interleave the variants (one call of each per round) so machine noise hits
them alike. Prints compile seconds, median ms, the ratio to what
`pdx.export` chooses by default for the program, and the max |difference|
from XLA relative to the largest |logit|.

    python benchmarks/iree_flags.py                               # ~10 min on an idle 2-core CPU
    python benchmarks/iree_flags.py --models resnet18@32 --rounds 10
    python benchmarks/iree_flags.py --variants "pdx default,patches bf16 inline"
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import jax
import numpy as np

import pdx
import pdx.models
from pdx.export._export import _Traced
from pdx.export._iree import IREE_TARGETS, IreeModule, choose_flags, compile_vmfb
from pdx.export._rewrite import rewrite_program

HOST = IREE_TARGETS["iree-llvm-cpu"][1]
O3 = ("--iree-opt-level=O3", "--iree-llvmcpu-stack-allocation-limit=131072")  # the limit: see _iree._STACK
DT = ("--iree-opt-data-tiling",)
IM2COL = ("--iree-global-opt-use-im2col-for-convs",)
# label -> (conv rewrite, precision, params, optimization flags or None for pdx's choice)
VARIANTS = {
    "pdx default": ("native", "float32", "arguments", None),
    "O3 + host": ("native", "float32", "arguments", O3),
    "O3 + host + data tiling": ("native", "float32", "arguments", O3 + DT),
    "O3 + host + im2col": ("native", "float32", "arguments", O3 + IM2COL),
    "O3 + host + data tiling + im2col": ("native", "float32", "arguments", O3 + DT + IM2COL),
    "pdx default inline": ("native", "float32", "inline", None),
    "patches": ("patches", "float32", "arguments", None),
    "patches inline": ("patches", "float32", "inline", None),
    "patches bf16 inline": ("patches", "bfloat16", "inline", None),
}


def program(name: str, size: int):
    """(traced program, parameter arrays, input, jitted XLA function) of a zoo model at batch 1."""
    pdx.seed(0)
    model = pdx.models.create(name, num_classes=10)
    model.eval()
    traced = _Traced(model)
    params = tuple(np.asarray(v.get_value()) for _, v, _ in traced.params)
    x = np.random.default_rng(0).normal(size=(1, 3, size, size)).astype(np.float32)
    return traced.program, params, x, jax.jit(traced.program)


def iree_callable(fn, params, x, variant):
    conv, precision, mode, flags = variant
    fn = rewrite_program(fn, conv=conv, precision=precision) if (conv, precision) != ("native", "float32") else fn
    x_struct = jax.ShapeDtypeStruct(x.shape, x.dtype)
    if mode == "inline":
        mlir = jax.export.export(jax.jit(lambda v: fn(params, v)), platforms=("cpu",))(x_struct).mlir_module()
        args = []
    else:
        structs = tuple(jax.ShapeDtypeStruct(p.shape, p.dtype) for p in params)
        mlir = jax.export.export(jax.jit(fn), platforms=("cpu",))(structs, x_struct).mlir_module()
        args = params
    all_flags = choose_flags("iree-llvm-cpu", mlir, flags)
    start = time.perf_counter()
    vmfb = compile_vmfb(mlir, "iree-llvm-cpu", all_flags)
    seconds = time.perf_counter() - start
    module = IreeModule(vmfb, args)
    return (lambda v: module(v)[0]), seconds


def measure(name: str, size: int, rounds: int, labels) -> list[dict]:
    fn, params, x, xla = program(name, size)
    reference = np.asarray(xla(params, x))
    runs = {"XLA (jax.jit)": (lambda v: np.asarray(xla(params, v)), 0.0)}
    failed = {}
    for label in labels:
        try:
            runs[label] = iree_callable(fn, params, x, VARIANTS[label])
        except Exception as e:  # noqa: BLE001 - a variant that does not compile is a result
            failed[label] = str(e).strip().splitlines()[0][:120]
    scale = float(np.abs(reference).max()) or 1.0
    errors = {label: float(np.abs(call(x) - reference).max()) / scale for label, (call, _) in runs.items()}
    times = {label: [] for label in runs}
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
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated labels of VARIANTS")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default %(default)s)")
    args = parser.parse_args(argv)
    labels = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in labels if v not in VARIANTS]
    if unknown:
        parser.error(f"--variants: unknown {unknown}; choose from {list(VARIANTS)}")
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
          f"jax {jax.__version__}, median of {args.rounds} interleaved rounds, batch 1\n")
    print("| model | variant | compile s | ms | / pdx default | max rel diff vs XLA |")
    print("|---|---|--:|--:|--:|--:|")
    rows = []
    for item in args.models.split(","):
        name, size = item.split("@")
        for row in measure(name, int(size), args.rounds, labels):
            rows.append(row)
            if "failed" in row:
                print(f"| {row['model']} | {row['flags']} | compile failed: {row['failed']} | | | |")
            else:
                print(f"| {row['model']} | {row['flags']} | {row['compile_s']:.1f} | {row['ms']:.2f} | "
                      f"{row['ratio']:.2f} | {row['error']:.1e} |", flush=True)
    return rows


if __name__ == "__main__":
    main()
