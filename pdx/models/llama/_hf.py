"""Hugging Face LLaMA / Qwen2 / Mistral weights and configs: import into and export from LlamaForCausalLM."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Mapping

import numpy as np

# Linear weights are stored [out, in] by Hugging Face (torch) and [in, out] by Paddle and pdx.
_LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head")
_SKIP = ("rotary_emb.inv_freq",)
_LAYER_NAME = re.compile(r"^(?P<head>model\.layers)\.(?P<index>\d+)\.(?P<tail>.+)$")


def hf_to_pdx(hf_state: Mapping, *, name_map: Callable[[str], str | None] | None = None,
              stack_layers: bool = False) -> dict:
    """Hugging Face LLaMA state dict -> pdx LlamaForCausalLM state dict (numpy arrays).

    Args:
      hf_state: name -> array (numpy, torch tensors via `.numpy()`, or safetensors output).
      name_map: optional hook applied to each Hugging Face name first; return
        the pdx name, or None to drop the tensor (for checkpoints with other
        prefixes, e.g. `lambda n: n.removeprefix("base_model.")`).
      stack_layers: for a model built with `scan_layers=True`: stack
        `model.layers.<i>.<name>` (i = 0..N-1) into `model.layers.<name>` of
        shape (N, ...).

    Returns:
      name -> numpy array, ready for `model.set_state_dict`.

    Example: `model.set_state_dict(hf_to_pdx(safetensors.numpy.load_file("model.safetensors")))`.
    """
    out = {}
    for name, value in hf_state.items():
        name = name_map(name) if name_map is not None else name
        if name is None or name.endswith(_SKIP):
            continue
        array = np.asarray(value.numpy() if hasattr(value, "numpy") and not isinstance(value, np.ndarray) else value)
        parts = name.split(".")
        if len(parts) >= 2 and parts[-1] == "weight" and parts[-2] in _LINEARS:
            array = array.T
        out[name] = np.ascontiguousarray(array)
    return _stack_layers(out) if stack_layers else out


def _stack_layers(state: dict) -> dict:
    """`model.layers.<i>.<tail>` entries -> one `model.layers.<tail>` entry stacked over i."""
    out, per_layer = {}, {}
    for name, array in state.items():
        match = _LAYER_NAME.match(name)
        if match is None:
            out[name] = array
        else:
            per_layer.setdefault(f"{match['head']}.{match['tail']}", {})[int(match["index"])] = array
    count = max((max(by_index) + 1 for by_index in per_layer.values()), default=0)
    for name, by_index in per_layer.items():
        missing = sorted(set(range(count)) - set(by_index))
        if missing:
            head, tail = name.split(".", 2)[:2], name.split(".", 2)[2]
            raise ValueError(f"hf_to_pdx(stack_layers=True): {'.'.join(head)}.<i>.{tail} is missing for layers "
                             f"{missing[:8]} of {count}; a stacked model needs every layer's tensor")
        out[name] = np.stack([by_index[i] for i in range(count)])
    return out


def load_hf_safetensors(model, path: str, *, name_map: Callable[[str], str | None] | None = None, strict: bool = True):
    """Load Hugging Face LLaMA weights (a `.safetensors` file or a directory) into `model`.

    A directory holds `model.safetensors`, shards listed by
    `model.safetensors.index.json` (paths inside the directory, each tensor
    in exactly one shard), or `*.safetensors` files (each tensor once): the
    rules of `pdx.models.from_pretrained`, which reads the same way.

    Args:
      model: a `LlamaForCausalLM` whose config matches the checkpoint (with
        `scan_layers=True` the per-layer tensors are stacked, see `hf_to_pdx`).
      path: a `.safetensors` file or a Hugging Face model directory.
      name_map: see `hf_to_pdx`.
      strict: raise (ConfigError) when a parameter is missing, a tensor is left over or has another
        shape; with strict=False those are skipped (never loaded) and named in a warning.

    Returns:
      (missing_keys, unexpected_keys).

    Example: `load_hf_safetensors(LlamaForCausalLM(cfg), "/models/llama-2-7b")`.
    """
    from pdx.models import _weights
    from pdx.models._zoo import load_checked

    if not os.path.exists(path):
        raise FileNotFoundError(f"load_hf_safetensors: {path!r} is neither a .safetensors file nor a directory")
    weights = _weights.locate(path)
    stacked = bool(getattr(getattr(model, "config", None), "scan_layers", False))
    state = hf_to_pdx(_weights.read(weights), name_map=name_map, stack_layers=stacked)
    return load_checked(model, state, strict=strict, where=weights.where(), what="load_hf_safetensors")


# -- export ----------------------------------------------------------------------------------------

_ARCHITECTURES = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "mistral": "MistralForCausalLM"}


def pdx_to_hf(state: Mapping) -> dict:
    """pdx LlamaForCausalLM state dict -> Hugging Face names and layouts (numpy; stacked layers split).

    Example: `safetensors.numpy.save_file(pdx_to_hf(model.state_dict()), "model.safetensors")`.
    """
    out = {}
    for name, value in state.items():
        array = np.asarray(value)
        parts = name.split(".")
        stacked = name.startswith("model.layers.") and not parts[2].isdigit()
        linear = len(parts) >= 2 and parts[-1] == "weight" and parts[-2] in _LINEARS
        if stacked:
            tail = ".".join(parts[2:])
            for i, layer in enumerate(array):
                out[f"model.layers.{i}.{tail}"] = np.ascontiguousarray(layer.T if linear else layer)
        else:
            out[name] = np.ascontiguousarray(array.T if linear else array)
    return out


def hf_config(config) -> dict:
    """The config.json transformers reads for this LlamaConfig (LLaMA, Qwen2 or Mistral architecture)."""
    c = config
    out = {"architectures": [_ARCHITECTURES[c.model_type]], "model_type": c.model_type,
           "vocab_size": c.vocab_size, "hidden_size": c.hidden_size, "intermediate_size": c.intermediate_size,
           "num_hidden_layers": c.num_hidden_layers, "num_attention_heads": c.num_attention_heads,
           "num_key_value_heads": c.num_key_value_heads, "max_position_embeddings": c.max_position_embeddings,
           "rms_norm_eps": c.rms_norm_eps, "rope_theta": c.rope_theta, "tie_word_embeddings": c.tie_word_embeddings,
           "hidden_act": "silu", "torch_dtype": "float32", "head_dim": c.head_dim}
    if c.model_type == "llama":
        out.update(attention_bias=c.attention_bias, mlp_bias=False)
    if c.model_type == "qwen2":
        if not c.attention_bias:
            raise ValueError("hf_config: transformers' Qwen2 always has q/k/v biases; set attention_bias=True "
                             "or model_type='llama'")
        out.update(use_sliding_window=c.sliding_window is not None, sliding_window=c.sliding_window,
                   max_window_layers=c.num_hidden_layers)
    if c.model_type == "mistral":
        if c.attention_bias:
            raise ValueError("hf_config: transformers' Mistral has no q/k/v biases; set attention_bias=False")
        out["sliding_window"] = c.sliding_window
    elif c.model_type == "llama" and c.sliding_window is not None:
        raise ValueError("hf_config: transformers' LLaMA has no sliding window; use model_type='mistral'")
    return out


_HF_REQUIRED = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads")


def check_hf_config(hf: Mapping, *, file: str | None = None) -> None:
    """Validate a Hugging Face LLaMA / Qwen2 / Mistral config.json dict before anything is built.

    Types and ranges are `LlamaConfig.SCHEMA`'s (required: the five size
    fields); Hugging Face fields pdx cannot honour are refused rather than
    ignored: a `head_dim` other than hidden_size / heads, a `hidden_act` other
    than silu, any `rope_scaling`.

    Raises:
      ConfigError: naming `file`, the field, its value and what is allowed.
    """
    from pdx._config_check import Field, check, fail, require
    from pdx.models.llama._config import SCHEMA, check_config

    check(hf, {"model_type": Field("str", choices=tuple(_ARCHITECTURES))}, file=file)
    hf_only = {"use_sliding_window": Field("bool", optional=True), "hidden_act": Field("str", choices=("silu",)),
               "head_dim": Field("int", lo=1, hi=SCHEMA["hidden_size"].hi, optional=True),
               "sliding_window": Field("int", lo=1, hi=SCHEMA["sliding_window"].hi, optional=True)}
    schema = {**SCHEMA, **hf_only, **{name: dataclasses.replace(SCHEMA[name], required=True) for name in _HF_REQUIRED}}
    check(hf, schema, file=file)
    if hf.get("rope_scaling") is not None:
        fail("rope_scaling", hf["rope_scaling"], "null (pdx's RoPE has no scaling)", file=file)
    if hf.get("mlp_bias"):
        fail("mlp_bias", hf["mlp_bias"], "false (pdx's MLP has no biases)", file=file)
    rope = hf.get("rope_parameters")
    if rope is not None:
        if not isinstance(rope, dict) or rope.get("rope_type", "default") != "default":
            fail("rope_parameters", rope, 'null or {"rope_type": "default", "rope_theta": ...} (no RoPE scaling)',
                 file=file)
        check(rope, {"rope_theta": SCHEMA["rope_theta"]}, file=file)
    check_config({k: hf[k] for k in SCHEMA if k in hf and k != "sliding_window"}, file=file)
    if hf.get("head_dim") is not None:
        natural = hf["hidden_size"] // hf["num_attention_heads"]
        require(hf["head_dim"] == natural, "head_dim", hf["head_dim"],
                f"must be hidden_size / num_attention_heads = {natural} (or null): pdx's attention derives it",
                file=file)


def _rope_theta(hf: Mapping) -> float:
    """`rope_theta`, or (transformers 5) `rope_parameters["rope_theta"]`, or the default 10000."""
    if "rope_theta" in hf:
        return hf["rope_theta"]
    return (hf.get("rope_parameters") or {}).get("rope_theta", 10000.0)


def config_from_hf(hf: Mapping, *, file: str | None = None, **overrides):
    """A LlamaConfig from a Hugging Face config.json dict (LLaMA, Qwen2 or Mistral).

    `hf` is validated first (`check_hf_config`); `file` names it in errors.
    """
    from pdx.models.llama._config import LlamaConfig

    check_hf_config({**hf, **overrides}, file=file)
    model_type = hf.get("model_type", "llama")
    window = hf.get("sliding_window") if (model_type == "mistral" or hf.get("use_sliding_window")) else None
    fields = dict(vocab_size=hf["vocab_size"], hidden_size=hf["hidden_size"], intermediate_size=hf["intermediate_size"],
                  num_hidden_layers=hf["num_hidden_layers"], num_attention_heads=hf["num_attention_heads"],
                  num_key_value_heads=hf.get("num_key_value_heads"),
                  max_position_embeddings=hf.get("max_position_embeddings", 2048),
                  rms_norm_eps=hf.get("rms_norm_eps", 1e-6), rope_theta=_rope_theta(hf),
                  tie_word_embeddings=hf.get("tie_word_embeddings", False),
                  attention_bias=True if model_type == "qwen2" else hf.get("attention_bias", False),
                  sliding_window=window, model_type=model_type)
    return LlamaConfig(**{**fields, **overrides})


def save_hf_pretrained(model, directory: str, tokenizer=None) -> None:
    """Write `model` as a Hugging Face directory: model.safetensors, config.json (and the tokenizer's files).

    transformers' `AutoModelForCausalLM.from_pretrained(directory)` loads it
    with the same logits (LLaMA, Qwen2 or Mistral architecture by
    `config.model_type`).

    Example: `save_hf_pretrained(model, "out/hf", tokenizer=pdx.text.Tokenizer.from_pretrained("tok"))`.
    """
    import json

    from safetensors.numpy import save_file

    config = hf_config(model.config)
    os.makedirs(directory, exist_ok=True)
    save_file(pdx_to_hf(model.state_dict()), os.path.join(directory, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    if tokenizer is not None:
        tokenizer.save_pretrained(directory)
