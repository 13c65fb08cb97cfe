"""MultiHeadAttention and Transformer layers against paddle (dropout=0, so deterministic)."""

import jax.numpy as jnp
import numpy as np
import pytest

import pdx.nn as nn
from layer_testutil import (assert_close, assert_grads_match, axis_names, load_from_paddle, load_into_paddle,
                            pd_forward, perturb)

ZERO = nn.initializer.Constant(0.0)
D, H, FF = 8, 2, 12


def _masks(rng, b, q, k):
    keep = rng.random((b, 1, q, k)) > 0.3
    keep[..., 0] = True  # every query sees at least one key
    return {"bool": keep, "float": np.where(keep, 0.0, -1e4).astype(np.float32)[:, 0]}


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("mask_kind", [None, "bool", "float"])
def test_multi_head_attention_matches_paddle(paddle, rng, need_weights, mask_kind):
    pd_layer = paddle.nn.MultiHeadAttention(D, H, kdim=6, vdim=5, need_weights=need_weights)
    layer = load_from_paddle(nn.MultiHeadAttention(D, H, kdim=6, vdim=5, need_weights=need_weights,
                                                   weight_attr=ZERO), pd_layer)
    q = rng.standard_normal((2, 3, D)).astype(np.float32)
    k = rng.standard_normal((2, 5, 6)).astype(np.float32)
    v = rng.standard_normal((2, 5, 5)).astype(np.float32)
    mask = None if mask_kind is None else _masks(rng, 2, 3, 5)[mask_kind]
    ours = layer(jnp.asarray(q), jnp.asarray(k), jnp.asarray(v), None if mask is None else jnp.asarray(mask))
    theirs = pd_layer(paddle.to_tensor(q), paddle.to_tensor(k), paddle.to_tensor(v),
                      None if mask is None else paddle.to_tensor(mask))
    if need_weights:
        assert_close(ours[0], theirs[0], atol=1e-5)
        assert_close(ours[1], theirs[1], atol=1e-5)
    else:
        assert_close(ours, theirs, atol=1e-5)


def test_multi_head_attention_grads_and_axes(paddle, rng):
    pd_layer = paddle.nn.MultiHeadAttention(D, H)
    layer = load_from_paddle(nn.MultiHeadAttention(D, H, weight_attr=ZERO), pd_layer)
    x = rng.standard_normal((2, 3, D)).astype(np.float32)
    assert_grads_match(paddle, layer, pd_layer, [x], rng, atol=1e-5)
    assert axis_names(layer.q_proj.weight) == (nn.axes.EMBED, nn.axes.HEADS)
    assert axis_names(layer.out_proj.weight) == (nn.axes.HEADS, nn.axes.EMBED)
    assert axis_names(layer.out_proj.bias) == (nn.axes.EMBED,)


def test_multi_head_attention_cache(paddle, rng):
    pd_layer = paddle.nn.MultiHeadAttention(D, H)
    layer = load_from_paddle(nn.MultiHeadAttention(D, H, weight_attr=ZERO), pd_layer)
    x = rng.standard_normal((2, 1, D)).astype(np.float32)
    mem = rng.standard_normal((2, 5, D)).astype(np.float32)
    cache = layer.gen_cache(jnp.asarray(x))
    pd_cache = pd_layer.gen_cache(paddle.to_tensor(x))
    for _ in range(2):  # incremental decoding: the cache grows by one step per call
        out, cache = layer(jnp.asarray(x), cache=cache)
        pd_out, pd_cache = pd_layer(paddle.to_tensor(x), cache=pd_cache)
        assert_close(out, pd_out)
    assert cache.k.shape == (2, H, 2, D // H)
    static = layer.gen_cache(jnp.asarray(mem), type=nn.MultiHeadAttention.StaticCache)
    pd_mem = paddle.to_tensor(mem)
    pd_static = pd_layer.gen_cache(pd_mem, pd_mem, type=paddle.nn.MultiHeadAttention.StaticCache)
    out, _ = layer(jnp.asarray(x), jnp.asarray(mem), jnp.asarray(mem), cache=static)
    assert_close(out, pd_layer(paddle.to_tensor(x), paddle.to_tensor(mem), paddle.to_tensor(mem),
                               cache=pd_static)[0])


@pytest.mark.parametrize("normalize_before", [False, True])
def test_encoder_layer_matches_paddle(paddle, rng, normalize_before):
    kwargs = dict(dropout=0.0, normalize_before=normalize_before, activation="gelu")
    pd_layer = paddle.nn.TransformerEncoderLayer(D, H, FF, **kwargs)
    layer = nn.TransformerEncoderLayer(D, H, FF, **kwargs, weight_attr=ZERO)
    assert [n for n, _ in layer.named_children()] == [n for n, _ in pd_layer.named_children()]
    assert repr(layer) == repr(pd_layer)
    load_from_paddle(layer, pd_layer)
    perturb(layer, rng)
    load_into_paddle(paddle, pd_layer, layer)
    x = rng.standard_normal((2, 5, D)).astype(np.float32)
    mask = _masks(rng, 2, 5, 5)["bool"]
    assert_close(layer(jnp.asarray(x), jnp.asarray(mask)), pd_forward(paddle, pd_layer, x, mask), atol=1e-5)
    assert axis_names(layer.linear1.weight) == (nn.axes.EMBED, nn.axes.MLP)
    assert axis_names(layer.linear2.weight) == (nn.axes.MLP, nn.axes.EMBED)


def test_encoder_stack_matches_paddle(paddle, rng):
    pd_enc = paddle.nn.TransformerEncoder(paddle.nn.TransformerEncoderLayer(D, H, FF, dropout=0.0), 2,
                                          norm=paddle.nn.LayerNorm(D))
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, weight_attr=ZERO), 2,
                                norm=nn.LayerNorm(D))
    load_from_paddle(enc, pd_enc)  # keys layers.0..., layers.1..., norm.*
    assert list(enc.state_dict()) == list(pd_enc.state_dict())  # the copies keep definition order
    assert repr(enc) == repr(pd_enc)
    x = rng.standard_normal((2, 5, D)).astype(np.float32)
    assert_close(enc(jnp.asarray(x)), pd_forward(paddle, pd_enc, x), atol=1e-5)


