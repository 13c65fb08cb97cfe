"""LLMEngine serves every llama-family preset in bf16 and with weight-only int8 / int4 weights.

The reference is each model's own full forward (no cache), greedy: the engine
(paged cache, with and without prompt-lookup speculation) must give exactly
those tokens, and a bf16 model keeps a bf16 cache (half the bytes per block).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pdx import text
from pdx.models.llama import LlamaConfig, LlamaForCausalLM, LLMEngine, SamplingParams, SpeculativeConfig
from pdx.quantization import weight_only_quantize

MAX_LEN = 64


@pytest.fixture(scope="module")
def tok():
    return text.train_bpe(text.bundled_corpus()[:40], vocab_size=320)


def reference(model, ids, n, eos):
    run = jax.jit(lambda x: model(x)[0])
    ids, out = list(ids), []
    for _ in range(n):
        padded = np.zeros((1, MAX_LEN), np.int32)
        padded[0, :len(ids)] = ids
        token = int(np.argmax(np.asarray(run(jnp.asarray(padded))[len(ids) - 1], np.float32)))
        if token == eos:
            break
        out.append(token)
        ids.append(token)
    return out


@pytest.mark.parametrize("preset,variant", [("tiny", "bfloat16"), ("tiny", "int8"), ("tiny", "int4"),
                                            ("qwen2-tiny", "bfloat16"), ("mistral-tiny", "int4")])
def test_engine_greedy_equals_the_models_forward(preset, variant, tok):
    model = LlamaForCausalLM(LlamaConfig.from_preset(preset, vocab_size=320, max_position_embeddings=MAX_LEN), rngs=0)
    if variant == "bfloat16":
        model.bfloat16()
    elif variant != "float32":
        weight_only_quantize(model, f"weight_only_{variant}", group_size=16 if variant == "int4" else -1)
    model.eval()
    prompts = [tok.encode(" ".join(doc.split()[:10]))[:30] for doc in text.bundled_corpus()[:3]]
    spec = SpeculativeConfig("ngram", 3) if variant in ("int8", "bfloat16") else None
    engine = LLMEngine(model, tok, max_slots=4, max_len=MAX_LEN, block_size=8, speculative=spec)
    try:
        outs = [engine.generate(p, SamplingParams(max_tokens=6, temperature=0))[0] for p in prompts]
        c = model.config
        per_block = 2 * c.num_hidden_layers * 8 * c.num_key_value_heads * c.head_dim
        assert engine.kv_usage()["block_bytes"] == per_block * (2 if variant == "bfloat16" else 4)
    finally:
        engine.close()
    for p, out in zip(prompts, outs):
        assert out == reference(model, p, 6, tok.eos_token_id), (preset, variant)
