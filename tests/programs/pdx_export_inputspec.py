"""Deployment: paddle.jit.save with a paddle.static.InputSpec of dynamic batch,
paddle.jit.load, and the loaded program called on other batch sizes."""
import json

import numpy as np
import pdx as paddle
import pdx.nn as nn
from pdx.static import InputSpec

paddle.set_device("cpu")


class Regressor(nn.Layer):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.GELU(), nn.Linear(16, 1))
        self.norm = nn.LayerNorm(6)

    def forward(self, x):
        return self.net(self.norm(x)).squeeze(-1)


model = Regressor()
rng = np.random.RandomState(15)
state = model.state_dict()
model.set_state_dict({k: (rng.randn(*v.shape) * 0.4).astype("float32") for k, v in sorted(state.items())})
model.eval()
x5 = paddle.to_tensor(rng.randn(5, 6).astype("float32"))
x2 = paddle.to_tensor(rng.randn(2, 6).astype("float32"))
paddle.jit.save(model, "export/regressor", input_spec=[InputSpec(shape=[None, 6], dtype="float32", name="x")])
loaded = paddle.jit.load("export/regressor")
loaded.eval()
print(json.dumps({
    "eager5": model(x5).numpy().tolist(),
    "loaded5": loaded(x5).numpy().tolist(),
    "loaded2": loaded(x2).numpy().tolist(),
    "eager2": model(x2).numpy().tolist(),
}))
