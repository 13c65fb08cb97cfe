"""pdx.models.llama: a LLaMA-style decoder, its presets, generation and Hugging Face weight import.

    LlamaConfig, PRESETS            hyperparameters ("tiny", "125m", "1b", "7b")
    LlamaForCausalLM, LlamaModel    the network (state-dict names as Hugging Face's)
    generate                        greedy / top-k / top-p decoding with a KV cache
    hf_to_pdx, load_hf_safetensors  import Hugging Face LLaMA weights
"""

from pdx.models.llama._config import PRESETS, LlamaConfig
from pdx.models.llama._generation import generate
from pdx.models.llama._hf import hf_to_pdx, load_hf_safetensors
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
    "PRESETS",
    "LlamaAttention",
    "LlamaConfig",
    "LlamaDecoderLayer",
    "LlamaForCausalLM",
    "LlamaMLP",
    "LlamaModel",
    "apply_rope",
    "generate",
    "hf_to_pdx",
    "load_hf_safetensors",
    "rope_tables",
]
