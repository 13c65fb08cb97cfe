"""oneDNN convolutions and matmuls (pdx/kernels/onednn/_conv_matmul.py) against lax's, in every differentiation mode.

The handlers are compiled on first use; this machine kind (x86-64 Linux with
g++ and the oneDNN wheels that `pip install` brings) must build them.
"""

import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pdx import kernels as K

# (N, H, W, C, O, kh, kw, strides, padding, dilation, groups): odd batches split unevenly
# over XLA's threads, asymmetric padding, dilation, 1x1 and non-square kernels, stride 2,
# grouped and depthwise (with a channel multiplier); one image splits its output rows.
GEOMETRIES = [
    (3, 9, 7, 5, 4, 3, 3, (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    (2, 8, 8, 3, 6, 3, 3, (2, 2), ((1, 0), (1, 0)), (1, 1), 1),
    (1, 11, 10, 4, 3, 5, 3, (1, 2), ((2, 2), (0, 1)), (2, 1), 1),
    (5, 6, 6, 8, 8, 1, 1, (2, 2), ((0, 0), (0, 0)), (1, 1), 1),
    (3, 7, 7, 6, 4, 3, 3, (1, 1), ((1, 1), (1, 1)), (1, 1), 2),
    (2, 9, 9, 16, 16, 3, 3, (2, 2), ((1, 1), (1, 1)), (1, 1), 16),
    (3, 6, 6, 4, 8, 3, 3, (1, 1), ((1, 1), (1, 1)), (1, 1), 4),
    (1, 40, 9, 3, 5, 3, 3, (2, 1), ((1, 0), (1, 1)), (1, 1), 1),  # one image: its output rows split
]


def _operands(g, rng, dtype=jnp.float32):
    n, h, w, c, o, kh, kw, *_ = g
    x = jnp.asarray(rng.standard_normal((n, h, w, c)), dtype)
    wt = jnp.asarray(rng.standard_normal((o, c // g[10], kh, kw)) * 0.3, dtype)
    return x, wt, {"strides": g[7], "padding": g[8], "dilation": g[9], "groups": g[10]}


def _close(a, b, what):
    """Equal up to float32 rounding of sums whose terms reach max|b|."""
    b = np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=2e-5 * float(np.abs(b).max()) + 1e-6, err_msg=what)


def _module(path) -> str:
    return jax.export.deserialize(bytearray(path.read_bytes())).mlir_module()


def test_onednn_builds_from_scratch_on_this_machine(tmp_path):
    # A fresh cache: importing pdx.kernels compiles the handlers and writes the private oneDNN copy, before
    # anything is traced; the first trace only loads them.
    code = ("import pathlib, sys; from pdx import kernels as K; "
            "print(sorted(p.name for p in pathlib.Path(sys.argv[1], 'onednn').glob('*/*'))); "
            "print(K.onednn.unavailable_reason())")
    env = {**os.environ, "PDX_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-2:] == ["['libpdxdnn.so', 'pdx_onednn.so']", "None"]
    notices = [line for line in done.stderr.splitlines() if "oneDNN" in line]
    assert len(notices) == 1 and "building the oneDNN CPU kernels once" in notices[0], done.stderr[-3000:]
    assert K.onednn.unavailable_reason() is None


def test_without_a_compiler_one_warning_says_why_and_a_resnet_trains_on_xla(tmp_path):
    # A fresh machine without g++: an empty cache and no compiler on PATH.
    code = textwrap.dedent("""
        import json, warnings
        import jax, jax.numpy as jnp
        import pdx
        from pdx.vision.models import resnet18
        net = resnet18(num_classes=4)
        opt = pdx.optimizer.Momentum(0.01, parameters=net.parameters())
        x, y = jnp.ones((2, 3, 32, 32)), jnp.array([1, 3])
        step = pdx.value_and_grad(lambda net, x, y: pdx.nn.functional.cross_entropy(net(x), y))
        losses = []
        for _ in range(2):
            loss, grads = step(net, x, y)
            opt.step(grads)
            losses.append(float(loss))
        print(json.dumps({"reason": pdx.kernels.onednn.unavailable_reason(), "losses": losses}))
    """)
    env = {**os.environ, "PDX_CACHE_DIR": str(tmp_path), "PATH": str(tmp_path), "XLA_FLAGS": ""}
    env.pop("CXX", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["reason"] == "no C++ compiler found (set CXX or install g++)"
    assert all(np.isfinite(result["losses"])) and result["losses"][1] < result["losses"][0]
    warned = [line for line in done.stderr.splitlines() if "oneDNN" in line]
    assert len(warned) == 1, done.stderr[-3000:]
    assert "oneDNN CPU kernels are off (no C++ compiler found" in warned[0] and "pdx kernels build" in warned[0]


def test_onednn_convolution_matches_lax_in_every_mode(rng):
    for g in GEOMETRIES:
        x, w, geo = _operands(g, rng)
        ours = lambda x, w: K.conv2d_nhwc(x, w, **geo, impl="onednn")  # noqa: E731
        ref = lambda x, w: K.conv2d_nhwc_reference(x, w, **geo)  # noqa: E731
        lowered = jax.jit(ours).lower(x, w).as_text()
        assert "pdx_onednn_conv_forward" in lowered, g  # the custom call, not XLA's convolution
        _close(ours(x, w), ref(x, w), str(g))

        loss = lambda f: lambda x, w: jnp.sum(jnp.sin(f(x, w)) * jnp.arange(f(x, w).size).reshape(f(x, w).shape))  # noqa: E731
        for a, b in zip(jax.jit(jax.grad(loss(ours), (0, 1)))(x, w), jax.grad(loss(ref), (0, 1))(x, w)):
            _close(a, b, f"grad {g}")
        dx, dw = 0.5 * x[::-1], 0.7 * w[::-1]
        _close(jax.jvp(ours, (x, w), (dx, dw))[1], jax.jvp(ref, (x, w), (dx, dw))[1], f"jvp {g}")
        hvp = lambda f: jax.jvp(jax.grad(loss(f), (0, 1)), (x, w), (dx, dw))[1]  # noqa: E731
        for a, b in zip(hvp(ours), hvp(ref)):  # forward over reverse: every primitive's transposes
            _close(a, b, f"hvp {g}")
        gg = lambda f: jax.grad(lambda x: jnp.sum(jax.grad(loss(f), 1)(x, w) ** 2))(x)  # noqa: E731
        _close(gg(ours), gg(ref), f"grad of grad {g}")
        xs = jnp.stack([x, -x])
        _close(jax.vmap(lambda x: ours(x, w))(xs), jax.vmap(lambda x: ref(x, w))(xs), f"vmap {g}")


def test_onednn_matmul_matches_jnp_for_every_transpose(rng):
    for ta in (False, True):
        for tb in (False, True):
            for m, k, n in ((7, 37, 5), (100, 24, 33)):  # 100 rows split over XLA's threads
                a = jnp.asarray(rng.standard_normal((k, m) if ta else (m, k)), jnp.float32)
                b = jnp.asarray(rng.standard_normal((n, k) if tb else (k, n)), jnp.float32)
                ours = lambda a, b: K.matmul(a, b, transpose_a=ta, transpose_b=tb, impl="onednn")  # noqa: E731
                ref = lambda a, b: (a.T if ta else a) @ (b.T if tb else b)  # noqa: E731
                what = f"ta={ta} tb={tb} {(m, k, n)}"
                assert "pdx_onednn_matmul" in jax.jit(ours).lower(a, b).as_text()
                _close(ours(a, b), ref(a, b), what)
                loss = lambda f: lambda a, b: jnp.sum(jnp.sin(f(a, b)))  # noqa: E731
                for x, y in zip(jax.grad(loss(ours), (0, 1))(a, b), jax.grad(loss(ref), (0, 1))(a, b)):
                    _close(x, y, "grad " + what)
                hvp = lambda f: jax.jvp(jax.grad(loss(f), (0, 1)), (a, b), (0.3 * a, -0.2 * b))[1]  # noqa: E731
                for x, y in zip(hvp(ours), hvp(ref)):
                    _close(x, y, "hvp " + what)
                _close(jax.vmap(lambda a: ours(a, b))(jnp.stack([a, 2 * a])),
                       jax.vmap(lambda a: ref(a, b))(jnp.stack([a, 2 * a])), "vmap " + what)
    ab, bb = a.astype(jnp.bfloat16), b.astype(jnp.bfloat16)
    if not K.onednn.bf16_capable():  # AVX2 only: oneDNN has no bfloat16 matmul; "auto" runs XLA's
        with pytest.raises(ValueError, match=r"bfloat16 on AVX-512 CPUs.*impl='xla'"):
            K.matmul(ab, bb, transpose_a=ta, transpose_b=tb, impl="onednn")
        assert "pdx_onednn_matmul" not in jax.jit(lambda a, b: K.matmul(a, b, transpose_a=ta, transpose_b=tb)).lower(
            ab, bb).as_text()
    bf = K.matmul(ab, bb, transpose_a=ta, transpose_b=tb, impl="onednn" if K.onednn.bf16_capable() else "auto")
    assert bf.dtype == jnp.bfloat16
    np.testing.assert_allclose(bf.astype(jnp.float32), (a.T if ta else a) @ (b.T if tb else b), rtol=3e-2, atol=0.3)


def test_onednn_bfloat16_within_its_rounding(rng):
    x, w, geo = _operands(GEOMETRIES[0], rng, jnp.bfloat16)
    ref = K.conv2d_nhwc_reference(x.astype(jnp.float32), w.astype(jnp.float32), **geo)
    impl = "onednn" if K.onednn.bf16_capable() else "auto"
    if impl == "auto":  # AVX2 only: the named implementation declines, "auto" runs XLA's
        with pytest.raises(ValueError, match=r"bfloat16 on AVX-512 CPUs"):
            K.conv2d_nhwc(x, w, **geo, impl="onednn")
    out = K.conv2d_nhwc(x, w, **geo, impl=impl)
    assert out.dtype == jnp.bfloat16
    np.testing.assert_allclose(out.astype(jnp.float32), ref, rtol=2e-2, atol=5e-2)
    gx, gw = jax.grad(lambda x, w: K.conv2d_nhwc(x, w, **geo, impl=impl).astype(jnp.float32).sum(), (0, 1))(x, w)
    rx, rw = jax.grad(lambda x, w: K.conv2d_nhwc_reference(x, w, **geo).sum(), (0, 1))(
        x.astype(jnp.float32), w.astype(jnp.float32))
    np.testing.assert_allclose(gx.astype(jnp.float32), rx, rtol=2e-2, atol=1e-1)
    np.testing.assert_allclose(gw.astype(jnp.float32), rw, rtol=2e-2, atol=3e-1)


def test_onednn_declines_what_it_does_not_take():
    x, w = jnp.ones((1, 5, 5, 2), jnp.float16), jnp.ones((3, 2, 3, 3), jnp.float16)
    geo = {"strides": (1, 1), "padding": ((1, 1), (1, 1)), "dilation": (1, 1)}
    with pytest.raises(ValueError, match=r"conv2d_nhwc: oneDNN convolutions take float32.*impl='xla'"):
        K.conv2d_nhwc(x, w, **geo, impl="onednn")
    assert K.conv2d_nhwc(x, w, **geo).dtype == jnp.float16  # "auto" runs XLA's
    pool = {"kernel": (2, 2), "strides": (2, 2), "padding": ((0, 0), (0, 0))}
    with pytest.raises(K.Unsupported, match=r"oneDNN max pooling takes float32.*float16"):
        K.onednn.max_pool_nhwc(jnp.ones((1, 4, 4, 2), jnp.float16), **pool)
    with pytest.raises(K.Unsupported, match=r"padding smaller than the window.*padding \(\(2, 2\)"):
        K.onednn.max_pool_nhwc(jnp.ones((1, 4, 4, 2)), **dict(pool, padding=((2, 2), (0, 0))))


_SINGLE_DEVICE = textwrap.dedent("""
    import json, sys, tempfile
    import numpy as np
    import jax, jax.numpy as jnp
    import pdx, pdx.nn as nn, pdx.nn.functional as F

    def net():
        pdx.seed(0)
        return nn.Sequential(nn.Conv2D(3, 8, 3, padding=1), nn.BatchNorm2D(8), nn.ReLU(),
                             nn.Conv2D(8, 8, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 16, 4))

    def losses(impl):
        with pdx.kernels.use_impl(impl):
            model = net()
            opt = pdx.optimizer.Momentum(learning_rate=0.05, parameters=model.parameters())
            rng = np.random.default_rng(1)
            x = pdx.to_tensor(rng.standard_normal((6, 3, 8, 8)).astype("float32"))
            y = pdx.to_tensor(rng.integers(0, 4, (6,)))
            out = []
            loss_fn = lambda model, x, y: F.cross_entropy(model(x), y)
            for _ in range(4):
                loss, grads = pdx.value_and_grad(loss_fn)(model, x, y)
                opt.step(grads)
                out.append(float(loss))
            return model, x, out

    model, x, ours = losses(None)
    _, _, xla = losses("xla")
    w = jnp.ones((4, 3, 3, 3))
    hlo = jax.jit(lambda x: F.conv2d(x, w, padding=1)).lower(jnp.ones((2, 3, 8, 8))).as_text()
    hlo += jax.jit(lambda x: F.linear(x, jnp.ones((8, 5)))).lower(jnp.ones((2, 3, 8))).as_text()
    model.eval()
    path = pdx.export.export(model, tempfile.mkdtemp() + "/net", [pdx.jit.InputSpec([None, 3, 8, 8])])
    pred = pdx.export.load(path)
    served = np.asarray(pred(np.asarray(x)))
    print(json.dumps({"devices": jax.device_count(), "ours": ours, "xla": xla,
                      "custom_call": "pdx_onednn_conv_forward" in hlo and "pdx_onednn_matmul" in hlo,
                      "export_diff": float(np.abs(served - np.asarray(model(x))).max())}))
""")


def _on_one_device(code, cwd) -> dict:
    """Run `code` in a process with one CPU device (the test suite has 8); its last line, parsed."""
    env = {**os.environ, "XLA_FLAGS": "", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600,
                          cwd=cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_single_device_trains_on_onednn_like_on_xla_and_still_exports(tmp_path):
    r = _on_one_device(_SINGLE_DEVICE, tmp_path)
    assert r["devices"] == 1 and r["custom_call"]
    np.testing.assert_allclose(r["ours"], r["xla"], rtol=1e-4)
    assert r["ours"][-1] < r["ours"][0]
    assert r["export_diff"] < 1e-4  # the export traced XLA's convolution (jax.export refuses custom calls)


def test_pdx_onednn_0_turns_it_off(tmp_path):
    code = ("import pdx, jax.numpy as jnp, pdx.nn.functional as F; "
            "print(pdx.kernels.onednn.unavailable_reason()); "
            "print(F.conv2d(jnp.ones((1, 2, 5, 5)), jnp.ones((3, 2, 3, 3))).shape)")
    env = {**os.environ, "XLA_FLAGS": "", "PDX_ONEDNN": "0"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-2:] == ["disabled by PDX_ONEDNN=0", "(1, 3, 3, 3)"]


_WITH_PADDLE = textwrap.dedent("""
    import sys
    import numpy as np
    first, second = sys.argv[1:]

    def ours(x, w):
        import jax.numpy as jnp
        from pdx import kernels as K
        assert K.onednn.unavailable_reason() is None, K.onednn.unavailable_reason()
        out = K.conv2d_nhwc(jnp.asarray(x.transpose(0, 2, 3, 1)), jnp.asarray(w), strides=(1, 1),
                            padding=((1, 1), (1, 1)), dilation=(1, 1), impl="onednn")
        return np.asarray(out).transpose(0, 3, 1, 2)

    def paddles(x, w):
        import paddle
        paddle.set_device("cpu")
        return paddle.nn.functional.conv2d(paddle.to_tensor(x), paddle.to_tensor(w), padding=1).numpy()

    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 3, 9, 9)).astype("float32"), rng.standard_normal((4, 3, 3, 3)).astype("float32")
    run = {"pdx": ours, "paddle": paddles}
    a = run[first](x, w)
    b = run[second](x, w)
    print(float(np.abs(a - b).max()))
""")


@pytest.mark.parametrize("first", ["pdx", "paddle"])
def test_onednn_and_paddles_own_onednn_load_in_either_order(first, tmp_path):
    # Paddle bundles another oneDNN under the same soname; pdx links a renamed private copy.
    second = "paddle" if first == "pdx" else "pdx"
    env = {**os.environ, "XLA_FLAGS": ""}
    done = subprocess.run([sys.executable, "-c", _WITH_PADDLE, first, second], env=env, capture_output=True,
                          text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert float(done.stdout.strip().splitlines()[-1]) < 1e-4


_AGAINST_PADDLE = textwrap.dedent("""
    import json
    import numpy as np
    import jax, jax.numpy as jnp
    import paddle
    import pdx, pdx.nn.functional as F
    paddle.set_device("cpu")
    rng = np.random.default_rng(3)
    worst = 0.0
    cases = [dict(stride=2, padding=1), dict(stride=1, padding=[1, 2], dilation=2), dict(stride=[2, 1], padding=0),
             dict(stride=1, padding=1, groups=2), dict(stride=2, padding=1, groups=4)]
    for kw in cases:
        x = rng.standard_normal((3, 4, 11, 9)).astype("float32")
        w = rng.standard_normal((8, 4 // kw.get("groups", 1), 3, 3)).astype("float32")
        b = rng.standard_normal((8,)).astype("float32")
        for fmt in ("NCHW", "NHWC"):
            xin = x if fmt == "NCHW" else x.transpose(0, 2, 3, 1)
            ours = F.conv2d(jnp.asarray(xin), jnp.asarray(w), jnp.asarray(b), data_format=fmt, **kw)
            lowered = jax.jit(lambda x: F.conv2d(x, jnp.asarray(w), data_format=fmt, **kw)).lower(jnp.asarray(xin))
            assert "pdx_onednn_conv_forward" in lowered.as_text(), (kw, fmt)
            px, pw = paddle.to_tensor(xin, stop_gradient=False), paddle.to_tensor(w, stop_gradient=False)
            ref = paddle.nn.functional.conv2d(px, pw, paddle.to_tensor(b), data_format=fmt, **kw)
            worst = max(worst, float(np.abs(np.asarray(ours) - ref.numpy()).max()))
            (ref ** 2).sum().backward()
            gx, gw = jax.grad(lambda x, w: (F.conv2d(x, w, jnp.asarray(b), data_format=fmt, **kw) ** 2).sum(),
                              (0, 1))(jnp.asarray(xin), jnp.asarray(w))
            scale = float(np.abs(pw.grad.numpy()).max())
            worst = max(worst, float(np.abs(np.asarray(gx) - px.grad.numpy()).max()),
                        float(np.abs(np.asarray(gw) - pw.grad.numpy()).max()) / max(scale, 1.0))
    x = rng.standard_normal((2, 5, 16)).astype("float32")
    w = rng.standard_normal((16, 7)).astype("float32")
    ours = F.linear(jnp.asarray(x), jnp.asarray(w))
    worst = max(worst, float(np.abs(np.asarray(ours) - paddle.nn.functional.linear(
        paddle.to_tensor(x), paddle.to_tensor(w)).numpy()).max()))
    print(json.dumps({"devices": jax.device_count(), "worst": worst}))
""")


def test_on_a_single_device_conv2d_and_linear_match_paddle(tmp_path):
    r = _on_one_device(_AGAINST_PADDLE, tmp_path)
    assert r["devices"] == 1 and r["worst"] < 1e-3, r


def test_an_artifact_carries_a_onednn_program_equal_to_its_portable_one(tmp_path, rng):
    import pdx
    from safetensors.numpy import load_file

    pdx.seed(0)
    net = pdx.nn.Sequential(pdx.nn.Conv2D(3, 8, 3, stride=2, padding=1, data_format="NHWC"), pdx.nn.ReLU(),
                            pdx.nn.Flatten(), pdx.nn.Linear(8 * 4 * 4, 5))
    net.eval()
    path = pdx.export.export(net, tmp_path / "net", [pdx.jit.InputSpec([None, 8, 8, 3])])
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["targets"]["xla"]["onednn_file"] == "program_onednn.jaxexport"
    native = _module(path / "program_onednn.jaxexport")
    portable = jax.export.deserialize(bytearray((path / "program.jaxexport").read_bytes()))
    # the convolution's weight is a parameter: its oneDNN layout is kept between calls
    assert "pdx_onednn_conv_inference" in native and "pdx_onednn_matmul" in native
    assert "pdx_onednn_conv_forward" not in native
    assert "pdx_onednn" not in portable.mlir_module()
    pred = pdx.export.load(path)
    assert pred.program == "onednn"
    params = load_file(str(path / "params.safetensors"))
    params = tuple(jnp.asarray(params[p["name"]]) for p in manifest["params"])
    # A second model of the same shapes, other weights, loaded beside it: each predictor
    # keeps its own weights (its own token).
    pdx.seed(1)
    other_net = pdx.nn.Sequential(pdx.nn.Conv2D(3, 8, 3, stride=2, padding=1, data_format="NHWC"), pdx.nn.ReLU(),
                                  pdx.nn.Flatten(), pdx.nn.Linear(8 * 4 * 4, 5))
    other_net.eval()
    other = pdx.export.load(pdx.export.export(other_net, tmp_path / "other", [pdx.jit.InputSpec([None, 8, 8, 3])]))
    for batch in (1, 5, 1):  # one artifact, any batch (the batch stays symbolic in both programs)
        x = rng.standard_normal((batch, 8, 8, 3)).astype("float32")
        _close(pred(x), portable.call(params, jnp.asarray(x)), f"batch {batch}")
        _close(other(x), np.asarray(other_net(jnp.asarray(x))), f"other model, batch {batch}")
    plain = pdx.export.export(net, tmp_path / "plain", [pdx.jit.InputSpec([None, 8, 8, 3])], cpu={"onednn": False})
    assert "onednn_file" not in json.loads((plain / "manifest.json").read_text())["targets"]["xla"]
    assert pdx.export.load(plain).program == "portable"


def test_kept_weights_are_per_token_and_site_and_freed(rng):
    g = GEOMETRIES[0]
    x, w, geometry = _operands(g, rng)
    w2 = w * -2.0
    run = jax.jit(lambda x, w, t, site: K.onednn.kept_conv(x, w, t, site=1, **geometry), static_argnums=3)
    a, b = K.onednn.new_weights_token(), K.onednn.new_weights_token()
    assert a != b
    want, want2 = K.conv2d_nhwc_reference(x, w, **geometry), K.conv2d_nhwc_reference(x, w2, **geometry)
    _close(run(x, w, a, 1), want, "first call")
    _close(run(x, w2, b, 1), want2, "another token")
    _close(run(x, w2, 0, 1), want2, "token 0 keeps nothing")
    _close(run(x, w, 0, 1), want, "token 0 keeps nothing, again")
    _close(run(x, w, a, 1), want, "the kept weights")
    K.onednn.forget_weights(a)
    _close(run(x, w2, a, 1), want2, "after forget_weights the token takes new weights")
    K.onednn.forget_weights(a)
    K.onednn.forget_weights(b)


def test_an_artifact_reorders_a_weight_computed_from_its_input_every_call(tmp_path, rng):
    import pdx
    import pdx.nn.functional as F

    conv = pdx.nn.Conv2D(3, 4, 3, padding=1, data_format="NHWC")

    def scaled_conv(x):
        return F.conv2d(x, conv.weight * x.mean(), padding=1, data_format="NHWC")

    path = pdx.export.export(scaled_conv, tmp_path / "f", [pdx.jit.InputSpec([None, 6, 6, 3])])
    native = _module(path / "program_onednn.jaxexport")
    assert "pdx_onednn_conv_forward" in native and "pdx_onednn_conv_inference" not in native
    pred = pdx.export.load(path)
    for scale in (1.0, 3.0):
        x = (rng.standard_normal((2, 6, 6, 3)) + scale).astype("float32")
        _close(pred(x), np.asarray(scaled_conv(jnp.asarray(x))), f"input mean {scale}")


_SPLIT_CALLS = textwrap.dedent("""
    import json
    import jax, jax.numpy as jnp, numpy as np
    from pdx import kernels as K

    rng = np.random.default_rng(0)
    worst = {}
    # (N, H, W, C, O, k, strides, padding, groups): one image with many rows (its output rows
    # split over the threads, strided and padded unevenly), few rows with a light weight
    # (split in parts of 2 and 3 rows), few rows with a heavy weight or fewer rows than
    # two per thread (unsplit, or the inference calls split by output channels), batches.
    for n, h, w, c, o, k, s, pad, groups in [(1, 40, 9, 3, 5, 3, (2, 1), ((1, 0), (1, 1)), 1),
                                             (1, 3, 6, 48, 96, 1, (1, 1), ((0, 0), (0, 0)), 1),
                                             (1, 33, 12, 4, 4, 5, (1, 1), ((2, 2), (2, 2)), 2),
                                             (1, 5, 5, 8, 8, 3, (1, 1), ((1, 1), (1, 1)), 1),
                                             (1, 5, 5, 256, 256, 3, (1, 1), ((1, 1), (1, 1)), 1),
                                             (1, 3, 3, 8, 8, 3, (1, 1), ((1, 1), (1, 1)), 1),
                                             (3, 17, 6, 4, 6, 3, (2, 2), ((1, 1), (0, 1)), 1)]:
        x = jnp.asarray(rng.standard_normal((n, h, w, c)), jnp.float32)
        wt = jnp.asarray(rng.standard_normal((o, c // groups, k, k)) * 0.3, jnp.float32)
        g = dict(strides=s, padding=pad, dilation=(1, 1), groups=groups)
        ref = K.conv2d_nhwc_reference(x, wt, **g)
        scale = jnp.asarray(rng.uniform(0.5, 1.5, o), jnp.float32)
        shift = jnp.asarray(rng.standard_normal(o), jnp.float32)
        res = jnp.asarray(rng.standard_normal(ref.shape), jnp.float32)
        fused = jnp.maximum(K.conv2d_nhwc_reference(x, wt * scale[:, None, None, None], **g) + shift + res, 0)
        token = K.onednn.new_weights_token()
        kept = jax.jit(lambda x, wt, t: K.onednn.kept_conv(x, wt, t, site=1, scale=scale, shift=shift, residual=res,
                                                          relu=True, **g))
        grad = jax.jit(jax.grad(lambda x, wt: (K.conv2d_nhwc(x, wt, impl="onednn", **g) ** 2).sum(), (0, 1)))
        def err(a, b):
            return float(jnp.abs(a - b).max() / (jnp.abs(b).max() + 1e-6))
        gx, gw = grad(x, wt)
        rx, rw = jax.grad(lambda x, wt: (K.conv2d_nhwc_reference(x, wt, **g) ** 2).sum(), (0, 1))(x, wt)
        worst[f"{n}x{h}x{w}x{c} k{k} s{s}"] = max(
            err(jax.jit(lambda x, wt: K.conv2d_nhwc(x, wt, impl="onednn", **g))(x, wt), ref),
            err(kept(x, wt, token), fused), err(kept(x, wt, token), fused), err(kept(x, wt, 0), fused),
            err(gx, rx), err(gw, rw))
    # max pools (images split over the threads), float32 and bfloat16: exact
    for n, h, w, c, k, s, pad in [(1, 12, 11, 16, (3, 3), (2, 2), ((1, 1), (1, 1))),
                                  (3, 9, 7, 5, (2, 3), (1, 2), ((1, 0), (0, 2)))]:
        for dtype in (jnp.float32,) + ((jnp.bfloat16,) if K.onednn.bf16_capable() else ()):
            x = jnp.asarray(rng.standard_normal((n, h, w, c)), dtype)
            pool = jax.jit(lambda x: K.onednn.max_pool_nhwc(x, kernel=k, strides=s, padding=pad))(x)
            ref = K.onednn.max_pool_nhwc_reference(x, kernel=k, strides=s, padding=pad)
            assert pool.shape == ref.shape and pool.dtype == ref.dtype
            worst[f"pool {n}x{h}x{w}x{c} {jnp.dtype(dtype).name}"] = float(jnp.abs(pool - ref).max())
    # kept matmuls (columns split over the threads; kept twice under a token, then token 0)
    for m, k, n, tb in [(1, 512, 1000, False), (5, 37, 70, True)]:
        a = jnp.asarray(rng.standard_normal((m, k)), jnp.float32)
        b = jnp.asarray(rng.standard_normal((n, k) if tb else (k, n)), jnp.float32)
        for dtype in (jnp.float32,) + ((jnp.bfloat16,) if K.onednn.bf16_capable() else ()):
            mm = jax.jit(lambda a, b, t: K.onednn.kept_matmul(a, b, t, site=1, transpose_b=tb))
            ref = jnp.matmul(a.astype(dtype), (b.T if tb else b).astype(dtype), preferred_element_type=jnp.float32)
            token = K.onednn.new_weights_token()
            worst[f"kept matmul {m}x{k}x{n} {jnp.dtype(dtype).name}"] = max(
                err(mm(a.astype(dtype), b, t), ref) for t in (token, token, 0))
    print(json.dumps({"devices": jax.device_count(), "worst": worst}))
""")


def test_on_one_device_split_calls_match_lax(tmp_path):
    # One device: XLA's threads split each call (by image, one image's output rows, or an
    # inference call's output channels); max pools split by image.
    r = _on_one_device(_SPLIT_CALLS, tmp_path)
    assert r["devices"] == 1
    assert max(r["worst"].values()) < 1e-5, r["worst"]


def _block(pdx, data_format="NHWC"):
    """conv -> BatchNorm -> ReLU, conv -> BatchNorm -> + x -> ReLU6, then a max pool and a Linear."""

    class Block(pdx.nn.Layer):
        def __init__(self):
            super().__init__()
            self.conv1 = pdx.nn.Conv2D(4, 4, 3, padding=1, data_format=data_format)
            self.bn1 = pdx.nn.BatchNorm2D(4, data_format=data_format)
            self.conv2 = pdx.nn.Conv2D(4, 4, 3, padding=1, data_format=data_format, bias_attr=False)
            self.bn2 = pdx.nn.BatchNorm2D(4, data_format=data_format)
            self.pool = pdx.nn.MaxPool2D(3, stride=2, padding=1, data_format=data_format)
            self.fc = pdx.nn.Linear(4 * 4 * 4, 3)

        def forward(self, x):
            y = pdx.nn.functional.relu(self.bn1(self.conv1(x)))
            y = pdx.nn.functional.relu6(self.bn2(self.conv2(y)) + x)
            return self.fc(self.pool(y).reshape([x.shape[0], -1]))

    pdx.seed(3)
    net = Block()
    rng = np.random.default_rng(3)
    for bn in (net.bn1, net.bn2):  # non-trivial statistics, so folding them is visible
        bn._mean.set_value(jnp.asarray(rng.normal(0, 0.3, 4), jnp.float32))
        bn._variance.set_value(jnp.asarray(rng.uniform(0.5, 2.0, 4), jnp.float32))
        bn.weight.set_value(jnp.asarray(rng.uniform(0.5, 1.5, 4), jnp.float32))
    return net.eval()


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_an_artifacts_onednn_program_fuses_batchnorm_residual_and_relus(tmp_path, rng, data_format):
    import pdx

    net = _block(pdx, data_format)
    shape = [8, 8, 4] if data_format == "NHWC" else [4, 8, 8]
    path = pdx.export.export(net, tmp_path / "block", [pdx.jit.InputSpec([None, *shape])])
    native = _module(path / "program_onednn.jaxexport")
    assert native.count("pdx_onednn_conv_inference") == 2
    assert "residual = 1" in native and native.count("pdx_onednn_max_pool") == 1  # the max pool on oneDNN
    assert native.count("pdx_onednn_matmul_inference") == 1  # the Linear keeps its weight too
    assert "reduce_window" not in native and "stablehlo.minimum" not in native  # ReLU6 is a post-op
    assert "stablehlo.transpose" not in native or data_format == "NCHW"
    pred = pdx.export.load(path)
    assert pred.program == "onednn"
    for batch in (1, 4):
        x = rng.standard_normal((batch, *shape)).astype("float32")
        _close(pred(x), np.asarray(net(jnp.asarray(x))), f"batch {batch}")
    if data_format == "NCHW":
        return
    spec = [pdx.jit.InputSpec([None, *shape])]
    if not K.onednn.bf16_capable():  # AVX2 only: a bfloat16 oneDNN program can be neither built nor run here
        with pytest.raises(ValueError, match="needs a CPU whose oneDNN runs bfloat16"):
            pdx.export.export(net, tmp_path / "bf16", spec, cpu=pdx.export.CpuOptions(precision="bfloat16"))
        return

    bf16 = pdx.export.export(net, tmp_path / "bf16", spec, cpu=pdx.export.CpuOptions(precision="bfloat16"))
    xla = json.loads((bf16 / "manifest.json").read_text())["targets"]["xla"]
    assert xla["onednn_precision"] == "bfloat16" and 0 < xla["onednn_max_error"] < 3e-2, xla
    x = rng.standard_normal((2, 8, 8, 4)).astype("float32")
    want = np.asarray(net(jnp.asarray(x)))
    got = pdx.export.load(bf16)(x)
    assert np.abs(got - want).max() <= 3e-2 * np.abs(want).max()
    with pytest.raises(ValueError, match="cpu.precision='float16' must be one of"):
        pdx.export.export(net, tmp_path / "bad", spec, cpu={"precision": "float16"})


def test_an_artifact_written_for_other_onednn_handlers_runs_its_portable_program(tmp_path, rng, monkeypatch):
    import pdx

    net = _block(pdx)
    path = pdx.export.export(net, tmp_path / "block", [pdx.jit.InputSpec([None, 8, 8, 4])])
    monkeypatch.setattr(K.onednn, "ABI", K.onednn.ABI + "0")  # a later pdx, whose handlers changed
    pred = pdx.export.load(path)
    assert pred.program == "portable"
    x = rng.standard_normal((2, 8, 8, 4)).astype("float32")
    _close(pred(x), np.asarray(net(jnp.asarray(x))), "portable program")
