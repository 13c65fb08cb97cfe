"""Sequence (context) parallelism: sep_degree really splits the sequence.

`pdx.parallel.context_attention` (ring and all-gather) is checked against a
dense softmax attention written here in plain JAX, forward and gradients;
a llama-tiny train step under sep 2 is checked for sequence-split
activations in its compiled HLO, for less per-device temp memory, and for
the losses of one device.
"""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx import parallel
from pdx.models.llama import LlamaConfig, LlamaForCausalLM


def _dense_attention(q, k, v, *, causal, segment_ids=None, window=None):
    """softmax(q k^T / sqrt(d) + mask) v over the whole sequence, float32, heads grouped for GQA."""
    b, s, h, d = q.shape
    k = jnp.repeat(k, h // k.shape[2], axis=2)
    v = jnp.repeat(v, h // v.shape[2], axis=2)
    logits = jnp.einsum("bqhd,bkhd->bhqk", q, k, precision=jax.lax.Precision.HIGHEST) / np.sqrt(d)
    i, j = np.arange(s)[:, None], np.arange(s)[None, :]
    mask = np.ones((s, s), bool)
    if causal:
        mask &= j <= i
    if window is not None:
        mask &= i - j < window
    mask = jnp.asarray(mask)[None, None]
    if segment_ids is not None:
        mask = mask & (segment_ids[:, :, None] == segment_ids[:, None, :])[:, None]
    weights = jax.nn.softmax(jnp.where(mask, logits, -jnp.inf), axis=-1)
    return jnp.einsum("bhqk,bkhd->bqhd", weights, v, precision=jax.lax.Precision.HIGHEST)


def _value_and_grads(attention, q, k, v, cotangent):
    out, pullback = jax.vjp(attention, q, k, v)
    return (out,) + pullback(cotangent)


# (sep, impl, causal, extras): both implementations at sep 2 and 4, causal and not;
# packed documents and a sliding window ride along on some cases.
CASES = [
    (2, "ring", False, {}),
    (2, "ring", True, {"window": 5}),
    (2, "allgather", False, {"segments": True}),
    (2, "allgather", True, {}),
    (4, "ring", False, {}),
    (4, "ring", True, {"segments": True}),
    (4, "allgather", False, {}),
    (4, "allgather", True, {"segments": True, "window": 6}),
]


def test_context_attention_equals_unsharded_attention():
    rng = np.random.default_rng(0)
    b, s, h, kv, d = 2, 16, 4, 2, 8  # grouped-query: 2 query heads per kv head
    q, cot = (jnp.asarray(rng.normal(size=(b, s, h, d)), jnp.float32) for _ in range(2))
    k, v = (jnp.asarray(rng.normal(size=(b, s, kv, d)), jnp.float32) for _ in range(2))
    seg = jnp.asarray(np.repeat([[0] * 5 + [1] * 7 + [2] * 4], b, axis=0), jnp.int32)
    for sep, impl, causal, extras in CASES:
        config = parallel.HybridConfig(dp_degree=8 // sep, sep_degree=sep, context_parallel=impl)
        mesh = config.mesh()
        options = dict(causal=causal, segment_ids=seg if extras.get("segments") else None,
                       window=extras.get("window"))

        def sharded(q, k, v, options=options, config=config, mesh=mesh):
            return parallel.context_attention(q, k, v, config=config, mesh=mesh, **options)

        got = jax.jit(_value_and_grads, static_argnums=0)(sharded, q, k, v, cot)
        want = _value_and_grads(lambda q, k, v, options=options: _dense_attention(q, k, v, **options), q, k, v, cot)
        for name, g, w in zip(("out", "dq", "dk", "dv"), got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), atol=1e-5, rtol=1e-5,
                                       err_msg=f"sep={sep} impl={impl} causal={causal} {extras}: {name}")
        if impl == "ring" and not extras:
            # the ring passes K/V with collective-permutes and never gathers them
            kinds = set(parallel.collective_summary(jax.jit(sharded).lower(q, k, v).compile()))
            assert "collective-permute" in kinds and "all-gather" not in kinds, (sep, causal, kinds)


def test_context_attention_bad_input():
    config = parallel.HybridConfig(dp_degree=2, sep_degree=4)
    x = jnp.ones((2, 12, 4, 8))
    with pytest.raises(ValueError, match=r"seq_len=12 must be divisible by 2\*sep = 2\*4 = 8"):
        parallel.context_attention(x, x, x, causal=True, config=config)
    with pytest.raises(ValueError, match="seq_len=10 must be divisible by sep = 4"):
        parallel.context_attention(x[:, :10], x[:, :10], x[:, :10], causal=True, impl="allgather", config=config)
    with pytest.raises(ValueError, match="num_heads=4 must be a multiple of num_kv_heads=3"):
        parallel.context_attention(x, x[:, :, :3], x[:, :, :3], config=config)
    with pytest.raises(ValueError, match="no mesh is active"):
        parallel.context_attention(x, x, x)
    with pytest.raises(ValueError, match="context_parallel must be one of"):
        parallel.HybridConfig(context_parallel="ulysses")
    assert not parallel.context_parallel_active()
    with parallel.use_mesh(config):
        assert parallel.context_parallel_active()
    with parallel.use_mesh(parallel.HybridConfig(dp_degree=8)):
        assert not parallel.context_parallel_active()
    assert parallel.constrain(x, ("batch", "seq", "embed")) is x  # no mesh: the identity


CONFIG = LlamaConfig.from_preset("tiny", num_hidden_layers=2, vocab_size=64, max_position_embeddings=1024)
LONG = 1024  # activations (and the one-device attention's S x S scores) dominate the temp memory


@pdx.jit
def _train_step(model, opt, tokens, labels):
    loss, grads = pdx.value_and_grad(lambda m: m.loss(tokens, labels, chunk_size=None))(model)
    opt.step(grads)
    return loss


def _setup(sep, impl, seq, batch, devices, mp=1, pp=1, sequence_parallel=False):
    pdx.seed(3)
    model = LlamaForCausalLM(CONFIG)
    opt = pdx.optimizer.Momentum(learning_rate=0.1, momentum=0.9, parameters=model)
    config = parallel.HybridConfig(dp_degree=devices // (sep * mp * pp), sep_degree=sep, mp_degree=mp,
                                   pp_degree=pp, accumulate_steps=pp, context_parallel=impl,
                                   sequence_parallel=sequence_parallel)
    mesh = config.mesh(jax.devices()[:devices])
    parallel.shard([model, opt], config, mesh=mesh)
    rng = np.random.default_rng(seq)
    tokens = rng.integers(0, CONFIG.vocab_size, (3, batch, seq + 1)).astype(np.int32)
    sharding = parallel.named_sharding(("batch", "seq"), (batch, seq), config, mesh)
    data = [(jax.device_put(t[:, :-1], sharding), jax.device_put(t[:, 1:], sharding)) for t in tokens]
    return model, opt, config, mesh, data


def test_sep2_splits_activations_and_memory():
    temp, losses = {}, {}
    for sep, impl in [(1, "ring"), (2, "ring"), (2, "allgather")]:
        model, opt, config, mesh, data = _setup(sep, impl, LONG, 1, sep)
        with parallel.use_mesh(config, mesh):
            compiled = _train_step.lower(model, opt, *data[0]).compile()
            losses[sep, impl] = float(_train_step(model, opt, *data[0]))
        temp[sep, impl] = compiled.memory_analysis().temp_size_in_bytes
        # hidden states between blocks, as each device holds them: (batch, seq / sep, hidden)
        hidden = set(re.findall(rf"f32\[1,(\d+),{CONFIG.hidden_size}\]", compiled.as_text()))
        assert hidden == {str(LONG // sep)}, (sep, impl, hidden)
    for key in [(2, "ring"), (2, "allgather")]:
        assert temp[key] < temp[1, "ring"] / 2, temp  # benchmarks/context_parallel.py measures it
        np.testing.assert_allclose(losses[key], losses[1, "ring"], rtol=1e-5)


# with mp > 1 the (kv) heads stay split over "mp" inside the context-parallel attention;
# with pp > 1 it runs inside the pipeline's stage vmap
@pytest.mark.parametrize("sep,impl,mp,pp", [(2, "ring", 1, 1), (2, "allgather", 2, 1), (4, "ring", 2, 1),
                                            (2, "ring", 1, 2)])
def test_sep_train_steps_equal_one_device(sep, impl, mp, pp):
    def run(sep, impl, devices, mp=1, pp=1):
        model, opt, config, mesh, data = _setup(sep, impl, 32, 4, devices, mp, pp)
        with parallel.use_mesh(config, mesh):
            losses = [float(_train_step(model, opt, x, y)) for x, y in data]
        return losses, {k: np.asarray(v) for k, v in model.state_dict().items()}

    ref_losses, ref_params = run(1, "ring", 1)
    losses, params = run(sep, impl, 8, mp, pp)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    for name, value in params.items():
        err = np.linalg.norm(value - ref_params[name]) / max(np.linalg.norm(ref_params[name]), 1e-12)
        assert err < 1e-5, f"sep={sep} mp={mp} pp={pp} {impl}: {name} differs by {err:.2e} (relative)"


def test_megatron_sequence_parallel_splits_the_sequence_over_mp():
    """HybridConfig(sequence_parallel=True): between blocks each tensor-parallel rank holds seq / mp tokens."""
    def run(devices, **kw):
        model, opt, config, mesh, data = _setup(1, "ring", 32, 4, devices, **kw)
        with parallel.use_mesh(config, mesh):
            text = _train_step.lower(model, opt, *data[0]).compile().as_text()
            losses = [float(_train_step(model, opt, x, y)) for x, y in data]
        return losses, set(re.findall(rf"f32\[1,(\d+),{CONFIG.hidden_size}\]", text))

    ref_losses, _ = run(1)
    plain_losses, plain_hidden = run(8, mp=2)
    losses, hidden = run(8, mp=2, sequence_parallel=True)
    assert parallel.HybridConfig(sequence_parallel=True, sep_degree=2).axis_rules()["seq"] == ("sep", "mp")
    assert "16" in hidden and "16" not in plain_hidden, (hidden, plain_hidden)  # (batch/dp, seq/mp, hidden)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    np.testing.assert_allclose(plain_losses, ref_losses, rtol=1e-5)


def test_transformer_layers_constrain_the_sequence():
    """pdx.nn's Transformer encoder/decoder layers keep (batch, seq, embed) activations split over sep."""
    pdx.seed(0)
    enc = pdx.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0)
    dec = pdx.nn.TransformerDecoderLayer(16, 2, 32, dropout=0.0)
    x = jnp.asarray(np.random.default_rng(0).normal(size=(2, 8, 16)), jnp.float32)
    want = dec(enc(x), x)
    config = parallel.HybridConfig(dp_degree=2, sep_degree=4)
    mesh = config.mesh()
    sharded = jax.device_put(x, parallel.named_sharding(("batch", "seq", "embed"), x.shape, config, mesh))
    with parallel.use_mesh(config, mesh):
        got = pdx.jit(lambda enc, dec, x: dec(enc(x), x))(enc, dec, sharded)
    assert tuple(got.sharding.spec)[:2] == ("dp", "sep"), got.sharding
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=1e-5)
