"""Every pdx optimizer against the paddle one: 20 steps from the same initial
parameters with the same per-step random gradients, covering weight decay
(float, L2Decay, L1Decay), every grad clip, ParamAttr options (learning-rate
multiplier, regularizer, need_clip), parameter groups and LR schedulers."""

import itertools

import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx import Gradients, optimizer
from pdx.nn import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue, ParamAttr
from pdx.regularizer import L1Decay, L2Decay

SHAPES = {"w": (3, 5), "b": (7,), "k": (2, 3, 4)}
STEPS = 20
_uid = itertools.count()


def _pdx_value(spec, module):
    """Build one argument for either framework from a ('kind', args...) spec."""
    if not isinstance(spec, tuple) or not spec or not isinstance(spec[0], str) or not spec[0].startswith("@"):
        return spec
    kind, *args = spec
    if kind == "@L1":
        return module["L1Decay"](*args)
    if kind == "@L2":
        return module["L2Decay"](*args)
    if kind == "@global_norm":
        return module["ClipGradByGlobalNorm"](*args)
    if kind == "@norm":
        return module["ClipGradByNorm"](*args)
    if kind == "@value":
        return module["ClipGradByValue"](*args)
    if kind == "@sched":
        name, kwargs = args
        kwargs = {k: _pdx_value(v, module) for k, v in kwargs.items()}
        return getattr(module["lr"], name)(**kwargs)
    raise ValueError(kind)


def _pdx_module():
    return dict(L1Decay=L1Decay, L2Decay=L2Decay, ClipGradByGlobalNorm=ClipGradByGlobalNorm,
                ClipGradByNorm=ClipGradByNorm, ClipGradByValue=ClipGradByValue, lr=optimizer.lr)


def _paddle_module(paddle):
    return dict(L1Decay=paddle.regularizer.L1Decay, L2Decay=paddle.regularizer.L2Decay,
                ClipGradByGlobalNorm=paddle.nn.ClipGradByGlobalNorm, ClipGradByNorm=paddle.nn.ClipGradByNorm,
                ClipGradByValue=paddle.nn.ClipGradByValue, lr=paddle.optimizer.lr)


def make_pdx_params(inits, attrs):
    net = pdx.nn.Layer()
    for name, init in inits.items():
        kw = {k: _pdx_value(v, _pdx_module()) for k, v in attrs.get(name, {}).items()}
        p = net.create_parameter(init.shape, attr=ParamAttr(**kw) if kw else None)
        p.set_value(jnp.asarray(init))
        setattr(net, name, p)
    return net


def make_paddle_params(paddle, inits, attrs):
    tag = next(_uid)
    params = {}
    for name, init in inits.items():
        kw = {k: _pdx_value(v, _paddle_module(paddle)) for k, v in attrs.get(name, {}).items()}
        attr = paddle.ParamAttr(name=f"{name}_opt{tag}", initializer=paddle.nn.initializer.Assign(init), **kw)
        params[name] = paddle.create_parameter(list(init.shape), "float32", attr=attr)
    return params


