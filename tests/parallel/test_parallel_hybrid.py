"""Hybrid parallel layouts train exactly like one device.

llama-tiny (4 layers) runs three AdamW steps on one device and under each
layout on the 8 host CPU devices; losses and updated parameters must agree
within 1e-5. The layouts' placements and the collectives XLA emits are
checked against what the config says.
"""

import dataclasses
import re

import jax
import numpy as np
import pytest

import pdx
import pdx.nn.functional as F
from pdx import nn, parallel
from pdx.models.llama import LlamaConfig, LlamaForCausalLM

CONFIG = LlamaConfig.from_preset("tiny", num_hidden_layers=4, vocab_size=64)
VOCAB, EMBED, BATCH, SEQ = CONFIG.vocab_size, CONFIG.hidden_size, 8, 8


def _build(scan=False):
    pdx.seed(7)
    model = LlamaForCausalLM(dataclasses.replace(CONFIG, scan_layers=scan))
    # Momentum, not Adam: gradients of every layout agree with one device to ~5e-7,
    # but Adam divides by sqrt(v), so an element whose gradient is ~1e-9 (its digits
    # decided by reduction order) becomes a full-size step of either sign.
    opt = pdx.optimizer.Momentum(learning_rate=0.1, momentum=0.9, parameters=model, weight_decay=0.01)
    return model, opt


@pdx.jit
def _train_step(model, opt, tokens, labels):
    def loss_fn(m):
        return F.cross_entropy(m(tokens).reshape([-1, VOCAB]), labels.reshape([-1]))

    loss, grads = pdx.value_and_grad(loss_fn)(model)
    opt.step(grads)
    return loss


def _data():
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, VOCAB, (3, BATCH, SEQ)).astype(np.int32)
    return tokens, np.roll(tokens, -1, axis=-1)


def _run(config=None, scan=False):
    model, opt = _build(scan)
    tokens, labels = _data()
    mesh = None
    if config is not None:
        mesh = config.mesh()
        parallel.shard([model, opt], config, mesh=mesh)
    losses = []
    for i in range(3):
        x, y = tokens[i], labels[i]
        if config is not None:
            x = jax.device_put(x, parallel.named_sharding(("batch", "seq"), x.shape, config, mesh))
            y = jax.device_put(y, parallel.named_sharding(("batch", "seq"), y.shape, config, mesh))
            with parallel.use_mesh(config, mesh):
                losses.append(float(_train_step(model, opt, x, y)))
        else:
            losses.append(float(_train_step(model, opt, x, y)))
    return model, opt, losses


@pytest.fixture(scope="module")
def reference():
    model, _, losses = _run()
    return losses, {k: np.asarray(v) for k, v in model.state_dict().items()}


LAYOUTS = {
    "dp8": dict(dp_degree=8),
    "sharding8_stage1": dict(dp_degree=1, sharding_degree=8, sharding_stage=1),
    "sharding8_stage2": dict(dp_degree=1, sharding_degree=8, sharding_stage=2),
    "sharding8_stage3": dict(dp_degree=1, sharding_degree=8, sharding_stage=3),
    "dp2_mp4": dict(dp_degree=2, mp_degree=4),
    "sharding2_mp2_dp2_stage3": dict(dp_degree=2, sharding_degree=2, mp_degree=2, sharding_stage=3),
    "sep2_dp4": dict(dp_degree=4, sep_degree=2),
    "pp2_dp4_gpipe": dict(dp_degree=4, pp_degree=2, accumulate_steps=4),
    "pp2_dp4_interleaved": dict(dp_degree=4, pp_degree=2, accumulate_steps=4, virtual_pp_degree=2),
    "pp2_mp2_sharding2": dict(dp_degree=1, pp_degree=2, mp_degree=2, sharding_degree=2, sharding_stage=2,
                              accumulate_steps=2),
}


