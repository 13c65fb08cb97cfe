"""Paddle-saved inference models shared by the tests of pdx.inference (saved once per session)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

MODELS = ("resnet18", "mobilenet_v3_small", "shufflenet_v2_x0_25", "bert", "bilstm")
IMAGE = (3, 32, 32)
VOCAB, SEQ = 100, 9


def _text_models(paddle):
    nn = paddle.nn

    class Bert(nn.Layer):
        """A BERT-style encoder: token + position embeddings, 2 post-norm layers, tanh pooler, classifier."""

        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(VOCAB, 32), nn.Embedding(64, 32)
            self.norm = nn.LayerNorm(32)
            layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation="gelu")
            self.encoder = nn.TransformerEncoder(layer, 2)
            self.head = nn.Linear(32, 3)

        def forward(self, ids):
            pos = paddle.arange(ids.shape[1]).unsqueeze(0)
            h = self.encoder(self.norm(self.tok(ids) + self.pos(pos)))
            return self.head(paddle.tanh(h[:, 0]))

    class BiLSTM(nn.Layer):
        """A bidirectional LSTM classifier over mean-pooled states."""

        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, 16)
            self.lstm = nn.LSTM(16, 24, direction="bidirect")
            self.fc = nn.Linear(48, 2)

        def forward(self, ids):
            h, _ = self.lstm(self.emb(ids))
            return nn.functional.softmax(self.fc(h.mean(axis=1)))

    return Bert, BiLSTM


def _example_input(name: str, batch: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed + batch)
    if name in ("bert", "bilstm"):
        return rng.integers(0, VOCAB, (batch, SEQ)).astype("int64")
    return rng.standard_normal((batch, *IMAGE)).astype("float32")


@pytest.fixture(scope="session")
def saved_models(paddle, tmp_path_factory):
    """{name: directory holding model.json + model.pdiparams} written by paddle.jit.save."""
    from paddle.static import InputSpec

    root = tmp_path_factory.mktemp("paddle_models")
    paddle.seed(0)
    bert, bilstm = _text_models(paddle)
    vision = paddle.vision.models
    builders = {"resnet18": vision.resnet18, "mobilenet_v3_small": vision.mobilenet_v3_small,
                "shufflenet_v2_x0_25": vision.shufflenet_v2_x0_25, "bert": bert, "bilstm": bilstm}
    out = {}
    for name in MODELS:
        layer = builders[name]()
        layer.eval()
        text = name in ("bert", "bilstm")
        spec = InputSpec([None, None], "int64", "ids") if text else InputSpec([None, *IMAGE], "float32", "x")
        paddle.jit.save(layer, str(root / name / "model"), input_spec=[spec])
        out[name] = root / name
    return out


@pytest.fixture(scope="session")
def paddle_outputs(paddle, saved_models):
    """Paddle Inference's outputs on the saved files: {(name, batch): array}."""
    inference = paddle.inference
    out = {}
    for name, path in saved_models.items():
        config = inference.Config(str(path / "model.json"), str(path / "model.pdiparams"))
        config.disable_gpu()
        config.disable_glog_info()
        predictor = inference.create_predictor(config)
        handle = predictor.get_input_handle(predictor.get_input_names()[0])
        for batch in (1, 7):
            handle.reshape(list(_example_input(name, batch).shape))
            handle.copy_from_cpu(_example_input(name, batch))
            predictor.run()
            out[name, batch] = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
    return out


@pytest.fixture(scope="session")
def example_input():
    """example_input(name, batch) -> the deterministic input array the tests feed model `name`."""
    return _example_input


@pytest.fixture(scope="session")
def text_models(paddle):
    """(Bert, BiLSTM): the Paddle Layer classes of the two text models."""
    return _text_models(paddle)


@pytest.fixture(scope="session")
def run_paddle_script():
    """run(script, root, *args): a Paddle program in a process of its own (a legacy save must set
    FLAGS_enable_pir_api before paddle is imported), written to root/save.py since paddle.jit.save reads the
    layer's source; fails with the program's stderr."""
    pytest.importorskip("paddle")

    def run(script: str, root, *args) -> None:
        path = root / "save.py"
        path.write_text(script)
        done = subprocess.run([sys.executable, str(path), str(root), *map(str, args)], capture_output=True, text=True,
                              timeout=600, env={**os.environ, "GLOG_minloglevel": "3"})
        assert done.returncode == 0, done.stderr[-3000:]
    return run
