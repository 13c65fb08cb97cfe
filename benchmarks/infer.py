"""ResNet-18 / MobileNetV2 inference latency on CPU: pdx runtimes against PyTorch and Paddle Inference.

One set of weights (paddle's resnet18 or mobilenet_v2 with random BatchNorm
statistics) is loaded into every runtime, and each row answers the same
request: a float32 numpy batch [N, 3, 224, 224] in, numpy logits [N, 1000]
out (host transfers included). Rows:

  pdx eager          pdx.vision.models.resnet18, op by op
  pdx jit            the same Layer through `pdx.jit` (NCHW, Paddle's layout)
  pdx jit NHWC       data_format="NHWC" (same state dict; XLA:CPU's native layout),
                     input transposed on the host inside the timed call
  pdx XLA artifact   `pdx.export.export` + `pdx.export.load(path, runtime="xla")`
                     (one artifact, batch dim None)
  pdx IREE host      the same export's `iree-llvm-cpu` .vmfb, `runtime="iree"`
                     (IREE needs static shapes: one artifact per batch size)
  ... NHWC           the artifact rows again for the data_format="NHWC" model
                     (input spec [None, 224, 224, 3]; the request is still NCHW
                     and is transposed on the host inside the timed call)
  pdx IREE buckets   one artifact for every batch size: `iree.batch_split=True`, batch
                     buckets (1, 4, 16) as functions of one module, flags and conv
                     rewrite chosen by pdx for the program, weights where pdx puts them
                     (iree.params="auto": inline for depthwise programs, else arguments)
  ... inline         the same with the weights as compile-time constants (iree.params="inline")
  ... bf16          the artifact exported with cpu.precision="bfloat16" (its oneDNN
                     program's convolutions in bfloat16, float32 accumulation): its max
                     |diff| is bfloat16 rounding, like Paddle's bf16 row
  ... NHWC bf16      the same for the NHWC model (input transposed on the host)
  pdx IREE bf16      the buckets artifact with iree.precision="bfloat16" (convolutions as
                     patches + matmul with bfloat16 operands, float32 accumulation; weights
                     inline): its max |diff| is bfloat16 rounding
  ... int8           the artifact rows for the model after pdx.quantization PTQ
                     (per-channel int8 weights, absmax activations calibrated on
                     4 random batches): int8 x int8 -> int32 convolutions and dots;
                     its max |diff| is quantization error, not a bug
  torch eager        the same architecture written in torch.nn, `inference_mode` (ResNet-18 only)
  paddle inference   `paddle.jit.save` + `paddle.inference` predictor, with
                     oneDNN (the CPU deployment setting); without oneDNN on request;
                     "bf16 (oneDNN)": `enable_mkldnn_bfloat16()` (its max |diff| is bfloat16 rounding)

Every row's output is compared with paddle's dygraph output (max |diff|),
so a fast wrong row shows, and for ResNet-18 also with the same network
in float64 (torch, double precision): float32 rows differ from each other
by their summation orders, and the float64 column shows how far each,
paddle's dygraph included (printed under the table), is from the exact
result. Timings: wall clock per call after warm-up
calls, median and min over repeats; the JAX-based rows run interleaved
(one call each per round) so they see the same background load; the eager
frameworks' rows run alone afterwards (their OpenMP workers keep spinning).
"CPU ms/call" is the process CPU time of a call summed over threads: on a
shared machine it moves less than wall time, but it counts spin-waiting
worker threads as work.

Usage:
  python benchmarks/infer.py                         # batch 1 and 32, ~10 min on a 2-core CPU
  python benchmarks/infer.py --batch-sizes 1 --repeats 10 --rows "pdx jit,torch eager"
  python benchmarks/infer.py --size 64 --repeats 3   # a quick smoke run
  python benchmarks/infer.py --batch-sizes 1,8 --rows "pdx XLA artifact,pdx IREE buckets,pdx IREE buckets inline,\
pdx IREE bf16,paddle inference (oneDNN),paddle inference bf16 (oneDNN)"
  python benchmarks/infer.py --model mobilenet_v2 --batch-sizes 1 --rows "pdx IREE buckets,paddle inference (oneDNN)"
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import functools
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable

import numpy as np

ROWS = ("pdx eager", "pdx jit", "pdx jit NHWC", "pdx XLA artifact", "pdx XLA artifact NHWC",
        "pdx XLA artifact bf16", "pdx XLA artifact NHWC bf16", "pdx IREE host", "pdx IREE host NHWC", "pdx IREE buckets", "pdx IREE buckets inline", "pdx IREE bf16",
        "pdx XLA artifact int8", "pdx IREE host int8", "torch eager", "paddle inference (oneDNN)",
        "paddle inference bf16 (oneDNN)", "paddle inference (no oneDNN)")
DEFAULT_ROWS = tuple(r for r in ROWS if r != "paddle inference (no oneDNN)")  # ~6x slower than with oneDNN
MODELS = ("resnet18", "mobilenet_v2")
JAX_ROWS = ("pdx jit", "pdx jit NHWC", "pdx XLA artifact", "pdx XLA artifact NHWC", "pdx XLA artifact bf16",
            "pdx XLA artifact NHWC bf16",
            "pdx XLA artifact int8")  # interleaved


@dataclasses.dataclass
class Row:
    name: str
    batch: int
    run: Callable[[np.ndarray], np.ndarray] | None = None
    setup_s: float | None = None  # build / export / compile / first call
    times_s: list = dataclasses.field(default_factory=list)
    cpu_s: list = dataclasses.field(default_factory=list)  # process CPU time per call, all threads
    max_diff: float | None = None
    max_diff64: float | None = None  # against the float64 reference, where there is one
    error: str | None = None

    @property
    def median_ms(self) -> float | None:
        return 1e3 * statistics.median(self.times_s) if self.times_s else None

    @property
    def min_ms(self) -> float | None:
        return 1e3 * min(self.times_s) if self.times_s else None


# --------------------------------------------------------------------------------------
# One set of weights
# --------------------------------------------------------------------------------------


def paddle_reference(seed: int = 0, model: str = "resnet18"):
    """paddle's resnet18 / mobilenet_v2 in eval mode with random BatchNorm affine and
    running statistics (the defaults would make every BN an identity), and its state dict."""
    import paddle

    paddle.set_device("cpu")
    paddle.seed(seed)
    rng = np.random.default_rng(seed)
    net = getattr(paddle.vision.models, model)()
    for layer in net.sublayers():
        if isinstance(layer, paddle.nn.BatchNorm2D):
            c = layer.weight.shape[0]
            layer.weight.set_value(rng.uniform(0.5, 1.5, c).astype("float32"))
            layer.bias.set_value(rng.normal(0, 0.2, c).astype("float32"))
            layer._mean.set_value(rng.normal(0, 0.2, c).astype("float32"))
            layer._variance.set_value(rng.uniform(0.5, 2.0, c).astype("float32"))
    net.eval()
    return net, {k: v.numpy() for k, v in net.state_dict().items()}


def torch_resnet18(state: dict):
    """ResNet-18 in torch.nn with Paddle's module names, loaded from a Paddle state dict."""
    import torch
    from torch import nn

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(self.bn2(self.conv2(out)) + identity)

    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            cin = 64
            for i, cout in enumerate((64, 128, 256, 512)):
                stride = 1 if i == 0 else 2
                setattr(self, f"layer{i + 1}", nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)))
                cin = cout
            self.fc = nn.Linear(512, 1000)

        def forward(self, x):
            x = self.maxpool(torch.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(torch.mean(x, dim=(2, 3)), 1))

    net = ResNet18().eval()
    renamed = {}
    for k, v in state.items():
        k = k.replace("._mean", ".running_mean").replace("._variance", ".running_var")
        renamed[k] = torch.from_numpy(v.T.copy() if k == "fc.weight" else v)  # Paddle's Linear is [in, out]
    renamed.update({k: v for k, v in net.state_dict().items() if k.endswith("num_batches_tracked")})
    net.load_state_dict(renamed, strict=True)
    return net


