"""pdx.incubate.nn fused layers and ops against paddle.

Paddle's CPU build has no kernels for most fused ops (fused_attention,
fused_feedforward, fused_gemm_epilogue, fused_rotary_position_embedding, ...),
so these compare with the unfused paddle layers/ops the fused ops' docs define,
with weights copied from paddle's own fused layers (same state_dict keys and shapes).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx.incubate import nn as inn
from pdx.incubate.nn import functional as IF


def _np(t):
    return np.asarray(t.numpy() if hasattr(t, "numpy") else t)


def _state(layer):
    return {k: tuple(np.shape(v)) for k, v in layer.state_dict().items()}


def _copy_from_paddle(ours, theirs):
    ours.set_state_dict({k: _np(v) for k, v in theirs.state_dict().items()})


def _paddle_encoder_from_fused(paddle, fused_pd, d, nhead, ff, normalize_before, activation):
    """paddle.nn.TransformerEncoderLayer holding a fused layer's weights (its unfused composition)."""
    ref = paddle.nn.TransformerEncoderLayer(d, nhead, ff, dropout=0.0, activation=activation,
                                            normalize_before=normalize_before)
    sd = {k: _np(v) for k, v in fused_pd.state_dict().items()}
    qkv_w, qkv_b = sd["fused_attn.qkv_weight"], sd["fused_attn.qkv_bias"]
    new = {}
    for i, name in enumerate(("q_proj", "k_proj", "v_proj")):
        new[f"self_attn.{name}.weight"] = qkv_w[i].reshape(d, d).T
        new[f"self_attn.{name}.bias"] = qkv_b[i].reshape(d)
    new["self_attn.out_proj.weight"] = sd["fused_attn.linear_weight"]
    new["self_attn.out_proj.bias"] = sd["fused_attn.linear_bias"]
    new["linear1.weight"], new["linear1.bias"] = sd["ffn._linear1_weight"], sd["ffn._linear1_bias"]
    new["linear2.weight"], new["linear2.bias"] = sd["ffn._linear2_weight"], sd["ffn._linear2_bias"]
    if normalize_before:
        new["norm1.weight"], new["norm1.bias"] = sd["fused_attn.pre_ln_scale"], sd["fused_attn.pre_ln_bias"]
        new["norm2.weight"], new["norm2.bias"] = sd["ffn._ln1_scale"], sd["ffn._ln1_bias"]
    else:
        new["norm1.weight"], new["norm1.bias"] = sd["fused_attn.ln_scale"], sd["fused_attn.ln_bias"]
        new["norm2.weight"], new["norm2.bias"] = sd["ffn._ln2_scale"], sd["ffn._ln2_bias"]
    ref.set_state_dict({k: paddle.to_tensor(v.astype(np.float32)) for k, v in new.items()})
    ref.eval()
    return ref


