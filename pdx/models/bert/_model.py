"""BERT and ERNIE encoders with PaddleNLP's parameter names, and their task heads.

Both are PaddleNLP's layout: `embeddings` (word, position, token-type
[and ERNIE 3.0's task-type] tables, `layer_norm`, `dropout`), `encoder` =
`pdx.nn.TransformerEncoder` of post-LN `TransformerEncoderLayer`s
(`encoder.layers.0.self_attn.q_proj.weight`, `linear1`, `linear2`, `norm1`,
`norm2`), `pooler.dense`. Linear weights are `[in, out]`, so a PaddleNLP
`model_state.pdparams` loads by name; `_hf.py` renames Hugging Face weights.
"""

from __future__ import annotations

import jax.numpy as jnp

import pdx.nn.functional as F
from pdx.models.bert._config import BertConfig, ErnieConfig
from pdx.nn import Dropout, Embedding, Layer, LayerNorm, Linear, ParamAttr, TransformerEncoder, TransformerEncoderLayer
from pdx.nn.initializer import Normal

# PaddleNLP's additive mask value for padded keys (exp(-1e4) is 0 in float32).
_MASKED = -1e4


def _gelu_tanh(x):
    return F.gelu(x, approximate=True)


def _attr(config: BertConfig) -> ParamAttr:
    return ParamAttr(initializer=Normal(0.0, config.initializer_range))


def padding_mask(input_ids, attention_mask, pad_token_id: int, dtype=jnp.float32):
    """The additive attention mask PaddleNLP's BertModel / ErnieModel build.

    Args:
      input_ids: (B, S) ids.
      attention_mask: None: keys equal to `pad_token_id` get -1e4; a (B, S)
        0/1 (or bool) mask: keys with 0 get -1e4; any other rank: returned as
        given (Paddle's rule applies: a bool/int mask keeps where 1, a float
        mask is added to the logits).
      pad_token_id: the padding id.

    Returns:
      (B, 1, 1, S) float mask, or `attention_mask` itself for ranks other than 2.
    """
    if attention_mask is None:
        return ((input_ids == pad_token_id).astype(dtype) * _MASKED)[:, None, None, :]
    attention_mask = jnp.asarray(attention_mask)
    if attention_mask.ndim == 2:
        return ((1.0 - attention_mask.astype(dtype)) * _MASKED)[:, None, None, :]
    return attention_mask


class BertEmbeddings(Layer):
    """word + position + token-type (+ task-type for ERNIE 3.0) embeddings -> LayerNorm -> dropout."""

    def __init__(self, config: BertConfig, *, rngs=None):
        super().__init__()
        h, attr = config.hidden_size, _attr(config)
        ernie = isinstance(config, ErnieConfig)
        # PaddleNLP's ErnieEmbeddings zero the pad row (padding_idx); BertEmbeddings do not.
        self.word_embeddings = Embedding(config.vocab_size, h, padding_idx=config.pad_token_id if ernie else None,
                                         weight_attr=attr, rngs=rngs)
        self.position_embeddings = Embedding(config.max_position_embeddings, h, weight_attr=attr, rngs=rngs)
        self.type_vocab_size = config.type_vocab_size
        if config.type_vocab_size > 0:
            self.token_type_embeddings = Embedding(config.type_vocab_size, h, weight_attr=attr, rngs=rngs)
        self.use_task_id = bool(ernie and config.use_task_id)
        self.task_id = config.task_id if ernie else 0
        if self.use_task_id:
            self.task_type_embeddings = Embedding(config.task_type_vocab_size, h, weight_attr=attr, rngs=rngs)
        self.layer_norm = LayerNorm(h, epsilon=config.layer_norm_eps, rngs=rngs)
        self.dropout = Dropout(config.hidden_dropout_prob, rngs=rngs)
        self.max_positions = config.max_position_embeddings

    def forward(self, input_ids, token_type_ids=None, position_ids=None, task_type_ids=None):
        b, s = input_ids.shape
        if position_ids is None:
            if isinstance(s, int) and s > self.max_positions:  # a symbolic (exported) length is unchecked
                raise ValueError(f"BertEmbeddings: input_ids has {s} positions but max_position_embeddings is "
                                 f"{self.max_positions}; truncate the input (tokenizer max_length) or use a "
                                 "config with a longer position table")
            position_ids = jnp.broadcast_to(jnp.arange(s), (b, s))
        x = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        if self.type_vocab_size > 0:
            if token_type_ids is None:
                token_type_ids = jnp.zeros((b, s), jnp.int32)
            x = x + self.token_type_embeddings(token_type_ids)
        if self.use_task_id:
            if task_type_ids is None:
                task_type_ids = jnp.full((b, s), self.task_id, jnp.int32)
            x = x + self.task_type_embeddings(task_type_ids)
        return self.dropout(self.layer_norm(x))


