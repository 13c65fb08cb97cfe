"""The nn.Layer API a custom-model tutorial walks through: weight init with
model.apply and initializers called on parameters, register_buffer
(persistable or not), add_parameter, a forward pre-hook rescaling the input
and a post-hook clamping the output, named_children / named_sublayers,
state_dict keys, train/eval flags, paddle.no_grad as a decorator, and one
training step."""
import json

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F


class Normalizer(nn.Layer):
    def __init__(self, dim):
        super().__init__()
        self.register_buffer("mean", paddle.zeros([dim]))
        self.register_buffer("scratch", paddle.ones([dim]), persistable=False)
        self.add_parameter("gain", self.create_parameter([dim], default_initializer=nn.initializer.Constant(1.0)))

    def forward(self, x):
        return (x - self.mean) * self.gain * self.scratch


class Model(nn.Layer):
    def __init__(self):
        super().__init__()
        self.norm = Normalizer(6)
        self.encoder = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 8))
        self.dropout = nn.Dropout(0.0)
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.dropout(self.encoder(self.norm(x))))


def init_weights(layer):
    if isinstance(layer, nn.Linear):
        fan_in, fan_out = layer.weight.shape
        values = np.cos(np.arange(fan_in * fan_out, dtype="float32")).reshape(fan_in, fan_out) / np.sqrt(fan_in)
        nn.initializer.Assign(values)(layer.weight)
        nn.initializer.Constant(0.05)(layer.bias)


model = Model()
model.apply(init_weights)
model.norm.mean.set_value(paddle.full([6], 0.5))
calls = []


def pre_hook(layer, inputs):
    calls.append("pre")
    return (inputs[0] * 2.0,)


def post_hook(layer, inputs, output):
    calls.append("post")
    return paddle.clip(output, -3.0, 3.0)


pre = model.encoder.register_forward_pre_hook(pre_hook)
post = model.head.register_forward_post_hook(post_hook)


@paddle.no_grad()
def predict(model, x):
    model.eval()
    out = F.softmax(model(x), axis=-1)
    model.train()
    return out


rng = np.random.RandomState(61)
x = paddle.to_tensor(rng.randn(16, 6).astype("float32"))
y = paddle.to_tensor(rng.randint(0, 2, size=16).astype("int64"))
before = predict(model, x)
opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())


def loss_fn(model, x, y):
    return F.cross_entropy(model(x), y)


loss = loss_fn(model, x, y)
loss.backward()
opt.step()
opt.clear_grad()
pre.remove()
post.remove()
after = predict(model, x)
print(json.dumps({
    "children": [name for name, _ in model.named_children()],
    "sublayers": [name for name, _ in model.named_sublayers()],
    "state_keys": list(model.state_dict().keys()),
    "buffers": [name for name, _ in model.named_buffers()],
    "n_params": len(model.parameters()),
    "training": [model.training, model.encoder[0].training],
    "calls": calls,
    "loss": float(loss),
    "before": before[:3].numpy().tolist(),
    "after": after[:3].numpy().tolist(),
    "gain": model.norm.gain.numpy().tolist(),
}))
