"""Every learning-rate scheduler a tutorial lists, stepped side by side: the
value each gives for twelve steps, a short Adam run driven by OneCycleLR
through opt.get_lr(), opt.set_lr on a fixed-rate optimizer, and a
scheduler's state_dict round trip."""
import json

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F

paddle.set_device("cpu")
lr = paddle.optimizer.lr

schedulers = {
    "noam": lr.NoamDecay(d_model=64, warmup_steps=4, learning_rate=1.0),
    "piecewise": lr.PiecewiseDecay(boundaries=[3, 7], values=[0.1, 0.05, 0.01]),
    "natural_exp": lr.NaturalExpDecay(learning_rate=0.5, gamma=0.1),
    "inverse_time": lr.InverseTimeDecay(learning_rate=0.5, gamma=0.2),
    "polynomial": lr.PolynomialDecay(learning_rate=0.5, decay_steps=8, end_lr=0.01, power=2.0),
    "polynomial_cycle": lr.PolynomialDecay(learning_rate=0.5, decay_steps=4, end_lr=0.01, cycle=True),
    "linear_warmup": lr.LinearWarmup(learning_rate=0.5, warmup_steps=3, start_lr=0.0, end_lr=0.5),
    "exponential": lr.ExponentialDecay(learning_rate=0.5, gamma=0.8),
    "multistep": lr.MultiStepDecay(learning_rate=0.5, milestones=[2, 5, 9], gamma=0.5),
    "step": lr.StepDecay(learning_rate=0.5, step_size=3, gamma=0.3),
    "lambda": lr.LambdaDecay(learning_rate=0.5, lr_lambda=lambda epoch: 0.9 ** epoch),
    "multiplicative": lr.MultiplicativeDecay(learning_rate=0.5, lr_lambda=lambda epoch: 0.95),
    "cosine": lr.CosineAnnealingDecay(learning_rate=0.5, T_max=6, eta_min=0.05),
    "one_cycle": lr.OneCycleLR(max_learning_rate=0.5, total_steps=12, phase_pct=0.3),
    "one_cycle_three": lr.OneCycleLR(max_learning_rate=0.5, total_steps=12, three_phase=True,
                                     anneal_strategy="linear"),
    "cyclic": lr.CyclicLR(base_learning_rate=0.1, max_learning_rate=0.5, step_size_up=3),
    "cyclic_exp": lr.CyclicLR(base_learning_rate=0.1, max_learning_rate=0.5, step_size_up=2, step_size_down=4,
                              mode="exp_range", exp_gamma=0.9),
    "linear": lr.LinearLR(learning_rate=0.5, total_steps=8, start_factor=0.2, end_factor=1.0),
    "cosine_warm_restarts": lr.CosineAnnealingWarmRestarts(learning_rate=0.5, T_0=3, T_mult=2, eta_min=0.01),
}
values = {}
for name, sched in schedulers.items():
    seq = []
    for _ in range(12):
        seq.append(sched())
        sched.step()
    values[name] = seq

net = nn.Linear(4, 1)
net.weight.set_value(np.full((4, 1), 0.1, dtype="float32"))
net.bias.set_value(np.zeros(1, dtype="float32"))
cycle = lr.OneCycleLR(max_learning_rate=0.1, total_steps=10)
opt = paddle.optimizer.Adam(learning_rate=cycle, parameters=net.parameters())
rng = np.random.RandomState(59)
x = paddle.to_tensor(rng.randn(32, 4).astype("float32"))
y = paddle.to_tensor(rng.randn(32, 1).astype("float32"))


def loss_fn(net, x, y):
    return F.mse_loss(net(x), y)


losses, used = [], []
for step in range(10):
    loss = loss_fn(net, x, y)
    loss.backward()
    opt.step()
    opt.clear_grad()
    used.append(opt.get_lr())
    cycle.step()
    losses.append(float(loss))

fixed = paddle.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())
fixed.set_lr(0.03)
saved = schedulers["multistep"].state_dict()
restored = lr.MultiStepDecay(learning_rate=0.5, milestones=[2, 5, 9], gamma=0.5)
restored.set_state_dict(saved)
print(json.dumps({
    "values": values,
    "used": used,
    "losses": losses,
    "fixed_lr": fixed.get_lr(),
    "restored": [restored.last_epoch, restored()],
}))
