"""Mixture-of-experts LLaMA: routing equals a per-token numpy reference (dropless and with capacity drops),
the load-balancing loss is Switch's, and dp x ep on 8 host devices trains like one device.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx import parallel
from pdx.models.llama import LlamaConfig, LlamaForCausalLM
from pdx.models.llama._moe import LlamaMoE

CONFIG = LlamaConfig.from_preset("moe-tiny", vocab_size=64, num_experts=4, num_experts_per_tok=2)


def reference(layer, x, capacity_factor):
    """Each token through its top-k experts, weights renormalized over the k; GShard's queue order for drops."""
    w = {k: np.asarray(v, np.float64) for k, v in layer.state_dict().items()}
    tokens = np.asarray(x, np.float64).reshape(-1, x.shape[-1])
    t, e, k = len(tokens), layer.num_experts, layer.top_k
    logits = tokens @ w["gate.weight"]
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    top = np.argsort(-logits, axis=-1, kind="stable")[:, :k]
    capacity = t if capacity_factor is None else int(np.ceil(t * k / e * capacity_factor))
    load = np.zeros(e, int)
    keep = np.zeros((t, k), bool)
    for j in range(k):                    # first choices of every token queue before any second choice
        for i in range(t):
            keep[i, j] = load[top[i, j]] < capacity
            load[top[i, j]] += 1
    out = np.zeros_like(tokens)
    silu = lambda a: a / (1 + np.exp(-a))  # noqa: E731
    for i in range(t):
        sel = logits[i, top[i]]
        weights = np.exp(sel - sel.max()) / np.exp(sel - sel.max()).sum()
        for j in range(k):
            if keep[i, j]:
                ex = top[i, j]
                h = silu(tokens[i] @ w["experts_gate_proj"][ex]) * (tokens[i] @ w["experts_up_proj"][ex])
                out[i] += weights[j] * (h @ w["experts_down_proj"][ex])
    share = np.bincount(top.reshape(-1), minlength=e) / (t * k)
    aux = e * np.sum(share * probs.mean(0))
    return out.reshape(x.shape), aux, keep


@pytest.mark.parametrize("capacity_factor", [None, 0.5])
def test_routing_equals_the_per_token_reference(capacity_factor):
    config = dataclasses.replace(CONFIG, capacity_factor=capacity_factor)
    layer = LlamaMoE(config, rngs=1)
    rng = np.random.default_rng(0)
    layer.set_state_dict({k: (rng.standard_normal(v.shape) * 0.3).astype(np.float32) for k, v in layer.state_dict().items()})
    x = rng.standard_normal((2, 12, config.hidden_size)).astype(np.float32)
    got = np.asarray(layer(jnp.asarray(x)))
    want, aux, keep = reference(layer, x, capacity_factor)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(float(layer.aux_loss[...]), aux, rtol=1e-5)
    if capacity_factor is not None:
        assert not keep.all()  # some (token, expert) pairs were really dropped


def test_dp_x_ep_trains_like_one_device():
    tokens = np.random.default_rng(3).integers(0, 64, (3, 8, 17)).astype(np.int32)

    @pdx.jit
    def step(model, opt, batch):
        loss, grads = pdx.value_and_grad(lambda m: m.loss(batch[:, :-1], batch[:, 1:], chunk_size=None))(model)
        opt.step(grads)
        return loss

    def train(layout):
        pdx.seed(5)
        model = LlamaForCausalLM(CONFIG)
        opt = pdx.optimizer.Momentum(learning_rate=0.1, momentum=0.9, parameters=model)
        if layout is None:
            return [float(step(model, opt, b)) for b in tokens], model, None
        config = parallel.HybridConfig(**layout)
        mesh = config.mesh()
        parallel.shard([model, opt], config, mesh=mesh)
        sharding = parallel.named_sharding(("batch", None), tokens[0].shape, config, mesh)
        with parallel.use_mesh(config, mesh):
            losses = [float(step(model, opt, jax.device_put(b, sharding))) for b in tokens]
            compiled = step.lower(model, opt, jax.device_put(tokens[0], sharding)).compile()
        return losses, model, compiled

    ref_losses, ref_model, _ = train(None)
    losses, model, compiled = train({"dp_degree": 2, "ep_degree": 4})
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5, atol=1e-5)
    for name, value in ref_model.state_dict().items():
        np.testing.assert_allclose(np.asarray(model.state_dict()[name]), np.asarray(value), rtol=1e-5, atol=1e-5,
                                   err_msg=name)
    experts = model.model.layers[0].mlp.experts_up_proj.get_value()
    assert experts.sharding.spec[0] == "ep"                     # each ep rank holds 1 of the 4 experts
    assert ref_losses[-1] < ref_losses[0]
    kinds = {c.kind for c in parallel.collectives(compiled)}
    assert "all-to-all" in kinds, kinds                         # tokens travel to their experts


def test_moe_config_errors():
    with pytest.raises(ValueError, match=r"num_experts_per_tok=5 must be in \[1, num_experts=4\]"):
        dataclasses.replace(CONFIG, num_experts_per_tok=5)
    with pytest.raises(ValueError, match="scan_layers=False"):
        dataclasses.replace(CONFIG, scan_layers=True)
    with pytest.raises(ValueError, match=r"dp\*sharding\*mp\*pp\*sep\*ep = 1\*1\*1\*1\*1\*3 = 3, but there are 8"):
        parallel.HybridConfig(dp_degree=1, ep_degree=3).mesh()
