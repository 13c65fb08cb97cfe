"""A Paddle-saved model run by pdx.inference against Paddle Inference on the same files (CPU latency).

paddle.vision.models.resnet18 (random weights, eval mode) is saved with
`paddle.jit.save` (PIR JSON + .pdiparams) into a temporary directory; both
predictors load those files and answer the same request: a float32 numpy
batch [N, 3, S, S] in through an input handle, numpy logits out through
`copy_to_cpu` (host transfers included). Paddle Inference runs with its
defaults for CPU (oneDNN on, IR optimization on) and the same thread count;
pdx.inference with its defaults (pdx's oneDNN kernels on the CPU) and with
`disable_mkldnn()` (plain XLA).
Reported: the median of `--iters` timed runs after warm-up, per batch size,
and the max |diff| of the two outputs.

    python benchmarks/paddle_inference_import.py --batches 1 8 --size 224
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import numpy as np


def _median_ms(run, iters: int) -> float:
    run()
    run()
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return 1000 * float(np.median(times))


def _handles_run(predictor, x):
    def run():
        handle = predictor.get_input_handle(predictor.get_input_names()[0])
        handle.reshape(list(x.shape))
        handle.copy_from_cpu(x)
        predictor.run()
        return predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
    return run


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)

    import paddle
    import paddle.inference as paddle_infer
    from paddle.static import InputSpec

    import pdx.inference as pdx_infer

    paddle.set_device("cpu")
    root = tempfile.mkdtemp()
    layer = getattr(paddle.vision.models, args.model)()
    layer.eval()
    paddle.jit.save(layer, f"{root}/model", input_spec=[InputSpec([None, 3, args.size, args.size], "float32", "x")])
    predictors = {}
    for name, api in (("paddle inference", paddle_infer), ("pdx.inference", pdx_infer), ("pdx xla", pdx_infer)):
        config = api.Config(f"{root}/model.json", f"{root}/model.pdiparams")
        config.disable_gpu()
        config.set_cpu_math_library_num_threads(args.threads)
        if name == "paddle inference":
            config.disable_glog_info()
        if name == "pdx xla":  # pdx with oneDNN off: XLA's own convolutions
            config.disable_mkldnn()
        predictors[name] = api.create_predictor(config)
    rows = []
    for batch in args.batches:
        x = np.random.default_rng(batch).standard_normal((batch, 3, args.size, args.size)).astype("float32")
        outs, row = {}, {"batch": batch}
        for name, predictor in predictors.items():
            run = _handles_run(predictor, x)
            outs[name] = run()
            row[f"{name} ms"] = round(_median_ms(run, args.iters), 2)
        for name in ("pdx.inference", "pdx xla"):
            row[f"{name} / paddle"] = round(row[f"{name} ms"] / row["paddle inference ms"], 2)
            row[f"{name} max |diff|"] = float(np.abs(outs[name] - outs["paddle inference"]).max())
        rows.append(row)
        print(json.dumps(row), flush=True)
    return {"model": args.model, "size": args.size, "threads": args.threads, "rows": rows}


if __name__ == "__main__":
    print(json.dumps(main()))
