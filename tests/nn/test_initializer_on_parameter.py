"""Paddle's in-place initializer call `init(param)` (as used inside
`model.apply`), against the installed paddle."""

import jax
import numpy as np
import pytest

import pdx


def _init_weights(lib, values):
    def init(layer):
        if isinstance(layer, lib.nn.Linear):
            lib.nn.initializer.Assign(values[tuple(layer.weight.shape)])(layer.weight)
            lib.nn.initializer.Constant(0.25)(layer.bias, None)
    return init


def test_initializer_called_on_a_parameter_fills_it_like_paddle(paddle):
    r = np.random.RandomState(0)
    values = {(3, 4): r.randn(3, 4).astype("float32"), (4, 2): r.randn(4, 2).astype("float32")}
    nets = []
    for lib in (pdx, paddle):
        net = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))
        assert lib.nn.initializer.Constant(1.0)(net[0].weight) is None  # in place; Paddle returns None
        net.apply(_init_weights(lib, values))
        nets.append(net)
    ours, theirs = nets
    for (n, p), (m, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert n == m
        np.testing.assert_array_equal(np.asarray(p), q.numpy(), err_msg=n)
    x = r.randn(5, 3).astype("float32")
    np.testing.assert_allclose(np.asarray(ours(pdx.to_tensor(x))), theirs(paddle.to_tensor(x)).numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", ["XavierUniform", "XavierNormal", "KaimingNormal", "Normal", "Uniform",
                                  "TruncatedNormal", "Orthogonal"])
def test_random_initializers_in_place_keep_shape_dtype_and_draw_from_the_seed(name):
    layer = pdx.nn.Linear(6, 5)
    init = getattr(pdx.nn.initializer, name)()
    pdx.seed(3)
    init(layer.weight)
    first = np.asarray(layer.weight)
    assert first.shape == (6, 5) and first.dtype == np.float32 and np.std(first) > 0
    pdx.seed(3)
    init(layer.weight)
    np.testing.assert_array_equal(np.asarray(layer.weight), first)
    # the functional form is unchanged
    assert init(jax.random.key(0), (2, 3), "float32").shape == (2, 3)


def test_in_place_call_rejects_a_wrong_shape_and_extra_arguments():
    layer = pdx.nn.Linear(2, 3)
    with pytest.raises(ValueError, match=r"\(3, 3\).*\(2, 3\)"):
        pdx.nn.initializer.Assign(np.ones((3, 3), "float32"))(layer.weight)
    with pytest.raises(TypeError, match="takes no other arguments"):
        pdx.nn.initializer.Constant(1.0)(layer.weight, (2, 3))
    np.testing.assert_array_equal(np.asarray(layer.bias), np.zeros(3, np.float32))
