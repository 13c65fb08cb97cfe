"""Checkpoint and resume: train a small classifier with SGD and an
ExponentialDecay schedule, paddle.save the model, optimizer and scheduler
state dicts, build fresh objects, paddle.load and set_state_dict them, and
check that resumed training continues exactly where an uninterrupted run
goes; also saves and reloads a plain nested dict of arrays."""
import json
import os

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F

paddle.set_device("cpu")
rng = np.random.RandomState(3)
x_np = rng.randn(256, 10).astype("float32")
y_np = (x_np[:, :3].sum(axis=1) > 0).astype("int64") + (x_np[:, 3] > 1).astype("int64")


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 32)
        self.norm = nn.LayerNorm(32)
        self.fc2 = nn.Linear(32, 3)

    def forward(self, x):
        return self.fc2(F.silu(self.norm(self.fc1(x))))


def build():
    net = Net()
    init = np.random.RandomState(0)
    for name, param in net.named_parameters():
        param.set_value((init.randn(*param.shape) * 0.3).astype("float32"))
    scheduler = paddle.optimizer.lr.ExponentialDecay(learning_rate=0.5, gamma=0.9)
    opt = paddle.optimizer.SGD(learning_rate=scheduler, parameters=net.parameters())
    return net, opt, scheduler


def loss_fn(net, x, y):
    return F.cross_entropy(net(x), y)


def train(net, opt, scheduler, epochs):
    losses = []
    for epoch in range(epochs):
        for i in range(0, 256, 64):
            x, y = paddle.to_tensor(x_np[i:i + 64]), paddle.to_tensor(y_np[i:i + 64])
            loss = loss_fn(net, x, y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            losses.append(float(loss))
        scheduler.step()
    return losses


net, opt, scheduler = build()
straight = train(net, opt, scheduler, 4)
straight_out = net(paddle.to_tensor(x_np[:4])).numpy()

net, opt, scheduler = build()
first = train(net, opt, scheduler, 2)
os.makedirs("ckpt", exist_ok=True)
paddle.save(net.state_dict(), "ckpt/model.pdparams")
paddle.save(opt.state_dict(), "ckpt/opt.pdopt")
paddle.save(scheduler.state_dict(), "ckpt/sched.pdparams")
paddle.save({"epoch": 2, "stats": {"mean": paddle.to_tensor(x_np.mean(axis=0))}}, "ckpt/extra.pdparams")

net2, opt2, scheduler2 = build()
net2.set_state_dict(paddle.load("ckpt/model.pdparams"))
opt2.set_state_dict(paddle.load("ckpt/opt.pdopt"))
scheduler2.set_state_dict(paddle.load("ckpt/sched.pdparams"))
extra = paddle.load("ckpt/extra.pdparams")
resumed = train(net2, opt2, scheduler2, 2)
resumed_out = net2(paddle.to_tensor(x_np[:4])).numpy()
print(json.dumps({
    "straight": straight,
    "first_then_resumed": first + resumed,
    "resume_gap": float(np.abs(straight_out - resumed_out).max()),
    "lr_after": opt2.get_lr(),
    "extra_epoch": extra["epoch"],
    "extra_mean": np.asarray(extra["stats"]["mean"]).round(4).tolist(),
    "model_keys": sorted(net2.state_dict()),
}))
