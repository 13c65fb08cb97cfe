"""BertConfig, ErnieConfig and their presets."""

from __future__ import annotations

import dataclasses

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
        name = type(self).__name__
        for field in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                      "max_position_embeddings"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name}: {field} must be a positive int; got {field}={value!r}")
        if not isinstance(self.type_vocab_size, int) or self.type_vocab_size < 0:
            raise ValueError(f"{name}: type_vocab_size must be an int >= 0; got {self.type_vocab_size!r}")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"{name}: hidden_size={self.hidden_size} must be divisible by "
                             f"num_attention_heads={self.num_attention_heads}")
        if self.hidden_act not in ACTIVATIONS:
            raise ValueError(f"{name}: hidden_act must be one of {ACTIVATIONS}; got {self.hidden_act!r}")
        for field in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            if not 0.0 <= getattr(self, field) < 1.0:
                raise ValueError(f"{name}: {field} must be in [0, 1); got {getattr(self, field)!r}")
        if not 0 <= self.pad_token_id < self.vocab_size:
            raise ValueError(f"{name}: pad_token_id={self.pad_token_id} must be in [0, vocab_size={self.vocab_size})")

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

    def __post_init__(self):
        super().__post_init__()
        if self.use_task_id and not 0 <= self.task_id < self.task_type_vocab_size:
            raise ValueError(f"ErnieConfig: task_id={self.task_id} must be in [0, task_type_vocab_size="
                             f"{self.task_type_vocab_size})")


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
