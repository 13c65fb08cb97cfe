"""pdx.vision.models against paddle.vision.models: the same state dict gives
the same outputs (eval and training mode), plus layouts, jit and bad input."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx.vision import models


def _randomize_norms(paddle, pd_net, rng):
    """Give every BatchNorm random weight, bias and running statistics, so a
    model that ignored them (or mixed them up) could not match."""
    for layer in pd_net.sublayers():
        if isinstance(layer, paddle.nn.BatchNorm2D):
            c = layer.weight.shape[0]
            layer.weight.set_value(rng.uniform(0.5, 1.5, c).astype("float32"))
            layer.bias.set_value(rng.normal(0, 0.2, c).astype("float32"))
            layer._mean.set_value(rng.normal(0, 0.2, c).astype("float32"))
            layer._variance.set_value(rng.uniform(0.5, 2.0, c).astype("float32"))


def _copy_from_paddle(net, pd_net):
    """Load paddle's state dict into `net`; names and shapes must agree exactly."""
    pd_state = {k: v.numpy() for k, v in pd_net.state_dict().items()}
    ours = net.state_dict()
    assert list(ours) == list(pd_state)
    assert {k: tuple(v.shape) for k, v in ours.items()} == {k: tuple(v.shape) for k, v in pd_state.items()}
    missing, unexpected = net.set_state_dict(pd_state)
    assert not missing and not unexpected
    return net


def _assert_matches(ours, theirs, tol=1e-5):
    """Max abs difference within `tol` times the output's scale."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape
    scale = max(1.0, float(np.abs(theirs).max()))
    err = float(np.abs(ours - theirs).max())
    assert err <= tol * scale, f"max |pdx - paddle| = {err:.3g}, output scale {scale:.3g}"


def _pair(paddle, rng, name, pd_kwargs, **pdx_kwargs):
    """The paddle network `name` with random norms, and the pdx one with its weights, both in eval mode."""
    paddle.seed(0)
    pd_net = getattr(paddle.vision.models, name)(**pd_kwargs)
    _randomize_norms(paddle, pd_net, rng)
    pd_net.eval()
    net = getattr(models, name)(**pd_kwargs, **pdx_kwargs)
    return _copy_from_paddle(net, pd_net).eval(), pd_net


CASES = [  # (factory, kwargs, input shape)
    ("LeNet", {}, (2, 1, 28, 28)),
    ("resnet18", {"num_classes": 10}, (2, 3, 32, 32)),
    ("resnet50", {"num_classes": 10}, (1, 3, 32, 32)),
    ("mobilenet_v2", {"num_classes": 10}, (1, 3, 32, 32)),
    ("vgg11", {"num_classes": 10, "batch_norm": True}, (1, 3, 32, 32)),
]


@pytest.mark.parametrize("name, kwargs, shape", CASES, ids=[c[0] for c in CASES])
def test_eval_output_matches_paddle(paddle, rng, name, kwargs, shape):
    net, pd_net = _pair(paddle, rng, name, kwargs)
    x = rng.standard_normal(shape).astype("float32")
    _assert_matches(net(jnp.asarray(x)), pd_net(paddle.to_tensor(x)).numpy())


def test_resnext_grouped_bottleneck_matches_paddle(paddle, rng):
    # groups=32, width=4 and no classifier: the grouped 3x3 path and num_classes <= 0.
    net, pd_net = _pair(paddle, rng, "resnext50_32x4d", {"num_classes": 0})
    x = rng.standard_normal((1, 3, 32, 32)).astype("float32")
    out = pdx.jit(lambda net, x: net(x))(net, jnp.asarray(x))
    assert out.shape == (1, 2048, 1, 1)
    _assert_matches(out, pd_net(paddle.to_tensor(x)).numpy())


def test_training_mode_batch_stats_match_paddle(paddle, rng):
    # BatchNorm in training mode normalizes with batch statistics and updates
    # the running ones; both must agree with paddle after one forward.
    net, pd_net = _pair(paddle, rng, "resnet18", {"num_classes": 10})
    net.train()
    pd_net.train()
    x = rng.standard_normal((4, 3, 32, 32)).astype("float32")
    _assert_matches(net(jnp.asarray(x)), pd_net(paddle.to_tensor(x)).numpy(), tol=1e-4)
    ours, theirs = net.state_dict(), pd_net.state_dict()
    for key in ("bn1._mean", "bn1._variance", "layer4.1.bn2._mean", "layer4.1.bn2._variance"):
        np.testing.assert_allclose(np.asarray(ours[key]), theirs[key].numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name, kwargs, shape", [CASES[0], CASES[1], CASES[4]], ids=["LeNet", "resnet18", "vgg11"])
def test_nhwc_gives_the_same_outputs_with_the_same_state_dict(rng, name, kwargs, shape):
    pdx.seed(0)
    nchw = getattr(models, name)(**kwargs).eval()
    nhwc = getattr(models, name)(**kwargs, data_format="NHWC").eval()
    nhwc.set_state_dict(nchw.state_dict())
    x = rng.standard_normal(shape).astype("float32")
    out = pdx.jit(lambda net, x: net(x))(nhwc, jnp.asarray(x.transpose(0, 2, 3, 1)))
    _assert_matches(out, nchw(jnp.asarray(x)))


@pytest.mark.parametrize("name, kwargs", [
    ("resnet34", {}), ("resnet101", {"with_pool": False}), ("wide_resnet50_2", {}),
    ("mobilenet_v2", {"scale": 0.5}), ("vgg16", {"num_classes": 0}),
])
def test_state_dict_names_and_shapes_match_paddle(paddle, name, kwargs):
    theirs = getattr(paddle.vision.models, name)(**kwargs).state_dict()
    ours = getattr(models, name)(**kwargs).state_dict()
    assert [(k, tuple(v.shape)) for k, v in ours.items()] == [(k, tuple(v.shape)) for k, v in theirs.items()]


@pytest.mark.parametrize("factory", [models.resnet18, models.resnet50, models.mobilenet_v2, models.vgg11,
                                     models.wide_resnet50_2])
def test_pretrained_raises_and_says_how_to_load_weights(factory):
    with pytest.raises(ValueError, match=r"pretrained=True.*downloads nothing.*set_state_dict"):
        factory(pretrained=True)


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match=r"data_format='NWHC'.*'NCHW'"):
        models.LeNet(data_format="NWHC")
    with pytest.raises(ValueError, match=r"depth=20 .*\[18, 34, 50, 101, 152\]"):
        models.ResNet(models.BasicBlock, 20)
    with pytest.raises(TypeError, match="block must be BasicBlock or BottleneckBlock"):
        models.ResNet("basic", 18)
