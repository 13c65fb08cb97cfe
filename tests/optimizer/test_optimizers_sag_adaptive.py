"""ASGD, Adadelta, NAdam, RAdam and Rprop against paddle 3.3.1: 50 float32
steps of a quadratic loss whose gradients depend on the trajectory, with
weight decay, gradient clipping and parameter groups where Paddle allows them."""

import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx import optimizer

STEPS = 50
SHAPES = {"w": (3, 4), "b": (5,)}

CASES = [
    ("ASGD", dict(learning_rate=0.05)),
    ("ASGD", dict(learning_rate=0.05, batch_num=3, weight_decay=0.01)),
    ("Adadelta", dict(learning_rate=0.5)),
    ("Adadelta", dict(learning_rate=1.0, rho=0.9, epsilon=1e-4, weight_decay=0.02)),
    ("NAdam", dict()),
    ("NAdam", dict(learning_rate=0.01, beta1=0.8, momentum_decay=0.01, weight_decay=0.01)),
    ("RAdam", dict(learning_rate=0.01)),
    ("RAdam", dict(learning_rate=0.02, beta2=0.99, epsilon=1e-6, weight_decay=0.01)),
    ("Rprop", dict(learning_rate=0.01)),
    ("Rprop", dict(learning_rate=0.05, learning_rate_range=(1e-3, 0.2), etas=(0.3, 1.5))),
]


def _problem(rng):
    init = {n: rng.standard_normal(s).astype(np.float32) for n, s in SHAPES.items()}
    target = {n: rng.standard_normal(s).astype(np.float32) for n, s in SHAPES.items()}
    scale = {n: rng.uniform(0.5, 2.0, s).astype(np.float32) for n, s in SHAPES.items()}
    noise = [{n: (0.3 * rng.standard_normal(s)).astype(np.float32) for n, s in SHAPES.items()} for _ in range(STEPS)]
    return init, target, scale, noise


def _paddle_run(paddle, name, kwargs, problem, clip=None, groups=False):
    init, target, scale, noise = problem
    params = {}
    for n, v in init.items():
        p = paddle.create_parameter(list(v.shape), "float32")
        p.set_value(v)
        params[n] = p
    kw = dict(kwargs)
    if clip is not None:
        kw["grad_clip"] = paddle.nn.ClipGradByGlobalNorm(clip)
    plist = [{"params": [params["w"]]}, {"params": [params["b"]], "learning_rate": 0.5}] if groups else list(params.values())
    opt = getattr(paddle.optimizer, name)(parameters=plist, **kw)
    out = []
    for step in range(STEPS):
        loss = 0
        for n, p in params.items():
            d = p - paddle.to_tensor(target[n])
            loss = loss + (paddle.to_tensor(scale[n]) * d * d).sum() + (p * paddle.to_tensor(noise[step][n])).sum()
        loss.backward()
        opt.step()
        opt.clear_grad()
        out.append({n: p.numpy().copy() for n, p in params.items()})
    return out


def _loss(model, target, scale, noise):
    return sum((scale[n] * (getattr(model, n) - target[n]) ** 2).sum() + (getattr(model, n) * noise[n]).sum()
               for n in SHAPES)


_GRAD = pdx.grad(_loss)


def _pdx_run(name, kwargs, problem, clip=None, groups=False):
    init, target, scale, noise = problem
    net = pdx.nn.Layer()
    for n, v in init.items():
        setattr(net, n, net.create_parameter(v.shape))
        getattr(net, n).set_value(jnp.asarray(v))
    kw = dict(kwargs)
    if clip is not None:
        kw["grad_clip"] = pdx.nn.ClipGradByGlobalNorm(clip)
    plist = [{"params": [net.w]}, {"params": [net.b]}] if groups else net
    if groups:
        plist[1]["learning_rate"] = 0.5
    opt = getattr(optimizer, name)(parameters=plist, **kw)

    out = []
    for step in range(STEPS):
        opt.step(_GRAD(net, target, scale, noise[step]))
        out.append({n: np.asarray(getattr(net, n)[...]) for n in SHAPES})
    return out


def _max_err(a, b):
    return max(float(np.max(np.abs(x[n] - y[n]))) for x, y in zip(a, b) for n in SHAPES)


def test_trajectories_match_paddle(paddle, rng):
    errors = {}
    for i, (name, kwargs) in enumerate(CASES):
        problem = _problem(rng)
        clip = 1.0 if i % 2 else None
        groups = name != "Rprop" and i % 2 == 1
        ref = _paddle_run(paddle, name, kwargs, problem, clip=clip, groups=groups)
        got = _pdx_run(name, kwargs, problem, clip=clip, groups=groups)
        errors[f"{name}{kwargs}"] = _max_err(ref, got)
    bad = {k: v for k, v in errors.items() if not v <= 1e-5}
    assert not bad, bad
