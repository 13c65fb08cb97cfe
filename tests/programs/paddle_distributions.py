"""paddle.distribution: Normal, Categorical and Beta log_prob, entropy,
kl_divergence and sample shapes."""
import json

import paddle
from paddle.distribution import Beta, Categorical, Normal, kl_divergence

paddle.set_device("cpu")
paddle.seed(0)

p = Normal(loc=paddle.to_tensor([0.0, 1.0, -2.0]), scale=paddle.to_tensor([1.0, 2.0, 0.5]))
q = Normal(loc=paddle.to_tensor([0.5, 0.0, -1.0]), scale=paddle.to_tensor([1.5, 1.0, 1.0]))
v = paddle.to_tensor([0.3, -0.2, -1.8])
normal = {
    "log_prob": p.log_prob(v).numpy().tolist(),
    "prob": p.probs(v).numpy().tolist(),
    "entropy": p.entropy().numpy().tolist(),
    "kl": kl_divergence(p, q).numpy().tolist(),
    "kl_method": p.kl_divergence(q).numpy().tolist(),
    "mean": p.mean.numpy().tolist(),
    "variance": p.variance.numpy().tolist(),
    "sample_shape": list(p.sample([5]).shape),
    "rsample_shape": list(p.rsample([2, 4]).shape),
}

c1 = Categorical(paddle.to_tensor([0.1, 0.2, 0.3, 0.4]))
c2 = Categorical(paddle.to_tensor([0.25, 0.25, 0.25, 0.25]))
ids = paddle.to_tensor([0, 3, 2])
cat = {
    "log_prob": c1.log_prob(ids).numpy().tolist(),
    "probs": c1.probs(ids).numpy().tolist(),
    "entropy": c1.entropy().numpy().tolist(),
    "kl": c1.kl_divergence(c2).numpy().tolist(),
    "sample_shape": list(c1.sample([6]).shape),
}

b1 = Beta(alpha=paddle.to_tensor([2.0, 0.5]), beta=paddle.to_tensor([3.0, 0.5]))
b2 = Beta(alpha=paddle.to_tensor([1.0, 1.0]), beta=paddle.to_tensor([1.0, 2.0]))
bv = paddle.to_tensor([0.3, 0.9])
beta = {
    "log_prob": b1.log_prob(bv).numpy().tolist(),
    "prob": b1.prob(bv).numpy().tolist(),
    "entropy": b1.entropy().numpy().tolist(),
    "kl": kl_divergence(b1, b2).numpy().tolist(),
    "mean": b1.mean.numpy().tolist(),
    "variance": b1.variance.numpy().tolist(),
    "sample_shape": list(b1.sample([3]).shape),
}
print(json.dumps({"normal": normal, "categorical": cat, "beta": beta}))
