"""SimpleRNN/LSTM/GRU, their cells, RNN and BiRNN against paddle (weights copied from paddle)."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
import pdx.nn as nn
from layer_testutil import assert_close, load_from_paddle

B, T, I, H = 3, 5, 4, 6
LENGTHS = np.array([5, 2, 3], "int64")


def _states(states):
    return states if isinstance(states, tuple) else (states,)


def _flat(tree):
    return [np.asarray(a) for a in jax.tree.leaves(tree)]


def _pd_flat(paddle, tree):
    return [t.numpy() for t in paddle.utils.flatten(tree)]


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "SimpleRNN"])
def test_networks_match_paddle(paddle, rng, mode):
    """1/2 layers x forward/bidirect x time_major x with/without sequence_length; outputs and final states."""
    for layers, direction, time_major in itertools.product((1, 2), ("forward", "bidirect"), (False, True)):
        pd_net = getattr(paddle.nn, mode)(I, H, num_layers=layers, direction=direction, time_major=time_major)
        net = load_from_paddle(getattr(nn, mode)(I, H, num_layers=layers, direction=direction,
                                                 time_major=time_major), pd_net)
        x = rng.standard_normal((T, B, I) if time_major else (B, T, I)).astype(np.float32)
        for lengths in (None, LENGTHS):
            case = (layers, direction, time_major, lengths is not None)
            pd_out, pd_st = pd_net(paddle.to_tensor(x),
                                   sequence_length=None if lengths is None else paddle.to_tensor(lengths))
            out, st = net(jnp.asarray(x), sequence_length=None if lengths is None else jnp.asarray(lengths))
            assert out.shape == tuple(pd_out.shape), case
            assert_close(out, pd_out)
            for ours, theirs in zip(_states(st), _states(pd_st), strict=True):
                assert ours.shape == tuple(theirs.shape), case
                assert_close(ours, theirs)


def test_initial_states_activation_and_proj(paddle, rng):
    x = rng.standard_normal((B, T, I)).astype(np.float32)
    pd_net = paddle.nn.SimpleRNN(I, H, num_layers=2, direction="bidirectional", activation="relu")
    net = load_from_paddle(nn.SimpleRNN(I, H, num_layers=2, direction="bidirectional", activation="relu"), pd_net)
    h0 = rng.standard_normal((4, B, H)).astype(np.float32)
    pd_out, pd_h = pd_net(paddle.to_tensor(x), paddle.to_tensor(h0))
    out, h = net(jnp.asarray(x), jnp.asarray(h0))
    assert_close(out, pd_out)
    assert_close(h, pd_h)
    # LSTM with a projection (paddle runs its per-cell path here), given (h, c). Paddle's flat names
    # of layer 1 are shifted onto the wrong parameters by weight_ho; the sublayer paths are exact and win.
    pd_net = paddle.nn.LSTM(I, H, num_layers=2, proj_size=3)
    net = nn.LSTM(I, H, num_layers=2, proj_size=3)
    assert list(net.state_dict()) == list(pd_net.state_dict())
    missing, unexpected = net.set_state_dict(pd_net.state_dict())
    assert not missing and not unexpected
    for path, value in pd_net.state_dict().items():
        if "." in path:
            assert_close(net.state_dict()[path], value)
    h0 = rng.standard_normal((2, B, 3)).astype(np.float32)
    c0 = rng.standard_normal((2, B, H)).astype(np.float32)
    pd_out, pd_st = pd_net(paddle.to_tensor(x), (paddle.to_tensor(h0), paddle.to_tensor(c0)))
    out, st = net(jnp.asarray(x), (jnp.asarray(h0), jnp.asarray(c0)))
    assert out.shape == (B, T, 3) and st[0].shape == (2, B, 3) and st[1].shape == (2, B, H)
    assert_close(out, pd_out)
    for ours, theirs in zip(st, pd_st):
        assert_close(ours, theirs)


def test_cells_and_wrappers_match_paddle(paddle, rng):
    x = rng.standard_normal((B, I)).astype(np.float32)
    seq = rng.standard_normal((B, T, I)).astype(np.float32)
    cells = [("SimpleRNNCell", {}), ("SimpleRNNCell", {"activation": "relu"}), ("LSTMCell", {}), ("GRUCell", {})]
    for name, kwargs in cells:
        pd_cell = getattr(paddle.nn, name)(I, H, **kwargs)
        cell = load_from_paddle(getattr(nn, name)(I, H, **kwargs), pd_cell)
        assert list(cell.state_dict()) == list(pd_cell.state_dict())
        state = cell.get_initial_states(jnp.asarray(x))
        state = jax.tree.map(lambda s: s + 0.3, state)
        pd_state = jax.tree.map(lambda s: paddle.to_tensor(np.asarray(s)), state)
        out, new = cell(jnp.asarray(x), state)
        pd_outs, pd_new = pd_cell(paddle.to_tensor(x), pd_state)
        assert_close(out, pd_outs)
        for ours, theirs in zip(_flat(new), _pd_flat(paddle, pd_new), strict=True):
            assert_close(ours, theirs)
        # RNN (both directions) and BiRNN over the cell, with padding: the cell's outputs at padded
        # steps are returned as computed, as paddle.nn.RNN does.
        lengths = jnp.asarray(LENGTHS)
        for reverse in (False, True):
            out, final = nn.RNN(cell, is_reverse=reverse)(jnp.asarray(seq), sequence_length=lengths)
            pd_out, pd_final = paddle.nn.RNN(pd_cell, is_reverse=reverse)(
                paddle.to_tensor(seq), sequence_length=paddle.to_tensor(LENGTHS))
            assert_close(out, pd_out)
            for ours, theirs in zip(_flat(final), _pd_flat(paddle, pd_final), strict=True):
                assert_close(ours, theirs)
    pd_bi = paddle.nn.BiRNN(paddle.nn.GRUCell(I, H), paddle.nn.GRUCell(I, H), time_major=True)
    bi = load_from_paddle(nn.BiRNN(nn.GRUCell(I, H), nn.GRUCell(I, H), time_major=True), pd_bi)
    seq_tm = np.swapaxes(seq, 0, 1)
    out, (h_fw, h_bw) = bi(jnp.asarray(seq_tm), sequence_length=jnp.asarray(LENGTHS))
    pd_out, (pd_fw, pd_bw) = pd_bi(paddle.to_tensor(seq_tm), sequence_length=paddle.to_tensor(LENGTHS))
    assert_close(out, pd_out)
    assert_close(h_fw, pd_fw)
    assert_close(h_bw, pd_bw)


def test_rnn_runs_a_user_defined_cell(paddle, rng):
    class PdCell(paddle.nn.RNNCellBase):
        def __init__(self):
            super().__init__()
            self.fc = paddle.nn.Linear(I + H, H)

        def forward(self, x, h, scale=1.0):
            h = paddle.tanh(self.fc(paddle.concat([x, h], -1))) * scale
            return h, h

        @property
        def state_shape(self):
            return (H,)

    class Cell(nn.RNNCellBase):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(I + H, H)

        def forward(self, x, h, scale=1.0):
            h = jnp.tanh(self.fc(jnp.concatenate([x, h], -1))) * scale
            return h, h

        @property
        def state_shape(self):
            return (H,)

    pd_cell = PdCell()
    cell = load_from_paddle(Cell(), pd_cell)
    seq = rng.standard_normal((T, B, I)).astype(np.float32)
    for reverse in (False, True):
        out, h = nn.RNN(cell, is_reverse=reverse, time_major=True)(
            jnp.asarray(seq), sequence_length=jnp.asarray(LENGTHS), scale=0.5)
        pd_out, pd_h = paddle.nn.RNN(pd_cell, is_reverse=reverse, time_major=True)(
            paddle.to_tensor(seq), sequence_length=paddle.to_tensor(LENGTHS), scale=0.5)
        assert_close(out, pd_out)
        assert_close(h, pd_h)


def _pdx_grads(net, x, lengths, cot_out, cot_h):
    def loss(model, x):
        out, st = model(x, sequence_length=lengths)
        return jnp.sum(out * cot_out) + jnp.sum(_states(st)[0] * cot_h)

    # One compiled forward + backward (eager autodiff would compile every transposed op).
    step = pdx.jit(lambda model, x: pdx.value_and_grad(loss, argnums=(0, 1))(model, x))
    _, (g_params, g_x) = step(net, jnp.asarray(x))
    return {k: np.asarray(v) for k, v in g_params.items()}, np.asarray(g_x)


def test_gradients_match_paddle(paddle, rng):
    for mode, kwargs in (("LSTM", {"num_layers": 2, "direction": "bidirect"}), ("GRU", {"time_major": True})):
        pd_net = getattr(paddle.nn, mode)(I, H, **kwargs)
        net = load_from_paddle(getattr(nn, mode)(I, H, **kwargs), pd_net)
        shape = (T, B, I) if kwargs.get("time_major") else (B, T, I)
        x = rng.standard_normal(shape).astype(np.float32)
        out, st = net(jnp.asarray(x), sequence_length=jnp.asarray(LENGTHS))
        cot_out = rng.standard_normal(out.shape).astype(np.float32)
        cot_h = rng.standard_normal(_states(st)[0].shape).astype(np.float32)
        g_params, g_x = _pdx_grads(net, x, jnp.asarray(LENGTHS), cot_out, cot_h)

        px = paddle.to_tensor(x, stop_gradient=False)
        pd_out, pd_st = pd_net(px, sequence_length=paddle.to_tensor(LENGTHS))
        pd_h = pd_st[0] if isinstance(pd_st, tuple) else pd_st
        ((pd_out * paddle.to_tensor(cot_out)).sum() + (pd_h * paddle.to_tensor(cot_h)).sum()).backward()
        np.testing.assert_allclose(g_x, px.grad.numpy(), rtol=1e-4, atol=1e-5)
        named = dict(pd_net.named_parameters())
        assert set(g_params) == set(named), (sorted(g_params), sorted(named))
        for name, param in named.items():
            np.testing.assert_allclose(g_params[name], param.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


def test_state_dict_names_and_pdparams(paddle, rng, tmp_path):
    import pdx.checkpoint

    pd_net = paddle.nn.LSTM(I, H, num_layers=2, direction="bidirect")
    net = nn.LSTM(I, H, num_layers=2, direction="bidirect")
    assert list(net.state_dict()) == list(pd_net.state_dict())
    assert [n for n, _ in net.named_parameters()] == [n for n, _ in pd_net.named_parameters()]
    path = tmp_path / "lstm.pdparams"
    paddle.save(pd_net.state_dict(), str(path))
    missing, unexpected = net.set_state_dict(pdx.checkpoint.load_pdparams(path))
    assert not missing and not unexpected
    x = rng.standard_normal((B, T, I)).astype(np.float32)
    pd_out, _ = pd_net(paddle.to_tensor(x))
    assert_close(net(jnp.asarray(x))[0], pd_out)
    # A bias with attr=False is frozen at 0 and has no flat name, as in paddle (whose fused CPU
    # kernel crashes on such a network, so the reference is a paddle GRU with that bias zeroed).
    gru = nn.GRU(I, H, bias_ih_attr=False)
    assert set(gru.state_dict()) == set(paddle.nn.GRU(I, H, bias_ih_attr=False).state_dict())
    assert "bias_ih_l0" not in gru.state_dict() and not np.any(np.asarray(gru[0].cell.bias_ih[...]))
    pd_gru = paddle.nn.GRU(I, H)
    state = {k: v.numpy() for k, v in pd_gru.state_dict().items()}
    state["bias_ih_l0"] = state["0.cell.bias_ih"] = np.zeros_like(state["bias_ih_l0"])
    pd_gru.set_state_dict({k: paddle.to_tensor(v) for k, v in state.items()})
    missing, unexpected = gru.set_state_dict({k: v for k, v in state.items() if k != "bias_ih_l0"})
    assert not missing and not unexpected
    assert_close(gru(jnp.asarray(x))[0], pd_gru(paddle.to_tensor(x))[0])
    # Default init: U(-1/sqrt(H), 1/sqrt(H)).
    big = nn.GRUCell(I, 64)
    w = np.asarray(big.weight_ih[...])
    assert w.shape == (192, I) and 0.9 / 8 < np.abs(w).max() <= 1 / 8


def test_jit_one_compile_for_every_length_and_dropout(rng):
    net = nn.GRU(I, H, num_layers=2, direction="bidirect")
    x = jnp.asarray(rng.standard_normal((B, T, I)).astype(np.float32))
    step = pdx.jit(lambda x, lengths: net(x, sequence_length=lengths))
    for lengths in ([5, 2, 3], [1, 1, 1], [4, 5, 2]):
        out, h = step(x, jnp.array(lengths))
        eager_out, eager_h = net(x, sequence_length=jnp.array(lengths))
        np.testing.assert_allclose(np.asarray(out), np.asarray(eager_out), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(h), np.asarray(eager_h), rtol=1e-5, atol=1e-6)
        padded = np.arange(T)[None, :] >= np.array(lengths)[:, None]
        assert np.all(np.asarray(out)[padded] == 0)
    assert step.cache_size() == 1
    # Dropout between layers: training draws a new mask per call, eval has none.
    drop = nn.LSTM(I, H, num_layers=2, dropout=0.5, rngs=0)
    a, b = drop(x)[0], drop(x)[0]
    assert not np.allclose(np.asarray(a), np.asarray(b))
    drop.eval()
    np.testing.assert_array_equal(np.asarray(drop(x)[0]), np.asarray(drop(x)[0]))


def test_export_lstm_classifier(tmp_path, rng):
    import pdx.export
    from pdx.jit import InputSpec

    class Classifier(nn.Layer):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(20, 8)
            self.lstm = nn.LSTM(8, 6, direction="bidirect")
            self.fc = nn.Linear(12, 3)

        def forward(self, ids):
            _, (h, _) = self.lstm(self.emb(ids))
            return self.fc(jnp.concatenate([h[0], h[1]], axis=-1))

    model = Classifier()
    model.eval()
    ids = rng.integers(0, 20, (2, 7)).astype(np.int32)
    path = pdx.export.export(model, tmp_path / "clf", [InputSpec([None, 7], "int32", "ids")], targets=("xla",))
    loaded = pdx.export.load(path)
    np.testing.assert_allclose(np.asarray(loaded(ids)), np.asarray(model(jnp.asarray(ids))), rtol=1e-5, atol=1e-6)


def test_bad_input_names_the_argument():
    lstm = nn.LSTM(I, H)
    cases = [
        (lambda: lstm(jnp.ones((B, I))), "inputs"),
        (lambda: lstm(jnp.ones((B, T, I + 1))), "input_size"),
        (lambda: nn.GRU(I, H, direction="backward"), "direction"),
        (lambda: nn.LSTM(I, H, proj_size=H), "proj_size"),
        (lambda: nn.SimpleRNN(I, H, activation="gelu"), "activation"),
        (lambda: nn.GRUCell(I, H)(jnp.ones((B, I + 1))), "input_size"),
        (lambda: nn.LSTMCell(I, H)(jnp.ones((B, 2, I))), "inputs"),
        (lambda: lstm(jnp.ones((B, T, I)), sequence_length=jnp.ones((B + 1,), jnp.int32)), "sequence_length"),
        (lambda: lstm(jnp.ones((B, T, I)), jnp.zeros((1, B, H))), "initial_states"),
        (lambda: nn.LSTM(I, 0), "hidden_size"),
    ]
    for fn, word in cases:
        with pytest.raises(ValueError, match=word):
            fn()
