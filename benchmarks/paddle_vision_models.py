"""Every paddle.vision.models constructor, saved by paddle with `paddle.jit.save`, run by pdx.inference against
Paddle Inference on the same files.

Per format (paddle 3.3.1's default PIR JSON, and the legacy ProgramDesc written with FLAGS_enable_pir_api=0) one
paddle subprocess builds each model (pretrained=False, seed 0), calibrates its batch-norm statistics on one
train-mode batch (momentum 0, so eval-mode activations stay O(1) and the comparison is not of vanishing numbers),
saves it with a None batch into a temporary directory and runs `paddle.inference.create_predictor` (CPU, oneDNN
off) at each batch size. This process then loads the same files with `pdx.inference`, runs the same inputs and
prints one row per model and format: status, the largest |pdx - paddle| over the outputs and batches relative to
max |y|, max |y|, pdx's and paddle's float32 outputs each against a float64 reference (paddle's dygraph forward of
the same weights in float64), and pdx's load + compile + run seconds. Status: ok (within 1e-4 of paddle, relative to
max(1, max |y|)), ok (float32 rounding) (further from paddle, but no further from float64 than 2x paddle's own float32
run: deep random ResNets amplify rounding), mismatch, untranslated op NAME, error, or paddle failed.

    python benchmarks/paddle_vision_models.py                       # all models, both formats
    python benchmarks/paddle_vision_models.py --models squeezenet1_1,densenet121 --formats pir
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

# image side per model: 64 where the model takes it; AlexNet's and GoogLeNet's classifiers are sized for 224
# (fixed-size flatten), Inception-v3's stem needs 75
SIZES = {"alexnet": 224, "googlenet": 224, "inception_v3": 75, "LeNet": 28}
OK_REL = 1e-4  # |pdx - paddle| <= OK_REL * max(1, max |y|): float32 rounding in deep CNNs is that large

_PADDLE_SCRIPT = r'''
import json, os, sys, time
fmt, root, names, batches, default_size = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4], sys.argv[5]
sizes = json.loads(sys.argv[6])
batches, default_size = [int(b) for b in batches.split(",")], int(default_size)
if fmt == "legacy":
    os.environ["FLAGS_enable_pir_api"] = "0"
import numpy as np, paddle
from paddle import inference
from paddle.static import InputSpec
paddle.set_device("cpu")
nn, vision = paddle.nn, paddle.vision.models


def calibrate(layer, shape):
    """Batch-norm statistics from one train-mode batch (momentum 0)."""
    norms = [m for m in layer.sublayers() if isinstance(m, nn.layer.norm._BatchNormBase)]
    if not norms:
        return
    for m in norms:
        m._momentum = 0.0
    layer.train()
    with paddle.no_grad():
        layer(paddle.to_tensor(np.random.default_rng(99).standard_normal([16, *shape]).astype("float32")))
    for m in norms:
        m._momentum = 0.9


for name in names:
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    rec = {"name": name}
    start = time.perf_counter()
    try:
        paddle.seed(0)
        size = sizes.get(name, default_size)
        shape = [1, size, size] if name == "LeNet" else [3, size, size]
        layer = getattr(vision, name)()
        calibrate(layer, shape)
        layer.eval()
        paddle.jit.save(layer, f"{d}/model", input_spec=[InputSpec([None, *shape], "float32", "x")])
        rec["saved_s"] = time.perf_counter() - start
        prog = f"{d}/model.json" if fmt == "pir" else f"{d}/model.pdmodel"
        config = inference.Config(prog, f"{d}/model.pdiparams")
        config.disable_gpu()
        config.disable_glog_info()
        config.disable_mkldnn()
        predictor = inference.create_predictor(config)
        handle = predictor.get_input_handle(predictor.get_input_names()[0])
        refs = {}
        for batch in batches:
            x = np.random.default_rng(batch).standard_normal([batch, *shape]).astype("float32")
            handle.reshape(list(x.shape))
            handle.copy_from_cpu(x)
            predictor.run()
            outs = [predictor.get_output_handle(n).copy_to_cpu() for n in predictor.get_output_names()]
            refs[batch] = x, outs
        # a float64 reference: the dygraph forward of the same weights in float64, so pdx's float32 rounding can be
        # set beside paddle's own (in a deep random network both are amplified well past 1e-6)
        layer.to(dtype="float64")
        for batch, (x, outs) in refs.items():
            with paddle.no_grad():
                exact = layer(paddle.to_tensor(x.astype("float64")))
            exact = [t.numpy() for t in (exact if isinstance(exact, (list, tuple)) else [exact])]
            np.savez(f"{d}/io{batch}.npz", x=x, **{f"y{i}": y for i, y in enumerate(outs)},
                     **{f"r{i}": r for i, r in enumerate(exact)})
        rec["ok"] = True
    except Exception as e:  # recorded: the row says paddle itself failed
        rec["ok"] = False
        rec["error"] = f"{type(e).__name__}: {e}".replace("\n", " ")[:300]
    with open(os.path.join(root, "report.jsonl"), "a") as f:
        f.write(json.dumps(rec) + "\n")
    print(name, "saved" if rec["ok"] else rec["error"], flush=True)
'''


def all_models() -> list[str]:
    """The constructors of paddle.vision.models.__all__ (lower-case names), and LeNet (a class only)."""
    out = subprocess.run([sys.executable, "-c", "import paddle; print(','.join(paddle.vision.models.__all__))"],
                         capture_output=True, text=True, check=True, env={**os.environ, "GLOG_minloglevel": "3"})
    names = out.stdout.strip().splitlines()[-1].split(",")
    return [n for n in names if n[0].islower()] + ["LeNet"]


def save_with_paddle(fmt, root, names, batches, size):
    """Run the paddle subprocess for one format; {name: record}."""
    os.makedirs(root, exist_ok=True)
    script = os.path.join(root, "save_models.py")
    with open(script, "w") as f:
        f.write(_PADDLE_SCRIPT)
    env = {**os.environ, "GLOG_minloglevel": "3", "FLAGS_enable_pir_api": "1" if fmt == "pir" else "0"}
    proc = subprocess.run([sys.executable, script, fmt, root, ",".join(names), ",".join(map(str, batches)),
                           str(size), json.dumps(SIZES)], env=env, capture_output=True, text=True)
    records = {}
    if os.path.exists(os.path.join(root, "report.jsonl")):
        for line in open(os.path.join(root, "report.jsonl")):
            rec = json.loads(line)
            records[rec["name"]] = rec
    for name in names:  # a model the subprocess died on (a crash, not an exception)
        records.setdefault(name, {"name": name, "ok": False,
                                  "error": f"paddle process exited {proc.returncode}: {proc.stderr[-200:]}"})
    return records


def _rel(a, b):
    return float(np.abs(np.asarray(a, np.float64) - b).max() / max(float(np.abs(b).max()), 1e-30))


def compare(directory, batches):
    """One saved model in pdx.inference against paddle's outputs: {status, rel (pdx vs paddle), scale (max |y|),
    pdx_f64 / paddle_f64 (each against the float64 reference)}."""
    import jax

    from pdx import inference

    row = {"rel": None, "scale": None, "pdx_f64": None, "paddle_f64": None}
    try:
        predictor = inference.create_predictor(inference.Config(directory))
        worst = scale = abs_worst = pdx_f64 = paddle_f64 = 0.0
        for batch in batches:
            io = np.load(os.path.join(directory, f"io{batch}.npz"))
            got = predictor.run([io["x"]])
            want = [io[f"y{i}"] for i in range(sum(k.startswith("y") for k in io.files))]
            if len(got) != len(want):
                return {**row, "status": f"error: {len(got)} outputs, paddle has {len(want)}"}
            for i, (g, w) in enumerate(zip(got, want)):
                g = np.asarray(g)
                if g.shape != w.shape:
                    return {**row, "status": f"error: shape {g.shape} vs paddle {w.shape}"}
                size = float(np.abs(w).max())
                abs_worst = max(abs_worst, float(np.abs(g - w).max()) / max(1.0, size))
                worst, scale = max(worst, _rel(g, w)), max(scale, size)
                pdx_f64, paddle_f64 = max(pdx_f64, _rel(g, io[f"r{i}"])), max(paddle_f64, _rel(w, io[f"r{i}"]))
        if not np.isfinite(worst):
            status = "mismatch (not finite)"
        elif abs_worst <= OK_REL:
            status = "ok"
        elif pdx_f64 <= 2 * paddle_f64:  # as close to the float64 result as paddle's float32 run is
            status = "ok (float32 rounding)"
        else:
            status = "mismatch"
        return {"status": status, "rel": worst, "scale": scale, "pdx_f64": pdx_f64, "paddle_f64": paddle_f64}
    except inference.ModelFormatError as e:
        msg = str(e)
        kinds = re.search(r"unsupported kinds: \[([^\]]*)\]", msg)
        first = re.search(r"is '([^']+)', which pdx cannot translate", msg)
        if kinds or first:
            return {**row, "status": "untranslated op " + (kinds.group(1).replace("'", "") if kinds else
                                                           first.group(1))}
        return {**row, "status": f"error: {msg[:160]}"}
    except Exception as e:  # reported in the row
        return {**row, "status": f"error: {type(e).__name__}: {str(e)[:160]}"}
    finally:
        jax.clear_caches()


def _num(v, spec):
    return "" if v is None else format(v, spec)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="", help="comma-separated names (default: every constructor)")
    parser.add_argument("--formats", default="pir,legacy", help="pir, legacy or both (comma-separated)")
    parser.add_argument("--batches", default="1,2", help="batch sizes compared (comma-separated)")
    parser.add_argument("--size", type=int, default=64, help="image side for the models that take any size")
    parser.add_argument("--json", default="", help="also write the rows to this JSON file")
    args = parser.parse_args()
    known = all_models()
    names = [n for n in args.models.split(",") if n] or known
    unknown = [n for n in names if n not in known]
    if unknown:
        parser.error(f"--models: {unknown} are not paddle.vision.models constructors; choose from {known}")
    formats = [f for f in args.formats.split(",") if f]
    if not formats or any(f not in ("pir", "legacy") for f in formats):
        parser.error(f"--formats={args.formats!r}: use pir, legacy or pir,legacy")
    batches = [int(b) for b in args.batches.split(",")]
    rows = []
    print(f"{'model':<22} {'format':<7} {'size':>4} {'status':<26} {'pdx vs paddle':>13} {'max|y|':>7} "
          f"{'pdx vs f64':>10} {'paddle vs f64':>13} {'pdx s':>6}", flush=True)
    with tempfile.TemporaryDirectory(prefix="paddle_vision_") as tmp:
        for fmt in formats:
            root = os.path.join(tmp, fmt)
            records = save_with_paddle(fmt, root, names, batches, args.size)
            for name in names:
                rec, d = records[name], os.path.join(root, name)
                start = time.perf_counter()
                if rec["ok"]:
                    row = compare(d, batches)
                else:
                    row = {"status": f"paddle failed: {rec['error'][:120]}", "rel": None, "scale": None,
                           "pdx_f64": None, "paddle_f64": None}
                row = {"model": name, "format": fmt, "size": SIZES.get(name, args.size), **row,
                       "pdx_s": round(time.perf_counter() - start, 1)}
                rows.append(row)
                print(f"{name:<22} {fmt:<7} {row['size']:>4} {row['status']:<26} {_num(row['rel'], '.1e'):>13} "
                      f"{_num(row['scale'], '.3g'):>7} {_num(row['pdx_f64'], '.1e'):>10} "
                      f"{_num(row['paddle_f64'], '.1e'):>13} {row['pdx_s']:>6.1f}", flush=True)
                shutil.rmtree(d, ignore_errors=True)
    for fmt in formats:
        ok = sum(r["status"] == "ok" for r in rows if r["format"] == fmt)
        rounding = sum(r["status"] == "ok (float32 rounding)" for r in rows if r["format"] == fmt)
        print(f"{fmt}: {ok} / {len(names)} ok, {rounding} more as close to float64 as paddle's float32")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
