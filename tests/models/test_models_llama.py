"""pdx.models.llama against Hugging Face transformers' LlamaForCausalLM (torch, CPU).

The HF model is built from a local config with random weights (no download),
saved as safetensors, and imported with load_hf_safetensors: logits and greedy
generations must agree.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx.models.llama import LlamaConfig, LlamaForCausalLM, load_hf_safetensors

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
safetensors_torch = pytest.importorskip("safetensors.torch")


def _hf_model(tie=False, layers=2):
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=96, hidden_size=64, intermediate_size=160, num_hidden_layers=layers,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                   rms_norm_eps=1e-6, rope_theta=10000.0, tie_word_embeddings=tie,
                                   attn_implementation="eager")
    model = transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():  # HF zero-inits nothing here, but make the norms non-trivial too
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model


def _pdx_config(tie=False, layers=2, **kw):
    return LlamaConfig(vocab_size=96, hidden_size=64, intermediate_size=160, num_hidden_layers=layers,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                       tie_word_embeddings=tie, **kw)


def _imported(hf, tmp_path, tie=False, **kw):
    path = tmp_path / "model.safetensors"
    state = {k: v.contiguous() for k, v in hf.state_dict().items() if not (tie and k == "lm_head.weight")}
    safetensors_torch.save_file(state, str(path))
    model = LlamaForCausalLM(_pdx_config(tie=tie, **kw))
    load_hf_safetensors(model, str(path))
    return model


@pytest.mark.parametrize("tie", [False, True])
def test_logits_match_transformers(tmp_path, tie):
    hf = _hf_model(tie=tie)
    model = _imported(hf, tmp_path, tie=tie)
    ids = np.random.default_rng(0).integers(0, 96, (2, 11))
    with torch.no_grad():
        ref = hf(torch.tensor(ids)).logits.numpy()
    got = np.asarray(model(jnp.asarray(ids, jnp.int32)))
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-5


def test_greedy_generation_matches_transformers(tmp_path):
    hf = _hf_model()
    model = _imported(hf, tmp_path)
    prompt = np.array([[5, 17, 42, 8], [60, 1, 2, 3]])
    with torch.no_grad():
        ref = hf.generate(torch.tensor(prompt), max_new_tokens=6, do_sample=False, pad_token_id=0).numpy()
    got = np.asarray(model.generate(jnp.asarray(prompt), max_new_tokens=6))
    np.testing.assert_array_equal(got, ref)


def test_sampling_limits_reduce_to_greedy():
    model = LlamaForCausalLM(_pdx_config())
    prompt = jnp.array([[3, 4, 5]])
    greedy = model.generate(prompt, max_new_tokens=5)
    top1 = model.generate(prompt, max_new_tokens=5, decode_strategy="sampling", top_k=1, key=jax.random.key(3))
    nucleus = model.generate(prompt, max_new_tokens=5, decode_strategy="sampling", top_p=1e-6, key=jax.random.key(4))
    np.testing.assert_array_equal(top1, greedy)
    np.testing.assert_array_equal(nucleus, greedy)
    a = model.generate(prompt, max_new_tokens=5, decode_strategy="sampling", key=jax.random.key(5))
    b = model.generate(prompt, max_new_tokens=5, decode_strategy="sampling", key=jax.random.key(5))
    np.testing.assert_array_equal(a, b)  # a key fixes the sample


def _loss_and_grads(model, ids):
    def loss_fn(m):
        logits = m(ids[:, :-1])
        return pdx.nn.functional.cross_entropy(logits.reshape([-1, logits.shape[-1]]), ids[:, 1:].reshape([-1]))

    return pdx.value_and_grad(loss_fn)(model)


@pytest.mark.parametrize("options", [dict(scan_layers=True), dict(recompute="full"),
                                     dict(scan_layers=True, recompute="dots")])
def test_scan_and_recompute_change_nothing_numerically(options):
    ids = jnp.asarray(np.random.default_rng(1).integers(0, 96, (2, 9)), jnp.int32)
    pdx.seed(3)
    loop = LlamaForCausalLM(_pdx_config(layers=3))
    pdx.seed(3)
    other = LlamaForCausalLM(_pdx_config(layers=3, **options))
    loss_a, grads_a = _loss_and_grads(loop, ids)
    loss_b, grads_b = _loss_and_grads(other, ids)
    np.testing.assert_allclose(float(loss_b), float(loss_a), rtol=1e-6)
    assert set(grads_a) == set(grads_b)
    for name in grads_a:
        np.testing.assert_allclose(np.asarray(grads_b[name]), np.asarray(grads_a[name]), rtol=2e-5, atol=1e-7,
                                   err_msg=name)


def test_scanned_program_size_does_not_grow_with_depth():
    ids = jnp.zeros((1, 8), jnp.int32)

    def lines(layers, scan):
        model = LlamaForCausalLM(_pdx_config(layers=layers, scan_layers=scan))
        step = pdx.jit(lambda m, x: _loss_and_grads(m, x)[0])
        return step.lower(model, ids).as_text().count("\n")

    # With scan, a layer more only adds the stacking of its weights (a few ops per
    # parameter); without, it adds the whole forward and backward of a block.
    per_layer_scan = (lines(6, True) - lines(2, True)) / 4
    per_layer_loop = (lines(6, False) - lines(2, False)) / 4
    assert per_layer_scan < 0.25 * per_layer_loop, (per_layer_scan, per_layer_loop)


def test_config_errors():
    with pytest.raises(ValueError, match="num_key_value_heads"):
        LlamaConfig(hidden_size=64, num_attention_heads=4, num_key_value_heads=3)
    with pytest.raises(ValueError, match="unknown preset"):
        LlamaConfig.from_preset("70b")
    with pytest.raises(ValueError, match="max_position_embeddings"):
        LlamaForCausalLM(_pdx_config()).generate(jnp.ones((1, 60), jnp.int32), max_new_tokens=10)
    assert LlamaConfig.from_preset("7b").num_params() == pytest.approx(6.74e9, rel=0.01)
