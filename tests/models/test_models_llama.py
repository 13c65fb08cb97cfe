"""pdx.models.llama against Hugging Face transformers' LlamaForCausalLM (torch, CPU).

The HF model is built from a local config with random weights (no download),
saved as safetensors, and imported with load_hf_safetensors: logits and greedy
generations must agree.
"""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx.models.llama import LlamaConfig, LlamaForCausalLM, hf_to_pdx, load_hf_safetensors

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


def _stacked_names(state):
    """A loop-mode state dict laid out as a scan-mode one: model.layers.<i>.<name> -> model.layers.<name>."""
    out, groups = {}, {}
    for name, value in state.items():
        match = re.fullmatch(r"model\.layers\.(\d+)\.(.+)", name)
        if match:
            groups.setdefault(match[2], {})[int(match[1])] = np.asarray(value)
        else:
            out[name] = np.asarray(value)
    for tail, by_index in groups.items():
        out[f"model.layers.{tail}"] = np.stack([by_index[i] for i in sorted(by_index)])
    return out


@pytest.mark.parametrize("tie", [False, True])
def test_scan_mode_imports_hf_weights_and_matches_transformers(tmp_path, tie):
    hf = _hf_model(tie=tie, layers=3)
    model = _imported(hf, tmp_path, tie=tie, layers=3, scan_layers=True)
    q = model.state_dict()["model.layers.self_attn.q_proj.weight"]
    assert q.shape == (3, 64, 64) and "model.layers.0.self_attn.q_proj.weight" not in model.state_dict()
    np.testing.assert_array_equal(np.asarray(q[2]), hf.state_dict()["model.layers.2.self_attn.q_proj.weight"].numpy().T)
    ids = np.random.default_rng(0).integers(0, 96, (2, 11))
    with torch.no_grad():
        ref = hf(torch.tensor(ids)).logits.numpy()
    got = np.asarray(model(jnp.asarray(ids, jnp.int32)))
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-5
    if not tie:  # the stacked KV cache through one scan over the layers
        prompt = np.array([[5, 17, 42, 8], [60, 1, 2, 3]])
        with torch.no_grad():
            greedy = hf.generate(torch.tensor(prompt), max_new_tokens=5, do_sample=False, pad_token_id=0).numpy()
        np.testing.assert_array_equal(np.asarray(model.generate(jnp.asarray(prompt), max_new_tokens=5)), greedy)


def test_hf_to_pdx_stacking_names_a_missing_layer():
    state = {f"model.layers.{i}.input_layernorm.weight": np.ones(4, np.float32) for i in (0, 2)}
    with pytest.raises(ValueError, match=r"missing for layers \[1\] of 3"):
        hf_to_pdx(state, stack_layers=True)
    state["model.layers.1.input_layernorm.weight"] = np.full(4, 2.0, np.float32)
    stacked = hf_to_pdx(state, stack_layers=True)["model.layers.input_layernorm.weight"]
    np.testing.assert_array_equal(stacked[:, 0], [1.0, 2.0, 1.0])


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
    if options.get("scan_layers"):  # same initial weights, stored stacked
        for name, value in _stacked_names(loop.state_dict()).items():
            np.testing.assert_array_equal(np.asarray(other.state_dict()[name]), value, err_msg=name)
        grads_a = _stacked_names(grads_a)
    assert set(grads_a) == set(grads_b)
    for name in grads_a:
        np.testing.assert_allclose(np.asarray(grads_b[name]), np.asarray(grads_a[name]), rtol=2e-5, atol=1e-7,
                                   err_msg=name)


def test_scanned_program_size_does_not_grow_with_depth():
    ids = jnp.zeros((1, 8), jnp.int32)

    def lines(layers, scan):
        model = LlamaForCausalLM(_pdx_config(layers=layers, scan_layers=scan))
        opt = pdx.optimizer.AdamW(learning_rate=1e-3, parameters=model)

        @pdx.jit
        def step(m, opt, x):
            loss, grads = _loss_and_grads(m, x)
            opt.step(grads)
            return loss

        return step.lower(model, opt, ids).as_text().count("\n")

    # Stored stacked, a layer more changes only array shapes: forward, backward and the
    # AdamW update are the same program; a loop adds a block's forward, backward and update.
    assert lines(6, True) == lines(2, True)
    assert lines(6, False) - lines(2, False) > 4 * 200


def test_config_errors():
    with pytest.raises(ValueError, match="num_key_value_heads"):
        LlamaConfig(hidden_size=64, num_attention_heads=4, num_key_value_heads=3)
    with pytest.raises(ValueError, match="unknown preset"):
        LlamaConfig.from_preset("70b")
    with pytest.raises(ValueError, match="max_position_embeddings"):
        LlamaForCausalLM(_pdx_config()).generate(jnp.ones((1, 60), jnp.int32), max_new_tokens=10)
    assert LlamaConfig.from_preset("7b").num_params() == pytest.approx(6.74e9, rel=0.01)


@pytest.mark.parametrize("chunk_size", [None, 32])
def test_loss_matches_transformers_with_ignored_labels(tmp_path, chunk_size):
    hf = _hf_model()
    model = _imported(hf, tmp_path)
    ids = np.random.default_rng(2).integers(0, 96, (2, 10))
    labels = ids.copy()
    labels[0, 4:7] = -100  # padding-like positions
    with torch.no_grad():  # HF shifts inside: position t predicts labels[t + 1]
        ref = float(hf(torch.tensor(ids), labels=torch.tensor(labels)).loss)
    shifted = np.concatenate([labels[:, 1:], np.full((2, 1), -100)], axis=1)
    got = float(model.loss(jnp.asarray(ids, jnp.int32), jnp.asarray(shifted, jnp.int32), chunk_size=chunk_size))
    np.testing.assert_allclose(got, ref, rtol=1e-5)
