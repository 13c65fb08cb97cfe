"""Call forms Paddle's own API tests (PaddleTest framework/api) use, each against the installed paddle."""

from __future__ import annotations

import numpy as np
import pytest

import pdx


def _both(paddle, build):
    """build(lib) under paddle and pdx -> (paddle's numpy result, pdx's), or the exception classes."""
    out = []
    for lib in (paddle, pdx):
        try:
            out.append(np.asarray(build(lib)))
        except Exception as e:  # noqa: BLE001 - the classes are compared
            out.append(e)
    return out


def test_sizes_and_probabilities_as_tensors(paddle, rng):
    x = rng.random((2, 3, 8, 8)).astype(np.float32)
    w = rng.random((3, 2, 3, 3)).astype(np.float32)
    cases = [
        lambda m: m.nn.functional.adaptive_avg_pool2d(m.to_tensor(x), m.to_tensor(np.array([3, 3], "int32"))),
        lambda m: m.nn.AdaptiveAvgPool2D(m.to_tensor(np.array([1, 4], "int64")))(m.to_tensor(x)),
        lambda m: m.nn.functional.conv2d_transpose(m.to_tensor(x), m.to_tensor(w), stride=2,
                                                   output_size=m.to_tensor(np.array([17, 18], "int64"))),
        lambda m: m.nn.Dropout(p=m.to_tensor(0.5)).eval()(m.to_tensor(x)),
    ]
    for case in cases:
        want, got = _both(paddle, case)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    for m in (paddle, pdx):  # paddle raises at the call, pdx already at construction
        with pytest.raises(TypeError):
            m.nn.AlphaDropout(p="1")(m.to_tensor(x))


def test_pairwise_distance_takes_every_order(paddle, rng):
    x, y = rng.random((3, 4)).astype(np.float32), rng.random((3, 4)).astype(np.float32)
    for p in (-np.inf, -1.0, 0.0, 0.5, 1, 2.0, np.inf):
        want, got = _both(paddle, lambda m: m.nn.PairwiseDistance(p=p)(m.to_tensor(x), m.to_tensor(y)))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_birnn_takes_states_as_lists(paddle, rng):
    x = rng.random((1, 2, 2)).astype(np.float32)
    hs = [rng.random((1, n)).astype(np.float32) for n in (3, 3, 4, 4)]

    def run(m):
        init = m.nn.initializer.Constant(0.3)
        cells = [m.nn.LSTMCell(2, n, weight_ih_attr=init, weight_hh_attr=init, bias_ih_attr=init,
                               bias_hh_attr=init) for n in (3, 4)]
        t = [m.to_tensor(h) for h in hs]
        return m.nn.BiRNN(*cells)(m.to_tensor(x), [[t[0], t[1]], [t[2], t[3]]])[0]

    want, got = _both(paddle, run)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_layer_dicts_of_own_variables(paddle):
    """`layer._parameters` / `_buffers` / `_sub_layers`: what Paddle code reads and sets."""

    def run(m):
        m.seed(1)
        norm = m.nn.SpectralNorm([2, 4], 0, power_iters=1)
        norm._parameters["weight_u"].set_value(m.to_tensor(np.ones(2, "float32")))
        norm._parameters["weight_v"].set_value(m.to_tensor(np.ones(4, "float32")))
        return norm(m.to_tensor(np.arange(8, dtype="float32").reshape(2, 4)))

    want, got = _both(paddle, run)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for m in (paddle, pdx):
        net = m.nn.Sequential(m.nn.Linear(2, 2), m.nn.BatchNorm1D(2))
        assert sorted(net._sub_layers) == ["0", "1"]
        assert sorted(net[0]._parameters) == ["bias", "weight"]
        assert not net._parameters
    assert sorted(pdx.nn.BatchNorm1D(2)._buffers) == ["_mean", "_variance"]


def test_bad_clip_and_schedule_arguments_raise_paddles_classes(paddle):
    cases = [
        (ValueError, lambda m, p: m.nn.ClipGradByNorm(-1.0)([(p, m.ones([2, 2]))])),
        (RuntimeError, lambda m, p: m.nn.ClipGradByNorm(1.0)([(p, m.ones([2, 2], "int8"))])),
        (AssertionError, lambda m, p: m.nn.ClipGradByValue(-1.0, None)([(p, m.ones([2, 2]))])),
        (AssertionError, lambda m, p: m.optimizer.lr.LinearWarmup(0.1, warmup_steps=0, start_lr=0.0, end_lr=0.1)),
    ]
    for cls, case in cases:
        for m in (paddle, pdx):
            with pytest.raises(cls):
                case(m, m.nn.Linear(2, 2).weight)
    with pytest.raises(AssertionError, match="'warmup_steps' must be a positive integer"):
        pdx.optimizer.lr.LinearWarmup(0.1, warmup_steps=0, start_lr=0.0, end_lr=0.1)
