"""pdx.optimizer.lr against paddle.optimizer.lr: value sequences, jumps,
state dicts, the traced path (stepping inside a compiled function) and
`as_schedule()`."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from pdx.optimizer import lr

STEPS = 35


def _cases():
    return [
        ("NoamDecay", dict(d_model=64, warmup_steps=10, learning_rate=2.0)),
        ("PiecewiseDecay", dict(boundaries=[3, 8, 20], values=[0.1, 0.05, 0.01, 0.001])),
        ("NaturalExpDecay", dict(learning_rate=0.5, gamma=0.1)),
        ("InverseTimeDecay", dict(learning_rate=0.5, gamma=0.2)),
        ("PolynomialDecay", dict(learning_rate=0.5, decay_steps=10, end_lr=0.01, power=2.0)),
        ("PolynomialDecay", dict(learning_rate=0.5, decay_steps=7, end_lr=0.01, power=1.5, cycle=True)),
        ("LinearWarmup", dict(learning_rate=0.5, warmup_steps=5, start_lr=0.0, end_lr=0.5)),
        ("LinearWarmup", dict(learning_rate=("CosineAnnealingDecay", dict(learning_rate=0.5, T_max=10)),
                              warmup_steps=6, start_lr=0.01, end_lr=0.5)),
        ("LinearWarmup", dict(learning_rate=("StepDecay", dict(learning_rate=0.4, step_size=5, gamma=0.5)),
                              warmup_steps=3, start_lr=0.0, end_lr=0.4)),
        ("ExponentialDecay", dict(learning_rate=0.5, gamma=0.9)),
        ("MultiStepDecay", dict(learning_rate=0.5, milestones=[5, 12, 25], gamma=0.5)),
        ("StepDecay", dict(learning_rate=0.5, step_size=4, gamma=0.7)),
        ("LambdaDecay", dict(learning_rate=0.5, lr_lambda=lambda e: 0.95 ** e)),
        ("MultiplicativeDecay", dict(learning_rate=0.5, lr_lambda=lambda e: 0.95)),
        ("CosineAnnealingDecay", dict(learning_rate=0.5, T_max=10, eta_min=0.01)),
        ("CosineAnnealingDecay", dict(learning_rate=0.5, T_max=7)),
        ("OneCycleLR", dict(max_learning_rate=1.0, total_steps=STEPS)),
        ("OneCycleLR", dict(max_learning_rate=0.5, total_steps=STEPS, anneal_strategy="linear", three_phase=True,
                            phase_pct=0.2, end_learning_rate=0.001)),
        ("CyclicLR", dict(base_learning_rate=0.1, max_learning_rate=1.0, step_size_up=4, step_size_down=6, mode="triangular2")),
        ("CyclicLR", dict(base_learning_rate=0.1, max_learning_rate=1.0, step_size_up=5, mode="exp_range", exp_gamma=0.9)),
        ("CyclicLR", dict(base_learning_rate=0.1, max_learning_rate=1.0, step_size_up=3)),
        ("LinearLR", dict(learning_rate=0.5, total_steps=10, start_factor=0.25, end_factor=0.9)),
        ("CosineAnnealingWarmRestarts", dict(learning_rate=0.5, T_0=3, T_mult=2, eta_min=0.01)),
        ("CosineAnnealingWarmRestarts", dict(learning_rate=0.5, T_0=4)),
    ]


CASES = _cases()
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CASES)]


def build(module, name, kwargs):
    kwargs = dict(kwargs)
    inner = kwargs.get("learning_rate")
    if isinstance(inner, tuple):
        kwargs["learning_rate"] = build(module, *inner)
    return getattr(module, name)(**kwargs)


def sequence(sched, steps=STEPS):
    values = []
    for _ in range(steps):
        values.append(sched())
        sched.step()
    return np.array(values)


@pytest.mark.parametrize("name,kwargs", CASES, ids=IDS)
def test_values_match_paddle(paddle, name, kwargs):
    ours = build(lr, name, kwargs)
    ref = build(paddle.optimizer.lr, name, kwargs)
    assert ours.last_epoch == ref.last_epoch == 0
    steps = STEPS - 1 if name == "OneCycleLR" else STEPS
    np.testing.assert_allclose(sequence(ours, steps), sequence(ref, steps), rtol=1e-6, atol=1e-9)
    assert ours.last_epoch == ref.last_epoch
    assert isinstance(ours(), float) and isinstance(ours.get_lr(), float)


# Paddle's LinearLR.step(epoch) reuses its one-step recurrence (a wrong value
# after a jump); pdx computes the closed form, so it is left out here.
_JUMPABLE = [(i, c) for i, c in zip(IDS, CASES) if c[0] not in ("MultiplicativeDecay", "LinearLR")]


@pytest.mark.parametrize("name,kwargs", [c for _, c in _JUMPABLE], ids=[i for i, _ in _JUMPABLE])
def test_step_to_epoch_matches_paddle(paddle, name, kwargs):
    ours = build(lr, name, kwargs)
    ref = build(paddle.optimizer.lr, name, kwargs)
    for epoch in (7, 3, 19, 30):
        ours.step(epoch)
        ref.step(epoch)
        np.testing.assert_allclose(ours(), ref(), rtol=1e-6, atol=1e-9, err_msg=f"epoch {epoch}")


def test_last_epoch_argument_matches_paddle(paddle):
    ours = lr.ExponentialDecay(0.5, 0.9, last_epoch=4)
    ref = paddle.optimizer.lr.ExponentialDecay(0.5, 0.9, last_epoch=4)
    assert ours.last_epoch == ref.last_epoch == 5
    np.testing.assert_allclose(sequence(ours, 5), sequence(ref, 5), rtol=1e-6)


@pytest.mark.parametrize("mode,threshold_mode,cooldown", [("min", "rel", 0), ("max", "abs", 2), ("min", "abs", 1)])
def test_reduce_on_plateau_matches_paddle(paddle, rng, mode, threshold_mode, cooldown):
    kwargs = dict(learning_rate=1.0, mode=mode, factor=0.5, patience=2, threshold=0.05,
                  threshold_mode=threshold_mode, cooldown=cooldown, min_lr=0.01)
    ours, ref = lr.ReduceOnPlateau(**kwargs), paddle.optimizer.lr.ReduceOnPlateau(**kwargs)
    metrics = np.round(rng.uniform(0.5, 1.5, size=40), 1)  # plateaus from rounding
    for i, m in enumerate(metrics):
        value = float(m) if i % 2 else jnp.asarray([m], jnp.float32)
        ours.step(value)
        ref.step(float(m))
        np.testing.assert_allclose(ours(), ref(), rtol=1e-6, err_msg=f"step {i}")
        assert ours.num_bad_epochs == ref.num_bad_epochs and ours.cooldown_counter == ref.cooldown_counter
    assert ours.last_epoch == ref.last_epoch
    assert set(ours.state_dict()) == set(ref.state_dict())


@pytest.mark.parametrize("name,kwargs", [CASES[7], CASES[11], CASES[16]], ids=["LinearWarmup", "StepDecay", "OneCycleLR"])
def test_state_dict_round_trip(paddle, name, kwargs):
    ours = build(lr, name, kwargs)
    ref = build(paddle.optimizer.lr, name, kwargs)
    for _ in range(9):
        ours.step()
        ref.step()
    state = ours.state_dict()
    assert set(state) == set(ref.state_dict())
    np.testing.assert_allclose(state["last_lr"], ref.state_dict()["last_lr"], rtol=1e-6)
    fresh = build(lr, name, kwargs)
    fresh.set_state_dict(ref.state_dict())  # a Paddle state dict loads too
    assert fresh.last_epoch == 9 and abs(fresh() - ours()) < 1e-7
    fresh.step()
    ours.step()
    assert fresh() == ours()


class _Schedulers(nnx.Pytree):
    def __init__(self, items):
        self.items = nnx.List(items)


def test_traced_steps_match_eager_without_recompiling():
    names = [0, 4, 7, 11, 14, 16, 18, 21, 22]  # a spread of closed forms incl. LinearWarmup(inner)
    eager = [build(lr, *CASES[i]) for i in names]
    traced = _Schedulers([build(lr, *CASES[i]) for i in names])
    traces = []

    @nnx.jit
    def step_all(scheds):
        traces.append(1)
        for s in scheds.items:
            s.step()
        return [s() for s in scheds.items]

    for _ in range(20):
        got = step_all(traced)
        for s in eager:
            s.step()
        np.testing.assert_allclose(np.array(got), [s() for s in eager], rtol=2e-5, atol=1e-8)
    assert len(traces) == 1
    assert [s.last_epoch for s in traced.items] == [s.last_epoch for s in eager]
    inner_eager, inner_traced = eager[2].learning_rate, traced.items[2].learning_rate
    assert inner_traced.last_epoch == inner_eager.last_epoch
    np.testing.assert_allclose(inner_traced(), inner_eager(), rtol=2e-5)


def test_traced_reduce_on_plateau_and_multiplicative():
    eager = [lr.ReduceOnPlateau(1.0, patience=1, factor=0.5), lr.MultiplicativeDecay(1.0, lambda e: 0.9)]
    traced = _Schedulers([lr.ReduceOnPlateau(1.0, patience=1, factor=0.5), lr.MultiplicativeDecay(1.0, lambda e: 0.9)])

    @nnx.jit
    def step(scheds, metric):
        scheds.items[0].step(metric)
        scheds.items[1].step()

    for m in [1.0, 0.9, 0.9, 0.9, 0.95, 0.5, 0.5, 0.6, 0.6]:
        step(traced, jnp.float32(m))
        eager[0].step(m)
        eager[1].step()
        for a, b in zip(traced.items, eager):
            np.testing.assert_allclose(a(), b(), rtol=1e-6)
    assert traced.items[0].best == eager[0].best


@pytest.mark.parametrize("index", [0, 6, 8, 12, 14, 17, 22])
def test_as_schedule_matches_paddle(paddle, index):
    name, kwargs = CASES[index]
    schedule = jax.jit(build(lr, name, kwargs).as_schedule())
    expected = sequence(build(paddle.optimizer.lr, name, kwargs), 30)
    got = np.array([schedule(jnp.int32(c)) for c in range(30)])
    np.testing.assert_allclose(got, expected, rtol=2e-5, atol=1e-8)


def test_as_schedule_starts_at_current_epoch():
    sched = lr.StepDecay(1.0, step_size=2, gamma=0.5)
    sched.step(3)
    assert float(sched.as_schedule()(0)) == 0.5 and float(sched.as_schedule()(1)) == 0.25


def test_verbose_prints(capsys):
    sched = lr.StepDecay(0.5, step_size=1, gamma=0.5, verbose=True)
    sched.step()
    assert "StepDecay set learning rate to 0.25" in capsys.readouterr().out


def test_custom_subclass_with_get_lr():
    class Halving(lr.LRScheduler):
        def get_lr(self):
            return self.base_lr * 0.5 ** self.last_epoch

    sched = Halving(1.0)
    sched.step()
    sched.step()
    assert sched() == 0.25
    with pytest.raises(TypeError, match="no closed form"):
        sched.as_schedule()


@pytest.mark.parametrize("make,exc,match", [
    (lambda: lr.StepDecay("0.1", step_size=2), TypeError, "learning_rate"),
    (lambda: lr.StepDecay(-0.1, step_size=2), ValueError, "learning_rate"),
    (lambda: lr.StepDecay(0.1, step_size=2.5), TypeError, "step_size"),
    (lambda: lr.StepDecay(0.1, step_size=0), ValueError, "step_size"),
    (lambda: lr.StepDecay(0.1, step_size=2, gamma=1.5), ValueError, "gamma"),
    (lambda: lr.MultiStepDecay(0.1, milestones=[5, 3]), ValueError, "milestones"),
    (lambda: lr.PiecewiseDecay(boundaries=[2, 4], values=[0.1, 0.01]), ValueError, "values"),
    (lambda: lr.ExponentialDecay(0.1, gamma=1.2), ValueError, "gamma"),
    (lambda: lr.CosineAnnealingDecay(0.1, T_max=0), ValueError, "T_max"),
    (lambda: lr.LinearWarmup(0.1, warmup_steps=5, start_lr=0.5, end_lr=0.1), ValueError, "end_lr"),
    (lambda: lr.LinearWarmup(lr.ReduceOnPlateau(0.1), warmup_steps=5, start_lr=0.0, end_lr=0.1), TypeError, "closed form"),
    (lambda: lr.LambdaDecay(0.1, lr_lambda=0.5), TypeError, "lr_lambda"),
    (lambda: lr.OneCycleLR(1.0, total_steps=10, phase_pct=1), TypeError, "phase_pct"),
    (lambda: lr.OneCycleLR(1.0, total_steps=10, anneal_strategy="exp"), ValueError, "anneal_strategy"),
    (lambda: lr.ReduceOnPlateau(0.1, mode="avg"), ValueError, "mode"),
    (lambda: lr.ReduceOnPlateau(0.1).step(jnp.ones(3)), ValueError, "1 element"),
    (lambda: lr.ReduceOnPlateau(0.1).step("low"), TypeError, "metrics"),
    (lambda: lr.ReduceOnPlateau(0.1).as_schedule(), TypeError, "closed form"),
    (lambda: lr.StepDecay(0.1, step_size=2).set_state_dict({"last_epoch": 3}), RuntimeError, "last_lr"),
])
def test_bad_arguments(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


def test_one_cycle_past_total_steps_raises():
    sched = lr.OneCycleLR(1.0, total_steps=3)
    sched.step(3)
    with pytest.raises(ValueError, match="total_steps"):
        sched.step()


def test_untraceable_lambda_names_the_fix():
    sched = _Schedulers([lr.LambdaDecay(1.0, lambda e: 1.0 if e < 3 else 0.1)])

    @nnx.jit
    def step(s):
        s.items[0].step()

    with pytest.raises(TypeError, match="lr_lambda could not be evaluated on a traced epoch"):
        step(sched)
