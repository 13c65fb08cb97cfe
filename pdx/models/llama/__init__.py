"""pdx.models.llama: a LLaMA-style decoder, its presets, generation and Hugging Face weight import.

    LlamaConfig, PRESETS            hyperparameters ("tiny", "125m", "1b", "7b", "qwen2-tiny", "mistral-tiny")
    LlamaForCausalLM, LlamaModel    the network (state-dict names as Hugging Face's)
    generate                        greedy / top-k / top-p decoding with a KV cache
    LLMEngine, SamplingParams       continuous batching over a paged KV cache with prefix caching (pdx serve --llm)
    SpeculativeConfig               exact speculative decoding for LLMEngine: prompt lookup or a draft model
    hf_to_pdx, load_hf_safetensors, config_from_hf    import Hugging Face LLaMA / Qwen2 / Mistral weights
    pdx_to_hf, save_hf_pretrained, hf_config          export them (transformers loads the directory)
"""

from pdx.models.llama._config import PRESETS, LlamaConfig
from pdx.models.llama._engine import MAX_LOGPROBS, LLMEngine, SamplingParams
from pdx.models.llama._speculative import SpeculativeConfig
from pdx.models.llama._generation import generate
from pdx.models.llama._hf import config_from_hf, hf_config, hf_to_pdx, load_hf_safetensors, pdx_to_hf, save_hf_pretrained
from pdx.models.llama._model import (
    LlamaAttention,
    LlamaDecoderLayer,
    LlamaForCausalLM,
    LlamaMLP,
    LlamaModel,
    apply_rope,
    rope_tables,
)

__all__ = [
    "MAX_LOGPROBS",
    "PRESETS",
    "SamplingParams",
    "SpeculativeConfig",
    "LlamaAttention",
    "LlamaConfig",
    "LlamaDecoderLayer",
    "LlamaForCausalLM",
    "LLMEngine",
    "LlamaMLP",
    "LlamaModel",
    "apply_rope",
    "config_from_hf",
    "generate",
    "hf_config",
    "hf_to_pdx",
    "load_hf_safetensors",
    "pdx_to_hf",
    "rope_tables",
    "save_hf_pretrained",
]
