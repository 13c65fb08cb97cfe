"""The model families added to pdx.vision.models (AlexNet, DenseNet, GoogLeNet,
InceptionV3, MobileNetV1/V3, ShuffleNetV2, SqueezeNet) against
paddle.vision.models: Paddle's state dict loads by name and gives Paddle's
eval outputs (compiled with pdx.jit), plus the NHWC layout and pretrained=True."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx.vision import models


def _randomize_norms(paddle, pd_net, rng):
    """Random BatchNorm affine parameters and running statistics, so a model that
    ignored or mixed them up could not match."""
    for layer in pd_net.sublayers():
        if isinstance(layer, (paddle.nn.BatchNorm2D, paddle.nn.BatchNorm)):
            c = layer.weight.shape[0]
            layer.weight.set_value(rng.uniform(0.5, 1.5, c).astype("float32"))
            layer.bias.set_value(rng.normal(0, 0.2, c).astype("float32"))
            layer._mean.set_value(rng.normal(0, 0.2, c).astype("float32"))
            layer._variance.set_value(rng.uniform(0.5, 2.0, c).astype("float32"))


def _load_paddle_weights(net, pd_net):
    """Paddle's state dict into `net`: the same names, order and shapes, nothing missing."""
    pd_state = {k: v.numpy() for k, v in pd_net.state_dict().items()}
    ours = net.state_dict()
    assert list(ours) == list(pd_state)
    assert {k: tuple(v.shape) for k, v in ours.items()} == {k: v.shape for k, v in pd_state.items()}
    missing, unexpected = net.set_state_dict(pd_state)
    assert not missing and not unexpected
    return net.eval()


def _close(ours, theirs, tol=1e-4):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape
    scale = max(1.0, float(np.abs(theirs).max()))
    err = float(np.abs(ours - theirs).max())
    assert err <= tol * scale, f"max |pdx - paddle| = {err:.3g}, output scale {scale:.3g}"


_FORWARD = pdx.jit(lambda net, x: net(x))

CASES = [  # (paddle.vision.models name, kwargs, the smallest convenient input side)
    ("alexnet", {"num_classes": 10}, 224),          # the classifier needs a 6x6 map
    ("googlenet", {"num_classes": 10}, 224),        # the auxiliary heads need a 3x3 map
    ("inception_v3", {"num_classes": 10}, 75),
    ("densenet121", {"num_classes": 10}, 32),
    ("squeezenet1_0", {"num_classes": 10}, 48),
    ("squeezenet1_1", {"num_classes": 10}, 48),
    ("mobilenet_v1", {"scale": 0.25, "num_classes": 10}, 32),
    ("mobilenet_v3_small", {"num_classes": 10}, 32),
    ("mobilenet_v3_large", {"scale": 0.5, "num_classes": 10}, 32),
    ("shufflenet_v2_x0_25", {"num_classes": 10}, 32),
    ("ShuffleNetV2", {"scale": 0.33, "act": "swish", "num_classes": 10}, 32),
]


@pytest.mark.parametrize("name, kwargs, size", CASES, ids=[c[0] for c in CASES])
def test_eval_output_matches_paddle(paddle, rng, name, kwargs, size):
    paddle.seed(0)
    pd_net = getattr(paddle.vision.models, name)(**kwargs)
    _randomize_norms(paddle, pd_net, rng)
    pd_net.eval()
    net = _load_paddle_weights(getattr(models, name)(**kwargs), pd_net)
    x = rng.standard_normal((1, 3, size, size)).astype("float32")
    ours, theirs = _FORWARD(net, jnp.asarray(x)), pd_net(paddle.to_tensor(x))
    if isinstance(theirs, (tuple, list)):  # GoogLeNet: main and two auxiliary heads
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _close(o, t.numpy())
    else:
        _close(ours, theirs.numpy())


def test_nhwc_matches_nchw(rng):
    # Channel split / shuffle / concat along the last axis, and the NCHW-order flatten.
    a = models.ShuffleNetV2(0.25, num_classes=5, rngs=0).eval()
    b = models.ShuffleNetV2(0.25, num_classes=5, data_format="NHWC", rngs=1).eval()
    b.set_state_dict(a.state_dict())
    x = rng.standard_normal((1, 3, 32, 32)).astype("float32")
    _close(_FORWARD(b, jnp.asarray(x.transpose(0, 2, 3, 1))), _FORWARD(a, jnp.asarray(x)), 1e-5)


NEW_FACTORIES = ["alexnet", "densenet121", "densenet161", "densenet169", "densenet201", "densenet264", "googlenet",
                 "inception_v3", "mobilenet_v1", "mobilenet_v3_small", "mobilenet_v3_large", "squeezenet1_0",
                 "squeezenet1_1", "shufflenet_v2_x0_25", "shufflenet_v2_x0_33", "shufflenet_v2_x0_5",
                 "shufflenet_v2_x1_0", "shufflenet_v2_x1_5", "shufflenet_v2_x2_0", "shufflenet_v2_swish"]


def test_every_paddle_model_name_is_here_and_pretrained_is_refused(paddle):
    assert sorted(set(paddle.vision.models.__all__) - set(models.__all__)) == []
    for name in NEW_FACTORIES:
        with pytest.raises(ValueError, match="set_state_dict"):
            getattr(models, name)(pretrained=True)
    with pytest.raises(ValueError, match="layers="):
        models.DenseNet(layers=100)
    with pytest.raises(ValueError, match="scale="):
        models.ShuffleNetV2(scale=0.7)
    with pytest.raises(ValueError, match="version="):
        models.SqueezeNet("2.0")