def test_fused_layers_state_dicts_equal_paddles_and_encoder_matches_unfused_paddle(paddle, rng):
    import paddle.incubate.nn as pinn

    d, h, ff = 8, 2, 16
    for layer, args, kw in [
        ("FusedMultiHeadAttention", (d, h), {"normalize_before": True}),
        ("FusedMultiHeadAttention", (d, h), {"transpose_qkv_wb": True}),
        ("FusedFeedForward", (d, ff), {"normalize_before": True}),
        ("FusedBiasDropoutResidualLayerNorm", (d,), {}),
        ("FusedLinear", (d, 4), {"transpose_weight": True}),
        ("FusedDropoutAdd", (), {}),
    ]:
        assert _state(getattr(inn, layer)(*args, **kw)) == _state(getattr(pinn, layer)(*args, **kw)), (layer, kw)

    x = rng.normal(size=(2, 5, d)).astype(np.float32)
    mask = np.tril(np.ones((5, 5), bool))[None, None]
    for normalize_before, activation in ((False, "relu"), (True, "gelu")):
        fused_pd = pinn.FusedTransformerEncoderLayer(d, h, ff, dropout_rate=0.0, activation=activation,
                                                     normalize_before=normalize_before)
        for p in fused_pd.parameters():  # non-trivial norms and biases
            p.set_value(paddle.to_tensor(rng.normal(size=p.shape).astype(np.float32) * 0.5))
        ours = inn.FusedTransformerEncoderLayer(d, h, ff, dropout_rate=0.0, activation=activation,
                                                normalize_before=normalize_before)
        assert _state(ours) == _state(fused_pd)
        _copy_from_paddle(ours, fused_pd)
        ref = _paddle_encoder_from_fused(paddle, fused_pd, d, h, ff, normalize_before, activation)

        xp = paddle.to_tensor(x, stop_gradient=False)
        want = ref(xp, src_mask=paddle.to_tensor(mask))
        if normalize_before:
            (want * want).sum().backward()
        got = ours(jnp.asarray(x), src_mask=jnp.asarray(mask))
        np.testing.assert_allclose(got, _np(want), rtol=1e-5, atol=1e-5)
        if normalize_before:  # gradients and the compiled call once
            gx = jax.grad(lambda v, m=ours: jnp.sum(m(v, src_mask=jnp.asarray(mask)) ** 2))(jnp.asarray(x))
            np.testing.assert_allclose(gx, _np(xp.grad), rtol=1e-4, atol=1e-4)
            compiled = pdx.jit(lambda v, m=ours: m(v, src_mask=jnp.asarray(mask)))(jnp.asarray(x))
            np.testing.assert_allclose(compiled, _np(want), rtol=1e-5, atol=1e-5)

    # transpose_qkv_wb: weight [embed, 3 * embed] holds the same projection as [3, heads, head_dim, embed]
    a = inn.FusedMultiHeadAttention(d, h, dropout_rate=0.0, attn_dropout_rate=0.0)
    b = inn.FusedMultiHeadAttention(d, h, dropout_rate=0.0, attn_dropout_rate=0.0, transpose_qkv_wb=True)
    sd = {k: np.asarray(v) for k, v in a.state_dict().items()}
    sd["qkv_weight"] = sd["qkv_weight"].reshape(3 * d, d).T
    sd["qkv_bias"] = sd["qkv_bias"].reshape(-1)
    b.set_state_dict(sd)
    np.testing.assert_allclose(b(jnp.asarray(x)), a(jnp.asarray(x)), rtol=1e-5, atol=1e-5)


