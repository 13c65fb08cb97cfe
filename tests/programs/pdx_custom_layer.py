"""A custom Layer: parameters from `create_parameter` with `paddle.ParamAttr`,
a Python list of sublayers registered with `add_sublayer`."""
import json

import numpy as np
import pdx as paddle
import pdx.nn as nn
import pdx.nn.functional as F

paddle.set_device("cpu")


class Block(nn.Layer):
    def __init__(self, dim):
        super().__init__()
        self.scale = self.create_parameter(
            shape=[dim], attr=paddle.ParamAttr(initializer=nn.initializer.Constant(0.5)))
        self.fc = nn.Linear(dim, dim,
                            weight_attr=paddle.ParamAttr(initializer=nn.initializer.XavierUniform()),
                            bias_attr=paddle.ParamAttr(initializer=nn.initializer.Constant(0.1)))

    def forward(self, x):
        return x + F.gelu(self.fc(x)) * self.scale


class Net(nn.Layer):
    def __init__(self, dim=16, depth=3):
        super().__init__()
        self.blocks = []
        for i in range(depth):
            self.blocks.append(self.add_sublayer(f"block{i}", Block(dim)))
        self.bias = self.create_parameter(shape=[dim], is_bias=True)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.norm(x + self.bias)


net = Net()
state = net.state_dict()
names = sorted(state)
init = {
    "scale": net.blocks[0].scale.numpy().tolist(),
    "fc_bias": net.blocks[1].fc.bias.numpy().tolist(),
    "bias": net.bias.numpy().tolist(),
    "n_params": len(net.parameters()),
    "n_sublayers": len(net.sublayers()),
}
rng = np.random.RandomState(2)
net.set_state_dict({k: rng.randn(*state[k].shape).astype("float32") * 0.3 for k in names})
x = paddle.to_tensor(rng.randn(4, 16).astype("float32"))
out = net(x)
print(json.dumps({
    "names": names,
    "shapes": [list(state[k].shape) for k in names],
    "init": init,
    "out": out.numpy().tolist(),
}))
