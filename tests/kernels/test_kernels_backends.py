"""Optional backends register themselves into the kernel ops; layer code names none.

The CPU backend (`pdx.kernels.onednn`) adds its "onednn" implementations with
`register_impl` when `pdx.kernels` imports it; `pdx.nn.functional`'s ops declare
their portable implementations and a `Delegate` to the kernel op. These tests
check that split (by reading the sources), the registry's own rules on a toy op,
and that the layers pick oneDNN exactly where they did when they named it: the
custom calls in the lowered programs and the values against numpy.
"""

import ast
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx.kernels as K
import pdx.nn.functional as F
from pdx import _lowering
from pdx.kernels import _dispatch
from pdx.nn.functional import _attention, _common, _conv, _norm

PDX = pathlib.Path(K.__file__).resolve().parents[1]
BACKEND_WORDS = ("onednn", "native_kernels")  # the CPU backend, and the switch only backends read


def _backend_mentions(root: pathlib.Path) -> list[str]:
    hits = []
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".md"):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if any(word in line.lower() for word in BACKEND_WORDS):
                    hits.append(f"{path.relative_to(PDX.parent)}:{number}: {line.strip()}")
    return hits


def test_layer_code_names_no_backend():
    assert _backend_mentions(PDX / "nn") == []
    # The scan reads what it should: the backend's own package is full of its name.
    assert any("register_impl" in hit for hit in _backend_mentions(PDX / "kernels" / "onednn"))