class BertPooler(Layer):
    """tanh(dense(hidden state of the first token)) -> (B, hidden)."""

    def __init__(self, config: BertConfig, *, rngs=None):
        super().__init__()
        self.dense = Linear(config.hidden_size, config.hidden_size, weight_attr=_attr(config), rngs=rngs)

    def forward(self, hidden_states):
        return jnp.tanh(self.dense(hidden_states[:, 0]))


class BertModel(Layer):
    """The BERT encoder: embeddings -> N post-LN Transformer layers -> (sequence output, pooled output).

    Args:
      config: a `BertConfig` (or a preset name, e.g. "bert-tiny").
      add_pooling_layer: keyword-only; False leaves out `pooler` (pooled output None), as Hugging Face's
        token-classification and question-answering heads do.
      rngs: keyword-only seed / key / nnx.Rngs for the weights and dropout keys.

    `forward(input_ids, token_type_ids=None, position_ids=None, attention_mask=None)`
    returns `(sequence_output (B, S, hidden), pooled_output (B, hidden))`, as
    PaddleNLP's BertModel. Without `attention_mask`, keys whose id is
    `config.pad_token_id` are masked (Paddle's rule); a (B, S) 0/1 mask
    masks its zeros.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.models.bert import BertModel
      >>> seq, pooled = BertModel("bert-tiny")(jnp.array([[101, 7592, 102, 0]]))
      >>> seq.shape, pooled.shape
      ((1, 4, 128), (1, 128))
    """

    config_class = BertConfig

    def __init__(self, config: BertConfig | str, *, add_pooling_layer: bool = True, rngs=None):
        super().__init__()
        config = _as_config(config, self.config_class, type(self).__name__)
        self.config = config
        self.pad_token_id = config.pad_token_id
        self.embeddings = BertEmbeddings(config, rngs=rngs)
        layer = TransformerEncoderLayer(
            config.hidden_size, config.num_attention_heads, config.intermediate_size,
            dropout=config.hidden_dropout_prob, activation="relu" if config.hidden_act == "relu" else "gelu",
            attn_dropout=config.attention_probs_dropout_prob, act_dropout=0.0, weight_attr=_attr(config),
            layer_norm_eps=config.layer_norm_eps, rngs=rngs)
        if config.hidden_act == "gelu_new":
            layer.activation = _gelu_tanh
        self.encoder = TransformerEncoder(layer, config.num_hidden_layers, rngs=rngs)
        self.pooler = BertPooler(config, rngs=rngs) if add_pooling_layer else None

    def forward(self, input_ids, token_type_ids=None, position_ids=None, attention_mask=None):
        input_ids = _check_ids(input_ids, type(self).__name__)
        mask = padding_mask(input_ids, attention_mask, self.pad_token_id)
        x = self.embeddings(input_ids, token_type_ids, position_ids)
        x = self.encoder(x, src_mask=mask)
        return x, None if self.pooler is None else self.pooler(x)


class ErnieModel(BertModel):
    """The ERNIE encoder (PaddleNLP's ErnieModel): BERT's, plus a task-type embedding when `use_task_id`.

    `forward(input_ids, token_type_ids=None, position_ids=None, attention_mask=None, task_type_ids=None)`;
    without `task_type_ids` every token gets `config.task_id`.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.models.bert import ErnieConfig, ErnieModel
      >>> cfg = ErnieConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
      ...                   intermediate_size=64, use_task_id=True)
      >>> ErnieModel(cfg)(jnp.array([[1, 5, 2]]))[1].shape
      (1, 32)
    """

    config_class = ErnieConfig

    def forward(self, input_ids, token_type_ids=None, position_ids=None, attention_mask=None, task_type_ids=None):
        input_ids = _check_ids(input_ids, type(self).__name__)
        mask = padding_mask(input_ids, attention_mask, self.pad_token_id)
        x = self.embeddings(input_ids, token_type_ids, position_ids, task_type_ids)
        x = self.encoder(x, src_mask=mask)
        return x, None if self.pooler is None else self.pooler(x)


def _as_config(config, cls, owner: str):
    if isinstance(config, str):
        return cls.from_preset(config)
    if not isinstance(config, cls):
        raise TypeError(f"{owner}: config must be a {cls.__name__} or a preset name; got {type(config).__name__}")
    return config


def _check_ids(input_ids, owner: str):
    input_ids = jnp.asarray(input_ids)
    if input_ids.ndim != 2 or not jnp.issubdtype(input_ids.dtype, jnp.integer):
        raise ValueError(f"{owner}: input_ids must be integer ids of shape (batch, seq); got "
                         f"shape {tuple(input_ids.shape)} dtype {input_ids.dtype}")
    return input_ids


# -- task heads ---------------------------------------------------------------------------------------

