"""The less common pdx.nn layers against paddle.nn: padding, resampling and rearranging
layers, Bilinear / distances / Unflatten, LocalResponseNorm / SpectralNorm / SyncBatchNorm,
unpool / LP / fractional pooling, FeatureAlphaDropout, parameter containers and
Paddle's PyTorch-style aliases."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import pdx
import pdx.nn as nn
from layer_testutil import assert_close, assert_grads_match, load_from_paddle, pd_forward

FORMATS = {1: ("NCL", "NLC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _shape(n, fmt, c=2):
    spatial = (5, 4, 3)[-n:] if n > 1 else (5,)
    return (2, c, *spatial) if fmt[1] == "C" else (2, *spatial, c)


def test_padding_layers_match_paddle(paddle, rng):
    kinds = ["Zero", "Constant", "Reflection", "Replication", "Circular"]
    for n in (1, 2, 3):
        for fmt, padding in zip(FORMATS[n], (1, [2, 1, 0, 1, 1, 2][: 2 * n])):
            x = rng.standard_normal(_shape(n, fmt)).astype(np.float32)
            for kind in kinds:
                name = f"{kind}Pad{n}D"
                args = (padding, 0.5) if kind == "Constant" else (padding,)
                ours, ref = getattr(nn, name)(*args, data_format=fmt), getattr(paddle.nn, name)(*args, data_format=fmt)
                assert_close(ours(jnp.asarray(x)), pd_forward(paddle, ref, x))
            mode = "constant" if fmt[1] == "C" else "reflect"
            ours = getattr(nn, f"Pad{n}D")(padding, mode=mode, value=-1.0, data_format=fmt)
            ref = getattr(paddle.nn, f"Pad{n}D")(padding, mode=mode, value=-1.0, data_format=fmt)
            assert_close(ours(jnp.asarray(x)), pd_forward(paddle, ref, x))
    assert repr(nn.Pad2D([1, 0, 2, 1], mode="reflect")) == repr(paddle.nn.Pad2D([1, 0, 2, 1], mode="reflect"))
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    assert_grads_match(paddle, nn.ReflectionPad2D([1, 2, 0, 1]), paddle.nn.ReflectionPad2D([1, 2, 0, 1]), [x], rng)
    with pytest.raises(ValueError, match="padding"):
        nn.ZeroPad2D([1, 2, 3])
    # Paddle's Pad layers take any of F.pad's layouts: the layout, not the layer, names the input's rank
    for layer, fmt, padding in (("Pad2D", "NCL", [1, 2]), ("Pad1D", "NCHW", [1, 0, 1, 2]),
                                ("Pad3D", "NHWC", [0, 1, 2, 1]), ("Pad2D", "NCDHW", [1, 0, 1, 2, 1, 0])):
        x = rng.standard_normal((2, 3, 4, 5, 6)[:len(fmt)]).astype(np.float32)
        for mode in ("constant", "reflect", "circular"):
            ours = getattr(nn, layer)(padding, mode=mode, data_format=fmt)
            assert_close(ours(jnp.asarray(x)), pd_forward(paddle, getattr(paddle.nn, layer)(padding, mode=mode,
                                                                                              data_format=fmt), x))
    with pytest.raises(ValueError, match="data_format"):
        nn.Pad1D(1, data_format="NXC")
    with pytest.raises(ValueError, match="mode"):
        nn.Pad2D(1, mode="wrap")


def test_resampling_and_rearranging_layers_match_paddle(paddle, rng):
    x4 = rng.standard_normal((2, 8, 5, 6)).astype(np.float32)
    cases = [
        ("Upsample", dict(scale_factor=2, mode="bilinear"), x4),
        ("Upsample", dict(size=[7, 3], mode="nearest", data_format="NHWC"), x4),
        ("Upsample", dict(scale_factor=1.5, mode="linear", align_corners=True), x4[:, :, 0]),
        ("Upsample", dict(size=[3, 4, 5], mode="trilinear"), x4[:, :2, None]),
        ("UpsamplingNearest2D", dict(scale_factor=[2, 3]), x4),
        ("UpsamplingBilinear2D", dict(size=7), x4),
        ("UpsamplingBilinear2D", dict(size=[4, 9], data_format="NHWC"), x4),
        ("PixelShuffle", dict(upscale_factor=2), x4),
        ("PixelShuffle", dict(upscale_factor=2, data_format="NHWC"), x4.transpose(0, 2, 3, 1)),
        ("PixelUnshuffle", dict(downscale_factor=2), x4[:, :, :4]),
        ("PixelUnshuffle", dict(downscale_factor=3, data_format="NHWC"), x4[:, :6, :3, :3].transpose(0, 2, 3, 1)),
        ("ChannelShuffle", dict(groups=4), x4),
        ("ChannelShuffle", dict(groups=2, data_format="NHWC"), x4.transpose(0, 2, 3, 1)),
        ("Unfold", dict(kernel_sizes=[2, 3], strides=2, paddings=1, dilations=[1, 2]), x4),
        ("Fold", dict(output_sizes=[5, 6], kernel_sizes=2, strides=1), rng.standard_normal((2, 12, 20))),
    ]
    for name, kwargs, x in cases:
        x = np.asarray(x, np.float32)
        ours, ref = getattr(nn, name)(**kwargs), getattr(paddle.nn, name)(**kwargs)
        assert repr(ours) == repr(ref), (repr(ours), repr(ref))
        assert_close(ours(jnp.asarray(x)), pd_forward(paddle, ref, x))
    assert_grads_match(paddle, nn.UpsamplingBilinear2D(size=7), paddle.nn.UpsamplingBilinear2D(size=7), [x4], rng)
    assert_grads_match(paddle, nn.Fold([5, 6], 2), paddle.nn.Fold([5, 6], 2),
                       [rng.standard_normal((2, 12, 20)).astype(np.float32)], rng)
    with pytest.raises(ValueError, match="upscale_factor"):
        nn.PixelShuffle(0)
    with pytest.raises(ValueError, match="groups"):
        nn.ChannelShuffle(3)(jnp.ones((1, 4, 2, 2)))


def test_bilinear_distance_and_unflatten_layers_match_paddle(paddle, rng):
    x1 = rng.standard_normal((4, 3)).astype(np.float32)
    x2 = rng.standard_normal((4, 5)).astype(np.float32)
    ref = paddle.nn.Bilinear(3, 5, 2)
    ours = load_from_paddle(nn.Bilinear(3, 5, 2), ref)
    assert ours.weight.shape == (2, 3, 5) and ours.bias.shape == (1, 2)
    assert_close(ours(jnp.asarray(x1), jnp.asarray(x2)), pd_forward(paddle, ref, x1, x2))
    assert_grads_match(paddle, ours, ref, [x1, x2], rng)
    assert nn.Bilinear(3, 5, 2, bias_attr=False).bias is None

    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    b = rng.standard_normal((3, 4, 5)).astype(np.float32)
    for axis in (1, -1, 0):
        ours, ref = nn.CosineSimilarity(axis=axis), paddle.nn.CosineSimilarity(axis=axis)
        assert_close(ours(jnp.asarray(a), jnp.asarray(b)), pd_forward(paddle, ref, a, b))
    assert_grads_match(paddle, nn.CosineSimilarity(), paddle.nn.CosineSimilarity(), [a, b], rng)
    for p, keepdim in ((2.0, False), (1.0, True), (3.0, False)):
        ours, ref = nn.PairwiseDistance(p, keepdim=keepdim), paddle.nn.PairwiseDistance(p, keepdim=keepdim)
        assert_close(ours(jnp.asarray(a), jnp.asarray(b)), pd_forward(paddle, ref, a, b))
        assert repr(ours) == repr(ref)
    assert_grads_match(paddle, nn.PairwiseDistance(), paddle.nn.PairwiseDistance(), [a, b], rng)

    x = rng.standard_normal((2, 12, 3)).astype(np.float32)
    for axis, shape in ((1, [3, 4]), (-2, [2, -1, 3]), (0, [1, 2])):
        ours, ref = nn.Unflatten(axis, shape), paddle.nn.Unflatten(axis, shape)
        assert_close(ours(jnp.asarray(x)), pd_forward(paddle, ref, x))
        assert repr(ours) == repr(ref)
    with pytest.raises(ValueError, match="shape"):
        nn.Unflatten(1, [5, -1])(jnp.ones((2, 12)))
    with pytest.raises(ValueError, match="shape"):
        nn.Unflatten(1, [-1, -1])


def test_local_response_norm_and_spectral_norm_match_paddle(paddle, rng):
    for fmt, shape in (("NCHW", (2, 6, 3, 4)), ("NHWC", (2, 3, 4, 6)), ("NCL", (2, 5, 7)), ("NDHWC", (1, 2, 3, 2, 5))):
        x = rng.standard_normal(shape).astype(np.float32)
        ours = nn.LocalResponseNorm(3, alpha=0.1, beta=0.6, k=2.0, data_format=fmt)
        ref = paddle.nn.LocalResponseNorm(3, alpha=0.1, beta=0.6, k=2.0, data_format=fmt)
        assert_close(ours(jnp.asarray(x)), pd_forward(paddle, ref, x))
        assert repr(ours) == repr(ref)
    x = rng.standard_normal((2, 6, 3, 4)).astype(np.float32)
    assert_grads_match(paddle, nn.LocalResponseNorm(5), paddle.nn.LocalResponseNorm(5), [x], rng)

    for shape, dim, iters in (([4, 3, 2], 1, 2), ([5, 6], 0, 1), ([3, 4, 5], 0, 3)):  # Paddle: dim 0 or 1
        ref = paddle.nn.SpectralNorm(shape, dim=dim, power_iters=iters)
        ours = load_from_paddle(nn.SpectralNorm(shape, dim=dim, power_iters=iters), ref)
        w = rng.standard_normal(shape).astype(np.float32)
        assert_close(ours(jnp.asarray(w)), pd_forward(paddle, ref, w))
        np.testing.assert_array_equal(ours.weight_u[...], ref.weight_u.numpy())  # not written back
        # The exact gradient with u, v held fixed (as PyTorch): Paddle's kernel returns
        # dOut * (1 - u v^T sum(W / sigma)) / sigma instead, which is not W / sigma's derivative.
        cot = rng.standard_normal(shape).astype(np.float32)
        g_ours = jax.jit(jax.grad(lambda w: (ours(w) * cot).sum()))(jnp.asarray(w))
        mat = np.moveaxis(w, dim, 0).reshape(shape[dim], -1).astype(np.float64)
        u, v = ref.weight_u.numpy().astype(np.float64), ref.weight_v.numpy().astype(np.float64)
        for _ in range(iters):
            v = mat.T @ u / (np.linalg.norm(mat.T @ u) + 1e-12)
            u = mat @ v / (np.linalg.norm(mat @ v) + 1e-12)
        sigma = u @ mat @ v
        g_mat = np.moveaxis(cot, dim, 0).reshape(mat.shape)
        expected = g_mat / sigma - (g_mat * mat).sum() / sigma ** 2 * np.outer(u, v)
        rest = [s for i, s in enumerate(shape) if i != dim]
        expected = np.moveaxis(expected.reshape(shape[dim], *rest), 0, dim)
        np.testing.assert_allclose(g_ours, expected, rtol=1e-4, atol=1e-5)
    assert not nn.SpectralNorm([2, 2]).weight_u.get_metadata()["trainable"]
    with pytest.raises(ValueError, match="dim"):
        nn.SpectralNorm([2, 3], dim=2)
    np.testing.assert_allclose(np.linalg.norm(nn.SpectralNorm([3, 4, 5], dim=2, power_iters=30)(
        jnp.asarray(rng.standard_normal((3, 4, 5)).astype(np.float32))).transpose(2, 0, 1).reshape(5, -1), 2), 1.0,
        rtol=1e-4)


def test_sync_batch_norm_is_batch_norm_over_the_global_batch(paddle, rng):
    for shape, fmt, pd_cls in (((4, 3, 5, 2), "NCHW", "BatchNorm2D"), ((4, 3), "NC", "BatchNorm1D"),
                               ((4, 5, 3), "NLC", "BatchNorm1D"), ((2, 3, 2, 2, 2), "NCDHW", "BatchNorm3D")):
        x = rng.standard_normal(shape).astype(np.float32)
        ref = getattr(paddle.nn, pd_cls)(3, data_format=fmt if fmt != "NC" else "NCL")
        ours = load_from_paddle(nn.SyncBatchNorm(3, data_format=fmt), ref)
        assert_close(ours(jnp.asarray(x)), pd_forward(paddle, ref, x))
        assert_close(ours._mean[...], ref._mean.numpy())
        assert_close(ours._variance[...], ref._variance.numpy())
        ours.eval(), ref.eval()
        assert_close(ours(jnp.asarray(x)), pd_forward(paddle, ref, x))
    assert repr(nn.SyncBatchNorm(3)) == repr(paddle.nn.SyncBatchNorm(3))
    frozen = nn.SyncBatchNorm(3, weight_attr=False, bias_attr=False)
    pd_frozen = paddle.nn.SyncBatchNorm(3, weight_attr=False, bias_attr=False)
    assert list(frozen.state_dict()) == list(pd_frozen.state_dict())
    assert not frozen.weight.get_metadata()["trainable"]

    # Sharded over 8 devices, the statistics are the global batch's, as on one device.
    bn = nn.SyncBatchNorm(3)
    graphdef, state = nnx.split(bn)
    x = jnp.asarray(rng.standard_normal((16, 3, 2, 2)).astype(np.float32))
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:8]), ("data",))
    xs = jax.device_put(x, jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data")))

    @jax.jit
    def step(state, x):
        layer = nnx.merge(graphdef, state)
        return layer(x), nnx.state(layer)

    out, new_state = step(state, xs)
    expected = nn.SyncBatchNorm(3)
    assert_close(out, expected(x))
    assert_close(nnx.merge(graphdef, new_state)._mean[...], expected._mean[...])

    net = nn.Sequential(nn.Conv2D(3, 4, 3), nn.BatchNorm2D(4), nn.LayerList([nn.BatchNorm1D(4, data_format="NLC")]))
    before = dict(net.state_dict())
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert converted is net and isinstance(net[1], nn.SyncBatchNorm) and isinstance(net[2][0], nn.SyncBatchNorm)
    assert net[2][0]._data_format == "NLC"
    assert list(net.state_dict()) == list(before)
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(v, before[k])
    assert isinstance(nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm2D(2)), nn.SyncBatchNorm)


def test_unpool_lp_and_fractional_pool_layers_match_paddle(paddle, rng):
    x = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
    y, mask = paddle.nn.functional.max_pool2d(paddle.to_tensor(x), 2, return_mask=True)
    ours, ref = nn.MaxUnPool2D(2, output_size=[6, 7]), paddle.nn.MaxUnPool2D(2, output_size=[6, 7])
    assert_close(ours(jnp.asarray(y.numpy()), jnp.asarray(mask.numpy())), ref(y, mask))
    assert repr(ours) == repr(ref)
    assert_close(nn.MaxUnPool2D(2)(jnp.asarray(y.numpy()), jnp.asarray(mask.numpy()), output_size=[7, 6]).shape,
                 (2, 3, 7, 6))
    x1 = rng.standard_normal((2, 3, 8)).astype(np.float32)
    y1, m1 = paddle.nn.functional.max_pool1d(paddle.to_tensor(x1), 2, return_mask=True)
    assert_close(nn.MaxUnPool1D(2)(jnp.asarray(y1.numpy()), jnp.asarray(m1.numpy())),
                 paddle.nn.MaxUnPool1D(2)(y1, m1))
    x3 = rng.standard_normal((1, 2, 4, 4, 4)).astype(np.float32)
    y3, m3 = paddle.nn.functional.max_pool3d(paddle.to_tensor(x3), 2, return_mask=True)
    assert_close(nn.MaxUnPool3D(2)(jnp.asarray(y3.numpy()), jnp.asarray(m3.numpy())),
                 paddle.nn.MaxUnPool3D(2)(y3, m3))

    xp = np.abs(x) + 0.1
    for cls, args, kwargs, inp in (("LPPool2D", (2, 3), dict(stride=2, padding=1), xp),
                                   ("LPPool2D", (1.5, [2, 3]), dict(ceil_mode=True, data_format="NHWC"), xp),
                                   ("LPPool1D", (3, 2), dict(), xp[:, :, 0])):
        ours, ref = getattr(nn, cls)(*args, **kwargs), getattr(paddle.nn, cls)(*args, **kwargs)
        assert_close(ours(jnp.asarray(inp)), pd_forward(paddle, ref, inp))
        assert repr(ours) == repr(ref), (repr(ours), repr(ref))
    assert_grads_match(paddle, nn.LPPool2D(2, 3, 2), paddle.nn.LPPool2D(2, 3, 2), [xp], rng)

    for cls, out, inp in (("FractionalMaxPool2D", [3, 4], x), ("FractionalMaxPool3D", 2, x3)):
        ours, ref = getattr(nn, cls)(out, random_u=0.4), getattr(paddle.nn, cls)(out, random_u=0.4)
        assert_close(ours(jnp.asarray(inp)), pd_forward(paddle, ref, inp))
        assert repr(ours) == repr(ref)
    assert_grads_match(paddle, nn.FractionalMaxPool2D(3, kernel_size=2, random_u=0.3),
                       paddle.nn.FractionalMaxPool2D(3, kernel_size=2, random_u=0.3), [x], rng)


def test_fractional_pool_layer_draws_per_call_eagerly_and_under_jit(rng):
    x = jnp.asarray(rng.standard_normal((1, 2, 9, 9)).astype(np.float32))
    eager, traced = nn.FractionalMaxPool2D(4, rngs=0), nn.FractionalMaxPool2D(4, rngs=0)
    step = nnx.jit(lambda layer, x: layer(x))
    e = [eager(x) for _ in range(8)]
    t = [step(traced, x) for _ in range(8)]
    for a, b in zip(e, t):
        np.testing.assert_array_equal(a, b)
    assert len({np.asarray(a).tobytes() for a in e}) > 1
    y, mask = nn.FractionalMaxPool2D([4, 3], return_mask=True, rngs=1)(x)
    np.testing.assert_array_equal(np.take_along_axis(np.asarray(x).reshape(1, 2, -1),
                                                     np.asarray(mask).reshape(1, 2, -1), -1).reshape(y.shape), y)
    with pytest.raises(ValueError, match="random_u"):
        nn.FractionalMaxPool2D(3, random_u=2.0)


def test_feature_alpha_dropout(paddle):
    x = jnp.ones((8, 16, 3, 3))
    d = nn.FeatureAlphaDropout(0.5, rngs=0)
    y = np.asarray(d(x)).reshape(8 * 16, 9)
    assert all(len(set(row)) == 1 for row in y)  # one mask value per (N, C)
    assert len(set(y[:, 0])) == 2
    np.testing.assert_array_equal(d.eval()(x), x)
    assert repr(nn.FeatureAlphaDropout(0.2)) == repr(paddle.nn.FeatureAlphaDropout(0.2))


def test_parameter_containers_match_paddle_naming(paddle, rng):
    class Net(nn.Layer):
        def __init__(self):
            super().__init__()
            self.ws = nn.ParameterList([nn.Parameter(jnp.ones((3, 3))) for _ in range(2)])
            self.extra = nn.ParameterDict({"scale": nn.Parameter(jnp.ones(3)), "shift": nn.Parameter(jnp.zeros(3))})

        def forward(self, x):
            for w in self.ws:
                x = x @ w[...]
            return x * self.extra["scale"][...] + self.extra["shift"][...]

    class PdNet(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            make = lambda shape: paddle.create_parameter(shape, "float32")  # noqa: E731
            self.ws = paddle.nn.ParameterList([make([3, 3]) for _ in range(2)])
            self.extra = paddle.nn.ParameterDict({"scale": make([3]), "shift": make([3])})

        def forward(self, x):
            for w in self.ws:
                x = x @ w
            return x * self.extra["scale"] + self.extra["shift"]

    ours, ref = Net(), PdNet()
    assert list(ours.state_dict()) == list(ref.state_dict())
    load_from_paddle(ours, ref)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    assert_close(ours(jnp.asarray(x)), pd_forward(paddle, ref, x))
    assert_grads_match(paddle, ours, ref, [x], rng)
    assert len(ours.ws) == 2 and list(ours.extra) == ["scale", "shift"] and "scale" in ours.extra
    ours.ws.append(jnp.zeros((3, 3)))
    assert len(ours.ws) == 3 and isinstance(ours.ws[-1], nn.Parameter)
    ours.ws[0] = jnp.full((3, 3), 2.0)
    np.testing.assert_array_equal(ours.ws[0][...], 2.0)
    with pytest.raises(ValueError, match="shape"):
        ours.ws[0] = jnp.ones(2)
    with pytest.raises(TypeError, match="ParameterList"):
        nn.ParameterList([nn.Linear(2, 2)])
    with pytest.raises(KeyError, match="bias"):
        ours.extra["bias"]


def test_torch_style_aliases_are_paddles(paddle):
    public = [n for n in dir(paddle.nn) if not n.startswith("_") and isinstance(getattr(paddle.nn, n), type)]
    groups = {}
    for name in public:
        groups.setdefault(id(getattr(paddle.nn, name)), []).append(name)
    checked = 0
    for names in groups.values():
        if len(names) > 1 and all(hasattr(nn, n) for n in names):
            assert len({id(getattr(nn, n)) for n in names}) == 1, names
            checked += 1
    assert checked >= 30
    assert nn.Conv2d is nn.Conv2D and nn.Module is nn.Layer and nn.SiLU is nn.Silu
    assert nn.MaxUnpool2d is nn.MaxUnPool2D and nn.ModuleList is nn.LayerList
    assert pdx.nn.Parameter is nnx.Param


def _assert_stateful_grads_match(paddle, layer, pd_layer, x, rng):
    """Input and parameter gradients for a layer that writes buffers in forward (nnx.grad threads them)."""
    cot = rng.standard_normal(layer(jnp.asarray(x)).shape).astype(np.float32)
    g_layer, g_x = nnx.jit(nnx.grad(lambda m, x: jnp.sum(m(x) * cot), argnums=(0, 1)))(layer, jnp.asarray(x))
    ours = {".".join(map(str, k)): np.asarray(v.get_value()) for k, v in nnx.to_flat_state(g_layer)}
    xt = paddle.to_tensor(x, stop_gradient=False)
    (pd_layer(xt) * paddle.to_tensor(cot)).sum().backward()
    np.testing.assert_allclose(g_x, xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    for name, p in pd_layer.named_parameters():
        np.testing.assert_allclose(ours[name], p.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


def test_spectral_norm_function_matches_paddle(paddle, rng):
    for make, shape, dim in (("Linear", (5, 4), None), ("Conv2D", (2, 2, 5, 5), None),
                             ("Conv2DTranspose", (1, 2, 3, 3), 0)):
        args = (4, 3) if make == "Linear" else (2, 3, 3)
        ref = paddle.nn.utils.spectral_norm(getattr(paddle.nn, make)(*args), n_power_iterations=2, dim=dim)
        ours = nn.spectral_norm(getattr(nn, make)(*args), n_power_iterations=2, dim=dim)
        load_from_paddle(ours, ref)
        x = rng.standard_normal(shape).astype(np.float32)
        for _ in range(2):  # training: each call advances the power iteration
            assert_close(ours(jnp.asarray(x)), pd_forward(paddle, ref, x))
            assert_close(ours.weight_u[...], ref.weight_u.numpy())
            assert_close(ours.weight_v[...], ref.weight_v.numpy())
        ours.eval(), ref.eval()
        _assert_stateful_grads_match(paddle, ours, ref, x, rng)
    # Under nnx.jit the u/v updates come back as state, exactly as eagerly.
    eager, traced = nn.spectral_norm(nn.Linear(4, 3, rngs=0)), nn.spectral_norm(nn.Linear(4, 3, rngs=0))
    traced.set_state_dict(eager.state_dict())
    step = nnx.jit(lambda layer, x: layer(x))
    x = jnp.asarray(rng.standard_normal((2, 4)).astype(np.float32))
    for _ in range(3):
        assert_close(step(traced, x), eager(x))
    assert_close(traced.weight_u[...], eager.weight_u[...])
    assert type(eager) is type(traced) and type(eager).__name__ == "Linear"
    with pytest.raises(ValueError, match="already"):
        nn.spectral_norm(eager)
    with pytest.raises(ValueError, match="no parameter named 'kernel'"):
        nn.spectral_norm(nn.Linear(2, 2), name="kernel")
    with pytest.raises(ValueError, match="n_power_iterations"):
        nn.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
