"""Hugging Face BERT / ERNIE checkpoints: config and weight names -> pdx (PaddleNLP) names.

Hugging Face keeps the original BERT layout (`encoder.layer.0.attention.self.query`,
`LayerNorm`, torch Linear weights `[out, in]`); pdx keeps PaddleNLP's
(`encoder.layers.0.self_attn.q_proj`, `norm1`, weights `[in, out]`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping

import numpy as np

# Hugging Face sub-name inside encoder.layer.N -> pdx sub-name inside encoder.layers.N
_LAYER_NAMES = {
    "attention.self.query": "self_attn.q_proj",
    "attention.self.key": "self_attn.k_proj",
    "attention.self.value": "self_attn.v_proj",
    "attention.output.dense": "self_attn.out_proj",
    "attention.output.LayerNorm": "norm1",
    "intermediate.dense": "linear1",
    "output.dense": "linear2",
    "output.LayerNorm": "norm2",
}
_LINEAR_TAILS = ("q_proj", "k_proj", "v_proj", "out_proj", "linear1", "linear2", "pooler.dense", "classifier")
_LAYER = re.compile(r"^(?P<head>(?:\w+\.)?encoder)\.layer\.(?P<index>\d+)\.(?P<tail>.+)\.(?P<param>weight|bias)$")
# Pretraining heads (masked-LM, next sentence) and buffers: no counterpart in the pdx encoder.
_DROP = re.compile(r"^(cls\.|.*embeddings\.position_ids$|.*embeddings\.token_type_ids$)")
_ARCHITECTURES = {
    "bert": ("BertModel", "BertForSequenceClassification", "BertForTokenClassification", "BertForQuestionAnswering"),
    "ernie": ("ErnieModel", "ErnieForSequenceClassification", "ErnieForTokenClassification",
              "ErnieForQuestionAnswering"),
}


def _rename(name: str) -> str:
    match = _LAYER.match(name)
    if match is not None:
        tail = _LAYER_NAMES.get(match["tail"])
        if tail is None:
            raise ValueError(f"hf_to_pdx: unknown encoder tensor {name!r} (expected one of {sorted(_LAYER_NAMES)})")
        return f"{match['head']}.layers.{match['index']}.{tail}.{match['param']}"
    name = name.replace("embeddings.LayerNorm.", "embeddings.layer_norm.")
    return name.replace("qa_outputs.", "classifier.")


def hf_to_pdx(hf_state: Mapping, *, name_map: Callable[[str], str | None] | None = None) -> dict:
    """Hugging Face BERT / ERNIE state dict -> pdx names and layouts (numpy arrays).

    The encoder prefix (`bert.` / `ernie.`) is kept when the checkpoint has a
    task head (`classifier`, `qa_outputs` -> `classifier`) and dropped
    otherwise (a bare encoder, or a pretraining checkpoint whose `cls.*` heads
    are dropped), so the result loads into the model `config_from_hf` +
    `build_from_hf` make. Linear weights are transposed to `[in, out]`;
    `embeddings.LayerNorm` becomes `embeddings.layer_norm`; `position_ids`
    buffers are dropped.

    Args:
      hf_state: name -> array (numpy, torch tensors, or safetensors output).
      name_map: optional hook applied to each Hugging Face name first; return
        the name to use, or None to drop the tensor.

    Returns:
      name -> numpy array for `model.set_state_dict`.

    Example: `model.set_state_dict(hf_to_pdx(safetensors.numpy.load_file("model.safetensors")))`.
    """
    names = {}
    for name in hf_state:
        new = name_map(name) if name_map is not None else name
        if new is not None and not _DROP.match(new):
            names[name] = new
    has_head = any(n.startswith(("classifier.", "qa_outputs.")) for n in names.values())
    out = {}
    for name, new in names.items():
        value = hf_state[name]
        array = np.asarray(value.numpy() if hasattr(value, "numpy") and not isinstance(value, np.ndarray) else value)
        new = _rename(new)
        if not has_head:
            new = re.sub(r"^(bert|ernie)\.", "", new)
        if new.endswith(".weight") and new[: -len(".weight")].endswith(_LINEAR_TAILS):
            array = array.T
        out[new] = np.ascontiguousarray(array)
    return out


def check_hf_config(hf: Mapping, *, file: str | None = None) -> None:
    """Validate a Hugging Face BERT / ERNIE config.json dict before anything is built (raises ConfigError)."""
    from pdx._config_check import MAX_CLASSES, Field, check, fail
    from pdx.models.bert._config import SCHEMA

    hf_only = {"model_type": Field("str", choices=tuple(_ARCHITECTURES)), "architectures": Field("strs", optional=True),
               "num_labels": Field("int", lo=1, hi=MAX_CLASSES), "pad_token_id": Field("int", lo=0, optional=True),
               "position_embedding_type": Field("str", choices=("absolute",)),
               "hidden_act": Field("str", choices=tuple(_ACT_ALIASES) + SCHEMA["hidden_act"].choices)}
    check(hf, {**SCHEMA, **hf_only}, file=file)
    labels = hf.get("id2label")
    if labels is not None and (not isinstance(labels, dict) or not 1 <= len(labels) <= MAX_CLASSES):
        fail("id2label", labels, f"an object of 1 to {MAX_CLASSES} class names", file=file)


_ACT_ALIASES = {"gelu_pytorch_tanh": "gelu_new", "gelu_python": "gelu"}


def config_from_hf(hf: Mapping, *, file: str | None = None, **overrides):
    """A BertConfig (model_type "bert") or ErnieConfig (model_type "ernie") from a config.json dict.

    `hf` is validated first (`check_hf_config`); `file` names it in errors.
    """
    from pdx.models.bert._config import BertConfig, ErnieConfig

    check_hf_config({**hf, **overrides}, file=file)
    model_type = hf.get("model_type", "bert")
    cls = ErnieConfig if model_type == "ernie" else BertConfig
    act = hf.get("hidden_act", "gelu")
    fields = {f: hf[f] for f in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                 "intermediate_size", "hidden_dropout_prob", "attention_probs_dropout_prob",
                                 "max_position_embeddings", "type_vocab_size", "layer_norm_eps", "initializer_range")
              if f in hf}
    fields["hidden_act"] = _ACT_ALIASES.get(act, act)
    fields["pad_token_id"] = hf.get("pad_token_id") if hf.get("pad_token_id") is not None else 0
    if cls is ErnieConfig:
        fields.update(use_task_id=hf.get("use_task_id", False), task_type_vocab_size=hf.get("task_type_vocab_size", 3))
    return cls(**{**fields, **overrides})


def num_params_from_hf(hf: Mapping) -> int:
    """Validate a config.json dict and count the encoder's parameters without building it (heads not counted)."""
    return config_from_hf(hf).num_params()