def test_fused_ops_match_paddle_compositions(paddle, rng):
    import paddle.incubate.nn.functional as PIF
    import paddle.nn.functional as PF

    T = paddle.to_tensor
    x = rng.normal(size=(2, 3, 8)).astype(np.float32)
    res = rng.normal(size=(2, 3, 8)).astype(np.float32)
    bias, w, b8 = (rng.normal(size=s).astype(np.float32) for s in ((8,), (8,), (8,)))

    # fused_bias_dropout_residual_layer_norm: layer_norm(residual + (x + bias)) without dropout
    got = IF.fused_bias_dropout_residual_layer_norm(x, res, bias, w, b8, dropout_rate=0.0)
    want = PF.layer_norm(T(res) + T(x) + T(bias), [8], T(w), T(b8))
    np.testing.assert_allclose(got, _np(want), rtol=1e-5, atol=1e-5)

    # fused_dropout_add: paddle runs it on CPU; p=0 and eval forms
    np.testing.assert_allclose(IF.fused_dropout_add(x, res, p=0.0), _np(PIF.fused_dropout_add(T(x), T(res), p=0.0)),
                               rtol=1e-6)
    np.testing.assert_allclose(
        IF.fused_dropout_add(x, res, p=0.3, training=False, mode="downscale_in_infer"),
        _np(PIF.fused_dropout_add(T(x), T(res), p=0.3, training=False, mode="downscale_in_infer")), rtol=1e-6)
    # training-mode dropout (the layer's own key, advanced per call): each element is kept (x / (1 - p)) or dropped
    layer = inn.FusedDropoutAdd(0.5)
    first, second = (np.asarray(layer(x, np.zeros_like(x))) for _ in range(2))
    assert not np.array_equal(first, second)
    assert np.all(np.isclose(first, 0) | np.isclose(first, 2 * x, rtol=1e-6))

    # matmul family: paddle.matmul + bias (+ relu / tanh-gelu, the gemm epilogue's)
    a, m, mb = (rng.normal(size=s).astype(np.float32) for s in ((4, 6), (5, 6), (5,)))
    np.testing.assert_allclose(IF.fused_matmul_bias(a, m, mb, transpose_y=True),
                               _np(paddle.matmul(T(a), T(m), transpose_y=True) + T(mb)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(IF.fused_linear(a, m.T, mb), _np(PF.linear(T(a), T(m.T), T(mb))), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(IF.fused_linear_activation(a, m, mb, trans_y=True, activation="gelu"),
                               _np(PF.gelu(paddle.matmul(T(a), T(m), transpose_y=True) + T(mb), approximate=True)),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(inn.FusedLinear(6, 5)(a).shape, (4, 5))

    # fused_bias_act: activation of x + bias; gated methods split the last axis
    np.testing.assert_allclose(IF.fused_bias_act(x, bias, act_method="gelu"), _np(PF.gelu(T(x) + T(bias))),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(IF.fused_bias_act(x, bias, act_method="relu"), _np(PF.relu(T(x) + T(bias))), rtol=1e-6)
    np.testing.assert_allclose(IF.fused_bias_act(x, bias, act_method="swiglu"), _np(PIF.swiglu(T(x) + T(bias))),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(IF.swiglu(x, res), _np(PIF.swiglu(T(x), T(res))), rtol=1e-5, atol=1e-6)

    # fused_rms_norm / fused_layer_norm over x + bias + residual (begin_norm_axis=2)
    h = T(x) + T(bias) + T(res)
    out, resid, _ = IF.fused_rms_norm(x, w, b8, 1e-6, begin_norm_axis=2, bias=bias, residual=res)
    want = h * paddle.rsqrt((h * h).mean(-1, keepdim=True) + 1e-6) * T(w) + T(b8)
    np.testing.assert_allclose(out, _np(want), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(resid, _np(h), rtol=1e-6)
    out, resid, mean, _ = IF.fused_layer_norm(x, w, b8, 1e-5, residual_alpha=0.5, begin_norm_axis=2, bias=bias,
                                                residual=res)
    h2 = T(x) + T(bias) + 0.5 * T(res)
    np.testing.assert_allclose(out, _np(PF.layer_norm(h2, [8], T(w), T(b8), 1e-5)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mean, _np(h2.mean(-1)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(IF.fused_layer_norm(x, None, None, 1e-5, bias=bias), x + bias, rtol=1e-6)
    np.testing.assert_allclose(IF.fast_ln(x, w, b8)[0], _np(PF.layer_norm(T(x), [8], T(w), T(b8))), rtol=1e-5,
                               atol=1e-5)

    # fused_feedforward (post-LN, relu) == paddle linear/relu/linear/residual/layer_norm
    w1, b1, w2, b2 = (rng.normal(size=s).astype(np.float32) for s in ((8, 16), (16,), (16, 8), (8,)))
    got = IF.fused_feedforward(x, w1, w2, b1, b2, ln2_scale=w, ln2_bias=b8, dropout1_rate=0.0, dropout2_rate=0.0)
    want = PF.layer_norm(T(x) + PF.linear(PF.relu(PF.linear(T(x), T(w1), T(b1))), T(w2), T(b2)), [8], T(w), T(b8))
    np.testing.assert_allclose(got, _np(want), rtol=1e-5, atol=1e-5)


def _rope_ref(paddle, value, sin, cos, every_two):
    if every_two:
        rot = paddle.stack([-value[..., 1::2], value[..., 0::2]], axis=-1).reshape(value.shape)
    else:
        half = value.shape[-1] // 2
        rot = paddle.concat([-value[..., half:], value[..., :half]], axis=-1)
    return value * cos + rot * sin


def _sin_cos(paddle, seq, dim, every_two):
    pos = paddle.arange(0, seq, 1).astype("float32")
    inv = 1 / (10000 ** (paddle.arange(0, dim, 2).astype("float32") / dim))
    ang = pos.unsqueeze(1) * inv.unsqueeze(0)
    ang = paddle.stack([ang, ang], axis=-1).reshape([seq, dim]) if every_two else paddle.concat([ang, ang], -1)
    return paddle.sin(ang).reshape([1, seq, 1, dim]), paddle.cos(ang).reshape([1, seq, 1, dim])


def test_rotary_embedding_and_attention_ops_match_references(paddle, rng):
    T = paddle.to_tensor
    b, s, h, d = 2, 6, 2, 8
    q, k = (rng.normal(size=(b, s, h, d)).astype(np.float32) for _ in range(2))
    for every_two in (True, False):
        sin, cos = _sin_cos(paddle, s, d, every_two)
        oq, ok, ov = IF.fused_rotary_position_embedding(q, k, use_neox_rotary_style=every_two)
        assert ov is None
        np.testing.assert_allclose(oq, _np(_rope_ref(paddle, T(q), sin, cos, every_two)), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(ok, _np(_rope_ref(paddle, T(k), sin, cos, every_two)), rtol=1e-5, atol=1e-5)
        # given tables with position ids (rows gathered per token), and time-major layout
        ids = np.stack([rng.permutation(s) for _ in range(b)])
        got = IF.fused_rotary_position_embedding(q, sin=_np(sin), cos=_np(cos), position_ids=ids,
                                                 use_neox_rotary_style=every_two)[0]
        sin_g = paddle.gather(sin.reshape([s, d]), T(ids.reshape(-1))).reshape([b, s, 1, d])
        cos_g = paddle.gather(cos.reshape([s, d]), T(ids.reshape(-1))).reshape([b, s, 1, d])
        np.testing.assert_allclose(got, _np(_rope_ref(paddle, T(q), sin_g, cos_g, every_two)), rtol=1e-5, atol=1e-5)
        tm = IF.fused_rotary_position_embedding(q.transpose(1, 0, 2, 3), time_major=True,
                                                use_neox_rotary_style=every_two)[0]
        np.testing.assert_allclose(np.asarray(tm).transpose(1, 0, 2, 3), oq, rtol=1e-6, atol=1e-6)

    # variable-length attention: paddle softmax attention with the lengths as a mask
    qh, kh, vh = (rng.normal(size=(b, h, s, d)).astype(np.float32) for _ in range(3))
    lens = np.array([[6], [4]], np.int32)
    got = IF.variable_length_memory_efficient_attention(qh, kh, vh, lens, lens, causal=True)
    keep = (np.arange(s)[None, :] < lens.reshape(b, 1, 1, 1)) & np.tril(np.ones((s, s), bool))
    logits = paddle.matmul(T(qh), T(kh), transpose_y=True) * d ** -0.5 + T(np.where(keep, 0.0, -1e9).astype(np.float32))
    want = _np(paddle.matmul(paddle.nn.functional.softmax(logits, -1), T(vh)))
    want = want * (np.arange(s)[None, None, :, None] < lens.reshape(b, 1, 1, 1))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

    # one decoding step against a cache == full attention over the cached prefix plus this token
    t = 3
    cache = np.zeros((2, b, h, s, d), np.float32)
    cache[:, :, :, :t] = rng.normal(size=(2, b, h, t, d))
    xq = rng.normal(size=(b, 3 * h * d)).astype(np.float32)
    out, new_cache = IF.masked_multihead_attention(xq, cache, sequence_lengths=np.full((b,), t))
    qkv = xq.reshape(b, 3, h, d)
    keys = np.concatenate([cache[0, :, :, :t], qkv[:, 1, :, None]], axis=2)
    vals = np.concatenate([cache[1, :, :, :t], qkv[:, 2, :, None]], axis=2)
    scores = paddle.nn.functional.softmax(T(np.einsum("bhd,bhtd->bht", qkv[:, 0], keys) * d ** -0.5), -1)
    want = np.einsum("bht,bhtd->bhd", _np(scores), vals).reshape(b, h * d)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(new_cache)[:, :, :, : t + 1], np.stack([keys, vals]), rtol=1e-6)


def test_fused_ops_reject_bad_arguments():
    x = jnp.ones((2, 4, 8))
    with pytest.raises(ValueError, match="dropout_rate"):
        IF.fused_bias_dropout_residual_layer_norm(x, x, dropout_rate=1.5)
    with pytest.raises(ValueError, match="act_method"):
        IF.fused_bias_act(x, act_method="nope")
    with pytest.raises(ValueError, match="qkv_weight"):
        IF.fused_multi_head_attention(x, jnp.ones((8, 24)), jnp.eye(8))
    with pytest.raises(ValueError, match="divisible"):
        inn.FusedMultiHeadAttention(8, 3)
    with pytest.raises(ValueError, match="nranks"):
        inn.FusedFeedForward(8, 16, nranks=2)
    with pytest.raises(NotImplementedError, match="quant"):
        IF.fused_rms_norm(x, None, None, 1e-6, quant_scale=0.5)
    attn = inn.FusedMultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match="self-attention"):
        attn(x, jnp.zeros((2, 4, 8)))
