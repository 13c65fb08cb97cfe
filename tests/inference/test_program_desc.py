"""Legacy ProgramDesc models (`model.pdmodel`, paddle 3.3.1 with FLAGS_enable_pir_api=0) run in pdx as Paddle Inference runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tracemalloc

import numpy as np
import pytest

from pdx import inference
from pdx.inference import ModelFormatError
from pdx.inference._program_desc import MAX_DEPTH, read_program_desc

BATCHES = (1, 7)

# Saves every model in one legacy-mode paddle process, runs paddle.inference on the same files and records
# the outputs, the predictor's names and the op types paddle's own protobuf parser reads.
_PADDLE_SCRIPT = r"""
import json, os, sys
os.environ["FLAGS_enable_pir_api"] = "0"
import numpy as np, paddle
from paddle import inference
from paddle.base.proto import framework_pb2
from paddle.static import InputSpec
nn = paddle.nn
root = sys.argv[1]
paddle.seed(0)

class BiLSTM(nn.Layer):
    def __init__(self):
        super().__init__()
        self.emb, self.lstm, self.fc = nn.Embedding(100, 16), nn.LSTM(16, 24, direction="bidirect"), nn.Linear(48, 2)
    def forward(self, ids):
        h, _ = self.lstm(self.emb(ids))
        return nn.functional.softmax(self.fc(h.mean(axis=1)))

image = InputSpec([None, 3, 32, 32], "float32", "x")
models = {
    "cnn": (nn.Sequential(nn.Conv2D(3, 8, 3, padding=1), nn.BatchNorm2D(8), nn.ReLU(), nn.MaxPool2D(2),
                          nn.Flatten(), nn.Linear(8 * 16 * 16, 5), nn.Softmax()), image),
    "resnet18": (paddle.vision.models.resnet18(num_classes=10), image),
    "bilstm": (BiLSTM(), InputSpec([None, 9], "int64", "ids")),
}
report = {}
for name, (layer, spec) in models.items():
    layer.eval()
    try:
        paddle.jit.save(layer, f"{root}/{name}/model", input_spec=[spec])
    except Exception as e:  # paddle's legacy saver refuses some models (recorded, the model is skipped)
        report[name] = {"saved": False, "error": f"{type(e).__name__}: {e}"[:300]}
        continue
    config = inference.Config(f"{root}/{name}/model.pdmodel", f"{root}/{name}/model.pdiparams")
    config.disable_gpu()
    config.disable_glog_info()
    predictor = inference.create_predictor(config)
    handle = predictor.get_input_handle(predictor.get_input_names()[0])
    for batch in (1, 7):
        rng = np.random.default_rng(batch)
        x = (rng.integers(0, 100, (batch, 9)).astype("int64") if name == "bilstm"
             else rng.standard_normal((batch, 3, 32, 32)).astype("float32"))
        np.save(f"{root}/{name}/in{batch}.npy", x)
        handle.reshape(list(x.shape))
        handle.copy_from_cpu(x)
        predictor.run()
        np.save(f"{root}/{name}/out{batch}.npy",
                predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu())
    desc = framework_pb2.ProgramDesc()
    desc.ParseFromString(open(f"{root}/{name}/model.pdmodel", "rb").read())
    block = desc.blocks[0]
    report[name] = {"saved": True, "inputs": predictor.get_input_names(), "outputs": predictor.get_output_names(),
                    "op_types": [op.type for op in block.ops],
                    "params": sorted(v.name for v in block.vars if v.persistable and v.type.type == 7)}