def build_from_hf(hf: Mapping, **overrides):
    """The pdx model for a Hugging Face config.json: its task head by `architectures`, else the bare encoder.

    Heads: *ForSequenceClassification / *ForTokenClassification (classes from
    `id2label` or `num_labels`), *ForQuestionAnswering; any other
    architecture (BertForPreTraining, BertForMaskedLM, ...) builds the bare
    encoder, whose weights `hf_to_pdx` extracts.
    """
    from pdx.models.bert import _model

    config = config_from_hf(hf, **overrides)
    family = "ernie" if hf.get("model_type") == "ernie" else "bert"
    prefix = "Ernie" if family == "ernie" else "Bert"
    architectures = hf.get("architectures") or []
    head = next((a for a in architectures if a in _ARCHITECTURES[family][1:]), None)
    if head is None:
        return getattr(_model, f"{prefix}Model")(config)
    # Hugging Face's token-classification and question-answering heads have no pooler.
    if head.endswith("QuestionAnswering"):
        return getattr(_model, head)(config, add_pooling_layer=False)
    labels = len(hf["id2label"]) if isinstance(hf.get("id2label"), dict) else hf.get("num_labels", 2)
    if head.endswith("TokenClassification"):
        return getattr(_model, head)(config, num_classes=labels, add_pooling_layer=False)
    return getattr(_model, head)(config, num_classes=labels)


def load_hf_bert(path, *, name_map: Callable[[str], str | None] | None = None, strict: bool = True, **overrides):
    """Build a model from a Hugging Face BERT / ERNIE directory (config.json + weights) and load its weights.

    The weights are one `model.safetensors`, shards listed by
    `model.safetensors.index.json`, or `*.safetensors` files (each tensor
    once); the config is validated and its size compared with the weights'
    headers before the model is built (`pdx.models.from_pretrained`'s rules).

    Args:
      path: the directory, or one `.safetensors` file with config.json beside it.
      name_map: see `hf_to_pdx`.
      strict: raise when a parameter is missing, a tensor is left over or has another shape; with
        strict=False those are skipped and named in a warning.
      **overrides: config fields to override (e.g. dropout probabilities).

    Returns:
      The model (`BertModel` or a head, per config.json `architectures`), in eval mode.

    Example: `model = load_hf_bert("/models/bert-base-uncased")`.
    """
    from pdx._config_check import ConfigError
    from pdx.models import _weights
    from pdx.models._zoo import _check_size, load_checked, read_config

    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"load_hf_bert: {path!r} is neither a directory nor a .safetensors file")
    directory = path if os.path.isdir(path) else (os.path.dirname(path) or ".")
    config_file = os.path.join(directory, "config.json")
    if not os.path.isfile(config_file):
        raise FileNotFoundError(f"load_hf_bert: {config_file!r} is missing; it holds the model's hyperparameters")
    hf = read_config(config_file)
    weights = _weights.locate(path)
    try:
        params = config_from_hf(hf, file=config_file, **overrides).num_params()
    except ConfigError as err:
        err.file = config_file
        raise
    if weights.elements is not None:
        _check_size(params, weights.elements, file=config_file, where=weights.where())
    state = hf_to_pdx(_weights.read(weights), name_map=name_map)
    model = build_from_hf(hf, **overrides)
    load_checked(model, state, strict=strict, where=weights.where(), what="load_hf_bert")
    return model.eval()
