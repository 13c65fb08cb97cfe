"""Hugging Face BERT / ERNIE checkpoints: config and weight names -> pdx (PaddleNLP) names.

Hugging Face keeps the original BERT layout (`encoder.layer.0.attention.self.query`,
`LayerNorm`, torch Linear weights `[out, in]`); pdx keeps PaddleNLP's
(`encoder.layers.0.self_attn.q_proj`, `norm1`, weights `[in, out]`).
"""

from __future__ import annotations

import glob
import json
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
_MAX_CONFIG_BYTES = 4 << 20
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


def config_from_hf(hf: Mapping, **overrides):
    """A BertConfig (model_type "bert") or ErnieConfig (model_type "ernie") from a config.json dict."""
    from pdx.models.bert._config import BertConfig, ErnieConfig

    model_type = hf.get("model_type", "bert")
    if model_type not in _ARCHITECTURES:
        raise ValueError(f"config_from_hf: model_type {model_type!r} is not one of {sorted(_ARCHITECTURES)}")
    cls = ErnieConfig if model_type == "ernie" else BertConfig
    act = hf.get("hidden_act", "gelu")
    act = {"gelu_pytorch_tanh": "gelu_new", "gelu_python": "gelu"}.get(act, act)
    fields = {f: hf[f] for f in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                 "intermediate_size", "hidden_dropout_prob", "attention_probs_dropout_prob",
                                 "max_position_embeddings", "type_vocab_size", "layer_norm_eps", "initializer_range")
              if f in hf}
    fields["hidden_act"] = act
    fields["pad_token_id"] = hf.get("pad_token_id") if hf.get("pad_token_id") is not None else 0
    if hf.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"config_from_hf: position_embedding_type {hf['position_embedding_type']!r} is not "
                         "supported; pdx's BERT has absolute position embeddings")
    if cls is ErnieConfig:
        fields.update(use_task_id=bool(hf.get("use_task_id", False)),
                      task_type_vocab_size=hf.get("task_type_vocab_size", 3))
    return cls(**{**fields, **overrides})


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
    """Build a model from a Hugging Face BERT / ERNIE directory (config.json + *.safetensors) and load its weights.

    Args:
      path: the directory, or one `.safetensors` file with config.json beside it.
      name_map: see `hf_to_pdx`.
      strict: raise when a parameter is missing or a tensor is left over.
      **overrides: config fields to override (e.g. dropout probabilities).

    Returns:
      The model (`BertModel` or a head, per config.json `architectures`), in eval mode.

    Example: `model = load_hf_bert("/models/bert-base-uncased")`.
    """
    from pdx.checkpoint import load_safetensors  # the checked reader: regular files, header limits

    path = os.fspath(path)
    if os.path.isdir(path):
        directory, files = path, sorted(glob.glob(os.path.join(path, "*.safetensors")))
    elif os.path.isfile(path):
        directory, files = os.path.dirname(path) or ".", [path]
    else:
        raise FileNotFoundError(f"load_hf_bert: {path!r} is neither a directory nor a .safetensors file")
    if not files:
        raise FileNotFoundError(f"load_hf_bert: no *.safetensors in {path!r}; save the model with "
                                "save_pretrained(..., safe_serialization=True)")
    config_file = os.path.join(directory, "config.json")
    if not os.path.isfile(config_file):
        raise FileNotFoundError(f"load_hf_bert: {config_file!r} is missing; it holds the model's hyperparameters")
    if os.path.getsize(config_file) > _MAX_CONFIG_BYTES:
        raise ValueError(f"load_hf_bert: {config_file!r} is over {_MAX_CONFIG_BYTES >> 20} MiB; not a model config")
    with open(config_file, encoding="utf-8") as f:
        hf = json.load(f)
    if not isinstance(hf, dict):
        raise ValueError(f"load_hf_bert: {config_file!r} must hold a JSON object")
    model = build_from_hf(hf, **overrides)
    state = {}
    for file in files:
        state.update(load_safetensors(file))
    missing, unexpected = model.set_state_dict(hf_to_pdx(state, name_map=name_map))
    if strict and (missing or unexpected):
        raise ValueError(f"load_hf_bert: {path!r} does not match the model built from its config.json: missing "
                         f"{list(missing)[:6]}, unexpected {list(unexpected)[:6]}; pass name_map= or strict=False")
    return model.eval()