def _stacked_names(state):
    """Loop-mode names laid out as a LayerStack's: model.layers.<i>.<name> -> model.layers.<name>, stacked."""
    out, groups = {}, {}
    for name, value in state.items():
        match = re.fullmatch(r"model\.layers\.(\d+)\.(.+)", name)
        if match:
            groups.setdefault(match[2], {})[int(match[1])] = value
        else:
            out[name] = value
    for tail, by_index in groups.items():
        out[f"model.layers.{tail}"] = np.stack([by_index[i] for i in sorted(by_index)])
    return out


def _check_like_reference(layout, model, losses, reference):
    ref_losses, ref_params = reference
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5, atol=1e-6)
    state = model.state_dict()
    if "model.layers.input_layernorm.weight" in state:  # stored stacked (scan_layers)
        ref_params = _stacked_names(ref_params)
    assert set(state) == set(ref_params)
    for name, value in state.items():
        # per tensor, relative to its norm
        ref = ref_params[name]
        err = np.linalg.norm(np.asarray(value) - ref) / max(np.linalg.norm(ref), 1e-12)
        assert err < 1e-5, f"{layout}: {name} differs from the one-device run by {err:.2e} (relative)"


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_layout_trains_like_one_device(layout, reference):
    model, _, losses = _run(parallel.HybridConfig(**LAYOUTS[layout]))
    _check_like_reference(layout, model, losses, reference)


# Layers stored stacked (a LayerStack): the pipeline reads each stage's layers where
# they are kept; stage 3 shards the stacked weights like any other.
@pytest.mark.parametrize("layout", ["pp2_dp4_gpipe", "pp2_dp4_interleaved", "pp2_mp2_sharding2",
                                    "sharding8_stage3"])
def test_stacked_layers_train_like_one_device(layout, reference):
    model, _, losses = _run(parallel.HybridConfig(**LAYOUTS[layout]), scan=True)
    _check_like_reference(layout + " (scan_layers)", model, losses, reference)


def _spec(var):
    return tuple(var.get_value().sharding.spec)


def _padded(spec, rank):
    return tuple(spec) + (None,) * (rank - len(spec))