def run_both(paddle, rng, opt_name, kwargs, attrs=None, groups=None, steps=STEPS, check=None,
             ref_kwargs=None, ref_grad_scale=1.0, ref_attrs=None):
    """Step both optimizers on the same gradients; compare parameters every step.

    `ref_kwargs` / `ref_grad_scale` override paddle's arguments / scale its
    gradients, for behaviour Paddle's CPU kernels lack (Momentum's rescale_grad).
    """
    attrs = attrs or {}
    inits = {n: rng.standard_normal(s).astype(np.float32) for n, s in SHAPES.items()}
    net = make_pdx_params(inits, attrs)
    ref_params = make_paddle_params(paddle, inits, attrs if ref_attrs is None else ref_attrs)
    ours_kw = {k: _pdx_value(v, _pdx_module()) for k, v in kwargs.items()}
    ref_kw = {k: _pdx_value(v, _paddle_module(paddle)) for k, v in {**kwargs, **(ref_kwargs or {})}.items()}
    if groups is None:
        ours = getattr(optimizer, opt_name)(parameters=net, **ours_kw)
        ref = getattr(paddle.optimizer, opt_name)(parameters=list(ref_params.values()), **ref_kw)
    else:
        def group_list(params, module):
            return [{**{k: _pdx_value(v, module) for k, v in g.items() if k != "params"},
                     "params": [params[n] for n in g["params"]]} for g in groups]
        ours = getattr(optimizer, opt_name)(parameters=group_list({n: getattr(net, n) for n in SHAPES}, _pdx_module()), **ours_kw)
        ref = getattr(paddle.optimizer, opt_name)(parameters=group_list(ref_params, _paddle_module(paddle)), **ref_kw)
    ours_sched = ours._lr_scheduler
    ref_sched = ref._learning_rate if isinstance(ref._learning_rate, paddle.optimizer.lr.LRScheduler) else None
    for step in range(steps):
        grads = {n: rng.standard_normal(s).astype(np.float32) for n, s in SHAPES.items()}
        loss = sum((ref_params[n] * paddle.to_tensor(ref_grad_scale * g)).sum() for n, g in grads.items())
        loss.backward()
        ref.step()
        ref.clear_grad()
        ours_grads = {n: jnp.asarray(g) for n, g in grads.items()}
        if groups is not None:  # a list-bound optimizer finds grads by identity through the owner
            ours_grads = Gradients(ours_grads)
            ours_grads.owner = net
        ours.step(ours_grads)
        np.testing.assert_allclose(ours.get_lr(), ref.get_lr(), rtol=1e-6)
        for n in SHAPES:
            np.testing.assert_allclose(np.asarray(getattr(net, n)[...]), ref_params[n].numpy(), rtol=1e-5, atol=1e-5,
                                       err_msg=f"{opt_name} {n} after step {step + 1}")
        if ours_sched is not None:
            ours_sched.step()
            ref_sched.step()
    if check is not None:
        check(ours, ref)


GN = ("@global_norm", 4.0)
CASES = [
    ("SGD", dict(learning_rate=0.1)),
    ("SGD", dict(learning_rate=0.1, weight_decay=0.05)),
    ("SGD", dict(learning_rate=0.1, weight_decay=("@L1", 0.05), grad_clip=("@value", 0.5))),
    ("Momentum", dict(learning_rate=0.05)),
    ("Momentum", dict(learning_rate=0.05, momentum=0.8, use_nesterov=True, weight_decay=("@L2", 0.05))),
    ("Momentum", dict(learning_rate=0.05, weight_decay=("@L1", 0.02), grad_clip=("@norm", 3.0))),
    ("Momentum", dict(learning_rate=0.05, weight_decay=0.1, grad_clip=GN)),
    ("Adam", dict(learning_rate=0.01)),
    ("Adam", dict(learning_rate=0.01, beta1=0.8, beta2=0.99, epsilon=1e-6, weight_decay=0.01, grad_clip=GN)),
    ("Adam", dict(learning_rate=0.01, amsgrad=True, weight_decay=("@L1", 0.01))),
    ("AdamW", dict(learning_rate=0.01)),
    ("AdamW", dict(learning_rate=0.01, weight_decay=0.1, apply_decay_param_fun=lambda n: n.startswith("w"), grad_clip=GN)),
    ("AdamW", dict(learning_rate=0.01, weight_decay=0.05, amsgrad=True, grad_clip=("@norm", 3.0))),
    ("Adagrad", dict(learning_rate=0.1)),
    ("Adagrad", dict(learning_rate=0.1, epsilon=1e-3, initial_accumulator_value=0.1, weight_decay=0.02, grad_clip=("@norm", 3.0))),
    ("RMSProp", dict(learning_rate=0.01)),
    ("RMSProp", dict(learning_rate=0.01, rho=0.9, momentum=0.9, epsilon=1e-4, weight_decay=("@L2", 0.01), grad_clip=("@value", 0.8))),
    ("RMSProp", dict(learning_rate=0.01, momentum=0.5, centered=True, grad_clip=GN)),
    ("Adamax", dict(learning_rate=0.01)),
    ("Adamax", dict(learning_rate=0.01, beta1=0.8, epsilon=1e-4, weight_decay=0.05, grad_clip=GN)),
    ("Lamb", dict(learning_rate=0.01)),
    ("Lamb", dict(learning_rate=0.01, lamb_weight_decay=0.05, exclude_from_weight_decay_fn=lambda p: len(p.shape) == 1, grad_clip=GN)),
    ("Lamb", dict(learning_rate=0.01, lamb_weight_decay=0.0, always_adapt=True)),
    ("Lamb", dict(learning_rate=0.01, lamb_weight_decay=0.0)),
]


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_matches_paddle(paddle, rng, name, kwargs):
    run_both(paddle, rng, name, kwargs)


