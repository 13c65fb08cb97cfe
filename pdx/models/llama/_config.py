"""LlamaConfig and its presets."""

from __future__ import annotations

import dataclasses

from pdx._config_check import (MAX_EXPERTS, MAX_HEADS, MAX_HIDDEN, MAX_INTERMEDIATE, MAX_LAYERS, MAX_POSITIONS,
                               MAX_VOCAB, Field, check, require)

_FIELD_HELP = {
    "vocab_size": "tokens in the vocabulary",
    "hidden_size": "model width (embedding size)",
    "intermediate_size": "SwiGLU hidden width",
    "num_hidden_layers": "decoder layers",
    "num_attention_heads": "query heads",
    "num_key_value_heads": "key/value heads (< num_attention_heads = grouped-query attention); None = same",
    "max_position_embeddings": "longest sequence (KV-cache size for generation)",
    "rms_norm_eps": "RMSNorm epsilon",
    "rope_theta": "RoPE base frequency",
    "tie_word_embeddings": "share the embedding matrix with the LM head",
    "scan_layers": "store the decoder layers stacked (pdx.nn.LayerStack: names model.layers.<name>, shape "
                   "(layers, ...)) and run them with one lax.scan (compile time independent of depth)",
    "recompute": "activation recompute policy per layer: None, 'full', 'dots', 'dots_with_no_batch_dims'",
    "attention_impl": "kernel dispatch for attention: 'auto', 'pallas', 'xla', 'cudnn'",
    "attention_bias": "biases on the q/k/v projections (Qwen2)",
    "sliding_window": "each token attends to at most this many latest tokens (Mistral); None = all",
    "model_type": "the Hugging Face architecture written on export: 'llama', 'qwen2' or 'mistral'",
    "num_experts": "> 0: a mixture-of-experts feed-forward with this many experts (experts split over 'ep')",
    "num_experts_per_tok": "experts each token is routed to (top-k)",
    "moe_intermediate_size": "hidden width of each expert (None: intermediate_size)",
    "capacity_factor": "tokens kept per expert = ceil(tokens * k / experts * factor); None = dropless",
    "router_aux_loss_coef": "weight of the load-balancing loss added by loss()",
}

MODEL_TYPES = ("llama", "qwen2", "mistral")
RECOMPUTE_POLICIES = (None, "full", "dots", "dots_with_no_batch_dims")
ATTENTION_IMPLS = ("auto", "pallas", "xla", "cudnn")

# Every field's type and range (pdx._config_check): the same rules for a LlamaConfig built in Python,
# a Hugging Face config.json and the zoo's overrides.
SCHEMA = {
    "vocab_size": Field("int", lo=1, hi=MAX_VOCAB),
    "hidden_size": Field("int", lo=2, hi=MAX_HIDDEN),
    "intermediate_size": Field("int", lo=1, hi=MAX_INTERMEDIATE),
    "num_hidden_layers": Field("int", lo=1, hi=MAX_LAYERS),
    "num_attention_heads": Field("int", lo=1, hi=MAX_HEADS),
    "num_key_value_heads": Field("int", lo=1, hi=MAX_HEADS, optional=True),
    "max_position_embeddings": Field("int", lo=1, hi=MAX_POSITIONS),
    "rms_norm_eps": Field("float", lo=0.0, hi=1.0, open_lo=True),
    "rope_theta": Field("float", lo=0.0, hi=1e12, open_lo=True),
    "tie_word_embeddings": Field("bool"),
    "scan_layers": Field("bool"),
    "recompute": Field("str", choices=RECOMPUTE_POLICIES, optional=True),
    "attention_impl": Field("str", choices=ATTENTION_IMPLS),
    "attention_bias": Field("bool"),
    "sliding_window": Field("int", lo=1, hi=MAX_POSITIONS, optional=True),
    "model_type": Field("str", choices=MODEL_TYPES),
    "num_experts": Field("int", lo=0, hi=MAX_EXPERTS),
    "num_experts_per_tok": Field("int", lo=1, hi=MAX_EXPERTS),
    "moe_intermediate_size": Field("int", lo=1, hi=MAX_INTERMEDIATE, optional=True),
    "capacity_factor": Field("float", lo=0.0, hi=1024.0, open_lo=True, optional=True),
    "router_aux_loss_coef": Field("float", lo=0.0, hi=1e3),
}