# --------------------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------------------


def _pdx_net_of(state: dict, data_format: str = "NCHW", model: str = "resnet18"):
    from pdx.vision import models

    net = getattr(models, model)(data_format=data_format)
    missing, unexpected = net.set_state_dict(state)
    assert not missing and not unexpected, (missing, unexpected)
    return net.eval()


def build_rows(names, state, workdir, threads, size, model="resnet18") -> dict[str, Callable[[int], Callable]]:
    """{row name: make(batch) -> run(x) }; each maker does that row's setup."""
    makers = {}
    _pdx_net = functools.partial(_pdx_net_of, model=model)

    def pdx_eager(batch):
        import jax.numpy as jnp

        net = _pdx_net(state)
        return lambda x: np.asarray(net(jnp.asarray(x)))

    def pdx_jit(data_format):
        def make(batch):
            import jax.numpy as jnp

            import pdx

            net = _pdx_net(state, data_format)
            forward = pdx.jit(lambda x: net(x))
            if data_format == "NHWC":
                return lambda x: np.asarray(forward(jnp.asarray(x.transpose(0, 2, 3, 1))))
            return lambda x: np.asarray(forward(jnp.asarray(x)))
        return make

    artifacts: dict[tuple, str] = {}

    def int8_net():
        import jax.numpy as jnp

        from pdx.quantization import PTQ, QuantConfig
        from pdx.quantization.observers import AbsmaxObserver, PerChannelAbsmaxObserver

        ptq = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=PerChannelAbsmaxObserver()))
        calib = ptq.quantize(_pdx_net(state))
        rng = np.random.RandomState(1)
        for _ in range(4):
            calib(jnp.asarray(rng.rand(2, 3, size, size).astype(np.float32)))
        return ptq.convert(calib)

    def export(batch, data_format):
        """The artifact for `batch` (None: XLA only, dynamic batch) and layout ("NCHW", "NHWC", "NCHW bf16",
        "NHWC bf16" or "int8")."""
        key = (batch, data_format)
        if key not in artifacts:
            import pdx
            from pdx.jit import InputSpec

            nhwc = data_format.startswith("NHWC")
            shape = [None, size, size, 3] if nhwc else [None, 3, size, size]
            targets = ("xla",) if batch is None else ("xla", "iree-llvm-cpu")
            path = os.path.join(workdir, f"{model}_{data_format.replace(' ', '_')}_b{batch or 'any'}")
            net = int8_net() if data_format == "int8" else _pdx_net(state, "NHWC" if nhwc else "NCHW")
            pdx.export.export(net, path, [InputSpec(shape, "float32", "image")],
                              targets=targets, iree={"dims": None if batch is None else {"batch": batch}},
                              differentiable=False,
                              cpu={"precision": "bfloat16" if data_format.endswith("bf16") else "float32"})
            artifacts[key] = path
        return artifacts[key]

    def buckets_artifact(**options):
        """One artifact for every batch size (IREE batch buckets), built once per option set."""
        key = ("buckets",) + tuple(sorted(options.items()))
        if key not in artifacts:
            import pdx
            from pdx.jit import InputSpec

            path = os.path.join(workdir, f"{model}_buckets_{len(artifacts)}")
            pdx.export.export(_pdx_net(state), path, [InputSpec([None, 3, size, size], "float32", "image")],
                              targets=("xla", "iree-llvm-cpu"), iree={"batch_split": True, **options},
                              differentiable=False)
            artifacts[key] = path
        return artifacts[key]

    def pdx_buckets(**options):
        def make(batch):
            import pdx

            return pdx.export.load(buckets_artifact(**options), runtime="iree")
        return make

    def pdx_artifact(runtime, data_format):
        def make(batch):
            import pdx

            predictor = pdx.export.load(export(None if runtime == "xla" else batch, data_format), runtime=runtime)
            if data_format.startswith("NHWC"):
                return lambda x: predictor(x.transpose(0, 2, 3, 1))
            return predictor
        return make

    def torch_eager(batch):
        import torch

        if model != "resnet18":
            raise NotImplementedError(f"the torch row has ResNet-18 only, not {model}")
        torch.set_num_threads(threads)
        net = torch_resnet18(state)

        def run(x):
            with torch.inference_mode():
                return net(torch.from_numpy(x)).numpy()
        return run

    saved: list[str] = []

    def paddle_inference(onednn, bf16=False):
        def make(batch):
            import paddle

            if not saved:
                net, _ = paddle_reference(model=model)
                prefix = os.path.join(workdir, f"paddle_{model}", "model")
                paddle.jit.save(net, prefix, input_spec=[paddle.static.InputSpec([None, 3, size, size], "float32",
                                                                                 "image")])
                saved.append(prefix)
            prefix = saved[0]
            program = prefix + (".json" if os.path.exists(prefix + ".json") else ".pdmodel")
            config = paddle.inference.Config(program, prefix + ".pdiparams")
            config.disable_gpu()
            config.set_cpu_math_library_num_threads(threads)
            config.enable_mkldnn() if onednn else config.disable_mkldnn()
            if bf16:
                config.enable_mkldnn_bfloat16()
            config.disable_glog_info()
            predictor = paddle.inference.create_predictor(config)
            inp = predictor.get_input_handle(predictor.get_input_names()[0])
            out = predictor.get_output_handle(predictor.get_output_names()[0])

            def run(x):
                inp.reshape(x.shape)
                inp.copy_from_cpu(x)
                predictor.run()
                return out.copy_to_cpu()
            return run
        return make

    all_makers = {
        "pdx eager": pdx_eager, "pdx jit": pdx_jit("NCHW"), "pdx jit NHWC": pdx_jit("NHWC"),
        "pdx XLA artifact": pdx_artifact("xla", "NCHW"), "pdx XLA artifact NHWC": pdx_artifact("xla", "NHWC"),
        "pdx XLA artifact bf16": pdx_artifact("xla", "NCHW bf16"),
        "pdx XLA artifact NHWC bf16": pdx_artifact("xla", "NHWC bf16"),
        "pdx IREE host": pdx_artifact("iree", "NCHW"), "pdx IREE host NHWC": pdx_artifact("iree", "NHWC"),
        "pdx IREE buckets": pdx_buckets(), "pdx IREE buckets inline": pdx_buckets(params="inline"),
        "pdx IREE bf16": pdx_buckets(params="inline", precision="bfloat16"),
        "pdx XLA artifact int8": pdx_artifact("xla", "int8"), "pdx IREE host int8": pdx_artifact("iree", "int8"),
        "torch eager": torch_eager,
        "paddle inference (oneDNN)": paddle_inference(True),
        "paddle inference bf16 (oneDNN)": paddle_inference(True, bf16=True),
        "paddle inference (no oneDNN)": paddle_inference(False),
    }
    for name in names:
        makers[name] = all_makers[name]
    return makers


