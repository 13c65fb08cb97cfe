"""LLaMA, Qwen2- and Mistral-style configs: exported to Hugging Face and loaded by transformers with the same
logits; packed documents (segment ids) give the logits of each document run alone.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pdx
from pdx import text
from pdx.models.llama import (
    LlamaConfig,
    LlamaForCausalLM,
    config_from_hf,
    load_hf_safetensors,
    save_hf_pretrained,
)

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def _randomized(model, seed=0):
    """Give every parameter (biases and norms too) random values so nothing is trivially zero or one."""
    rng = np.random.default_rng(seed)
    model.set_state_dict({k: (rng.standard_normal(v.shape) * 0.05 + (1.0 if "norm" in k else 0.0)).astype(np.float32)
                          for k, v in model.state_dict().items()})
    return model


@pytest.mark.parametrize("preset", ["tiny", "qwen2-tiny", "mistral-tiny"])
def test_export_loads_in_transformers_with_the_same_logits(preset, tmp_path):
    config = LlamaConfig.from_preset(preset, vocab_size=96, max_position_embeddings=64)
    model = _randomized(LlamaForCausalLM(config, rngs=0))
    tok = text.train_bpe(text.bundled_corpus()[:30], vocab_size=300)
    save_hf_pretrained(model, tmp_path / "hf", tokenizer=tok)
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path / "hf"), dtype=torch.float32).eval()
    assert type(hf).__name__ == {"tiny": "LlamaForCausalLM", "qwen2-tiny": "Qwen2ForCausalLM",
                                 "mistral-tiny": "MistralForCausalLM"}[preset]
    ids = np.random.default_rng(1).integers(0, 96, (2, 40))  # longer than mistral-tiny's window of 16
    with torch.no_grad():
        ref = hf(torch.tensor(ids)).logits.numpy()
    got = np.asarray(model(jnp.asarray(ids, jnp.int32)))
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    assert transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))("abc")["input_ids"] == tok.encode("abc")

    # the family's feature is real: without it the logits differ
    if preset != "tiny":
        plain = LlamaForCausalLM(dataclasses.replace(config, sliding_window=None, attention_bias=False,
                                                     model_type="llama"), rngs=0)
        plain.set_state_dict({k: v for k, v in model.state_dict().items() if k in plain.state_dict()})
        assert np.abs(np.asarray(plain(jnp.asarray(ids, jnp.int32))) - got).max() > 1e-3

    # and it comes back: config.json -> LlamaConfig, safetensors -> the same parameters
    import json

    again = LlamaForCausalLM(config_from_hf(json.loads((tmp_path / "hf" / "config.json").read_text())))
    load_hf_safetensors(again, str(tmp_path / "hf"))
    np.testing.assert_array_equal(np.asarray(again(jnp.asarray(ids, jnp.int32))), got)


def test_export_of_scanned_layers_and_bad_configs(tmp_path):
    config = LlamaConfig.from_preset("tiny", vocab_size=64, scan_layers=True)
    model = _randomized(LlamaForCausalLM(config, rngs=0))
    save_hf_pretrained(model, tmp_path / "hf")
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path / "hf"), dtype=torch.float32).eval()
    ids = np.arange(24).reshape(2, 12) % 64
    with torch.no_grad():
        ref = hf(torch.tensor(ids)).logits.numpy()
    np.testing.assert_allclose(np.asarray(model(jnp.asarray(ids, jnp.int32))), ref, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="Qwen2 always has q/k/v biases"):
        save_hf_pretrained(LlamaForCausalLM(LlamaConfig.from_preset("tiny", model_type="qwen2")), tmp_path / "x")
    with pytest.raises(ValueError, match="model_type must be one of"):
        LlamaConfig.from_preset("tiny", model_type="gpt2")


def test_packed_documents_do_not_attend_to_each_other():
    config = LlamaConfig.from_preset("tiny", vocab_size=64, max_position_embeddings=64)
    model = _randomized(LlamaForCausalLM(config, rngs=0), seed=2)
    rng = np.random.default_rng(0)
    docs = [list(rng.integers(1, 64, n)) for n in (7, 12, 3, 20, 9, 5)]
    tokens, segments, positions = text.pack_documents(docs, 24)
    packed = np.asarray(model(jnp.asarray(tokens), positions=jnp.asarray(positions), segment_ids=jnp.asarray(segments)))
    # each document (piece) alone, at positions from 0
    for r in range(tokens.shape[0]):
        for s in range(1, segments[r].max() + 1):
            cols = np.flatnonzero(segments[r] == s)
            alone = np.asarray(model(jnp.asarray(tokens[r, cols][None])))[0]
            np.testing.assert_allclose(packed[r, cols], alone, rtol=1e-5, atol=1e-5)

    # the loss over packed rows with lm_targets equals the per-document losses pooled
    labels = text.lm_targets(tokens, segments)
    loss = float(model.loss(jnp.asarray(tokens), jnp.asarray(labels), positions=jnp.asarray(positions),
                            segment_ids=jnp.asarray(segments), chunk_size=None))
    logp = jax.nn.log_softmax(jnp.asarray(packed), -1)
    keep = labels != -100
    want = -np.asarray(jnp.take_along_axis(logp, jnp.asarray(np.where(keep, labels, 0))[..., None], -1))[..., 0][keep].mean()
    np.testing.assert_allclose(loss, want, rtol=1e-5)
