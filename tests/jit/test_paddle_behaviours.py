"""Paddle behaviours that ported programs rely on, past their first missing name:
Python scalars as compile-time constants, plain list/dict attributes on layers,
`pdx.jit.save` without `input_spec`, export with dynamic dims through common ops,
`tensor and None` in converted conditions, and values escaping compiled loops."""

import json

import numpy as np
import jax.numpy as jnp
import pytest

import pdx
import pdx.nn.functional as F
from pdx import nn
from pdx.jit import InputSpec


def test_python_scalars_are_compile_time_constants():
    calls = []

    @pdx.jit
    def f(x, training, n, mode="sum"):
        calls.append(1)
        if training:                 # a Python bool: stays Python (no cond, no tracer bool error)
            x = x * 2
        for _ in range(n):           # a Python int: an unrolled loop
            x = x + 1
        return x.sum() if mode == "sum" else x.max()

    x = jnp.arange(3.0)
    assert float(f(x, True, 2)) == pytest.approx(float(((x * 2) + 2).sum()))
    assert float(f(x, False, 3)) == pytest.approx(float((x + 3).sum()))
    assert float(f(x, False, 3, mode="max")) == pytest.approx(5.0)
    assert float(f(x, True, 2)) == pytest.approx(float(((x * 2) + 2).sum()))  # cached: no new trace
    assert f.cache_size() == 3 and len(calls) == 3
    f(x, 1, 2)                        # 1 == True, but a different Python type: its own trace
    assert f.cache_size() == 4


def _build_blocks(layer, nn_mod, n=2):
    """Paddle model-zoo style: plain list/dict attributes next to add_sublayer."""
    layer.fc = nn_mod.Linear(4, 4)
    layer.blocks = []
    for i in range(n):
        layer.blocks.append(layer.add_sublayer(f"block{i}", nn_mod.Linear(4, 4)))
    layer.cache = {}
    layer.sizes = [4, 4]


def _run_blocks(layer, x):
    y = layer.fc(x)
    for blk in layer.blocks:
        y = blk(y)
    layer.cache["last"] = len(layer.sizes)
    return y


class _Blocks(nn.Layer):
    def __init__(self):
        super().__init__()
        _build_blocks(self, nn)

    forward = _run_blocks


def test_layer_with_plain_list_and_dict_attributes_matches_paddle(paddle):
    import paddle.nn as pnn

    class PdBlocks(pnn.Layer):  # the same class, written for paddle
        def __init__(self):
            super().__init__()
            _build_blocks(self, pnn)

        forward = _run_blocks

    ours, theirs = _Blocks(), PdBlocks()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.set_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((3, 4)).astype("float32")
    want = theirs(paddle.to_tensor(x)).numpy()
    np.testing.assert_allclose(np.asarray(ours(jnp.asarray(x))), want, rtol=1e-5, atol=1e-5)
    compiled = pdx.jit(ours)
    np.testing.assert_allclose(np.asarray(compiled(jnp.asarray(x))), want, rtol=1e-5, atol=1e-5)
    assert ours.cache == {"last": 2} and len(ours.parameters()) == 6


class _Classifier(nn.Layer):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(30, 8)
        self.conv = nn.Conv1D(8, 8, 3, padding=1)
        self.norm = nn.LayerNorm(8)
        self.fc = nn.Linear(8, 3)

    @pdx.jit.to_static
    def forward(self, ids, mask):
        x = self.emb(ids)                                                   # (B, T, 8)
        x = pdx.transpose(self.conv(pdx.transpose(x, [0, 2, 1])), [0, 2, 1])
        x = self.norm(x) * pdx.unsqueeze(mask, -1)
        x = pdx.concat([x, x * 0.5], axis=1)
        att = F.softmax(pdx.matmul(x, x, transpose_y=True) / 8 ** 0.5, axis=-1)
        x = pdx.matmul(att, x)
        x = pdx.reshape(x, [x.shape[0], -1, 8])
        pooled = pdx.sum(x, axis=1) / (pdx.sum(mask, axis=1, keepdim=True) + 1.0)
        pooled = pdx.where(pooled > 0, pooled, pdx.zeros_like(pooled))
        pooled = pdx.clip(pooled, -3.0, 3.0) + pdx.mean(pooled, axis=-1, keepdim=True)
        return F.log_softmax(self.fc(pooled), axis=-1)