def test_no_kernel_op_module_imports_the_backend():
    # pdx/kernels/__init__.py imports it (which registers it) and _cli.py builds it; the ops' own
    # modules and the program rewrite (whose oneDNN fusions the backend registers) know only the dispatch.
    importers = []
    for path in sorted((PDX / "kernels").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [f"{node.module}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom) else [])
            if any(n.startswith("pdx.kernels.onednn") for n in names):
                importers.append(path.name)
    assert sorted(set(importers)) == ["__init__.py", "_cli.py"]


def test_the_backend_registered_its_implementations_and_rules():
    for op, module in (("layer_norm", "_norm"), ("flash_attention", "_attention"), ("matmul", "_conv_matmul"),
                       ("conv2d_nhwc", "_conv_matmul")):
        kernel = K.OPS[op]
        assert kernel.implementations["onednn"].__module__ == f"pdx.kernels.onednn.{module}"
        assert kernel.prefer_if["onednn"].__module__ == f"pdx.kernels.onednn.{module}"
    # Rules for layers only where they differ from the kernel's own (float32 norms, unmasked attention).
    assert set(K.OPS["layer_norm"].layer_takes) == set(K.OPS["flash_attention"].layer_takes) == {"onednn"}
    assert K.OPS["matmul"].layer_takes == {} and K.OPS["conv2d_nhwc"].layer_prefer_if == {}
    # The layers' ops hold only portable implementations; the backend's arrive through the delegate.
    assert set(_norm._LAYER_NORM.implementations) == {"pallas", "xla"}
    assert set(_attention._ATTENTION.implementations) == {"cudnn", "pallas", "xla"}
    assert set(_common._MATMUL.implementations) == set(_conv._CONV2D.implementations) == {"xla"}
    with pytest.raises(ValueError, match=r"register_impl\('matmul', 'onednn'\).*it has \['xla', 'onednn'\]"):
        K.register_impl(K.OPS["matmul"], "onednn", lambda *a, **k: None)


def _toy(on_cpu):
    """A kernel op with a toy "onednn" and a layer op delegating to it; calls recorded."""
    calls = []
    kernel = K.Op("toy", {"xla": lambda x, *, scale: ("kernel xla", x * scale)})
    layer = K.Op("toy", {"xla": lambda x, s: ("layer xla", x * s)},
                 delegate=K.Delegate(kernel, lambda x, s: ((x,), {"scale": s}),
                                     lambda impl, x, s: calls.append(impl) or kernel(impl, x, scale=s)))
    on_cpu()
    return kernel, layer, calls


@pytest.fixture
def on_cpu(monkeypatch):
    return lambda: monkeypatch.setattr(_dispatch, "platform", lambda: "cpu")


def test_a_registered_backend_serves_a_delegating_layer_op(on_cpu):
    kernel, layer, calls = _toy(on_cpu)
    assert layer.candidates("auto", 2, 3) == ("xla",) and layer("auto", 2, 3) == ("layer xla", 6)
    assert layer("onednn", 2, 3) == ("layer xla", 6)  # not registered yet: the named backend means the reference
    # Registered after the layer op was built: seen all the same.
    K.register_impl(kernel, "onednn", lambda x, *, scale: ("onednn", x * scale),
                    prefer_if=lambda x, *, scale: x > 0,
                    layer_prefer_if=lambda x, *, scale: x > 1, layer_takes=lambda x, *, scale: scale != 0)
    assert kernel.candidates("auto", 1, scale=3) == ("onednn", "xla")
    assert layer.candidates("auto", 1, 3) == ("xla",)  # the layer rule, not the kernel's
    assert layer.candidates("auto", 2, 3) == ("onednn", "xla")
    assert layer("auto", 2, 3) == ("onednn", 6) and calls == ["auto"]  # the kernel op dispatches once more
    assert layer("onednn", -2, 3) == ("onednn", -6) and calls[-1] == "onednn"  # named: no preference applies
    assert layer("onednn", 2, 0) == ("layer xla", 0) and len(calls) == 2  # not taken: the layer's reference
    assert layer("auto", 2, 0) == ("layer xla", 0) and len(calls) == 2
    with K.use_impl("xla"):
        assert layer("auto", 2, 3) == ("layer xla", 6)
    with pytest.raises(ValueError, match=r"register_impl\('toy', 'xla'\): the name must be one of "
                                         r"\['pallas', 'cudnn', 'onednn'\]"):
        K.register_impl(kernel, "xla", lambda x, *, scale: x)
    with pytest.raises(ValueError, match=r"register_impl\('toy', 'triton'\)"):
        K.register_impl(kernel, "triton", lambda x, *, scale: x)


def test_a_backend_without_layer_rules_uses_its_kernel_rule_for_layers(on_cpu):
    kernel, layer, calls = _toy(on_cpu)
    K.register_impl(kernel, "onednn", lambda x, *, scale: ("onednn", x * scale), prefer_if=lambda x, *, scale: x > 0)
    assert layer.candidates("auto", 1, 3) == ("onednn", "xla") and layer.candidates("auto", -1, 3) == ("xla",)
    assert layer("onednn", -1, 0) == ("onednn", 0)  # it takes every call


def _calls(fn, *args):
    text = jax.jit(fn).lower(*args).as_text()
    return sorted({name for name in ("pdx_onednn_layer_norm_forward", "pdx_onednn_attention_forward",
                                     "pdx_onednn_matmul", "pdx_onednn_conv_forward") if name in text})


def _np_layer_norm(x, eps=1e-5):
    x = np.asarray(x, np.float64)
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)


def _np_attention(q, k, v, mask=None):
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    logits = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(q.shape[-1]) + (0 if mask is None else np.asarray(mask))
    p = np.exp(logits - logits.max(-1, keepdims=True))
    return np.einsum("bhqk,bkhd->bqhd", p / p.sum(-1, keepdims=True), v)


def test_layers_take_the_backend_where_they_did(rng):
    assert K.onednn.available(), K.onednn.unavailable_reason()  # pdx installs the kernels on x86-64 Linux
    x = jnp.asarray(rng.standard_normal((2, 4, 6)), jnp.float32)
    q = jnp.asarray(rng.standard_normal((2, 5, 2, 8)), jnp.float32)
    mask = jnp.asarray(rng.standard_normal((5, 5)), jnp.float32)
    w = jnp.asarray(rng.standard_normal((6, 3)), jnp.float32)
    img = jnp.asarray(rng.standard_normal((1, 3, 6, 6)), jnp.float32)
    kernel = jnp.asarray(rng.standard_normal((4, 3, 3, 3)), jnp.float32)
    layer_norm = lambda x: F.layer_norm(x, 6)
    sdpa = lambda q: F.scaled_dot_product_attention(q, q, q)
    masked = lambda q: F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    linear = lambda x: F.linear(x, w.astype(x.dtype))
    conv = lambda i: F.conv2d(i, kernel.astype(i.dtype), padding=1)
    bf16 = jnp.bfloat16
    with _lowering.native():  # as on one CPU device
        assert _norm._LAYER_NORM.candidates("auto", x, (6,), (2,), None, None, 1e-5, "auto") == ("onednn", "xla")
        assert _norm._LAYER_NORM.candidates("auto", x.astype(bf16), (6,), (2,), None, None, 1e-5, "auto") == ("xla",)
        assert _attention._ATTENTION.candidates("auto", q, q, q, None, False, 0.3, 0.0, None, "auto") == (
            "onednn", "xla")
        assert _attention._ATTENTION.candidates("auto", q, q, q, mask, False, 0.3, 0.0, None, "auto") == ("xla",)
        assert _calls(layer_norm, x) == ["pdx_onednn_layer_norm_forward"] and _calls(layer_norm, x.astype(bf16)) == []
        assert _calls(sdpa, q) == _calls(sdpa, q.astype(bf16)) == ["pdx_onednn_attention_forward"]
        assert _calls(masked, q) == []
        assert _calls(linear, x) == ["pdx_onednn_matmul"] and _calls(linear, x.astype(jnp.float16)) == []
        assert _calls(conv, img) == ["pdx_onednn_conv_forward"]
        assert _calls(lambda i: F.conv1d(i[..., 0], kernel[..., 0]), img) == []  # 1-D: XLA's
        got = [jax.jit(f)(a) for f, a in ((layer_norm, x), (sdpa, q), (linear, x))]
    np.testing.assert_allclose(got[0], _np_layer_norm(x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], _np_attention(q, q, q), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[2], np.asarray(x, np.float64) @ np.asarray(w, np.float64), rtol=1e-5, atol=1e-5)
    with _lowering.native(), K.use_impl("onednn"):  # named: the kernels, or the layer's XLA math outside them
        assert _calls(layer_norm, x.astype(bf16)) == [] and _calls(masked, q) == []
        assert _calls(sdpa, q) == ["pdx_onednn_attention_forward"]
        with pytest.raises(ValueError, match=r"pdx\.kernels\.matmul: oneDNN matmuls take 2-D float32"):
            jax.jit(linear).lower(x.astype(jnp.float16))
    for native in (_lowering.portable, lambda: K.use_impl("xla")):
        with native():
            assert [_calls(f, a) for f, a in ((layer_norm, x), (sdpa, q), (linear, x), (conv, img))] == [[]] * 4
    # This process has 8 devices: "auto" keeps XLA's, as the custom calls would gather a sharded batch.
    assert [_calls(f, a) for f, a in ((layer_norm, x), (sdpa, q), (linear, x), (conv, img))] == [[]] * 4


_WITHOUT_LIBRARY = textwrap.dedent("""
    import json, warnings
    warnings.simplefilter("error")
    import jax, jax.numpy as jnp
    import pdx.kernels as K, pdx.nn.functional as F
    from pdx import _nnx
    from pdx.nn.functional import _norm
    x = jax.random.normal(jax.random.key(0), (64, 33)) * 3 + 1
    y = F.layer_norm(x, 33)
    out = {"devices": jax.device_count(), "reason": K.onednn.unavailable_reason(),
           "layer": _norm._LAYER_NORM.candidates("auto", x, (33,), (1,), None, None, 1e-5, "auto"),
           "kernel": K.OPS["layer_norm"].candidates("auto", x),
           "kernel_reference": bool((y == jax.jit(K.layer_norm_reference)(x)).all()),
           "layer_math": bool((y == jax.jit(lambda x: _nnx.layer_norm(x, (1,), None, None, 1e-5))(x)).all())}
    try:
        with K.use_impl("onednn"):
            F.layer_norm(x, 33)
    except ValueError as e:
        out["named"] = str(e)
    print(json.dumps(out))
""")


def test_without_the_library_a_float32_layer_norm_still_goes_through_the_kernel_op():
    env = {**os.environ, "XLA_FLAGS": "", "JAX_PLATFORMS": "cpu", "PDX_ONEDNN": "0"}
    run = subprocess.run([sys.executable, "-c", _WITHOUT_LIBRARY], env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["devices"] == 1 and out["reason"] == "disabled by PDX_ONEDNN=0"
    # The layer hands float32 to the kernel op where native kernels are allowed; that op runs its reference.
    # (Bit for bit the kernel op's reference; the layer's own XLA math rounds differently here.)
    assert out["layer"] == ["onednn", "xla"] and out["kernel"] == ["xla"]
    assert out["kernel_reference"] and not out["layer_math"]
    assert out["named"] == "pdx.kernels.layer_norm: disabled by PDX_ONEDNN=0; use impl='auto' or impl='xla'"