# --------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------


def _timed_call(row: Row, x) -> None:
    c0, t0 = time.process_time(), time.perf_counter()
    row.run(x)
    row.times_s.append(time.perf_counter() - t0)
    row.cpu_s.append(time.process_time() - c0)


def settle() -> None:
    """Let OpenMP / task-pool workers go idle before the next row (they spin after each call)."""
    time.sleep(1.0)


def float64_reference(state: dict, x: np.ndarray, model: str) -> np.ndarray | None:
    """The network's output in float64 (torch in double precision; ResNet-18 only), or None."""
    if model != "resnet18":
        return None
    try:
        import torch
    except ImportError:
        return None
    net = torch_resnet18(state).double()
    with torch.inference_mode():
        return net(torch.from_numpy(x.astype(np.float64))).numpy()


def measure(rows: list[Row], x: np.ndarray, reference: np.ndarray, *, warmup: int, repeats: int,
            budget_s: float, interleave: bool, reference64: np.ndarray | None = None) -> None:
    """Warm up each row, check its output against `reference`, then time `repeats`
    calls per row (round robin when `interleave`), stopping early once a row spent
    `budget_s` (after 3 timings, or after 1 when it spent twice the budget)."""
    live = []
    for row in rows:
        if row.run is None:
            continue
        try:
            t0 = time.perf_counter()
            out = row.run(x)
            row.max_diff = float(np.abs(out - reference).max())
            if reference64 is not None:
                row.max_diff64 = float(np.abs(out - reference64).max())
            for _ in range(warmup):
                if time.perf_counter() - t0 > budget_s / 3:
                    break
                row.run(x)
            live.append(row)
        except Exception as e:  # noqa: BLE001 - a failing row is reported in the table, the rest still run
            row.error = f"{type(e).__name__}: {e}".splitlines()[0][:160]
    groups = ([live] if live else []) if interleave else [[r] for r in live]
    for group in groups:
        for i in range(repeats):
            spent = max(sum(r.times_s) for r in group) if i else 0.0
            if (i >= 3 and spent > budget_s) or spent > 2 * budget_s:
                break
            for row in group if i % 2 == 0 else reversed(group):
                _timed_call(row, x)
        if not interleave:
            settle()


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def versions() -> str:
    import importlib.metadata as md

    names = ("jax", "jaxlib", "flax", "iree-base-runtime", "iree-base-compiler", "torch", "paddlepaddle", "numpy")
    found = []
    for name in names:
        try:
            found.append(f"{name} {md.version(name)}")
        except md.PackageNotFoundError:
            pass
    return ", ".join(found)


