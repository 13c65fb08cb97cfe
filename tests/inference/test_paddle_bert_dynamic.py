"""A BERT-style encoder saved with dynamic batch and sequence length runs in pdx.inference as in Paddle Inference.

The model computes its shapes inside the program (position ids from
`paddle.arange(seq_len)`, `expand` to the input's shape, `reshape([0, 0, heads,
dim])`, reshapes to `[batch, -1, hidden]` and to a concatenated shape tensor),
so every shape op has to give the new call's sizes. Saved by paddle 3.3.1 in
both formats (PIR `model.json`, and legacy `model.pdmodel` with
FLAGS_enable_pir_api=0); Paddle Inference runs the same files on the same
inputs through one predictor (reshape + copy_from_cpu + run per shape).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx import inference

HIDDEN = 32
# (batch, sequence length): two batch sizes at two lengths, in an order that goes back to an earlier shape
CASES = ((1, 5), (7, 5), (7, 11), (1, 11), (1, 5))
FORMATS = {"pir": "model.json", "legacy": "model.pdmodel"}

# Saves the encoder in the format FLAGS_enable_pir_api selects and records Paddle Inference's outputs on the
# saved files for every case, through one predictor. Paddle 3.3.1's legacy saver refuses F.gelu and
# paddle.tanh (their generated APIs take PIR values only), so in that mode GELU is written with erf and
# tanh as stanh(x, 1, 1): the same functions.
_PADDLE_SCRIPT = r"""
import json, os, sys
import numpy as np, paddle
from paddle import inference, nn
from paddle.static import InputSpec
F = nn.functional
root, cases = sys.argv[1], json.loads(sys.argv[2])
legacy = os.environ.get("FLAGS_enable_pir_api") == "0"
H, HEADS, LAYERS, VOCAB = 32, 4, 2, 100
gelu = (lambda x: 0.5 * x * (1.0 + paddle.erf(x * 0.7071067811865476))) if legacy else F.gelu
tanh = (lambda x: paddle.stanh(x, 1.0, 1.0)) if legacy else paddle.tanh

class Attention(nn.Layer):
    def __init__(self, concat_shape):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(H, H) for _ in range(4))
        self.concat_shape = concat_shape
    def forward(self, x, mask):
        d = H // HEADS
        heads = lambda y: y.reshape([0, 0, HEADS, d]).transpose([0, 2, 1, 3])
        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        p = F.softmax((q @ k.transpose([0, 1, 3, 2])) * (d ** -0.5) + mask, axis=-1)
        c = (p @ v).transpose([0, 2, 1, 3])
        if self.concat_shape:
            shape = paddle.concat([paddle.shape(x)[:2].astype("int64"), paddle.to_tensor([H], dtype="int64")])
        else:
            shape = [paddle.shape(x)[0], -1, H]
        return self.o(c.reshape(shape))

class Block(nn.Layer):
    def __init__(self, i):
        super().__init__()
        self.attn, self.n1, self.n2 = Attention(i % 2 == 1), nn.LayerNorm(H), nn.LayerNorm(H)
        self.f1, self.f2 = nn.Linear(H, 2 * H), nn.Linear(2 * H, H)
    def forward(self, x, mask):
        x = self.n1(x + self.attn(x, mask))
        return self.n2(x + self.f2(gelu(self.f1(x))))

class Bert(nn.Layer):
    def __init__(self):
        super().__init__()
        self.tok, self.pos, self.typ = nn.Embedding(VOCAB, H), nn.Embedding(64, H), nn.Embedding(2, H)
        self.norm = nn.LayerNorm(H)
        self.blocks = nn.LayerList([Block(i) for i in range(LAYERS)])
        self.pool = nn.Linear(H, H)
    def forward(self, input_ids, token_type_ids):
        batch, seq_len = paddle.shape(input_ids)[0], paddle.shape(input_ids)[1]
        pos = paddle.arange(seq_len, dtype="int64").unsqueeze(0).expand([batch, seq_len])
        x = self.norm(self.tok(input_ids) + self.pos(pos) + self.typ(token_type_ids))
        mask = (input_ids != 0).astype("float32").unsqueeze([1, 2])
        mask = (1.0 - mask) * paddle.to_tensor(-1e4)
        for block in self.blocks:
            x = block(x, mask)
        return x, tanh(self.pool(x[:, 0]))

paddle.seed(0)
model = Bert()
model.eval()
spec = [InputSpec([None, None], "int64", "input_ids"), InputSpec([None, None], "int64", "token_type_ids")]
paddle.jit.save(model, f"{root}/model", input_spec=spec)
program = f"{root}/model.pdmodel" if legacy else f"{root}/model.json"
config = inference.Config(program, f"{root}/model.pdiparams")
config.disable_gpu()
config.disable_glog_info()
predictor = inference.create_predictor(config)
for i, (batch, seq) in enumerate(cases):
    rng = np.random.default_rng(i)
    ids = rng.integers(1, VOCAB, (batch, seq)).astype("int64")
    ids[:, seq - 2:] = 0  # padding, masked out
    types = rng.integers(0, 2, (batch, seq)).astype("int64")
    for name, x in zip(predictor.get_input_names(), (ids, types)):
        handle = predictor.get_input_handle(name)
        handle.reshape(list(x.shape))
        handle.copy_from_cpu(x)
        np.save(f"{root}/{name}_{i}.npy", x)
    predictor.run()
    for j, name in enumerate(predictor.get_output_names()):
        np.save(f"{root}/out{j}_{i}.npy", predictor.get_output_handle(name).copy_to_cpu())
