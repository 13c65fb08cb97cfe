"""Device scopes, device-level generator names, typed tensor factories and Size, against paddle."""

import jax
import numpy as np
import pytest

import pdx


def test_device_scope_restores_the_default():
    before = jax.config.jax_default_device
    with pdx.device.device("cpu"):
        assert pdx.get_device() == "cpu"
        assert pdx.ones([2]).devices().pop().platform == "cpu"
    with pdx.device_guard("cpu"):
        assert pdx.get_device() == "cpu"
    assert jax.config.jax_default_device == before
    with pytest.raises(ValueError, match="no GPU"):
        with pdx.device.device("gpu:0"):
            pass
    assert jax.config.jax_default_device == before


def test_device_queries_answer_from_jax(paddle):
    has_accel = any(d.platform in ("gpu", "tpu") for d in jax.devices())
    assert pdx.device.is_available() is has_accel
    assert pdx.device.is_bf16_supported() is True  # XLA computes bf16 on every backend
    assert pdx.get_device_module("cpu") is pdx.device
    assert pdx.get_device_module("gpu:0") is pdx.device.cuda
    pdx.device.manual_seed(3)
    a = pdx.rand([3])
    state = pdx.device.get_rng_state()
    b = pdx.rand([3])
    pdx.device.set_rng_state(state)
    np.testing.assert_array_equal(np.asarray(pdx.rand([3])), np.asarray(b))
    pdx.device.manual_seed(3)
    np.testing.assert_array_equal(np.asarray(pdx.rand([3])), np.asarray(a))


def test_typed_tensor_factories_match_paddle(paddle):
    narrow = {"float64": "float32", "int64": "int32"}
    for name in ["BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor",
                 "HalfTensor", "IntTensor", "LongTensor", "ShortTensor"]:
        theirs = getattr(paddle, name)([1, 0, 2])
        ours = getattr(pdx, name)([1, 0, 2])
        want = str(theirs.dtype).replace("paddle.", "")
        assert str(ours.dtype) == narrow.get(want, want), name
        np.testing.assert_array_equal(np.asarray(ours).astype(np.float32),
                                      theirs.astype("float32").numpy(), err_msg=name)
        assert getattr(pdx.device, name) is getattr(pdx, name)


def test_size_is_the_shape_type(paddle):
    assert isinstance(pdx.ones([2, 3]).shape, pdx.Size)
    assert isinstance(paddle.ones([2, 3]).shape, paddle.Size)
    assert tuple(pdx.Size([2, 3])) == tuple(paddle.Size([2, 3])) == (2, 3)
    assert pdx.Size([2, 3]).numel() == paddle.Size([2, 3]).numel() == 6
    assert not isinstance([2, 3], pdx.Size) and not isinstance((2.0,), pdx.Size)
