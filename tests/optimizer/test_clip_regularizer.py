"""pdx.nn ClipGradBy* and pdx.regularizer against paddle's, called directly."""

import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx.nn import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue, ParamAttr
from pdx.regularizer import L1Decay, L2Decay

SHAPES = [(3, 5), (7,), (2, 3, 4)]
NEED_CLIP = [True, False, True]


def _pairs(paddle, rng, scale):
    grads = [(scale * rng.standard_normal(s)).astype(np.float32) for s in SHAPES]
    net = pdx.nn.Layer()
    ours, ref = [], []
    for i, (shape, g, need) in enumerate(zip(SHAPES, grads, NEED_CLIP)):
        p = net.create_parameter(shape, attr=ParamAttr(need_clip=need))
        setattr(net, f"p{i}", p)
        ours.append((p, jnp.asarray(g)))
        ref_p = paddle.create_parameter(list(shape), "float32", attr=paddle.ParamAttr(need_clip=need))
        ref.append((ref_p, paddle.to_tensor(g)))
    return ours, ref


@pytest.mark.parametrize("make,scale", [
    (lambda m: m.ClipGradByGlobalNorm(2.0), 1.0),
    (lambda m: m.ClipGradByGlobalNorm(50.0), 1.0),  # within the norm: scale 1
    (lambda m: m.ClipGradByGlobalNorm(2.0, auto_skip_clip=True), 1.0),
    (lambda m: m.ClipGradByGlobalNorm(50.0, auto_skip_clip=True), 1.0),
    (lambda m: m.ClipGradByNorm(2.5), 1.0),
    (lambda m: m.ClipGradByNorm(2.5), 0.1),
    (lambda m: m.ClipGradByValue(0.5), 1.0),
    (lambda m: m.ClipGradByValue(0.3, min=-0.1), 1.0),
], ids=["global", "global-noop", "global-skip", "global-skip-noop", "norm", "norm-noop", "value", "value-min"])
def test_clip_matches_paddle(paddle, rng, make, scale):
    ours, ref = _pairs(paddle, rng, scale)
    module = type("m", (), dict(ClipGradByGlobalNorm=ClipGradByGlobalNorm, ClipGradByNorm=ClipGradByNorm,
                                ClipGradByValue=ClipGradByValue))
    got = make(module)(ours)
    want = make(paddle.nn)(ref)
    assert len(got) == len(want) == len(SHAPES)
    for (_, g), (_, w), need, (_, orig) in zip(got, want, NEED_CLIP, ours):
        np.testing.assert_allclose(np.asarray(g), w.numpy(), rtol=1e-6, atol=1e-7)
        if not need:
            assert g is orig


def test_clip_transformation_on_pytrees():
    grads = {"a": jnp.array([3.0, 0.0]), "b": {"c": jnp.array([4.0])}}
    tx = ClipGradByGlobalNorm(1.0).transformation(need_clip={"a": True, "b": {"c": False}})
    out, _ = tx.update(grads, tx.init(grads))
    np.testing.assert_allclose(out["a"], [1.0, 0.0])  # norm over need_clip leaves only
    np.testing.assert_allclose(out["b"]["c"], [4.0])
    out, _ = ClipGradByValue(1.0).transformation().update(grads, None)
    np.testing.assert_allclose(out["b"]["c"], [1.0])


def test_clip_keeps_bfloat16():
    g = jnp.ones((4,), jnp.bfloat16) * 3
    for clip in (ClipGradByGlobalNorm(1.0), ClipGradByNorm(1.0), ClipGradByValue(1.0)):
        out, _ = clip.transformation().update([g], None)
        assert out[0].dtype == jnp.bfloat16


@pytest.mark.parametrize("ours,theirs", [(L1Decay, "L1Decay"), (L2Decay, "L2Decay")])
def test_regularizer_terms_match_paddle(paddle, rng, ours, theirs):
    value = rng.standard_normal((3, 5)).astype(np.float32)
    ref_p = paddle.create_parameter([3, 5], "float32", default_initializer=paddle.nn.initializer.Assign(value))
    block = paddle.static.default_main_program().global_block()
    want = getattr(paddle.regularizer, theirs)(0.3)(ref_p, ref_p, block).numpy()
    np.testing.assert_allclose(ours(0.3)(jnp.asarray(value), None), want, rtol=1e-6)
    assert str(ours(0.3)) == str(getattr(paddle.regularizer, theirs)(0.3))


@pytest.mark.parametrize("make,exc,match", [
    (lambda: ClipGradByValue(-1.0), ValueError, "max must be positive"),
    (lambda: ClipGradByValue(0.1, min=0.5), ValueError, "min=0.5 must not exceed max=0.1"),
    (lambda: ClipGradByNorm("1"), TypeError, "clip_norm"),
    (lambda: ClipGradByGlobalNorm(1.0, auto_skip_clip=1), TypeError, "auto_skip_clip"),
    (lambda: L2Decay("0.1"), TypeError, "coeff"),
])
def test_bad_arguments(make, exc, match):
    with pytest.raises(exc, match=match):
        make()
