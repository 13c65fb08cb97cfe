"""Every kind of attribute Paddle lets a Layer keep, through every pdx pipeline.

One small layer per idiom — a plain tensor attribute (a positional table), a
numpy array, lists/dicts of tensors, buffers (persistable or not, read in
comparisons, updated in forward, integer), `create_parameter` /
`add_parameter`, frozen parameters (`stop_gradient`, `trainable`,
`ParamAttr(trainable=False)`), `LayerList` / `LayerDict` — each written once
against a framework module, so the same class is built on pdx and on paddle.
Each runs through: eager forward (equal to paddle's on the same weights),
`pdx.jit`, `pdx.value_and_grad` + `opt.step`, `pdx.Model.fit/evaluate/predict`,
`TrainState` + `make_step` under `jax.jit`, `state_dict` round trips (keys as
paddle's) with `pdx.save`/`pdx.load`, and `pdx.jit.save`/`load`.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx

D, N, BATCH, LR = 4, 6, 3, 0.1


def build_idioms(fw):
    """The idiom layers on framework `fw` (pdx or paddle): name -> class."""
    nn, F = fw.nn, fw.nn.functional

    class PlainTensor(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(D, D)
            self.pe = fw.to_tensor(np.linspace(0, 1, D).astype("float32"))

        def forward(self, x):
            return self.fc(x) + self.pe

    class NumpyAttr(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(D, D)
            self.scale = np.linspace(1, 2, D).astype("float32")
            self.order = np.arange(D)[::-1].copy()

        def forward(self, x):
            y = self.fc(x) * fw.to_tensor(self.scale)
            return fw.gather(y, fw.to_tensor(self.order), axis=1)

    class TensorContainers(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(D, D)
            self.shifts = [fw.ones([D]), fw.full([D], 2.0)]
            self.table = {"a": fw.full([D], 0.5), "b": fw.full([D], -1.0)}

        def forward(self, x):
            return self.fc(x) + self.shifts[0] * self.shifts[1] + self.table["a"] * self.table["b"]

    class Buffers(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(D, D)
            self.register_buffer("mean", fw.full([D], 0.25))
            self.register_buffer("mask", fw.to_tensor(np.array([1.0, 0.0, 1.0, 1.0], "float32")), persistable=False)
            self.register_buffer("perm", fw.to_tensor(np.array([3, 1, 2, 0])))

        def forward(self, x):
            y = fw.index_select(self.fc(x) - self.mean, self.perm, axis=1)
            return fw.where(self.mask > 0, y, -y)

    class BufferUpdate(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(D, D)
            self.register_buffer("calls", fw.zeros([1]))
            self.register_buffer("ema", fw.zeros([D]))

        def forward(self, x):
            y = self.fc(x)
            if self.training:
                self.calls.set_value(self.calls + 1)
                self.ema.set_value(0.9 * self.ema + 0.1 * y.mean(0).detach())
            return y - self.ema

    class CreatedParams(nn.Layer):
        def __init__(self):
            super().__init__()
            self.w = self.create_parameter([D, D])
            self.add_parameter("b", self.create_parameter([D], is_bias=True))

        def forward(self, x):
            return fw.matmul(x, self.w) + self.b

    class Frozen(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(D, D)
            self.a = self.create_parameter([D], default_initializer=nn.initializer.Constant(1.5))
            self.a.stop_gradient = True
            self.b = self.create_parameter([D], default_initializer=nn.initializer.Constant(0.5))
            self.b.trainable = False
            self.c = self.create_parameter([D], attr=fw.ParamAttr(trainable=False))

        def forward(self, x):
            return self.fc(x) * self.a + self.b - self.c

    class Containers(nn.Layer):
        def __init__(self):
            super().__init__()
            self.blocks = nn.LayerList([nn.Linear(D, D), nn.Linear(D, D)])
            self.heads = nn.LayerDict({"out": nn.Linear(D, D)})

        def forward(self, x):
            for block in self.blocks:
                x = F.relu(block(x))
            return self.heads["out"](x)

    return {cls.__name__: cls for cls in (PlainTensor, NumpyAttr, TensorContainers, Buffers, BufferUpdate,
                                          CreatedParams, Frozen, Containers)}


IDIOMS = build_idioms(pdx)
NAMES = list(IDIOMS)
FROZEN = {"Frozen": {"a", "b", "c"}}
_rng = np.random.default_rng(0)
X = _rng.random((N, D), dtype=np.float32)
Y = _rng.random((N, D), dtype=np.float32)


def loss_fn(model, x, y):
    return ((model(x) - y) ** 2).mean()


@functools.lru_cache(maxsize=None)
def initial_state(name):
    pdx.seed(0)
    return {k: np.asarray(v) for k, v in IDIOMS[name]().state_dict().items()}


def fresh(name):
    layer = IDIOMS[name]()
    layer.set_state_dict(initial_state(name))
    return layer


@functools.lru_cache(maxsize=None)
def eager_run(name):
    """Two SGD steps over the two batches: (per-step losses, final state_dict)."""
    layer = fresh(name)
    opt = pdx.optimizer.SGD(LR, parameters=layer.parameters())
    losses = []
    for i in range(N // BATCH):
        batch = slice(i * BATCH, (i + 1) * BATCH)
        loss, grads = pdx.value_and_grad(loss_fn)(layer, jnp.asarray(X[batch]), jnp.asarray(Y[batch]))
        opt.step(grads)
        losses.append(float(loss))
    return losses, {k: np.asarray(v) for k, v in layer.state_dict().items()}


def _assert_state(got, want, rtol=1e-5):
    assert list(got) == list(want)
    for k in want:
        np.testing.assert_allclose(np.asarray(got[k]), want[k], rtol=rtol, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("name", NAMES)
def test_eager_forward_matches_paddle(paddle, name):
    ref = build_idioms(paddle)[name]()
    state = initial_state(name)
    assert sorted(ref.state_dict()) == sorted(state)  # what is saved: as in paddle
    assert [(n, p.trainable) for n, p in fresh(name).named_parameters()] == \
        [(n, p.trainable) for n, p in ref.named_parameters()]
    own = ref.state_dict()  # integer buffers: int64 in paddle, int32 in pdx
    ref.set_state_dict({k: paddle.to_tensor(v).astype(own[k].dtype) for k, v in state.items()})
    ref.eval()
    np.testing.assert_allclose(fresh(name).eval()(jnp.asarray(X)), ref(paddle.to_tensor(X)).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_pdx_jit_forward(name):
    layer = fresh(name).eval()
    np.testing.assert_allclose(pdx.jit(lambda m, x: m(x))(layer, jnp.asarray(X)), layer(jnp.asarray(X)), rtol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_value_and_grad_step(name):
    losses, after = eager_run(name)
    before = initial_state(name)
    trainable = {n for n, p in fresh(name).named_parameters() if p.trainable}
    assert trainable.isdisjoint(FROZEN.get(name, set()))
    for k in before:
        changed = not np.array_equal(after[k], before[k])
        assert changed == (k in trainable or name == "BufferUpdate" and k in ("calls", "ema")), k
    assert np.isfinite(losses).all()


@pytest.mark.parametrize("name", NAMES)
def test_pdx_jit_train_step(name):
    layer = fresh(name)
    opt = pdx.optimizer.SGD(LR, parameters=layer.parameters())

    @pdx.jit
    def step(model, opt, x, y):
        loss, grads = pdx.value_and_grad(loss_fn)(model, x, y)
        opt.step(grads)
        return loss

    losses = [float(step(layer, opt, jnp.asarray(X[i:i + BATCH]), jnp.asarray(Y[i:i + BATCH]))) for i in range(0, N, BATCH)]
    want_losses, want_state = eager_run(name)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    _assert_state(layer.state_dict(), want_state)


class _Losses(pdx.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.losses = []

    def on_train_batch_end(self, step, logs=None):
        self.losses.append(float(np.asarray(logs["loss"]).reshape(-1)[0]))


@pytest.mark.parametrize("name", NAMES)
def test_model_fit_evaluate_predict(name):
    layer = fresh(name)
    model = pdx.Model(layer)
    model.prepare(pdx.optimizer.SGD(LR, parameters=layer.parameters()), pdx.nn.MSELoss())
    data = pdx.io.TensorDataset([X, Y])
    record = _Losses()
    model.fit(data, batch_size=BATCH, epochs=1, shuffle=False, verbose=0, callbacks=[record])
    want_losses, want_state = eager_run(name)
    np.testing.assert_allclose(record.losses, want_losses, rtol=1e-5)
    _assert_state(layer.state_dict(), want_state)
    result = model.evaluate(data, batch_size=BATCH, verbose=0)
    ref = fresh(name)
    ref.set_state_dict(want_state)
    ref.eval()
    np.testing.assert_allclose(result["loss"][0], float(loss_fn(ref, jnp.asarray(X), jnp.asarray(Y))), rtol=1e-5)
    (pred,) = model.predict(pdx.io.TensorDataset([X]), batch_size=BATCH, verbose=0, stack_outputs=True)
    np.testing.assert_allclose(pred, ref(jnp.asarray(X)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_train_state_make_step(name):
    layer = fresh(name)
    state = pdx.TrainState.create(layer, pdx.optimizer.SGD(LR, parameters=layer.parameters()))
    assert set(state.params).isdisjoint(FROZEN.get(name, set()))
    step = jax.jit(pdx.train.make_step(lambda m, batch: loss_fn(m, *batch)))
    losses = []
    for i in range(0, N, BATCH):
        state, metrics = step(state, (jnp.asarray(X[i:i + BATCH]), jnp.asarray(Y[i:i + BATCH])))
        losses.append(float(metrics["loss"]))
    want_losses, want_state = eager_run(name)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    state.update_model(layer)
    _assert_state(layer.state_dict(), want_state)


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_round_trip_and_save_load(name, tmp_path):
    _, trained = eager_run(name)
    src = fresh(name)
    src.set_state_dict(trained)
    pdx.save(src.state_dict(), str(tmp_path / "m.pdparams"))
    dst = fresh(name)
    missing, unexpected = dst.set_state_dict(pdx.load(str(tmp_path / "m.pdparams")))
    assert missing == [] and unexpected == []
    _assert_state(dst.state_dict(), trained, rtol=0)
    np.testing.assert_array_equal(dst.eval()(jnp.asarray(X)), src.eval()(jnp.asarray(X)))


@pytest.mark.parametrize("name", NAMES)
def test_jit_save_load(name, tmp_path):
    layer = fresh(name)
    layer.set_state_dict(eager_run(name)[1])
    layer.eval()
    path = str(tmp_path / name)
    pdx.jit.save(layer, path, input_spec=[pdx.static.InputSpec([None, D], "float32")])
    loaded = pdx.jit.load(path)
    np.testing.assert_allclose(np.asarray(loaded(jnp.asarray(X))), layer(jnp.asarray(X)), rtol=1e-5, atol=1e-6)
