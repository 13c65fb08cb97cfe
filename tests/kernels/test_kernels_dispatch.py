"""The impl dispatch: what "auto" picks per platform, the override, and the errors."""

import warnings

import pytest

import pdx.kernels as K
from pdx.kernels import _dispatch


@pytest.fixture
def on(monkeypatch):
    def set_platform(name):
        monkeypatch.setattr(_dispatch, "platform", lambda: name)
    return set_platform


def test_auto_picks_per_platform(on):
    on("cpu")
    assert _dispatch.resolve("auto", op="rms_norm") == "xla"
    assert _dispatch.resolve("pallas", op="rms_norm") == "pallas"
    assert _dispatch.interpret()
    on("tpu")
    assert _dispatch.resolve("auto", op="flash_attention", cudnn=True) == "xla"
    on("gpu")
    assert not _dispatch.interpret()
    assert _dispatch.resolve("auto", op="rms_norm") == "pallas"
    assert _dispatch.resolve("auto", op="flash_attention", cudnn=True) == "cudnn"
    assert _dispatch.resolve("cudnn", op="layer_norm") == "xla"  # no cuDNN version: the reference


def test_auto_falls_back_with_one_note(on):
    on("gpu")
    with pytest.warns(UserWarning, match="head_dim=96"):
        assert _dispatch.resolve("auto", op="test_op", unfit="head_dim=96 is not supported") == "xla"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same fallback again stays quiet
        assert _dispatch.resolve("auto", op="test_op", unfit="head_dim=96 is not supported") == "xla"


def test_override_wins_and_nests(on):
    on("gpu")
    with K.use_impl("xla"):
        assert _dispatch.resolve("pallas", op="rms_norm") == "xla"
        with K.use_impl(None):
            assert _dispatch.resolve("auto", op="rms_norm") == "pallas"
        assert K.get_impl() == "xla"
    assert K.get_impl() is None


def test_errors_name_the_fix(on):
    on("cpu")
    with pytest.raises(ValueError, match="impl='cudnn' needs a GPU .* use impl='auto' or impl='xla'"):
        _dispatch.resolve("cudnn", op="flash_attention")
    with pytest.raises(ValueError, match="does not support this call: too big; use impl='auto'"):
        _dispatch.resolve("pallas", op="rms_norm", unfit="too big")
    on("tpu")
    with pytest.raises(ValueError, match="on TPU use impl='xla'"):
        _dispatch.resolve("pallas", op="rms_norm")
    with pytest.raises(ValueError, match=r"use_impl: impl='fast' is not one of \['auto', 'pallas', 'xla', 'cudnn'\]"):
        with K.use_impl("fast"):
            pass
