"""Acceptance matrix of IREE llvm-cpu exports: zoo vision models x image sizes x batch sizes, one artifact each.

For every (model, size), one artifact is exported with the XLA program and an
`iree-llvm-cpu` module holding every batch bucket (`iree.batch_split=True`),
then batch 1, 3 and 17 run on both runtimes from that one artifact. Prints
export seconds (tracing, the rewrite check and iree-compile of all buckets),
the module's choices (conv rewrite, flags), and per batch whether IREE ran
and its max |IREE - XLA| relative to the largest |logit|.

LeNet's classifier fixes its input at 1x28x28: it runs at 28 px; at the
other sizes its convolutional features (num_classes=0) are exported.

    python benchmarks/export_matrix.py                                  # ~10 min on an idle 2-core CPU
    python benchmarks/export_matrix.py --sizes 32,64 --models resnet18  # quicker
    python benchmarks/export_matrix.py --precision bfloat16 --params inline
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time

import jax
import numpy as np

import pdx
import pdx.export
from pdx.jit import InputSpec
from pdx.vision import models

MODELS = ("lenet", "resnet18", "mobilenet_v2")


def build(name: str, size: int):
    """(Layer in eval mode, input shape without batch) of a zoo model for `size` px images."""
    pdx.seed(0)
    if name == "lenet":
        net, shape = models.LeNet(num_classes=10 if size == 28 else 0), (1, size, size)
    elif name == "resnet18":
        net, shape = models.resnet18(num_classes=1000), (3, size, size)
    elif name == "mobilenet_v2":
        net, shape = models.mobilenet_v2(num_classes=1000), (3, size, size)
    else:
        raise ValueError(f"--models: unknown {name!r}; choose from {MODELS}")
    net.eval()
    return net, shape


def run(name: str, size: int, batches, options: dict, workdir: str) -> list[dict]:
    net, shape = build(name, size)
    start = time.perf_counter()
    try:
        path = pdx.export.export(net, f"{workdir}/{name}_{size}", [InputSpec([None, *shape], "float32", "image")],
                                 targets=("xla", "iree-llvm-cpu"), platforms=("cpu",), differentiable=False,
                                 iree={"batch_split": True, **options})
    except Exception as e:  # noqa: BLE001 - a model that does not export is a result
        return [dict(model=name, size=size, batch="-", export_s=time.perf_counter() - start,
                     ok=f"export failed: {str(e).splitlines()[0][:100]}")]
    export_s = time.perf_counter() - start
    info = pdx.export.load(path, runtime="iree").manifest["targets"]["iree-llvm-cpu"]
    im2col = "im2col" if any("im2col" in f for f in info["flags"]) else "no im2col"
    fold = ", BN folded" if info.get("fold_batchnorm") else ""
    kind = f"{info['conv']}, {info['precision']}, {info['params']}, {im2col}{fold}"
    xla, iree = pdx.export.load(path), pdx.export.load(path, runtime="iree")
    rng = np.random.default_rng(0)
    rows = []
    for batch in batches:
        x = rng.standard_normal((batch, *shape)).astype(np.float32)
        want = np.asarray(xla(x))
        try:
            got = iree(x)
        except Exception as e:  # noqa: BLE001
            rows.append(dict(model=name, size=size, batch=batch, export_s=export_s, kind=kind,
                             ok=f"run failed: {str(e).splitlines()[0][:100]}"))
            continue
        error = float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-30))
        rows.append(dict(model=name, size=size, batch=batch, export_s=export_s, kind=kind, ok="ok",
                         error=error, shape=got.shape == want.shape))
    return rows


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated (default %(default)s)")
    parser.add_argument("--sizes", default="32,64,224", help="image sizes in px (default %(default)s)")
    parser.add_argument("--batches", default="1,3,17", help="batch sizes run from each artifact")
    parser.add_argument("--buckets", default=None, help="iree.batch_sizes, e.g. 1,4,16 (default: export's)")
    parser.add_argument("--conv", default="auto", help="iree.conv: auto, native or patches")
    parser.add_argument("--precision", default="float32", help="iree.precision: float32 or bfloat16")
    parser.add_argument("--params", default="arguments", help="iree.params: arguments or inline")
    parser.add_argument("--fold-batchnorm", action="store_true", help="iree.fold_batchnorm=True")
    args = parser.parse_args(argv)
    options = dict(conv=args.conv, precision=args.precision, params=args.params,
                   fold_batchnorm=args.fold_batchnorm)
    if args.buckets:
        options["batch_sizes"] = tuple(int(b) for b in args.buckets.split(","))
    batches = [int(b) for b in args.batches.split(",")]
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, jax {jax.__version__}, "
          f"options {options}\n")
    print("| model | px | export s | IREE module | batch | run | max rel diff vs XLA |")
    print("|---|--:|--:|---|--:|---|--:|")
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for name in args.models.split(","):
            sizes = sorted({int(s) for s in args.sizes.split(",")} | ({28} if name == "lenet" else set()))
            for size in sizes:
                for row in run(name, size, batches, options, workdir):
                    rows.append(row)
                    error = f"{row['error']:.1e}" if "error" in row else ""
                    print(f"| {row['model']} | {row['size']} | {row['export_s']:.1f} | {row.get('kind', '')} | "
                          f"{row['batch']} | {row['ok']} | {error} |", flush=True)
    return rows


if __name__ == "__main__":
    main()
