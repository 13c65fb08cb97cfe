"""SOLOv2-style post-processing: `paddle.vision.ops.matrix_nms` in a saved program, as Paddle Inference runs it.

Programs with matrix NMS (linear and Gaussian decay, a background class or none, keep_top_k or all) are saved by
paddle 3.3.1's `paddle.jit.save` in both formats (one paddle process per format) and run by
`paddle.inference.create_predictor` on score tables with near ties and with no box above the thresholds, at batch 1
and 3 (near ties: the order of exactly tied candidates is that of Paddle's unstable std::partial_sort, which pdx
does not reproduce). The row count depends on the data: pdx computes fixed-size rows per image and counts inside the compiled
program (`pdx.vision.ops.matrix_nms_padded`) and the predictor trims them, so `copy_to_cpu()` gives Paddle's rows.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from pdx import inference

CASES = {
    "linear_keep": dict(score_threshold=0.1, post_threshold=0.2, nms_top_k=20, keep_top_k=15, use_gaussian=False,
                        background_label=0),
    "gaussian_all": dict(score_threshold=0.05, post_threshold=0.1, nms_top_k=-1, keep_top_k=-1, use_gaussian=True,
                         gaussian_sigma=2.0, background_label=-1),
    "unnormalized": dict(score_threshold=0.1, post_threshold=0.15, nms_top_k=8, keep_top_k=10, normalized=False,
                         background_label=1),
}
M, C = 12, 3

_PADDLE_SCRIPT = r'''
import json, os, sys
root, fmt = sys.argv[1], sys.argv[2]
if fmt == "legacy":
    os.environ["FLAGS_enable_pir_api"] = "0"
import numpy as np, paddle
from paddle import inference
from paddle.static import InputSpec
paddle.set_device("cpu")
cases, m, c = json.loads(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])


class Post(paddle.nn.Layer):
    def __init__(self, kw):
        super().__init__()
        self.kw = kw

    def forward(self, boxes, scores):
        out, num, index = paddle.vision.ops.matrix_nms(boxes, scores, return_index=True, return_rois_num=True,
                                                       **self.kw)
        return out, num, index


def inputs(batch, seed):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 0.6, (batch, m, 2))
    boxes = np.concatenate([xy, xy + rng.uniform(0.1, 0.4, (batch, m, 2))], -1).astype("float32")
    scores = rng.uniform(0, 1, (batch, c, m)).astype("float32")
    # near ties (exact ones, within or across classes, are ordered by Paddle's unstable std::partial_sort)
    scores[:, :, :4] = 0.5 + 1e-3 * np.arange(4) + 1e-4 * np.arange(c)[:, None]
    if seed == 2:
        scores[-1] = 0.01  # an image with nothing above the thresholds
    return boxes * (30 if not cases_kw.get("normalized", True) else 1), scores


for name, kw in cases.items():
    cases_kw = kw
    prefix = os.path.join(root, name, "model")
    paddle.jit.save(Post(kw), prefix, input_spec=[InputSpec([None, m, 4], "float32", "boxes"),
                                                  InputSpec([None, c, m], "float32", "scores")])
    config = inference.Config(prefix + (".pdmodel" if fmt == "legacy" else ".json"), "")
    config.disable_glog_info()
    predictor = inference.create_predictor(config)
    for batch in (1, 3):
        for seed in (0, 1, 2):
            boxes, scores = inputs(batch, seed)
            for handle_name, x in zip(predictor.get_input_names(), (boxes, scores)):
                handle = predictor.get_input_handle(handle_name)
                handle.reshape(list(x.shape))
                handle.copy_from_cpu(x)
            predictor.run()
            tag = f"{batch}_{seed}"
            np.save(os.path.join(root, name, f"boxes{tag}.npy"), boxes)
            np.save(os.path.join(root, name, f"scores{tag}.npy"), scores)
            for k, out_name in enumerate(predictor.get_output_names()):
                np.save(os.path.join(root, name, f"out{k}_{tag}.npy"),
                        predictor.get_output_handle(out_name).copy_to_cpu())
'''


@pytest.fixture(scope="module", params=["pir", "legacy"])
def saved(request, tmp_path_factory, run_paddle_script):
    root = tmp_path_factory.mktemp(f"paddle_matrix_nms_{request.param}")
    run_paddle_script(_PADDLE_SCRIPT, root, request.param, json.dumps(CASES), M, C)
    return request.param, root


def test_matrix_nms_programs_equal_paddle_inference(saved):
    fmt, root = saved
    suffix = ".pdmodel" if fmt == "legacy" else ".json"
    counts_seen = set()
    for name in CASES:
        predictor = inference.create_predictor(inference.Config(str(root / name / f"model{suffix}"), ""))
        for batch in (1, 3):
            for seed in (0, 1, 2):
                tag = f"{batch}_{seed}"
                boxes, scores = np.load(root / name / f"boxes{tag}.npy"), np.load(root / name / f"scores{tag}.npy")
                got = predictor.run([boxes, scores])
                want = [np.load(root / name / f"out{k}_{tag}.npy") for k in range(3)]
                assert len(got) == 3, name
                for k, (g, w) in enumerate(zip(got, want)):
                    g = np.asarray(g)
                    assert g.shape == w.shape, (name, tag, k, g.shape, w.shape)
                    if w.dtype.kind == "f":
                        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"{fmt} {name} {tag} out{k}")
                    else:
                        np.testing.assert_array_equal(g, w, err_msg=f"{fmt} {name} {tag} out{k}")
                counts_seen.update(int(v) for v in np.asarray(got[1]).reshape(-1))
    assert 0 in counts_seen and max(counts_seen) >= 8, counts_seen  # empty images and full ones were met
