"""Paddle programs that resize: bicubic, trilinear, linear and 5-D nearest interpolation as Paddle Inference runs them.

`F.interpolate` layers (sizes, one scale, a scale per axis, align_corners, align_mode, channel-last) are saved by
paddle 3.3.1's `paddle.jit.save` in both formats (one paddle process per format; the legacy saver writes the
`*_interp_v2` ops) and run by `paddle.inference.create_predictor` (oneDNN off: Paddle's oneDNN executor refuses
the float-array scale attribute of a 5-D nearest resize) on the same files at batch 1 and 3.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from pdx import inference

CASES = {
    "bicubic_size": ([2, 5, 6], dict(size=[9, 4], mode="bicubic")),
    "bicubic_scale_align_corners": ([2, 5, 6], dict(scale_factor=1.7, mode="bicubic", align_corners=True)),
    "bicubic_scale_per_axis": ([2, 5, 6], dict(scale_factor=[2.0, 1.5], mode="bicubic")),
    "bicubic_nhwc": ([5, 6, 2], dict(size=[8, 8], mode="bicubic", data_format="NHWC")),
    "trilinear_scale": ([2, 3, 4, 5], dict(scale_factor=2, mode="trilinear")),
    "trilinear_size_align_mode_1": ([2, 3, 4, 5], dict(size=[5, 7, 3], mode="trilinear", align_mode=1)),
    "linear_size": ([3, 7], dict(size=[11], mode="linear", data_format="NCW")),
    "linear_scale_align_corners": ([3, 7], dict(scale_factor=1.5, mode="linear", align_corners=True,
                                                data_format="NCW")),
    "nearest_3d": ([2, 3, 4, 5], dict(scale_factor=2, mode="nearest")),
}

_PADDLE_SCRIPT = r'''
import json, os, sys
root, fmt = sys.argv[1], sys.argv[2]
if fmt == "legacy":
    os.environ["FLAGS_enable_pir_api"] = "0"
import numpy as np, paddle
import paddle.nn.functional as F
from paddle import inference
from paddle.static import InputSpec
paddle.set_device("cpu")
cases = json.loads(sys.argv[3])


class Resize(paddle.nn.Layer):
    def __init__(self, kw):
        super().__init__()
        self.kw = kw

    def forward(self, x):
        return F.interpolate(x, **self.kw)


for name, (shape, kw) in cases.items():
    prefix = os.path.join(root, name, "model")
    paddle.jit.save(Resize(kw), prefix, input_spec=[InputSpec([None] + shape, "float32", "x")])
    suffix = ".pdmodel" if fmt == "legacy" else ".json"
    config = inference.Config(prefix + suffix, "")
    config.disable_mkldnn()
    config.disable_glog_info()
    predictor = inference.create_predictor(config)
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal([batch] + shape).astype("float32")
        handle = predictor.get_input_handle(predictor.get_input_names()[0])
        handle.reshape(list(x.shape))
        handle.copy_from_cpu(x)
        predictor.run()
        np.save(os.path.join(root, name, f"x{batch}.npy"), x)
        np.save(os.path.join(root, name, f"y{batch}.npy"),
                predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu())
'''


@pytest.fixture(scope="module", params=["pir", "legacy"])
def saved(request, tmp_path_factory, run_paddle_script):
    root = tmp_path_factory.mktemp(f"paddle_resize_{request.param}")
    run_paddle_script(_PADDLE_SCRIPT, root, request.param, json.dumps(CASES))
    return request.param, root


def test_resizes_equal_paddle_inference(saved):
    fmt, root = saved
    suffix = ".pdmodel" if fmt == "legacy" else ".json"
    worst = {}
    for name in CASES:
        program = inference.PaddleProgram(root / name / f"model{suffix}", None)
        kind = {op.name for op in program.program.ops if op.name.endswith("_interp")}
        assert kind, (name, [op.name for op in program.program.ops])
        predictor = inference.create_predictor(inference.Config(str(root / name / f"model{suffix}"), ""))
        for batch in (1, 3):
            x, want = np.load(root / name / f"x{batch}.npy"), np.load(root / name / f"y{batch}.npy")
            (got,) = predictor.run([x])
            assert got.shape == want.shape, (name, batch, got.shape, want.shape)
            worst[name, batch] = float(np.abs(np.asarray(got) - want).max())
    assert max(worst.values()) < 1e-5, worst
