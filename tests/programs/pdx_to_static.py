"""Dynamic-to-static: `paddle.jit.to_static` on a forward with Python-scalar
flags, `paddle.jit.save` without input_spec, `paddle.jit.load`."""
import json

import numpy as np
import pdx as paddle
import pdx.nn as nn
import pdx.nn.functional as F

paddle.set_device("cpu")


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.drop = nn.Dropout(0.5)
        self.fc2 = nn.Linear(16, 4)

    @paddle.jit.to_static
    def forward(self, x, use_dropout=False, scale=1.0):
        h = F.relu(self.fc1(x))
        if use_dropout:
            h = self.drop(h)
        out = self.fc2(h)
        if scale != 1.0:
            out = out * scale
        return out


net = Net()
rng = np.random.RandomState(4)
state = net.state_dict()
net.set_state_dict({k: (rng.randn(*v.shape) * 0.3).astype("float32") for k, v in sorted(state.items())})
net.eval()
x = paddle.to_tensor(rng.randn(3, 8).astype("float32"))
out_scaled = net(x, False, 2.0)
out_eval_dropout = net(x, use_dropout=True)  # Dropout in eval mode is the identity
out = net(x)
paddle.jit.save(net, "saved/net")
loaded = paddle.jit.load("saved/net")
loaded.eval()
out_loaded = loaded(x)
print(json.dumps({
    "out": out.numpy().tolist(),
    "out_scaled": out_scaled.numpy().tolist(),
    "out_eval_dropout": out_eval_dropout.numpy().tolist(),
    "out_loaded": out_loaded.numpy().tolist(),
}))