def test_jit_save_without_input_spec_uses_the_last_call(tmp_path):
    net = _Classifier()
    net.eval()
    rng = np.random.default_rng(0)
    ids = jnp.asarray(rng.integers(0, 30, (2, 7)), dtype=jnp.int32)
    mask = jnp.asarray(rng.integers(0, 2, (2, 7)), dtype=jnp.float32)
    want = np.asarray(net(ids, mask))
    path = pdx.jit.save(net, str(tmp_path / "last_call"))
    loaded = pdx.jit.load(path)
    np.testing.assert_allclose(np.asarray(loaded(ids, mask)), want, rtol=1e-5, atol=1e-5)
    # As Paddle's saved programs, it takes other sizes than the last call's: batch 1, another length.
    for b, t in ((1, 7), (3, 4)):
        ids_b, mask_b = ids[:1].repeat(b, 0)[:, :t], mask[:1].repeat(b, 0)[:, :t]
        np.testing.assert_allclose(np.asarray(loaded(ids_b, mask_b)), np.asarray(net(ids_b, mask_b)),
                                   rtol=1e-5, atol=1e-5)

    with pytest.raises(ValueError, match="input_spec is required"):
        pdx.jit.save(nn.Linear(2, 2), str(tmp_path / "never_called"))


class _Projection(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 2)

    def forward(self, x):
        return self.fc(x).reshape([x.shape[0], -1])


def test_jit_save_after_a_to_static_call_keeps_the_batch_and_length_dynamic_like_paddle(tmp_path, paddle):
    """Paddle's program saved after a batch-16 call takes batch 1 and another length (its features stay)."""
    x16, x1 = np.ones((16, 5, 6), np.float32), np.ones((1, 3, 6), np.float32)
    ref = paddle.jit.to_static(paddle.nn.Linear(6, 2))
    ref(paddle.to_tensor(x16))
    paddle.jit.save(ref, str(tmp_path / "paddle" / "m"))
    assert list(paddle.jit.load(str(tmp_path / "paddle" / "m"))(paddle.to_tensor(x1)).shape) == [1, 3, 2]
    net = pdx.jit.to_static(_Projection())
    net(jnp.asarray(x16))
    path = pdx.jit.save(net, str(tmp_path / "pdx"))
    assert json.loads((path / "manifest.json").read_text())["inputs"][0]["shape"] == ["batch", "dim1", 6]
    loaded = pdx.jit.load(path)
    np.testing.assert_allclose(np.asarray(loaded(jnp.asarray(x1))), np.asarray(net(jnp.asarray(x1))), rtol=1e-6)
    assert loaded(jnp.asarray(x1)).shape == (1, 6)  # x.shape[0] stays symbolic (Paddle bakes in 16 there)


def test_export_with_dynamic_dims_through_common_ops(tmp_path):
    net = _Classifier()
    net.eval()
    spec = [InputSpec([None, None], "int32", "ids"), InputSpec([None, None], "float32", "mask")]
    loaded = pdx.jit.load(pdx.jit.save(net, str(tmp_path / "dynamic"), input_spec=spec))
    rng = np.random.default_rng(1)
    for b, t in [(1, 3), (4, 9)]:
        ids = jnp.asarray(rng.integers(0, 30, (b, t)), dtype=jnp.int32)
        mask = jnp.asarray(rng.integers(0, 2, (b, t)), dtype=jnp.float32)
        np.testing.assert_allclose(np.asarray(loaded(ids, mask)), np.asarray(net(ids, mask)), rtol=1e-5, atol=1e-5)


def test_tensor_and_python_value_follows_paddle():
    @pdx.jit
    def f(x, mask):
        m = mask and None          # Paddle: `None and mask` -> None
        k = mask or 0              # Paddle: `0 or mask` -> mask
        both = mask and (x > 0)    # two tensors: elementwise
        out = x if m is None else x * 100
        return out + pdx.cast(k, "float32") + pdx.cast(both, "float32")

    x = jnp.asarray([1.0, -1.0])
    np.testing.assert_allclose(np.asarray(f(x, jnp.asarray(True))), [3.0, 0.0])


class _Counter:
    def __init__(self):
        self.total = 0.0


def test_value_escaping_a_compiled_loop_names_the_loop():
    acc = _Counter()

    @pdx.jit
    def f(x, n):
        i = 0
        while i < n:
            acc.total = acc.total + x
            i += 1
        return acc.total

    with pytest.raises(pdx.jit.Dy2StaticError, match=r"escaped it(.|\n)*while i < n"):
        f(jnp.ones(2), jnp.asarray(3))
