"""Shared fixtures of the export tests."""

import numpy as np
import pytest

import pdx
from pdx.export import export
from pdx.jit import InputSpec


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A small MLP exported with a dynamic batch dim, and its numpy forward pass."""
    pdx.seed(7)
    net = pdx.nn.Sequential(pdx.nn.Linear(16, 32), pdx.nn.ReLU(), pdx.nn.Linear(32, 4))
    net.eval()
    path = export(net, tmp_path_factory.mktemp("serve") / "mlp", [InputSpec([None, 16], "float32", "x")],
                  name="mlp", differentiable=False)
    w = {k: np.asarray(v) for k, v in net.state_dict().items()}

    def reference(x):
        h = np.maximum(x.astype(np.float64) @ w["0.weight"] + w["0.bias"], 0.0)
        return h @ w["2.weight"] + w["2.bias"]

    return path, reference
