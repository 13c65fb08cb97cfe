"""The impl dispatch: the per-op registries, what "auto" tries per platform, the
fallback on `Unsupported`, the override, and the errors."""

import types
import warnings

import jax.numpy as jnp
import pytest

import pdx.kernels as K
from pdx.kernels import _dispatch


@pytest.fixture
def on(monkeypatch):
    def set_platform(name):
        monkeypatch.setattr(_dispatch, "platform", lambda: name)
    return set_platform


def recording_op(name="test_op", declines=(), prefer_if=None):
    """An Op whose implementations record their name and return it; those in
    `declines` raise Unsupported with a reason naming them."""
    calls = []

    def impl(n):
        def run(x):
            calls.append(n)
            if n in declines:
                raise K.Unsupported(f"{n} cannot take x={x}")
            return n
        return run
    return K.Op(name, {n: impl(n) for n in ("cudnn", "pallas", "xla")}, prefer_if=prefer_if or {}), calls


def test_registries_are_immutable_and_named():
    assert set(K.OPS) == {"conv2d_nhwc", "flash_attention", "layer_norm", "matmul", "paged_attention",
                          "paged_attention_with_new", "rms_norm", "softmax_cross_entropy",
                          "linear_softmax_cross_entropy"}
    for name, op in K.OPS.items():
        assert op.name == name and "xla" in op.implementations
        assert isinstance(op.implementations, types.MappingProxyType)
        with pytest.raises(TypeError):
            op.implementations["pallas"] = None
    with pytest.raises(TypeError):
        K.OPS["rms_norm"] = None
    assert set(K.OPS["flash_attention"].implementations) == {"cudnn", "pallas", "onednn", "xla"}
    assert set(K.OPS["rms_norm"].implementations) == {"pallas", "xla"}
    assert set(K.OPS["conv2d_nhwc"].implementations) == {"onednn", "xla"}
    assert set(K.OPS["matmul"].implementations) == {"onednn", "xla"}
    assert set(K.OPS["paged_attention_with_new"].implementations) == {"pallas", "onednn", "xla"}
    with pytest.raises(ValueError, match="include the reference 'xla'"):
        K.Op("bad", {"pallas": lambda: 0})
    with pytest.raises(ValueError, match=r"named from \['pallas', 'xla', 'cudnn', 'onednn'\]"):
        K.Op("bad", {"xla": lambda: 0, "triton": lambda: 0})


def test_auto_order_per_platform(on):
    x = jnp.ones((4, 8))
    rms = K.OPS["rms_norm"]
    attn = K.OPS["flash_attention"]
    q_half = jnp.ones((1, 8, 2, 64), jnp.bfloat16)
    q_f32 = jnp.ones((1, 8, 2, 64), jnp.float32)
    attn_args = lambda q: (q, q, q, None, None, None)  # noqa: E731
    on("cpu")
    assert rms.candidates("auto", x) == ("xla",)
    assert rms.candidates("pallas", x) == ("pallas",)
    assert rms.candidates("cudnn", x) == ("xla",)  # no cuDNN version: the reference
    assert _dispatch.interpret()
    conv = K.OPS["conv2d_nhwc"]
    x4, w4 = jnp.ones((1, 4, 4, 2)), jnp.ones((3, 2, 3, 3))
    geometry = {"strides": (1, 1), "padding": ((1, 1), (1, 1)), "dilation": (1, 1), "groups": 1}
    # oneDNN first on a CPU, but not with several devices (the SPMD partitioner cannot split a custom call)
    assert conv.candidates("auto", x4, w4, **geometry) == ("xla",)  # this test process has 8 devices
    assert conv.candidates("onednn", x4, w4, **geometry) == ("onednn",)
    assert K.AUTO_ORDER["cpu"] == ("onednn", "xla")
    on("tpu")
    assert attn.candidates("auto", *attn_args(q_half)) == ("xla",)
    on("gpu")
    assert not _dispatch.interpret()
    assert rms.candidates("auto", x) == ("pallas", "xla")
    assert attn.candidates("auto", *attn_args(q_half)) == ("cudnn", "pallas", "xla")
    assert attn.candidates("auto", *attn_args(q_f32)) == ("pallas", "xla")  # cuDNN only preferred for bf16/fp16
    seg = jnp.zeros((1, 8), jnp.int32)
    assert attn.candidates("auto", q_half, q_half, q_half, seg, seg, None) == ("pallas", "xla")
    assert attn.candidates("cudnn", *attn_args(q_f32)) == ("cudnn",)  # named: no preference applies


def test_fallback_runs_the_next_and_notes_the_reference_once(on):
    on("gpu")
    op, calls = recording_op(declines=("cudnn",))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # declining cuDNN for the Pallas kernel is not worth a warning
        assert op("auto", 1) == "pallas"
    assert calls == ["cudnn", "pallas"]
    op, calls = recording_op(declines=("cudnn", "pallas"))
    with pytest.warns(UserWarning, match=r"test_op: using the XLA reference because pallas cannot take x=96"):
        assert op("auto", 96) == "xla"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same fallback again stays quiet
        assert op("auto", 96) == "xla"
    op, calls = recording_op(prefer_if={"cudnn": lambda x: x > 10})
    assert op("auto", 1) == "pallas" and op("auto", 11) == "cudnn"
    assert calls == ["pallas", "cudnn"]


def test_override_wins_and_nests(on):
    on("gpu")
    op, _ = recording_op()
    with K.use_impl("xla"):
        assert op("pallas", 0) == "xla"
        with K.use_impl(None):
            assert op("auto", 0) == "cudnn"
        assert K.get_impl() == "xla"
    assert K.get_impl() is None


def test_errors_name_the_fix(on):
    on("cpu")
    q = jnp.ones((1, 8, 2, 64), jnp.bfloat16)
    with pytest.raises(ValueError, match="impl='cudnn' needs a GPU .* use impl='auto' or impl='xla'"):
        K.flash_attention(q, q, q, impl="cudnn")
    with pytest.raises(ValueError, match=r"rms_norm: the Pallas kernel does not support this call: x is empty; "
                                         r"use impl='auto'"):
        K.rms_norm(jnp.ones((0, 8)), impl="pallas")
    op, _ = recording_op(declines=("pallas",))
    with pytest.raises(ValueError, match=r"test_op: pallas cannot take x=3; use impl='auto' or impl='xla'"):
        op("pallas", 3)
    on("tpu")
    with pytest.raises(ValueError, match="not TPU; use impl='xla'"):
        K.rms_norm(jnp.ones((2, 8)), impl="pallas")
    with pytest.raises(ValueError, match=r"use_impl: impl='fast' is not one of \['auto', 'pallas', 'xla', 'cudnn', 'onednn'\]"):
        with K.use_impl("fast"):
            pass
    with pytest.raises(ValueError, match=r"rms_norm: impl='fast' is not one of"):
        K.rms_norm(jnp.ones((2, 8)), impl="fast")