json.dump(report, open(f"{root}/report.json", "w"))
"""


@pytest.fixture(scope="module")
def legacy(tmp_path_factory):
    """(root directory, report) of the models paddle saved in the ProgramDesc format."""
    root = tmp_path_factory.mktemp("legacy_models")
    env = {**os.environ, "FLAGS_enable_pir_api": "0"}
    proc = subprocess.run([sys.executable, "-c", _PADDLE_SCRIPT, str(root)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root, json.loads((root / "report.json").read_text())


def test_outputs_equal_paddle_inference(legacy):
    root, report = legacy
    assert report["cnn"]["saved"] and report["resnet18"]["saved"]
    worst = {}
    for name, info in report.items():
        if not info["saved"]:  # paddle 3.3.1's legacy saver fails on nn.LSTM ("Unknown place type")
            continue
        predictor = inference.create_predictor(inference.Config(str(root / name / "model.pdmodel"),
                                                                str(root / name / "model.pdiparams")))
        assert predictor.get_input_names() == info["inputs"]
        assert predictor.get_output_names() == info["outputs"]
        for batch in BATCHES:
            (out,) = predictor.run([np.load(root / name / f"in{batch}.npy")])
            want = np.load(root / name / f"out{batch}.npy")
            assert out.shape == want.shape, (name, batch)
            worst[name, batch] = float(np.abs(np.asarray(out) - want).max())
    assert len(worst) >= 4 and max(worst.values()) < 1e-4, worst


def test_parse_agrees_with_paddles_protobuf(legacy):
    root, report = legacy
    info = report["resnet18"]
    program = read_program_desc(root / "resnet18" / "model.pdmodel")
    assert sorted(p.name for p in program.params) == info["params"]
    assert [f.name for f in program.feeds] == info["inputs"] and [f.name for f in program.fetches] == info["outputs"]
    legacy_ops = [t for t in info["op_types"] if t not in ("feed", "fetch")]
    assert sum(op.name == "pd_op.conv2d" for op in program.ops) == legacy_ops.count("conv2d") == 20
    assert sum(op.name == "pd_op.batch_norm" for op in program.ops) == legacy_ops.count("batch_norm")
    # the directory and the path prefix find the .pdmodel too
    assert inference.is_paddle_model(root / "resnet18") and inference.is_paddle_model(root / "resnet18" / "model")


def _hostile(tmp_path, data: bytes, name="model.pdmodel"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _refused(path, match):
    tracemalloc.start()
    start = time.perf_counter()
    with pytest.raises(ModelFormatError, match=match) as info:
        read_program_desc(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert time.perf_counter() - start < 2.0 and peak < 64 << 20, (time.perf_counter() - start, peak)
    assert str(path) in str(info.value) and "byte" in str(info.value)


def test_truncated_and_lying_lengths(legacy, tmp_path):
    root, _ = legacy
    data = (root / "cnn" / "model.pdmodel").read_bytes()
    _refused(_hostile(tmp_path, data[: len(data) // 2]), "left|past the end")
    # the first field is blocks (key 0x0a) with a varint length: claim one byte more than the file holds
    assert data[0] == 0x0A
    _refused(_hostile(tmp_path, b"\x0a" + _varint(len(data)) + data[1 + len(_varint(len(data))):]), "claims")
    flipped = bytearray(data)
    flipped[1] ^= 0x40  # a bit flip in the outer length
    _refused(_hostile(tmp_path, bytes(flipped)), "claims|left|past the end|not valid|must be")


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _nest(key: bytes, depth: int, core: bytes = b"") -> bytes:
    for _ in range(depth):
        core = key + _varint(len(core)) + core
    return core


def test_deep_nesting_and_huge_length(tmp_path):
    # the declared schema has no recursive message (at most MAX_DEPTH levels), so a file nested 5000 deep is
    # refused where it leaves the schema, without recursion: through blocks > vars > type > dense_tensor ...
    deep = b"\x0a" + _varint(0) + _nest(b"\x1a", 5000)
    _refused(_hostile(tmp_path, _nest(b"\x0a", 1, deep)), "packed|must be|not valid|claims|left")
    # ... and through ProgramDesc.blocks nested in itself (BlockDesc field 1 is a varint, not a message)
    _refused(_hostile(tmp_path, _nest(b"\x0a", 5000), "self.pdmodel"), "packed|must be|not valid|claims|left")
    assert MAX_DEPTH >= 6  # ProgramDesc > BlockDesc > VarDesc > VarType > DenseTensorDesc > TensorDesc
    huge = b"\x0a" + _varint(1 << 62) + b"\x00" * 16
    _refused(_hostile(tmp_path, huge, "huge.pdmodel"), "claims")
    _refused(_hostile(tmp_path, b"\x0a" + b"\xff" * 11, "long.pdmodel"), "varint")
    # a huge length inside an unknown field is checked before it is skipped
    _refused(_hostile(tmp_path, b"\x7a" + _varint(1 << 40) + b"\x00", "skip.pdmodel"), "claims")


def test_unknown_legacy_op_names_it(legacy, tmp_path):
    root, _ = legacy
    data = (root / "cnn" / "model.pdmodel").read_bytes()
    assert data.count(b"\x1a\x04relu") == 1  # OpDesc.type (field 3) = "relu"
    (tmp_path / "model.pdmodel").write_bytes(data.replace(b"\x1a\x04relu", b"\x1a\x04rel_"))
    (tmp_path / "model.pdiparams").write_bytes((root / "cnn" / "model.pdiparams").read_bytes())
    with pytest.raises(ModelFormatError, match="rel_.*cannot translate"):
        inference.create_predictor(inference.Config(str(tmp_path / "model.pdmodel"),
                                                    str(tmp_path / "model.pdiparams")))