def check_config(values, *, file: str | None = None) -> None:
    """Types, ranges and cross-field rules of LlamaConfig fields (`values`: a mapping); raises ConfigError."""
    check(values, SCHEMA, file=file)
    hidden, heads = values.get("hidden_size", 4096), values.get("num_attention_heads", 32)
    kv = values.get("num_key_value_heads") or heads
    require(hidden % heads == 0, "hidden_size", hidden, f"must be divisible by num_attention_heads={heads}",
            file=file)
    require(heads % kv == 0, "num_attention_heads", heads, f"must be a multiple of num_key_value_heads={kv}",
            file=file)
    require((hidden // heads) % 2 == 0, "num_attention_heads", heads,
            f"gives head_dim={hidden // heads} (hidden_size={hidden} / heads), which must be even for RoPE", file=file)
    experts = values.get("num_experts", 0)
    if experts:
        k = values.get("num_experts_per_tok", 2)
        require(k <= experts, "num_experts_per_tok", k, f"must be in [1, num_experts={experts}]", file=file)
        require(not values.get("scan_layers", False), "scan_layers", True,
                "but mixture-of-experts layers run as a LayerList; set scan_layers=False", file=file)


@dataclasses.dataclass(frozen=True)
class LlamaConfig:
    """Hyperparameters of a LLaMA-style decoder (Hugging Face's field names).

    Example:
      >>> from pdx.models.llama import LlamaConfig
      >>> LlamaConfig.from_preset("tiny", num_hidden_layers=4).num_hidden_layers
      4
    """

    vocab_size: int = 32000
    hidden_size: int = 4096
    intermediate_size: int = 11008
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int | None = None
    max_position_embeddings: int = 2048
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = False
    scan_layers: bool = False
    recompute: str | None = None
    attention_impl: str = "auto"
    attention_bias: bool = False
    sliding_window: int | None = None
    model_type: str = "llama"
    num_experts: int = 0
    num_experts_per_tok: int = 2
    moe_intermediate_size: int | None = None
    capacity_factor: float | None = None
    router_aux_loss_coef: float = 0.01

    def __post_init__(self):
        check_config(dataclasses.asdict(self), file="LlamaConfig")
        if self.num_key_value_heads is None:
            object.__setattr__(self, "num_key_value_heads", self.num_attention_heads)

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @classmethod
    def from_preset(cls, name: str, **overrides) -> "LlamaConfig":
        """A preset ("tiny", "125m", "1b", "7b", "qwen2-tiny", "mistral-tiny", "moe-tiny") with some fields overridden."""
        if name not in PRESETS:
            raise ValueError(f"LlamaConfig.from_preset: unknown preset {name!r}; choose one of {sorted(PRESETS)}")
        unknown = sorted(set(overrides) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ValueError(f"LlamaConfig.from_preset: unknown fields {unknown}")
        return cls(**{**PRESETS[name], **overrides})

    @classmethod
    def help(cls) -> dict[str, str]:
        """Field name -> description."""
        return dict(_FIELD_HELP)

    def num_params(self) -> int:
        """Parameter count (embedding and head counted once when tied)."""
        h, i, l, v = self.hidden_size, self.intermediate_size, self.num_hidden_layers, self.vocab_size
        kv = self.num_key_value_heads * self.head_dim
        ffn = (self.num_experts * 3 * h * (self.moe_intermediate_size or i) + h * self.num_experts
               if self.num_experts else 3 * h * i)
        per_layer = h * h * 2 + h * kv * 2 + ffn + 2 * h + (h + 2 * kv if self.attention_bias else 0)
        return v * h * (1 if self.tie_word_embeddings else 2) + l * per_layer + h


# Presets override the defaults only. 1b follows TinyLlama-1.1B, 7b LLaMA-2-7B; the qwen2 and mistral
# presets are the tiny shape with those families' differences (q/k/v biases, a sliding window).
PRESETS = {
    "tiny": dict(vocab_size=256, hidden_size=64, intermediate_size=176, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256),
    "125m": dict(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                 num_attention_heads=12, num_key_value_heads=12, max_position_embeddings=2048),
    "1b": dict(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
               num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=4096),
    "7b": dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
               num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=4096),
}
PRESETS["qwen2-tiny"] = dict(PRESETS["tiny"], attention_bias=True, rope_theta=1000000.0, model_type="qwen2")
PRESETS["mistral-tiny"] = dict(PRESETS["tiny"], sliding_window=16, model_type="mistral")
PRESETS["moe-tiny"] = dict(PRESETS["tiny"], num_experts=4, num_experts_per_tok=2, moe_intermediate_size=64)
