"""Contract of ASGD, Adadelta, NAdam, RAdam, Rprop and LBFGS: Paddle's
signatures and defaults; the same steps eagerly and inside pdx.jit; the
state_dict round trip; the same math through `transformation()` (LBFGS's
state round trip is in test_lbfgs.py)."""

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import optax

import pdx
from pdx import optimizer

NEW = {
    "ASGD": dict(learning_rate=0.1, batch_num=2),
    "Adadelta": dict(learning_rate=1.0),
    "NAdam": dict(learning_rate=0.01),
    "RAdam": dict(learning_rate=0.01, beta2=0.9),
    "Rprop": dict(learning_rate=0.01),
}


def _signature(fn):
    return [(k, p.default) for k, p in inspect.signature(fn).parameters.items()]


def test_signatures_match_paddle(paddle):
    for name in [*NEW, "LBFGS"]:
        assert _signature(getattr(optimizer, name).__init__) == _signature(getattr(paddle.optimizer, name).__init__), name


def _net():
    pdx.seed(0)
    return pdx.nn.Linear(3, 2)


def _loss(model, x):
    return jnp.mean(jnp.tanh(model(x)) ** 2)


def test_eager_jit_and_transformation_agree():
    xs = [jax.random.normal(jax.random.key(i), (4, 3)) for i in range(3)]
    # the trajectory test covers every one eagerly against paddle; here the three state layouts:
    # a step counter and slots (ASGD), float32 scalar accumulators (RAdam), no lr stage (Rprop)
    for name in ("ASGD", "RAdam", "Rprop"):
        kw = NEW[name]
        eager_net, jit_net, tx_net = _net(), _net(), _net()
        eager, compiled = getattr(optimizer, name)(parameters=eager_net, **kw), getattr(optimizer, name)(parameters=jit_net, **kw)

        @pdx.jit
        def step(model, opt, x):
            opt.step(pdx.grad(_loss)(model, x))

        tx = getattr(optimizer, name)(parameters=tx_net, **kw).transformation()
        params = {n: v[...] for n, v in tx_net.named_parameters()}
        state = tx.init(params)
        update = jax.jit(lambda g, s, p: (lambda u, s: (optax.apply_updates(p, u), s))(*tx.update(g, s, p)))
        for x in xs:
            eager.step(pdx.grad(_loss)(eager_net, x))
            step(jit_net, compiled, x)
            grads = dict(pdx.grad(_loss)(tx_net, x))
            params, state = update(grads, state, params)
            for n, v in tx_net.named_parameters():
                v.set_value(params[n])
        for n, v in eager_net.named_parameters():
            np.testing.assert_allclose(np.asarray(dict(jit_net.named_parameters())[n][...]), np.asarray(v[...]), rtol=1e-6, atol=1e-7, err_msg=name)
            np.testing.assert_allclose(np.asarray(params[n]), np.asarray(v[...]), rtol=1e-6, atol=1e-7, err_msg=name)
        fresh = getattr(optimizer, name)(parameters=_net(), **kw)
        fresh.set_state_dict(eager.state_dict())
        for k, v in eager.state_dict().items():
            np.testing.assert_array_equal(np.asarray(fresh.state_dict()[k]), np.asarray(v), err_msg=f"{name} {k}")

