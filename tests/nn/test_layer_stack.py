"""pdx.nn.LayerStack against the same layers run one after another (numpy and a LayerList loop)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx import _placement, nn, parallel


def _blocks(n=3, width=6):
    pdx.seed(0)
    return [nn.Sequential(nn.Linear(width, width), nn.Tanh()) for _ in range(n)]


def test_forward_equals_the_layers_one_after_another(rng):
    blocks = _blocks()
    weights = [(np.asarray(b[0].weight[...]), np.asarray(b[0].bias[...])) for b in blocks]
    stack = nn.LayerStack(blocks)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    ref = x
    for w, b in weights:
        ref = np.tanh(ref @ w + b)
    np.testing.assert_allclose(np.asarray(stack(jnp.asarray(x))), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(pdx.jit(lambda m, x: m(x))(stack, jnp.asarray(x))), ref, rtol=1e-5,
                               atol=1e-6)


def test_names_shapes_axis_names_and_copies():
    blocks = _blocks()
    stack = nn.LayerStack(blocks)
    state = stack.state_dict()
    assert list(state) == ["0.weight", "0.bias"]                      # definition order, no layer index
    assert state["0.weight"].shape == (3, 6, 6) and state["0.bias"].shape == (3, 6)
    assert stack.block[0].weight.get_metadata()["out_sharding"] == ("layers", "embed", "mlp")
    assert len(stack) == 3 and "num_layers=3" in repr(stack)
    second = stack[1]                                                 # a copy of layer 1, plain shapes and names
    np.testing.assert_array_equal(np.asarray(second[0].weight[...]), np.asarray(blocks[1][0].weight[...]))
    assert second[0].weight.get_metadata()["out_sharding"] == ("embed", "mlp")
    second[0].weight.set_value(jnp.zeros((6, 6)))
    assert float(jnp.abs(stack.block[0].weight[...][1]).sum()) > 0   # the stack is unchanged
    assert [layer[0].weight.shape for layer in stack] == [(6, 6)] * 3
    with pytest.raises(IndexError, match="3 layers"):
        stack[3]
    other = nn.LayerStack(_blocks())
    other.set_state_dict({k: v * 2 for k, v in state.items()})
    np.testing.assert_allclose(np.asarray(other.state_dict()["0.bias"]), 2 * np.asarray(state["0.bias"]))


def test_gradients_and_optimizer_step_equal_a_loop(rng):
    x = jnp.asarray(rng.standard_normal((4, 6)).astype(np.float32))
    loop, stack = nn.LayerList(_blocks()), nn.LayerStack(_blocks())

    def loss_loop(m):
        h = x
        for layer in m:
            h = layer(h)
        return (h ** 2).sum()

    def loss_stack(m):
        return (m(x) ** 2).sum()

    opt_a = pdx.optimizer.AdamW(learning_rate=0.1, parameters=loop)
    opt_b = pdx.optimizer.AdamW(learning_rate=0.1, parameters=stack)
    assert len(opt_b.named_parameters()) == 2                         # one (N, ...) array per parameter
    for _ in range(2):
        loss_a, grads_a = pdx.value_and_grad(loss_loop)(loop)
        loss_b, grads_b = pdx.value_and_grad(loss_stack)(stack)
        np.testing.assert_allclose(float(loss_b), float(loss_a), rtol=1e-6)
        for tail in ("0.weight", "0.bias"):
            np.testing.assert_allclose(np.asarray(grads_b[tail]),
                                       np.stack([np.asarray(grads_a[f"{i}.{tail}"]) for i in range(3)]),
                                       rtol=1e-5, atol=1e-7)
        opt_a.step(grads_a)
        opt_b.step(grads_b)
    for tail in ("0.weight", "0.bias"):
        np.testing.assert_allclose(np.asarray(stack.state_dict()[tail]),
                                   np.stack([np.asarray(loop.state_dict()[f"{i}.{tail}"]) for i in range(3)]),
                                   rtol=1e-5, atol=1e-6)


def test_recompute_policy_changes_nothing_numerically(rng):
    x = jnp.asarray(rng.standard_normal((4, 6)).astype(np.float32))
    plain, remat = nn.LayerStack(_blocks()), nn.LayerStack(_blocks(), policy="full")
    _, grads_a = pdx.value_and_grad(lambda m: (m(x) ** 2).sum())(plain)
    _, grads_b = pdx.value_and_grad(lambda m: (m(x) ** 2).sum())(remat)
    for name in grads_a:
        np.testing.assert_allclose(np.asarray(grads_b[name]), np.asarray(grads_a[name]), rtol=1e-6)
    def grads_text(stack):
        return pdx.jit(lambda m: dict(pdx.value_and_grad(lambda m: (m(x) ** 2).sum())(m)[1])).lower(stack).as_text()

    # the recomputed forward is fenced off in the backward pass
    assert "optimization_barrier" in grads_text(remat) and "optimization_barrier" not in grads_text(plain)


def test_buffers_and_dropout_keys_change_per_layer(rng):
    x = jnp.asarray(rng.standard_normal((8, 4)).astype(np.float32))
    pdx.seed(1)
    norms = [nn.BatchNorm1D(4) for _ in range(2)]
    loop = [nn.BatchNorm1D(4) for _ in range(2)]
    stack = nn.LayerStack(norms)
    h = x
    for layer in loop:
        h = layer(h)
    np.testing.assert_allclose(np.asarray(stack(x)), np.asarray(h), rtol=1e-5, atol=1e-6)
    for i, layer in enumerate(loop):                                  # running statistics written back per layer
        np.testing.assert_allclose(np.asarray(stack.state_dict()["_mean"][i]), np.asarray(layer._mean[...]),
                                   rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(np.asarray(stack.state_dict()["_variance"][i]), np.asarray(layer._variance[...]),
                                   rtol=1e-5, atol=1e-7)

    drop = nn.LayerStack([nn.Dropout(0.5) for _ in range(2)])
    ones = jnp.ones((64,))
    first, second = drop(ones), drop(ones)
    assert bool((first != second).any())                              # the keys moved on
    # two layers of p=0.5: survivors are scaled by 4 and about a quarter survive
    assert set(np.unique(np.asarray(first)).tolist()) <= {0.0, 4.0} and 0 < int((first > 0).sum()) < 40


def test_scan_with_per_layer_inputs_and_outputs():
    pdx.seed(2)
    stack = nn.LayerStack([nn.Linear(3, 3) for _ in range(4)])
    offsets = jnp.arange(4.0)[:, None] * jnp.ones((4, 3))            # (layers, 3)
    out, ys = stack.scan(lambda layer, h, off: (layer(h) + off, h.sum()), jnp.ones((3,)), offsets)
    h, sums = jnp.ones((3,)), []
    for i, layer in enumerate(stack):
        sums.append(h.sum())
        h = layer(h) + offsets[i]
    np.testing.assert_allclose(np.asarray(out), np.asarray(h), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(ys), np.asarray(sums), rtol=1e-5)


def test_scan_layers_and_run_layers_take_a_stack_or_a_list(rng):
    x = jnp.asarray(rng.standard_normal((2, 6)).astype(np.float32))
    blocks = _blocks()
    ref = x
    for b in blocks:
        ref = b(ref)
    for got in (nn.scan_layers(nn.LayerList(blocks), x), nn.scan_layers(nn.LayerStack(blocks), x),
                parallel.run_layers(nn.LayerStack(blocks), x)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-5, atol=1e-6)


def test_sharding_puts_the_layer_dimension_on_pp():
    stack = nn.LayerStack([nn.Linear(8, 16) for _ in range(4)])
    parallel.shard(stack, parallel.HybridConfig(dp_degree=2, pp_degree=2, mp_degree=2))
    weight = stack.block.weight.get_value()
    assert tuple(weight.sharding.spec) == ("pp", None, "mp")
    assert weight.addressable_shards[0].data.shape == (2, 8, 8)       # 2 of 4 layers, half the columns
    assert _placement.placement_of(stack.block.weight) is not None
    assert _placement.placement_of(stack[0].weight) is None            # a copy does not claim the placement


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="layer 1 .*differs in structure"):
        nn.LayerStack([nn.Linear(4, 4), nn.Linear(4, 5)])
    with pytest.raises(ValueError, match="layer 1 .*differs in structure"):
        nn.LayerStack([nn.Linear(4, 4), nn.Linear(4, 4, bias_attr=False)])
    with pytest.raises(TypeError, match="non-empty sequence of Layers"):
        nn.LayerStack([])
    with pytest.raises(ValueError, match="unknown policy"):
        nn.LayerStack([nn.Linear(2, 2)], policy="sometimes")