class _Head(Layer):
    """An encoder under PaddleNLP's attribute name (`bert` / `ernie`) plus a classifier Linear."""

    base_name = "bert"
    base_class = BertModel

    def _build(self, config, rngs, add_pooling_layer: bool = True):
        base = self.base_class(config, add_pooling_layer=add_pooling_layer, rngs=rngs)
        setattr(self, self.base_name, base)
        return base

    def _encode(self, input_ids, token_type_ids, position_ids, attention_mask, task_type_ids):
        base = getattr(self, self.base_name)
        extra = {} if task_type_ids is None else {"task_type_ids": task_type_ids}
        return base(input_ids, token_type_ids, position_ids, attention_mask, **extra)


def _num(value, name: str, owner: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{owner}: {name} must be a positive int; got {name}={value!r}")
    return value


class BertForSequenceClassification(_Head):
    """Encoder -> pooled output -> dropout -> `classifier` Linear -> logits (B, num_classes).

    Args:
      config: a `BertConfig` or preset name.
      num_classes: output classes (PaddleNLP's argument name; Hugging Face's num_labels).
      dropout: dropout before the classifier (default: config.hidden_dropout_prob).
      rngs: keyword-only seed / key / nnx.Rngs.

    Example:
      >>> import jax.numpy as jnp
      >>> from pdx.models.bert import BertForSequenceClassification
      >>> BertForSequenceClassification("bert-tiny", num_classes=3)(jnp.array([[101, 2023, 102]])).shape
      (1, 3)
    """

    def __init__(self, config, num_classes: int = 2, dropout: float | None = None, *, rngs=None):
        super().__init__()
        base = self._build(config, rngs)
        self.num_classes = _num(num_classes, "num_classes", type(self).__name__)
        c = base.config
        self.dropout = Dropout(c.hidden_dropout_prob if dropout is None else dropout, rngs=rngs)
        self.classifier = Linear(c.hidden_size, num_classes, weight_attr=_attr(c), rngs=rngs)

    def forward(self, input_ids, token_type_ids=None, position_ids=None, attention_mask=None, task_type_ids=None):
        _, pooled = self._encode(input_ids, token_type_ids, position_ids, attention_mask, task_type_ids)
        return self.classifier(self.dropout(pooled))


class BertForTokenClassification(_Head):
    """Encoder -> sequence output -> dropout -> `classifier` -> logits (B, S, num_classes).

    Args as `BertForSequenceClassification`; keyword-only `add_pooling_layer=False` drops the
    (unused) pooler, as Hugging Face's checkpoints of this head do.
    """

    def __init__(self, config, num_classes: int = 2, dropout: float | None = None, *,
                 add_pooling_layer: bool = True, rngs=None):
        super().__init__()
        base = self._build(config, rngs, add_pooling_layer)
        self.num_classes = _num(num_classes, "num_classes", type(self).__name__)
        c = base.config
        self.dropout = Dropout(c.hidden_dropout_prob if dropout is None else dropout, rngs=rngs)
        self.classifier = Linear(c.hidden_size, num_classes, weight_attr=_attr(c), rngs=rngs)

    def forward(self, input_ids, token_type_ids=None, position_ids=None, attention_mask=None, task_type_ids=None):
        seq, _ = self._encode(input_ids, token_type_ids, position_ids, attention_mask, task_type_ids)
        return self.classifier(self.dropout(seq))


class BertForQuestionAnswering(_Head):
    """Encoder -> sequence output -> `classifier` (hidden -> 2) -> (start_logits, end_logits), each (B, S)."""

    def __init__(self, config, dropout: float | None = None, *, add_pooling_layer: bool = True, rngs=None):
        super().__init__()
        base = self._build(config, rngs, add_pooling_layer)
        c = base.config
        self.dropout = Dropout(c.hidden_dropout_prob if dropout is None else dropout, rngs=rngs)
        self.classifier = Linear(c.hidden_size, 2, weight_attr=_attr(c), rngs=rngs)

    def forward(self, input_ids, token_type_ids=None, position_ids=None, attention_mask=None, task_type_ids=None):
        seq, _ = self._encode(input_ids, token_type_ids, position_ids, attention_mask, task_type_ids)
        logits = self.classifier(seq)
        return logits[..., 0], logits[..., 1]


class ErnieForSequenceClassification(BertForSequenceClassification):
    """`BertForSequenceClassification` over an `ErnieModel` (attribute `ernie`, PaddleNLP's names)."""

    base_name, base_class = "ernie", ErnieModel


class ErnieForTokenClassification(BertForTokenClassification):
    """`BertForTokenClassification` over an `ErnieModel` (attribute `ernie`)."""

    base_name, base_class = "ernie", ErnieModel


class ErnieForQuestionAnswering(BertForQuestionAnswering):
    """`BertForQuestionAnswering` over an `ErnieModel` (attribute `ernie`)."""

    base_name, base_class = "ernie", ErnieModel
