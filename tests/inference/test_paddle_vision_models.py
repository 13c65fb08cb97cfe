"""paddle.vision.models beyond the zoo test's three, saved by paddle 3.3.1 and run in pdx as Paddle Inference runs them.

squeezenet1_1 (ceil-mode max pools, fire-module concats, global average pool), googlenet (three outputs, Inception
branches, 224 input for its fixed-size classifier heads), inception_v3 (75 input: exclusive average pools with
padding, 1x7 / 7x1 factorized convolutions) and shufflenet_v2_swish (channel shuffles, swish). Each is saved with a
None batch by `paddle.jit.save` in one paddle process per format (PIR JSON for the first three, legacy ProgramDesc
for squeezenet1_1 and shufflenet_v2_swish; the benchmark covers every model in both),
batch norm calibrated before saving, and compared with `paddle.inference` on the same files at batch 1 and 2.
benchmarks/paddle_vision_models.py runs every constructor the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from pdx import inference

MODELS = {"pir": {"squeezenet1_1": 48, "googlenet": 224, "inception_v3": 75},
          "legacy": {"squeezenet1_1": 48, "shufflenet_v2_swish": 48}}
BATCHES = (1, 2)

_PADDLE_SCRIPT = r'''
import json, os, sys
fmt, root, models = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
if fmt == "legacy":
    os.environ["FLAGS_enable_pir_api"] = "0"
import numpy as np, paddle
from paddle import inference
from paddle.static import InputSpec
paddle.set_device("cpu")
report = {}
for name, size in models.items():
    paddle.seed(0)
    layer = getattr(paddle.vision.models, name)()
    norms = [m for m in layer.sublayers() if isinstance(m, paddle.nn.layer.norm._BatchNormBase)]
    for m in norms:  # batch-norm statistics from one train-mode batch (momentum 0): eval-mode outputs stay O(1)
        m._momentum = 0.0
    layer.train()
    with paddle.no_grad():
        layer(paddle.to_tensor(np.random.default_rng(99).standard_normal([8, 3, size, size]).astype("float32")))
    layer.eval()
    d = f"{root}/{name}"
    paddle.jit.save(layer, f"{d}/model", input_spec=[InputSpec([None, 3, size, size], "float32", "x")])
    config = inference.Config(f"{d}/model.json" if fmt == "pir" else f"{d}/model.pdmodel", f"{d}/model.pdiparams")
    config.disable_gpu()
    config.disable_glog_info()
    config.disable_mkldnn()
    predictor = inference.create_predictor(config)
    handle = predictor.get_input_handle(predictor.get_input_names()[0])
    for batch in (1, 2):
        x = np.random.default_rng(batch).standard_normal([batch, 3, size, size]).astype("float32")
        handle.reshape(list(x.shape))
        handle.copy_from_cpu(x)
        predictor.run()
        np.savez(f"{d}/io{batch}.npz", x=x, **{f"y{i}": predictor.get_output_handle(n).copy_to_cpu()
                                               for i, n in enumerate(predictor.get_output_names())})
    report[name] = {"inputs": predictor.get_input_names(), "outputs": predictor.get_output_names()}
json.dump(report, open(f"{root}/report.json", "w"))
'''


@pytest.fixture(scope="module")
def saves(tmp_path_factory):
    """{fmt: (root, report)}: the two paddle processes, started together."""
    root = tmp_path_factory.mktemp("paddle_vision")
    script = root / "save_models.py"  # a file: paddle's dy2static reads the layers' source
    script.write_text(_PADDLE_SCRIPT)
    procs = {}
    for fmt, models in MODELS.items():
        env = {**os.environ, "GLOG_minloglevel": "3", "FLAGS_enable_pir_api": "1" if fmt == "pir" else "0"}
        procs[fmt] = subprocess.Popen([sys.executable, str(script), fmt, str(root / fmt), json.dumps(models)],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = {}
    try:
        for fmt, proc in procs.items():
            _, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, err[-3000:]
            out[fmt] = root / fmt, json.loads((root / fmt / "report.json").read_text())
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
    return out


@pytest.mark.parametrize("fmt", list(MODELS))
def test_vision_models_equal_paddle_inference(saves, fmt):
    root, report = saves[fmt]
    assert sorted(report) == sorted(MODELS[fmt])
    table = {}
    for name in MODELS[fmt]:
        predictor = inference.create_predictor(inference.Config(str(root / name)))
        assert predictor.get_input_names() == report[name]["inputs"]
        assert predictor.get_output_names() == report[name]["outputs"]
        for batch in BATCHES:
            io = np.load(root / name / f"io{batch}.npz")
            got = predictor.run([io["x"]])
            assert len(got) == len(report[name]["outputs"]) == (3 if name == "googlenet" else 1), (name, len(got))
            for i, g in enumerate(got):
                want = io[f"y{i}"]
                assert np.shape(g) == want.shape, (fmt, name, batch, np.shape(g), want.shape)
                scale = float(np.abs(want).max())
                # outputs of order one, not vanishing: the bound means something
                assert scale > 0.05, (fmt, name, batch, i, scale)
                table[f"{name} b{batch} y{i}"] = float(np.abs(np.asarray(g) - want).max()), scale
    print(f"\n{fmt} max |pdx - paddle.inference| (max |y|):",
          json.dumps({k: f"{d:.2e} ({s:.2g})" for k, (d, s) in table.items()}))
    bad = {k: v for k, v in table.items() if v[0] > 1e-4 * max(1.0, v[1])}
    assert not bad, bad
