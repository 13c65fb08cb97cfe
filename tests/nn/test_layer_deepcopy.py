"""copy.deepcopy of a Layer against paddle's: the copy lists its parameters and
state in the original's (definition) order, so Paddle's EMA / target-network
idiom `zip(model.parameters(), copy.parameters())` pairs the same tensors."""

import copy

import numpy as np

import pdx


def _build(lib):
    nn = lib.nn

    class Net(nn.Layer):
        def __init__(self):
            super().__init__()
            self.zeta = nn.Linear(2, 3)  # names out of alphabetical order, weight before bias
            self.body = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.Linear(4, 2))
            self.alpha = self.create_parameter([2])

        def forward(self, x):
            return self.body(self.zeta(x)) * self.alpha

    return Net()


def test_deepcopy_keeps_paddle_parameter_order(paddle):
    ours, theirs = _build(pdx), _build(paddle)
    want = [(n, list(p.shape)) for n, p in theirs.named_parameters()]
    assert [(n, list(p.shape)) for n, p in ours.named_parameters()] == want
    ours_copy, theirs_copy = copy.deepcopy(ours), copy.deepcopy(theirs)
    assert [(n, list(p.shape)) for n, p in copy.deepcopy(theirs).named_parameters()] == want
    assert [(n, list(p.shape)) for n, p in ours_copy.named_parameters()] == want
    assert list(ours_copy.state_dict()) == list(theirs_copy.state_dict())
    assert [n for n, _ in ours_copy.named_sublayers()] == [n for n, _ in theirs_copy.named_sublayers()]


def test_ema_over_a_deepcopy_matches_paddle(paddle):
    r = np.random.RandomState(0)
    ours, theirs = _build(pdx), _build(paddle)
    for (_, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        v = r.randn(*q.shape).astype("float32")
        p.set_value(v)
        q.set_value(v)
    ours_ema, theirs_ema = copy.deepcopy(ours), copy.deepcopy(theirs)
    for step in range(3):
        for (_, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
            v = r.randn(*q.shape).astype("float32")
            p.set_value(v)
            q.set_value(v)
        with paddle.no_grad():
            for p, e in zip(theirs.parameters(), theirs_ema.parameters()):
                e.set_value(0.9 * e + 0.1 * p)
        for p, e in zip(ours.parameters(), ours_ema.parameters()):
            e.set_value(0.9 * e + 0.1 * p)
    x = r.randn(5, 2).astype("float32")
    np.testing.assert_allclose(np.asarray(ours_ema(pdx.to_tensor(x))), theirs_ema(paddle.to_tensor(x)).numpy(),
                               rtol=1e-5, atol=1e-6)
    for (n, p), (_, q) in zip(ours_ema.named_parameters(), theirs_ema.named_parameters()):
        np.testing.assert_allclose(np.asarray(p), q.numpy(), rtol=1e-6, atol=1e-7, err_msg=n)
    # the copy is independent: the source's values are the last ones set, not the averages
    np.testing.assert_allclose(np.asarray(ours.alpha), theirs.alpha.numpy(), rtol=0, atol=0)