def test_encoder_copies_are_independent():
    base = nn.TransformerEncoderLayer(D, H, FF, dropout=0.5, weight_attr=ZERO)
    enc = nn.TransformerEncoder(base, 3)
    first, second = enc.layers[0], enc.layers[1]
    assert first is base and second is not base
    np.testing.assert_array_equal(first.linear1.bias[...], second.linear1.bias[...])  # same initial values
    second.linear1.bias.set_value(second.linear1.bias[...] + 1)
    assert not np.array_equal(first.linear1.bias[...], second.linear1.bias[...])  # independent storage
    assert not np.array_equal(np.asarray(jnp.asarray(first.dropout.rng[...]._base_array)),
                              np.asarray(jnp.asarray(second.dropout.rng[...]._base_array)))
    assert len(enc.parameters()) == 3 * len(base.parameters())


@pytest.mark.parametrize("normalize_before", [False, True])
def test_decoder_layer_and_stack_match_paddle(paddle, rng, normalize_before):
    kwargs = dict(dropout=0.0, normalize_before=normalize_before)
    pd_layer = paddle.nn.TransformerDecoderLayer(D, H, FF, **kwargs)
    layer = load_from_paddle(nn.TransformerDecoderLayer(D, H, FF, **kwargs, weight_attr=ZERO), pd_layer)
    tgt = rng.standard_normal((2, 3, D)).astype(np.float32)
    mem = rng.standard_normal((2, 5, D)).astype(np.float32)
    causal = np.tril(np.ones((3, 3), dtype=bool))
    assert_close(layer(jnp.asarray(tgt), jnp.asarray(mem), jnp.asarray(causal)),
                 pd_forward(paddle, pd_layer, tgt, mem, causal), atol=1e-5)
    if normalize_before:
        pd_dec = paddle.nn.TransformerDecoder(pd_layer, 2)
        dec = load_from_paddle(nn.TransformerDecoder(layer, 2), pd_dec)
        assert_close(dec(jnp.asarray(tgt), jnp.asarray(mem)), pd_forward(paddle, pd_dec, tgt, mem), atol=1e-5)


def test_transformer_and_errors(paddle, rng):
    pd_model = paddle.nn.Transformer(D, H, 1, 1, FF, dropout=0.0)
    model = load_from_paddle(nn.Transformer(D, H, 1, 1, FF, dropout=0.0, weight_attr=ZERO), pd_model)
    src = rng.standard_normal((2, 5, D)).astype(np.float32)
    tgt = rng.standard_normal((2, 3, D)).astype(np.float32)
    mask = model.generate_square_subsequent_mask(3)
    np.testing.assert_array_equal(mask, pd_model.generate_square_subsequent_mask(3).numpy())
    assert_close(model(jnp.asarray(src), jnp.asarray(tgt), tgt_mask=mask),
                 pd_model(paddle.to_tensor(src), paddle.to_tensor(tgt),
                          tgt_mask=paddle.to_tensor(np.asarray(mask))), atol=1e-5)
    with pytest.raises(ValueError, match="divisible by num_heads"):
        nn.MultiHeadAttention(6, 4)
    with pytest.raises(ValueError, match="query"):
        nn.MultiHeadAttention(D, H, weight_attr=ZERO)(jnp.ones((2, 3, D + 1)))
    with pytest.raises(ValueError, match="activation"):
        nn.TransformerEncoderLayer(D, H, FF, activation="nope", weight_attr=ZERO)
