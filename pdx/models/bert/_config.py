"""BertConfig, ErnieConfig and their presets."""

from __future__ import annotations

import dataclasses

from pdx._config_check import (MAX_HEADS, MAX_HIDDEN, MAX_INTERMEDIATE, MAX_LAYERS, MAX_POSITIONS, MAX_VOCAB, Field,
                               check, require)

_FIELD_HELP = {
    "vocab_size": "tokens in the vocabulary",
    "hidden_size": "model width (embedding size)",
    "num_hidden_layers": "encoder layers",
    "num_attention_heads": "attention heads per layer",
    "intermediate_size": "feed-forward hidden width",
    "hidden_act": "feed-forward activation: 'gelu' (erf), 'gelu_new' (tanh form) or 'relu'",
    "hidden_dropout_prob": "dropout after the embeddings, attention and feed-forward blocks",
    "attention_probs_dropout_prob": "dropout on the attention weights",
    "max_position_embeddings": "longest sequence (rows of the position table)",
    "type_vocab_size": "segment (token type) ids; 0 = no token-type embedding (ERNIE only)",
    "layer_norm_eps": "LayerNorm epsilon",
    "pad_token_id": "padding id: keys with this id are masked when no attention_mask is given",
    "initializer_range": "std of the normal initializer of embeddings and Linear weights",
    "use_task_id": "ERNIE 3.0: add a task-type embedding (task_type_embeddings)",
    "task_type_vocab_size": "ERNIE 3.0: rows of the task-type table",
    "task_id": "ERNIE 3.0: the task id used when forward() gets no task_type_ids",
}

ACTIVATIONS = ("gelu", "gelu_new", "relu")
MAX_TYPE_VOCAB = 1 << 16

# Every field's type and range (pdx._config_check): the same rules for a config built in Python and a
# Hugging Face / PaddleNLP config.json.
SCHEMA = {
    "vocab_size": Field("int", lo=1, hi=MAX_VOCAB),
    "hidden_size": Field("int", lo=1, hi=MAX_HIDDEN),
    "num_hidden_layers": Field("int", lo=1, hi=MAX_LAYERS),
    "num_attention_heads": Field("int", lo=1, hi=MAX_HEADS),
    "intermediate_size": Field("int", lo=1, hi=MAX_INTERMEDIATE),
    "hidden_act": Field("str", choices=ACTIVATIONS),
    "hidden_dropout_prob": Field("float", lo=0.0, hi=0.999),
    "attention_probs_dropout_prob": Field("float", lo=0.0, hi=0.999),
    "max_position_embeddings": Field("int", lo=1, hi=MAX_POSITIONS),
    "type_vocab_size": Field("int", lo=0, hi=MAX_TYPE_VOCAB),
    "layer_norm_eps": Field("float", lo=0.0, hi=1.0, open_lo=True),
    "pad_token_id": Field("int", lo=0, hi=MAX_VOCAB - 1),
    "initializer_range": Field("float", lo=0.0, hi=10.0),
    "use_task_id": Field("bool"),
    "task_type_vocab_size": Field("int", lo=1, hi=MAX_TYPE_VOCAB),
    "task_id": Field("int", lo=0, hi=MAX_TYPE_VOCAB - 1),
}


def check_config(values, *, file: str | None = None) -> None:
    """Types, ranges and cross-field rules of BertConfig / ErnieConfig fields; raises ConfigError."""
    check(values, SCHEMA, file=file)
    hidden, heads = values.get("hidden_size", 768), values.get("num_attention_heads", 12)
    require(hidden % heads == 0, "hidden_size", hidden, f"must be divisible by num_attention_heads={heads}",
            file=file)
    vocab, pad = values.get("vocab_size", 30522), values.get("pad_token_id", 0)
    require(pad < vocab, "pad_token_id", pad, f"must be in [0, vocab_size={vocab})", file=file)
    if values.get("use_task_id", False):
        types, task = values.get("task_type_vocab_size", 3), values.get("task_id", 0)
        require(task < types, "task_id", task, f"must be in [0, task_type_vocab_size={types})", file=file)


@dataclasses.dataclass(frozen=True)
class BertConfig:
    """Hyperparameters of a BERT encoder (Hugging Face's field names; defaults are bert-base-uncased).

    Example:
      >>> from pdx.models.bert import BertConfig
      >>> BertConfig.from_preset("bert-tiny").hidden_size
      128
    """

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    initializer_range: float = 0.02

    def __post_init__(self):
        check_config(dataclasses.asdict(self), file=type(self).__name__)

    def num_params(self) -> int:
        """Parameters of the encoder (embeddings and layers; the pooler and task heads not counted)."""
        h, i = self.hidden_size, self.intermediate_size
        embeddings = (self.vocab_size + self.max_position_embeddings + self.type_vocab_size) * h + 2 * h
        if getattr(self, "use_task_id", False):
            embeddings += self.task_type_vocab_size * h
        per_layer = 4 * h * h + 4 * h + 2 * h * i + i + h + 4 * h
        return embeddings + self.num_hidden_layers * per_layer

    @classmethod
    def from_preset(cls, name: str, **overrides):
        """A preset (see `PRESETS`) with some fields overridden."""
        if name not in PRESETS or PRESETS[name][0] is not cls:
            mine = sorted(k for k, (c, _) in PRESETS.items() if c is cls)
            raise ValueError(f"{cls.__name__}.from_preset: unknown preset {name!r}; choose one of {mine}")
        unknown = sorted(set(overrides) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ValueError(f"{cls.__name__}.from_preset: unknown fields {unknown}; fields are "
                             f"{[f.name for f in dataclasses.fields(cls)]}")
        return cls(**{**PRESETS[name][1], **overrides})

    @classmethod
    def help(cls) -> dict[str, str]:
        """Field name -> description."""
        return {f.name: _FIELD_HELP[f.name] for f in dataclasses.fields(cls)}

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class ErnieConfig(BertConfig):
    """Hyperparameters of an ERNIE encoder (PaddleNLP's ErnieModel: BERT plus an optional task-type embedding).

    Defaults follow PaddleNLP's ErnieConfig (pad id 0, no task id); ERNIE 3.0
    presets set `use_task_id=True`.

    Example:
      >>> from pdx.models.bert import ErnieConfig
      >>> ErnieConfig.from_preset("ernie-3.0-medium-zh").use_task_id
      True
    """

    use_task_id: bool = False
    task_type_vocab_size: int = 3
    task_id: int = 0


# name -> (config class, fields). bert-base-uncased is Google's BERT-Base; bert-tiny is Google's BERT
# miniature L=2/H=128; the ERNIE 3.0 shapes are PaddleNLP's (ernie-3.0-tiny = ERNIE 3.0 Tiny mini: 6 x 384).
_ERNIE3 = dict(vocab_size=40000, max_position_embeddings=2048, type_vocab_size=4, use_task_id=True,
               task_type_vocab_size=16)
PRESETS = {
    "bert-tiny": (BertConfig, dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                                   intermediate_size=512)),
    "bert-mini": (BertConfig, dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                                   intermediate_size=1024)),
    "bert-base-uncased": (BertConfig, {}),
    "ernie-3.0-tiny": (ErnieConfig, dict(_ERNIE3, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                                         intermediate_size=1536)),
    "ernie-3.0-medium-zh": (ErnieConfig, dict(_ERNIE3, hidden_size=768, num_hidden_layers=6,
                                              num_attention_heads=12, intermediate_size=3072)),
}
