"""Top-level environment names: dtype objects, constants, execution mode, print options, rng state."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "float16", "bfloat16", "float32", "float64",
          "complex64", "complex128"]


def test_dtype_names_work_as_dtypes(paddle):
    for name in DTYPES:
        dt = getattr(pdx, name)
        assert isinstance(dt, pdx.dtype), name
        assert str(getattr(paddle, name)) == f"paddle.{name}"  # the same names exist in paddle
        x = pdx.zeros([2], dtype=dt)
        assert x.dtype == jax.dtypes.canonicalize_dtype(dt), name
        assert pdx.cast(x, dt).dtype == x.dtype
    assert pdx.ones([1]).dtype == pdx.float32 and isinstance(pdx.ones([1]).dtype, pdx.dtype)
    assert (pdx.float, pdx.double, pdx.half, pdx.long, pdx.int) == \
        (pdx.float32, pdx.float64, pdx.float16, pdx.int64, pdx.int32)
    assert (paddle.float, paddle.double, paddle.half, paddle.long) == \
        (paddle.float32, paddle.float64, paddle.float16, paddle.int64)
    assert pdx.to_tensor([1, 2], dtype=pdx.int8).dtype == jnp.int8


def test_constants_match_paddle(paddle):
    assert (pdx.pi, pdx.e, pdx.inf) == (paddle.pi, paddle.e, paddle.inf)
    assert math.isnan(pdx.nan) and pdx.newaxis is None is paddle.newaxis


def test_execution_mode():
    assert pdx.in_dynamic_mode() is True
    pdx.disable_static()
    with pytest.raises(RuntimeError, match="pdx.jit"):
        pdx.enable_static()


def test_set_printoptions():
    saved = np.get_printoptions()
    try:
        pdx.set_printoptions(precision=2, threshold=5, edgeitems=2, linewidth=60)
        text = str(np.asarray(pdx.arange(10, dtype="float32") / 3))
        assert "..." in text and "0.33" in text and "0.333" not in text, text
        pdx.set_printoptions(sci_mode=True, precision=3)
        assert "e-01" in str(np.asarray([0.5], np.float32))
    finally:
        np.set_printoptions(**saved)


def test_cuda_rng_state_round_trip():
    state = pdx.get_cuda_rng_state()
    a = pdx.rand([3])
    pdx.set_cuda_rng_state(state)
    np.testing.assert_array_equal(np.asarray(pdx.rand([3])), np.asarray(a))


def test_flags_and_aliases(paddle):
    assert pdx.get_flags(["FLAGS_check_nan_inf"]) == paddle.get_flags(["FLAGS_check_nan_inf"])
    try:
        pdx.set_flags({"FLAGS_check_nan_inf": True})
        assert jax.config.jax_debug_nans and pdx.get_flags("FLAGS_check_nan_inf")["FLAGS_check_nan_inf"]
    finally:
        pdx.set_flags({"FLAGS_check_nan_inf": False})
    assert not jax.config.jax_debug_nans
    with pytest.raises(ValueError, match="FLAGS_no_such_flag"):
        pdx.get_flags("FLAGS_no_such_flag")
    with pytest.raises(ValueError, match="FLAGS_no_such_flag"):
        pdx.set_flags({"FLAGS_no_such_flag": 1})
    assert pdx.get_default_device() == paddle.get_default_device() == "cpu"
    a = (pdx.manual_seed(3), pdx.rand([2]))[1]
    pdx.seed(3)
    np.testing.assert_array_equal(np.asarray(pdx.rand([2])), np.asarray(a))
    assert pdx.is_grad_enabled() is True and pdx.set_grad_enabled is pdx.autograd.set_grad_enabled


def test_legacy_helpers(paddle):
    reader = lambda: iter(range(7))  # noqa: E731
    assert list(pdx.batch(reader, 3)()) == list(paddle.batch(reader, 3)())
    assert list(pdx.batch(reader, 3, drop_last=True)()) == list(paddle.batch(reader, 3, drop_last=True)())
    with pytest.raises(ValueError, match="batch_size"):
        pdx.batch(reader, 0)
    with pdx.LazyGuard():
        layer = pdx.nn.Linear(2, 3)
    assert layer.weight.shape == (2, 3)
    pdx.disable_signal_handler()


def test_autocast_names(paddle):
    assert pdx.is_autocast_enabled() is paddle.is_autocast_enabled() is False
    assert pdx.get_autocast_dtype() == paddle.get_autocast_dtype() == "float16"
    with pdx.autocast("cpu", dtype="bfloat16"):
        assert pdx.is_autocast_enabled() and pdx.get_autocast_dtype() == "bfloat16"
        assert pdx.get_autocast_gpu_dtype() == pdx.get_autocast_cpu_dtype() == "bfloat16"
        y = pdx.nn.Linear(4, 2)(jnp.ones((1, 4)))
    assert y.dtype == jnp.bfloat16 and not pdx.is_autocast_enabled()
    with pdx.autocast(enabled=False):
        assert not pdx.is_autocast_enabled()


def test_nn_functional_names_at_top_level():
    import pdx.nn.functional as F

    for name in ("conv1d", "conv2d", "conv3d", "layer_norm", "group_norm", "adaptive_avg_pool1d"):
        assert getattr(pdx, name) is getattr(F, name)


def test_amp_capability_queries_match_paddle_on_cpu(paddle):
    # Paddle answers from the CPU's instruction set (AVX-512 core): True or False by machine.
    assert pdx.amp.is_bfloat16_supported("cpu") is paddle.amp.is_bfloat16_supported("cpu")
    assert pdx.amp.is_float16_supported("cpu") is paddle.amp.is_float16_supported("cpu") is False
    assert pdx.amp.is_autocast_enabled is pdx.is_autocast_enabled