ATTRS = {
    "w": {"learning_rate": 2.0},
    "b": {"regularizer": ("@L1", 0.03), "need_clip": False},
    "k": {"regularizer": ("@L2", 0.2), "learning_rate": 0.5},
}


@pytest.mark.parametrize("name,kwargs", [
    ("SGD", dict(learning_rate=0.1, weight_decay=0.05, grad_clip=("@global_norm", 2.0))),
    ("Momentum", dict(learning_rate=0.05, weight_decay=("@L1", 0.01), grad_clip=("@norm", 1.0))),
    ("Momentum", dict(learning_rate=0.05, weight_decay=0.02, use_nesterov=True)),
    ("Adam", dict(learning_rate=0.01, weight_decay=0.05, grad_clip=("@value", 0.5))),
    ("AdamW", dict(learning_rate=0.01, weight_decay=0.1, grad_clip=("@global_norm", 2.0))),
    ("Lamb", dict(learning_rate=0.01, grad_clip=("@global_norm", 2.0))),
], ids=["SGD", "Momentum-L1", "Momentum-L2", "Adam", "AdamW", "Lamb"])
def test_param_attr_options_match_paddle(paddle, rng, name, kwargs):
    run_both(paddle, rng, name, kwargs, attrs=ATTRS)


@pytest.mark.parametrize("name,kwargs,groups", [
    ("Adam", dict(learning_rate=0.01, weight_decay=0.01),
     [{"params": ["w", "k"], "learning_rate": 0.5, "weight_decay": ("@L1", 0.02), "beta1": 0.8}, {"params": ["b"]}]),
    ("Momentum", dict(learning_rate=0.05, grad_clip=("@global_norm", 2.0)),
     [{"params": ["w"], "momentum": 0.5, "weight_decay": 0.1}, {"params": ["b", "k"], "grad_clip": ("@value", 0.3)}]),
    ("AdamW", dict(learning_rate=0.01, weight_decay=0.05),
     [{"params": ["w"], "weight_decay": 0.2, "learning_rate": 2.0}, {"params": ["b", "k"]}]),
], ids=["Adam", "Momentum", "AdamW"])
def test_param_groups_match_paddle(paddle, rng, name, kwargs, groups):
    run_both(paddle, rng, name, kwargs, attrs={"w": {"learning_rate": 3.0}}, groups=groups)


SCHEDULERS = [
    ("SGD", ("StepDecay", dict(learning_rate=0.1, step_size=3, gamma=0.5))),
    ("Adam", ("CosineAnnealingDecay", dict(learning_rate=0.02, T_max=6, eta_min=0.001))),
    ("Momentum", ("LinearWarmup", dict(learning_rate=("@sched", "CosineAnnealingDecay", dict(learning_rate=0.05, T_max=8)),
                                       warmup_steps=4, start_lr=0.0, end_lr=0.05))),
    ("AdamW", ("OneCycleLR", dict(max_learning_rate=0.02, total_steps=STEPS + 1))),
    ("RMSProp", ("ExponentialDecay", dict(learning_rate=0.02, gamma=0.9))),
]


