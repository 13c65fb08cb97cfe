"""Domain-adversarial training (DANN): a gradient reversal layer written as a
paddle.autograd.PyLayer (forward identity, backward -lambda * grad), a shared
feature extractor, a label classifier trained on the source domain and a
domain classifier on both domains; a forward post-hook records the feature
norms."""
import json

import numpy as np
import pdx as paddle
import pdx.nn as nn
import pdx.nn.functional as F
from pdx.autograd import PyLayer

paddle.set_device("cpu")
LAMBDA = 0.3


class GradReverse(PyLayer):
    @staticmethod
    def forward(ctx, x, coeff):
        ctx.coeff = coeff
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return -ctx.coeff * grad


class DANN(nn.Layer):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 8), nn.ReLU())
        self.label_head = nn.Linear(8, 2)
        self.domain_head = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))

    def forward(self, x):
        f = self.features(x)
        return self.label_head(f), self.domain_head(GradReverse.apply(f, LAMBDA))


def moons(rng, n, shift):
    angle = rng.uniform(0, np.pi, size=n)
    label = rng.randint(0, 2, size=n)
    x = np.stack([np.cos(angle) + label - 0.5, np.sin(angle) * (1 - 2 * label)], axis=1)
    rot = np.array([[np.cos(shift), -np.sin(shift)], [np.sin(shift), np.cos(shift)]])
    return (x @ rot.T + 0.1 * rng.randn(n, 2)).astype("float32"), label.astype("int64")


def dann_loss(model, xs, ys, xt):
    label_logits, src_domain = model(xs)
    _, tgt_domain = model(xt)
    cls = F.cross_entropy(label_logits, ys)
    dom = F.binary_cross_entropy_with_logits(src_domain, paddle.zeros_like(src_domain)) + \
        F.binary_cross_entropy_with_logits(tgt_domain, paddle.ones_like(tgt_domain))
    return cls + dom


model = DANN()
rng = np.random.RandomState(27)
for name, param in model.named_parameters():
    param.set_value((rng.randn(*param.shape) * 0.4).astype("float32"))
norms = []
hook = model.features.register_forward_post_hook(lambda layer, inputs, output: norms.append(float(output.norm())))
with paddle.no_grad():
    model(paddle.to_tensor(moons(rng, 16, 0.0)[0]))
hook.remove()
opt = paddle.optimizer.Adam(learning_rate=0.01, parameters=model.parameters())

losses = []
for step in range(30):
    xs, ys = moons(rng, 64, 0.0)
    xt, _ = moons(rng, 64, 0.6)
    loss, grads = paddle.value_and_grad(dann_loss)(model, paddle.to_tensor(xs), paddle.to_tensor(ys), paddle.to_tensor(xt))
    opt.step(grads)
    opt.clear_grad()
    losses.append(float(loss))

xt, yt = moons(np.random.RandomState(3), 200, 0.6)
with paddle.no_grad():
    label_logits, domain_logits = model(paddle.to_tensor(xt))
    acc = float((label_logits.argmax(axis=1).numpy() == yt).mean())
print(json.dumps({
    "hook_norms": norms,
    "losses": losses,
    "target_accuracy": acc,
    "domain_prob": float(F.sigmoid(domain_logits).mean()),
    "domain_head_bias": model.domain_head[2].bias.numpy().tolist(),
}))