def table(rows: list[Row]) -> str:
    lines = ["| batch | runtime | setup s | median ms | min ms | images/s | vs fastest | vs torch | "
             "CPU ms/call | max abs diff vs paddle | vs float64 | calls |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for batch in sorted({r.batch for r in rows}):
        group = [r for r in rows if r.batch == batch]
        timed = [r for r in group if r.median_ms is not None]
        fastest = min((r.median_ms for r in timed), default=None)
        torch_ms = next((r.median_ms for r in timed if r.name == "torch eager"), None)
        for r in group:
            if r.median_ms is None:
                lines.append(f"| {batch} | {r.name} | | | | | | | | | | failed: {r.error} |")
                continue
            best = r.median_ms == fastest
            name = f"**{r.name}**" if best else r.name
            vs_torch = f"{r.median_ms / torch_ms:.2f}" if torch_ms else ""
            setup = f"{r.setup_s:.1f}" if r.setup_s is not None else ""
            lines.append(f"| {batch} | {name} | {setup} | {r.median_ms:.1f} | {r.min_ms:.1f} | "
                         f"{1e3 * batch / r.median_ms:.1f} | {r.median_ms / fastest:.2f} | {vs_torch} | "
                         f"{1e3 * statistics.median(r.cpu_s):.0f} | {r.max_diff:.1e} | "
                         f"{'' if r.max_diff64 is None else f'{r.max_diff64:.1e}'} | {len(r.times_s)} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch-sizes", default="1,32", help="comma-separated batch sizes (default 1,32)")
    p.add_argument("--rows", default=",".join(DEFAULT_ROWS),
                   help=f"comma-separated rows from: {', '.join(ROWS)} (default: all but the last)")
    p.add_argument("--repeats", type=int, default=20, help="timed calls per row and batch (default 20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls after the first (default 3)")
    p.add_argument("--budget", type=float, default=30.0,
                   help="seconds of timed calls per row and batch before stopping early (default 30)")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                   help="torch / paddle CPU threads (XLA and IREE use all cores; default: all)")
    p.add_argument("--size", type=int, default=224, help="image height and width (default 224)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model", default="resnet18", choices=MODELS, help="the network (default resnet18)")
    args = p.parse_args(argv)

    names = [n.strip() for n in args.rows.split(",") if n.strip()]
    unknown = [n for n in names if n not in ROWS]
    if unknown:
        p.error(f"--rows: unknown row(s) {unknown}; choose from {list(ROWS)}")
    try:
        batches = [int(b) for b in args.batch_sizes.split(",")]
    except ValueError:
        p.error(f"--batch-sizes={args.batch_sizes!r} must be comma-separated integers, e.g. 1,32")
    if args.size < 32:
        p.error(f"--size={args.size}: the networks need images of at least 32x32")
    if any(b < 1 for b in batches):
        p.error(f"--batch-sizes={args.batch_sizes!r}: every batch size must be >= 1")

    os.environ.setdefault("GLOG_minloglevel", "2")
    warnings.filterwarnings("ignore")
    pd_net, state = paddle_reference(args.seed, args.model)
    rng = np.random.default_rng(args.seed)
    started = datetime.datetime.now(datetime.timezone.utc)
    results: list[Row] = []
    dygraph64: dict[int, float] = {}  # paddle dygraph's own max |diff| from float64, per batch
    with tempfile.TemporaryDirectory(prefix="pdx_infer_") as workdir:
        makers = build_rows(names, state, workdir, args.threads, args.size, args.model)
        for batch in batches:
            import paddle

            x = rng.standard_normal((batch, 3, args.size, args.size)).astype(np.float32)
            reference = pd_net(paddle.to_tensor(x)).numpy()
            reference64 = float64_reference(state, x, args.model)
            if reference64 is not None:
                dygraph64[batch] = float(np.abs(reference - reference64).max())
            rows = []
            for name in names:
                row = Row(name, batch)
                t0 = time.perf_counter()
                try:
                    row.run = makers[name](batch)
                    row.run(x)  # the first call compiles (jit rows) or allocates
                    row.setup_s = time.perf_counter() - t0
                except Exception as e:  # noqa: BLE001 - reported in the table
                    row.error = f"{type(e).__name__}: {e}".splitlines()[0][:160]
                    row.run = None
                rows.append(row)
                print(f"batch {batch}: {name} ready ({row.error or f'{time.perf_counter() - t0:.1f} s'})",
                      file=sys.stderr, flush=True)
            kw = dict(warmup=args.warmup, repeats=args.repeats, budget_s=args.budget, reference64=reference64)
            measure([r for r in rows if r.name in JAX_ROWS], x, reference, interleave=True, **kw)
            settle()
            measure([r for r in rows if r.name not in JAX_ROWS], x, reference, interleave=False, **kw)
            results += rows

    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"{args.model} inference, float32 [N, 3, {args.size}, {args.size}] -> [N, 1000], CPU. {started:%Y-%m-%d %H:%M} UTC.")
    print(f"Machine: {machine()}. Load average after the run: {load and ', '.join(f'{v:.1f}' for v in load)}.")
    print(f"Versions: Python {platform.python_version()}, {versions()}.")
    print(f"Calls: {args.warmup} warm-up, up to {args.repeats} timed (budget {args.budget:.0f} s per row); "
          f"torch/paddle threads {args.threads}.\n")
    print(table(results))
    if dygraph64:
        print("\nPaddle dygraph (float32) against the float64 reference, max abs diff: " +
              ", ".join(f"batch {b}: {d:.1e}" for b, d in sorted(dygraph64.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