@pytest.mark.parametrize("name,sched", SCHEDULERS, ids=[f"{n}-{s[0]}" for n, s in SCHEDULERS])
def test_schedulers_drive_optimizers_like_paddle(paddle, rng, name, sched):
    run_both(paddle, rng, name, dict(learning_rate=("@sched", *sched)))


@pytest.mark.parametrize("kwargs,ref_kwargs", [
    (dict(rescale_grad=0.5, weight_decay=0.1), {}),  # rescale, then + coeff * param
    (dict(rescale_grad=0.5, weight_decay=("@L1", 0.02), grad_clip=("@norm", 3.0)),  # (clip(g) + L1) * rescale
     dict(weight_decay=("@L1", 0.01), grad_clip=("@norm", 1.5))),
], ids=["L2", "L1-clip"])
def test_momentum_rescale_grad(paddle, rng, kwargs, ref_kwargs):
    # Paddle's CPU momentum kernel ignores rescale_grad (its GPU kernel and docs
    # apply it): compare with paddle fed pre-scaled gradients instead.
    run_both(paddle, rng, "Momentum", dict(learning_rate=0.05, use_nesterov=True, **kwargs), ref_kwargs=ref_kwargs,
             ref_grad_scale=0.5)


def test_adamw_lr_ratio(paddle, rng):
    # Paddle implements lr_ratio on GPU only; it scales the step and the decay
    # exactly like a ParamAttr learning-rate multiplier, which its CPU kernel has.
    run_both(paddle, rng, "AdamW", dict(learning_rate=0.01, weight_decay=0.1,
                                        lr_ratio=lambda p: 0.5 if len(p.shape) == 1 else 1.0),
             ref_kwargs=dict(lr_ratio=None), ref_attrs={"b": {"learning_rate": 0.5}}, steps=5)


def test_set_lr_matches_paddle(paddle, rng):
    def check(ours, ref):
        ours.set_lr(0.003)
        ref.set_lr(0.003)
        assert ours.get_lr() == ref.get_lr() == 0.003
        assert ours._learning_rate == 0.003
    run_both(paddle, rng, "Adam", dict(learning_rate=0.01), steps=3, check=check)


def test_adamw_decay_list_from_param_names_matches_paddle(paddle):
    """PaddleNLP's idiom: `decay = [p.name for n, p in model.named_parameters() if not any(k in n for k in
    ("bias", "norm"))]`, `apply_decay_param_fun=lambda name: name in decay`; 5 steps on the same weights and
    gradients equal paddle's."""
    import pdx

    def build(m):
        class Net(m.nn.Layer):
            def __init__(self):
                super().__init__()
                self.fc = m.nn.Linear(4, 3)
                self.norm = m.nn.LayerNorm(3)
                self.out = m.nn.Linear(3, 2)

            def forward(self, x):
                return self.out(self.norm(self.fc(x)))

        return Net()

    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 4)).astype(np.float32)
    ref, net = build(paddle), build(pdx)
    net.set_state_dict({k: v.numpy() for k, v in ref.state_dict().items()})
    opts = []
    for m, model in ((paddle, ref), (pdx, net)):
        decay = [p.name for n, p in model.named_parameters() if not any(k in n for k in ("bias", "norm"))]
        assert len(decay) == 2
        opts.append(m.optimizer.AdamW(learning_rate=0.1, parameters=model.parameters(), weight_decay=0.5,
                                      apply_decay_param_fun=lambda name, decay=decay: name in decay))
    for _ in range(5):
        loss = (ref(paddle.to_tensor(x)) ** 2).mean()
        loss.backward()
        grads = {n: p.grad.numpy() for n, p in ref.named_parameters()}
        opts[0].step()
        opts[0].clear_grad()
        opts[1].step(grads)
    for n, p in ref.named_parameters():
        np.testing.assert_allclose(np.asarray(net.state_dict()[n]), p.numpy(), rtol=1e-4, atol=1e-5, err_msg=n)
    lone = pdx.nn.Linear(2, 2)
    assert lone.weight.name.startswith("param_")  # no Layer has listed it yet
    assert [p.name for p in lone.parameters()] == ["weight", "bias"]
