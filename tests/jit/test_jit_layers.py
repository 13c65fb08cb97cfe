"""Contract over the layer zoo: pdx.jit(layer) == eager layer, buffer and RNG
mutations persist identically, and repeated calls never recompile."""

import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx import nn

CASES = {
    "Linear": (lambda: nn.Linear(5, 3), (4, 5)),
    "Conv1D": (lambda: nn.Conv1D(2, 3, 3, padding=1), (2, 2, 7)),
    "Conv2D": (lambda: nn.Conv2D(2, 4, 3, stride=2, padding=1, groups=2), (2, 2, 7, 7)),
    "Conv3D": (lambda: nn.Conv3D(1, 2, 2), (1, 1, 4, 4, 4)),
    "Conv2DTranspose": (lambda: nn.Conv2DTranspose(2, 3, 3, stride=2), (1, 2, 4, 4)),
    "BatchNorm1D": (lambda: nn.BatchNorm1D(3), (4, 3)),
    "BatchNorm2D": (lambda: nn.BatchNorm2D(3), (2, 3, 4, 4)),
    "LayerNorm": (lambda: nn.LayerNorm(6), (2, 3, 6)),
    "RMSNorm": (lambda: nn.RMSNorm(6), (2, 3, 6)),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), (2, 4, 3, 3)),
    "InstanceNorm2D": (lambda: nn.InstanceNorm2D(3), (2, 3, 4, 4)),
    "Embedding": (lambda: nn.Embedding(10, 4, padding_idx=0), "ids"),
    "Dropout": (lambda: nn.Dropout(0.5, rngs=7), (4, 8)),
    "MaxPool2D": (lambda: nn.MaxPool2D(2), (1, 2, 6, 6)),
    "AvgPool2D": (lambda: nn.AvgPool2D(3, stride=2, padding=1), (1, 2, 7, 7)),
    "AdaptiveAvgPool2D": (lambda: nn.AdaptiveAvgPool2D(3), (1, 2, 7, 7)),
    "Flatten": (lambda: nn.Flatten(), (2, 3, 4)),
    "GELU": (lambda: nn.GELU(approximate=True), (3, 4)),
    "Softmax": (lambda: nn.Softmax(axis=1), (3, 4)),
    "Sequential": (lambda: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.2, rngs=1), nn.Linear(8, 2)), (3, 4)),
    "MultiHeadAttention": (lambda: nn.MultiHeadAttention(8, 2), (2, 5, 8)),
    "TransformerEncoderLayer": (lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1), (2, 5, 8)),
}


def _input(spec, rng):
    if spec == "ids":
        return jnp.asarray(rng.integers(0, 10, size=(3, 4)), jnp.int32)
    return jnp.asarray(rng.normal(size=spec), jnp.float32)


@pytest.mark.parametrize("name", sorted(CASES))
def test_jit_equals_eager_and_state_persists(name):
    make, spec = CASES[name]
    x = _input(spec, np.random.default_rng(0))
    pdx.seed(11)
    eager = make()
    pdx.seed(11)
    compiled = make()
    compiled.set_state_dict(eager.state_dict())
    step = pdx.jit(lambda layer, x: layer(x))
    for _ in range(2):  # the second call checks persisted buffers / advanced RNG
        np.testing.assert_allclose(step(compiled, x), eager(x), rtol=2e-5, atol=2e-5)
    for (k, a), b in zip(eager.state_dict().items(), compiled.state_dict().values()):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6, err_msg=f"{name}: state {k} diverged")
    assert step.cache_size() == 1, f"{name}: a second call with the same shapes recompiled"
    eager.eval()
    compiled.eval()
    np.testing.assert_allclose(step(compiled, x), eager(x), rtol=2e-5, atol=2e-5)
