"""The CPU attention kernel (pdx/kernels/onednn/csrc/attention.cc) against the pure-JAX reference;
training and export of a block on it and on the CPU LayerNorm.

The suite runs with 8 CPU devices, where "auto" keeps XLA's attention; the
tests here name impl="onednn", and a one-device process checks what "auto"
picks there, training and export included.
"""

import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pdx import kernels as K

# (batch, seq_q, seq_k, heads_q, heads_kv, head_dim, causal): query tiles of 64 with a
# partial last tile, more or fewer keys than queries, grouped heads, one query.
SHAPES = [
    (2, 128, 128, 4, 4, 64, True),
    (2, 100, 70, 4, 2, 24, True),
    (1, 70, 100, 6, 2, 40, True),
    (3, 65, 130, 2, 1, 8, False),
    (1, 1, 9, 2, 2, 16, True),
    (2, 150, 150, 2, 2, 32, False),
]


def _rel(a, b):
    """Max error relative to b's largest entry (at least 1: a one-key query's dq is exactly 0)."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1.0))


def test_onednn_attention_matches_the_reference_forward_and_backward(rng):
    for b, sq, sk, hq, hk, d, causal in SHAPES:
        q = jnp.asarray(rng.standard_normal((b, sq, hq, d)), jnp.float32)
        k = jnp.asarray(rng.standard_normal((b, sk, hk, d)), jnp.float32)
        v = jnp.asarray(rng.standard_normal((b, sk, hk, d)), jnp.float32)
        g = jnp.asarray(rng.standard_normal((b, sq, hq, d)), jnp.float32)

        def loss(fn):
            return lambda q, k, v: jnp.sum(fn(q, k, v) * g)

        ours = lambda q, k, v: K.flash_attention(q, k, v, causal=causal, impl="onednn")  # noqa: E731
        ref = lambda q, k, v: K.flash_attention_reference(q, k, v, causal=causal)  # noqa: E731
        step = jax.jit(jax.value_and_grad(loss(ours), argnums=(0, 1, 2)))
        hlo = step.lower(q, k, v).as_text()
        assert "pdx_onednn_attention_forward" in hlo and "pdx_onednn_attention_backward" in hlo
        assert _rel(jax.jit(ours)(q, k, v), ref(q, k, v)) < 2e-6, (b, sq, sk, hq, hk, d, causal)
        got, want = step(q, k, v), jax.value_and_grad(loss(ref), argnums=(0, 1, 2))(q, k, v)
        for x, y, name in zip(got[1], want[1], ("dq", "dk", "dv")):
            assert _rel(x, y) < 5e-6, (name, b, sq, sk, hq, hk, d, causal)


def test_onednn_attention_keeps_low_precision_dtypes_and_vmaps(rng):
    q = jnp.asarray(rng.standard_normal((2, 40, 4, 32)), jnp.float32)
    for dtype in (jnp.bfloat16, jnp.float16):
        x = q.astype(dtype)
        out = K.flash_attention(x, x, x, causal=True, impl="onednn")
        assert out.dtype == dtype
        assert _rel(out, K.flash_attention_reference(q, q, q, causal=True)) < 2e-2
    stacked = jnp.stack([q, 2 * q])  # vmap over a leading axis: one call per slice
    got = jax.vmap(lambda x: K.flash_attention(x, x, x, impl="onednn"))(stacked)
    want = jax.vmap(lambda x: K.flash_attention_reference(x, x, x))(stacked)
    assert _rel(got, want) < 2e-6


def test_onednn_attention_declines_bias_and_segments_by_name(rng):
    q = jnp.ones((1, 8, 2, 16))
    with pytest.raises(ValueError, match=r"flash_attention: the oneDNN attention takes neither segment_ids nor "
                                         r"bias; use impl='auto' or impl='xla'"):
        K.flash_attention(q, q, q, bias=jnp.zeros((1, 1, 8, 8)), impl="onednn")
    with pytest.raises(ValueError, match="neither segment_ids"):
        K.flash_attention(q, q, q, segment_ids=jnp.zeros((1, 8), jnp.int32), impl="onednn")
    # "auto" in this 8-device process: XLA's attention, no custom call.
    assert "pdx_onednn" not in jax.jit(lambda q: K.flash_attention(q, q, q)).lower(q).as_text()


_ONE_DEVICE = textwrap.dedent("""
    import json, tempfile
    import numpy as np
    import jax, jax.numpy as jnp
    import pdx, pdx.nn as nn, pdx.nn.functional as F

    class Block(nn.Layer):  # a pre-LayerNorm causal self-attention block, heads of 8
        def __init__(self):
            super().__init__()
            self.ln, self.qkv = nn.LayerNorm(16), nn.Linear(16, 48)
            self.proj, self.head = nn.Linear(16, 16), nn.Linear(16, 5)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = pdx.unbind(pdx.reshape(self.qkv(self.ln(x)), [b, t, 3, 2, 8]), axis=2)
            x = x + self.proj(pdx.reshape(F.scaled_dot_product_attention(q, k, v, is_causal=True), [b, t, d]))
            return self.head(x)

    def train(impl):
        with pdx.kernels.use_impl(impl):
            pdx.seed(0)
            model = Block()
            opt = pdx.optimizer.AdamW(learning_rate=0.01, parameters=model.parameters())
            rng = np.random.default_rng(1)
            x = pdx.to_tensor(rng.standard_normal((3, 70, 16)).astype("float32"))
            y = pdx.to_tensor(rng.integers(0, 5, (3, 70)))
            loss_fn = lambda model, x, y: F.cross_entropy(model(x), y)
            hlo = jax.jit(pdx.value_and_grad(loss_fn)).lower(model, x, y).as_text()
            losses = []
            for _ in range(4):
                loss, grads = pdx.value_and_grad(loss_fn)(model, x, y)
                opt.step(grads)
                losses.append(float(loss))
            return model, x, losses, hlo

    model, x, ours, hlo = train(None)
    _, _, xla, xla_hlo = train("xla")
    q = jnp.ones((1, 6, 2, 8))
    masked = jax.jit(lambda q: F.scaled_dot_product_attention(q, q, q, attn_mask=jnp.zeros((6, 6)))).lower(q)
    model.eval()
    path = pdx.export.export(model, tempfile.mkdtemp() + "/net", [pdx.jit.InputSpec([None, 70, 16])])
    program = jax.export.deserialize(bytearray((path / "program_onednn.jaxexport").read_bytes())).mlir_module()
    served = np.asarray(pdx.export.load(path)(np.asarray(x)))
    print(json.dumps({
        "devices": jax.device_count(), "ours": ours, "xla": xla,
        "calls": ["pdx_onednn_attention_forward" in hlo, "pdx_onednn_attention_backward" in hlo,
                  "pdx_onednn_layer_norm_forward" in hlo, "pdx_onednn_layer_norm_backward" in hlo,
                  "pdx_onednn_attention" in xla_hlo or "pdx_onednn_layer_norm" in xla_hlo,
                  "pdx_onednn_attention" in masked.as_text(),
                  "pdx_onednn_attention_forward" in program and "pdx_onednn_layer_norm_forward" in program],
        "export_diff": float(np.abs(served - np.asarray(model(x))).max())}))
""")


def test_one_device_trains_and_exports_through_the_kernel(tmp_path):
    env = {**os.environ, "XLA_FLAGS": "", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", _ONE_DEVICE], env=env, capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    r = json.loads(done.stdout.strip().splitlines()[-1])
    assert r["devices"] == 1
    # "auto" trains on the attention and LayerNorm kernels (forward and backward),
    # use_impl("xla") and a mask do not; the export's CPU program calls them too.
    assert r["calls"] == [True, True, True, True, False, False, True]
    np.testing.assert_allclose(r["ours"], r["xla"], rtol=1e-5)
    assert r["ours"][-1] < r["ours"][0]
    assert r["export_diff"] < 1e-5