json.dump({"inputs": predictor.get_input_names(), "outputs": predictor.get_output_names()},
          open(f"{root}/names.json", "w"))
"""


@pytest.fixture(scope="module", params=sorted(FORMATS))
def saved(request, paddle, tmp_path_factory):
    """(format, directory with the saved model and Paddle Inference's inputs/outputs, names)."""
    fmt = request.param
    root = tmp_path_factory.mktemp(f"bert_dynamic_{fmt}")
    env = {**os.environ, "FLAGS_enable_pir_api": "0" if fmt == "legacy" else "1"}
    script = root / "save_bert.py"  # a file, not `-c`: paddle's dy2static reads the forward's source
    script.write_text(_PADDLE_SCRIPT)
    proc = subprocess.run([sys.executable, str(script), str(root), json.dumps(CASES)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (root / FORMATS[fmt]).is_file()
    return fmt, root, json.loads((root / "names.json").read_text())


def _case(root, names, i):
    inputs = [np.load(root / f"{n}_{i}.npy") for n in names["inputs"]]
    wants = [np.load(root / f"out{j}_{i}.npy") for j in range(len(names["outputs"]))]
    return inputs, wants


def _worst(outs, wants, batch, seq):
    assert [tuple(np.shape(o)) for o in outs] == [(batch, seq, HIDDEN), (batch, HIDDEN)]
    assert [tuple(np.shape(o)) for o in outs] == [w.shape for w in wants]
    return max(float(np.abs(np.asarray(o) - w).max()) for o, w in zip(outs, wants))


def test_one_predictor_follows_every_shape(saved):
    fmt, root, names = saved
    predictor = inference.create_predictor(inference.Config(str(root / FORMATS[fmt]), str(root / "model.pdiparams")))
    assert predictor.get_input_names() == names["inputs"]
    assert predictor.get_output_names() == names["outputs"]
    worst = {}
    for i, (batch, seq) in enumerate(CASES):
        inputs, wants = _case(root, names, i)
        for name, x in zip(names["inputs"], inputs):
            handle = predictor.get_input_handle(name)
            handle.reshape([batch, seq])
            handle.copy_from_cpu(x)
        assert predictor.run() is True
        outs = [predictor.get_output_handle(n).copy_to_cpu() for n in names["outputs"]]
        worst[batch, seq] = _worst(outs, wants, batch, seq)
    assert max(worst.values()) < 1e-4, (fmt, worst)
    # one compiled program per distinct input shape; the repeated (1, 5) reused its own
    assert predictor._engine.compiled_count() == len(set(CASES))


def test_translated_layer_eager_and_jit(saved):
    """`pdx.jit.load` of the same files: eager (op by op) and under `pdx.jit`, at two batch sizes and lengths."""
    fmt, root, names = saved
    net = pdx.jit.load(str(root / "model"))
    assert isinstance(net, inference.PaddleTranslatedLayer)
    assert list(net.input_names) == names["inputs"]
    compiled = pdx.jit(net)
    worst = {}
    for i in (1, 3):  # (7, 5) and (1, 11)
        batch, seq = CASES[i]
        inputs, wants = _case(root, names, i)
        worst["eager", batch, seq] = _worst(net(*inputs), wants, batch, seq)
        worst["jit", batch, seq] = _worst(compiled(*inputs), wants, batch, seq)
    assert max(worst.values()) < 1e-4, (fmt, worst)


def test_shape_ops_are_computed_at_trace_time(saved):
    """Shapes, position ids and reshape targets are constants of the traced program, not array computations."""
    fmt, root, names = saved
    program = inference.PaddleProgram(root / FORMATS[fmt], root / "model.pdiparams")
    inputs, _ = _case(root, names, 2)
    jaxpr = jax.make_jaxpr(lambda p, xs: program(p, xs))(program.values, [jnp.asarray(x) for x in inputs])
    eqns = jaxpr.jaxpr.eqns
    prims = [eqn.primitive.name for eqn in eqns]
    # arange, the shape slices and the concatenated shape never reach the jaxpr: the one slice is x[:, 0]
    assert not {"iota", "concatenate", "dynamic_slice"} & set(prims) and prims.count("slice") == 1, prims
    sizes = {tuple(eqn.params["new_sizes"]) for eqn in eqns if eqn.primitive.name == "reshape"}
    assert {(7, 11, 4, HIDDEN // 4), (7, 11, HIDDEN)} <= sizes, sizes