def test_placements_follow_the_config():
    model, opt = _build()
    config = parallel.HybridConfig(dp_degree=2, mp_degree=4)
    parallel.shard([model, opt], config)
    block = model.model.layers[0]
    assert _padded(_spec(block.mlp.gate_proj.weight), 2) == (None, "mp")       # column parallel
    assert _padded(_spec(block.self_attn.q_proj.weight), 2) == (None, "mp")    # heads split
    assert _padded(_spec(block.mlp.down_proj.weight), 2) == ("mp", None)       # row parallel
    assert _padded(_spec(model.model.embed_tokens.weight), 2) == ("mp", None)  # vocab parallel
    assert _padded(_spec(model.lm_head.weight), 2) == (None, "mp")
    assert _padded(_spec(block.input_layernorm.weight), 1) == (None,)

    model, opt = _build()
    parallel.shard([model, opt], parallel.HybridConfig(dp_degree=1, sharding_degree=8, sharding_stage=1))
    assert _padded(_spec(model.lm_head.weight), 2) == (None, None)         # stage 1: parameters replicated
    moments = [v for v in jax.tree.leaves(opt._opt_state, is_leaf=lambda x: hasattr(x, "get_value"))
               if getattr(v.get_value(), "ndim", 0) == 2]
    assert moments and all("sharding" in _spec(v) for v in moments)        # ... optimizer state split

    model, opt = _build()
    parallel.shard([model, opt], parallel.HybridConfig(dp_degree=1, sharding_degree=8, sharding_stage=3))
    assert _padded(_spec(model.lm_head.weight), 2) == ("sharding", None)   # stage 3: parameters split (FSDP)
    assert model.lm_head.weight.get_value().addressable_shards[0].data.shape == (EMBED // 8, VOCAB)


def _compiled_step(layout, detail=False, scan=False):
    config = parallel.HybridConfig(**LAYOUTS[layout])
    mesh = config.mesh()
    model, opt = _build(scan)
    parallel.shard([model, opt], config, mesh=mesh)
    tokens, labels = _data()
    sharding = parallel.named_sharding(("batch", "seq"), tokens[0].shape, config, mesh)
    x, y = jax.device_put(tokens[0], sharding), jax.device_put(labels[0], sharding)
    with parallel.use_mesh(config, mesh):
        compiled = _train_step.lower(model, opt, x, y).compile()
    if detail:
        return parallel.collectives(compiled)
    param_bytes = sum(np.asarray(v).nbytes for v in model.state_dict().values())
    return parallel.collective_summary(compiled), param_bytes


def test_collectives_data_parallel():
    summary, param_bytes = _compiled_step("dp8")
    assert set(summary) == {"all-reduce"}, summary
    # every gradient (plus the scalar loss) is summed over the replicas, once
    assert param_bytes <= summary["all-reduce"]["bytes"] <= param_bytes + 64, (summary, param_bytes)


def test_collectives_fsdp_gathers_parameters():
    summary, param_bytes = _compiled_step("sharding8_stage3")
    assert summary.get("all-gather", {}).get("count", 0) > 0, summary  # split parameters are gathered to compute
    # XLA:CPU expresses the gradient reduce-scatter as an all-reduce followed by a
    # slice (GPU/TPU pipelines fuse them into reduce-scatter); it must stay one pass.
    assert summary.get("all-reduce", {}).get("bytes", 0) + summary.get("reduce-scatter", {}).get("bytes", 0) \
        <= param_bytes + 64, summary


def test_collectives_tensor_parallel_moves_activations_not_weights():
    found = _compiled_step("dp2_mp4", detail=True)
    smallest_matrix = EMBED * EMBED * 4
    gathered = [c for c in found if c.kind == "all-gather"]
    # weights stay split: nothing gathered is as large as a weight matrix
    assert all(c.bytes < smallest_matrix for c in gathered), gathered
    assert sum(c.kind == "all-reduce" for c in found) >= 2  # row-parallel outputs, replicated-weight grads


def test_stacked_layers_stay_on_their_stage():
    model, opt = _build(scan=True)
    parallel.shard([model, opt], parallel.HybridConfig(**LAYOUTS["pp2_dp4_gpipe"]))
    gate = model.model.layers.block.mlp.gate_proj.weight.get_value()                 # (layers, embed, mlp)
    assert _padded(gate.sharding.spec, 3) == ("pp", None, None)
    assert gate.addressable_shards[0].data.shape == (CONFIG.num_hidden_layers // 2,) + gate.shape[1:]

    model, opt = _build(scan=True)
    parallel.shard([model, opt], parallel.HybridConfig(dp_degree=2, mp_degree=4))  # no pp: every layer everywhere
    assert _padded(_spec(model.model.layers.block.mlp.gate_proj.weight), 3) == (None, None, "mp")

    # GPipe reads each stage's layers where they are stored: no weight moves between devices
    found = _compiled_step("pp2_dp4_gpipe", detail=True, scan=True)
    one_stage_matrix = (CONFIG.num_hidden_layers // 2) * EMBED * CONFIG.intermediate_size * 4
    assert not [c for c in found if c.kind == "all-to-all"], found
    assert all(c.bytes < one_stage_matrix for c in found if c.kind == "all-gather"), found


def test_config_errors_name_the_fix():
    with pytest.raises(ValueError, match="device count"):
        parallel.HybridConfig(dp_degree=3, mp_degree=2).mesh()
    with pytest.raises(ValueError, match="sharding_stage"):
        parallel.HybridConfig(sharding_stage=4)
    with pytest.raises(ValueError, match="order"):
        parallel.HybridConfig(order=("dp", "mp"))
    with pytest.raises(TypeError, match="HybridConfig"):
        parallel.shard(nn.Linear(2, 2), {"dp_degree": 8})
