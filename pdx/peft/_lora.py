"""LoRA: low-rank adapters on chosen Linear layers, everything else frozen (PaddleNLP's `peft.lora` names).

`LoRAModel(model, LoRAConfig(target_modules=[".*q_proj", ".*v_proj"], r=8))`
swaps each matching `Linear` for a `LoRALinear` in place: the same `weight`
/ `bias` (frozen) plus `lora_A` [in, r] and `lora_B` [r, out] (zero, so the
model starts unchanged); `y = x W + b + dropout(x) A B * lora_alpha / r`.
Every parameter that is not an adapter is frozen (`trainable=False`), so an
optimizer built on the model afterwards updates only the adapters and
`pdx.value_and_grad` returns only their gradients. `merge()` folds the
adapters into plain Linears for export; `save_pretrained` / `from_pretrained`
write and read only the adapter weights (safetensors) and the config (JSON).
With `quantize="int8" | "int4"` (QLoRA) the frozen base weight is stored
weight-only quantized (`pdx.quantization.weight_quantize`) and dequantized
on the fly.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re

import jax.numpy as jnp
from flax import nnx

import pdx.nn.functional as F
from pdx import _safefile
from pdx._config_check import MAX_LORA_RANK, ConfigError, Field, check, fail, require, safetensors_shapes
from pdx._sublayers import set_child as _set_child
from pdx._sublayers import walk as _walk
from pdx.nn import Dropout, Identity, Layer, Linear
from pdx.nn.initializer import Constant, KaimingUniform

__all__ = ["LoRAConfig", "LoRALinear", "LoRAModel"]

_CONFIG_NAME = "lora_config.json"
_WEIGHTS_NAME = "lora_model.safetensors"
_MAX_CONFIG_BYTES = 1 << 20

# The fields' types and ranges (pdx._config_check), for a LoRAConfig built in Python or read from
# lora_config.json. r is capped (MAX_LORA_RANK) and, when loading, must equal the saved adapters' rank.
SCHEMA = {
    "target_modules": Field("strs"),
    "r": Field("int", lo=1, hi=MAX_LORA_RANK),
    "lora_alpha": Field("float", lo=0.0, hi=1e6),
    "lora_dropout": Field("float", lo=0.0, hi=0.999),
    "trainable_bias": Field("bool"),
    "quantize": Field("str", choices=("int8", "int4"), optional=True),
    "group_size": Field("int", lo=-1, hi=1 << 16),
    "adapted": Field("strs", optional=True),
}


def check_config(values, *, file: str | None = None) -> None:
    """Types, ranges and cross-field rules of LoRAConfig fields (a mapping); raises ConfigError."""
    targets = values.get("target_modules")
    if isinstance(targets, tuple):
        values = {**values, "target_modules": list(targets)}
    check(values, SCHEMA, file=file)
    require(len(values.get("target_modules", [""])) > 0, "target_modules", values.get("target_modules"),
            "must be a non-empty list of names/regexes", file=file)
    for pattern in values.get("target_modules", ()):
        try:
            re.compile(pattern)
        except (re.error, RecursionError, OverflowError) as err:
            fail("target_modules", pattern, "a valid regular expression", file=file, why=f"does not compile ({err})")
    require(values.get("group_size", -1) != 0, "group_size", 0, "must be -1 (per channel) or a positive int",
            file=file)


@dataclasses.dataclass(frozen=True)
class LoRAConfig:
    """Which layers get adapters and their shape.

    Args:
      target_modules: regexes matched (fully) against sublayer names, e.g.
        `[".*q_proj", ".*v_proj"]`; a plain name matches as a suffix.
      r: adapter rank.
      lora_alpha: scale numerator (the update is scaled by lora_alpha / r).
      lora_dropout: dropout on the adapter's input while training.
      trainable_bias: keep the adapted layers' biases trainable.
      quantize: None, "int8" or "int4": store frozen base weights weight-only quantized (QLoRA).
      group_size: quantization group size along the input dim (-1: per channel).
    """

    target_modules: tuple = (".*q_proj", ".*v_proj")
    r: int = 8
    lora_alpha: float = 8.0
    lora_dropout: float = 0.0
    trainable_bias: bool = False
    quantize: str | None = None
    group_size: int = -1

    def __post_init__(self):
        if isinstance(self.target_modules, str):
            fail("target_modules", self.target_modules, "a non-empty list of names/regexes", file="LoRAConfig",
                 why="is a single string")
        check_config(dataclasses.asdict(self), file="LoRAConfig")
        object.__setattr__(self, "target_modules", tuple(self.target_modules))

    @property
    def scaling(self) -> float:
        return self.lora_alpha / self.r

    def matches(self, name: str) -> bool:
        return any(re.fullmatch(p, name) or name == p or name.endswith("." + p) for p in self.target_modules)


def _check_ranks(weights_file: str, r: int, directory: str) -> None:
    """Every saved adapter has rank r (from the header alone, before any adapter is created)."""
    shapes = safetensors_shapes(weights_file, root=directory)
    for name, shape in shapes.items():
        if not name.endswith((".lora_A", ".lora_B")):
            continue
        if len(shape) != 2 or (shape[1] if name.endswith(".lora_A") else shape[0]) != r:
            fail("r", r, f"the rank of the saved adapters ({name} has shape {list(shape)})",
                 file=os.path.join(directory, _CONFIG_NAME), why="does not match the adapter weights")


class LoRALinear(Layer):
    """A frozen Linear plus a trainable low-rank update (PaddleNLP's `LoRALinear`).

    State-dict names: `weight`, `bias` (as the Linear it replaces; with
    QLoRA `weight` is the int8 / packed-int4 tensor and `weight_scale` its
    scales), `lora_A`, `lora_B`.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> from pdx.peft import LoRALinear
      >>> layer = LoRALinear(pdx.nn.Linear(8, 4), r=2)
      >>> layer(jnp.ones((3, 8))).shape, sorted(layer.state_dict())
      ((3, 4), ['bias', 'lora_A', 'lora_B', 'weight'])
    """

    def __init__(self, base: Linear, r: int = 8, lora_alpha: float = 8.0, lora_dropout: float = 0.0,
                 trainable_bias: bool = False, quantize: str | None = None, group_size: int = -1, *, rngs=None):
        super().__init__()
        if not isinstance(base, Linear):
            raise TypeError(f"LoRALinear: base must be a pdx.nn.Linear; got {type(base).__name__}")
        weight = base.weight.get_value()
        n_in, n_out = weight.shape
        self.scaling = lora_alpha / r
        self.quantize = quantize
        self.group_size = group_size
        self._dtype = weight.dtype
        if quantize is None:
            self.weight = nnx.Param(weight, trainable=False)
        else:
            from pdx.quantization import weight_quantize

            q, scale = weight_quantize(weight, algo=f"weight_only_{quantize}", group_size=group_size)
            self.weight = nnx.Param(q, trainable=False)
            self.weight_scale = nnx.Param(scale, trainable=False)
        self.bias = None if base.bias is None else nnx.Param(base.bias.get_value(), trainable=bool(trainable_bias))
        self.lora_A = self.create_parameter((n_in, r), default_initializer=KaimingUniform(negative_slope=math.sqrt(5),
                                            nonlinearity="leaky_relu"), dtype=weight.dtype)
        self.lora_B = self.create_parameter((r, n_out), default_initializer=Constant(0.0), dtype=weight.dtype)
        self.lora_dropout = Dropout(lora_dropout, rngs=rngs) if lora_dropout > 0 else Identity()

    def base_weight(self):
        """The frozen base weight [in, out] as floats (dequantized with QLoRA)."""
        if self.quantize is None:
            return self.weight.get_value()
        from pdx.quantization import weight_dequantize

        return weight_dequantize(self.weight.get_value(), self.weight_scale.get_value(),
                                 algo=f"weight_only_{self.quantize}", group_size=self.group_size,
                                 out_dtype=self._dtype)

    def delta(self):
        """The adapter's update to the weight: A @ B * scaling, [in, out]."""
        return self.lora_A.get_value() @ self.lora_B.get_value() * self.scaling

    def forward(self, x):
        bias = None if self.bias is None else self.bias.get_value()
        y = F.linear(x, self.base_weight(), bias)
        return y + (self.lora_dropout(x) @ self.lora_A.get_value()) @ self.lora_B.get_value() * self.scaling

    def merged(self) -> Linear:
        """A plain Linear with weight W + A @ B * scaling (and this layer's bias)."""
        n_in, n_out = self.lora_A.shape[0], self.lora_B.shape[1]
        out = Linear(n_in, n_out, bias_attr=None if self.bias is not None else False, dtype=self._dtype)
        out.weight.set_value((self.base_weight().astype(jnp.float32) + self.delta().astype(jnp.float32))
                             .astype(self._dtype))
        if self.bias is not None:
            out.bias.set_value(self.bias.get_value())
        return out


class LoRAModel(Layer):
    """`model` with LoRA adapters on the layers `config.target_modules` names; the rest frozen.

    Calls go to the wrapped model (`lora_model(x)`, `lora_model.loss(...)`
    through `lora_model.model`); `state_dict()` is the wrapped model's.

    Example:
      >>> import pdx
      >>> from pdx.models.llama import LlamaForCausalLM
      >>> from pdx.peft import LoRAConfig, LoRAModel
      >>> lm = LoRAModel(LlamaForCausalLM("tiny"), LoRAConfig(target_modules=[".*q_proj", ".*v_proj"], r=4))
      >>> trainable, total = lm.num_parameters()
      >>> 0 < trainable < total * 0.05
      True
    """

    def __init__(self, model: Layer, lora_config: LoRAConfig):
        super().__init__()
        if not isinstance(lora_config, LoRAConfig):
            raise TypeError(f"LoRAModel: lora_config must be a LoRAConfig; got {type(lora_config).__name__}")
        self.lora_config = lora_config
        found = []

        def visit(parent, name, full, child):
            if isinstance(child, Linear) and lora_config.matches(full):
                c = lora_config
                _set_child(parent, name, LoRALinear(child, c.r, c.lora_alpha, c.lora_dropout, c.trainable_bias,
                                                    c.quantize, c.group_size))
                found.append(full)
                return False
            return None

        for _, var in model.named_parameters():
            var.trainable = False
        _walk(model, "", visit)
        if not found:
            linears = []
            _walk(model, "", lambda p, n, full, c: linears.append(full) if isinstance(c, Linear) else None)
            raise ValueError(f"LoRAModel: target_modules {lora_config.target_modules} match no Linear layer; "
                             f"Linear layers are named like {linears[:6]}")
        self.model = model
        self.adapted = tuple(found)

    def forward(self, *args, **kwargs):
        return self.model(*args, **kwargs)

    def state_dict(self, *args, **kwargs):
        return self.model.state_dict(*args, **kwargs)

    def set_state_dict(self, *args, **kwargs):
        return self.model.set_state_dict(*args, **kwargs)

    def num_parameters(self) -> tuple[int, int]:
        """(trainable, total) parameter counts."""
        sizes = [(int(p.get_value().size), p.get_metadata().get("trainable", True))
                 for _, p in self.model.named_parameters()]
        return sum(n for n, t in sizes if t), sum(n for n, _ in sizes)

    def lora_state_dict(self) -> dict:
        """Only the adapter weights (and trainable biases), by their names in the model."""
        return {k: v for k, v in self.model.state_dict().items()
                if k.endswith((".lora_A", ".lora_B")) or (self.lora_config.trainable_bias and self._adapted_bias(k))}

    def _adapted_bias(self, name: str) -> bool:
        return name.endswith(".bias") and name[: -len(".bias")] in self.adapted

    def merge(self) -> Layer:
        """Fold every adapter into its Linear (in place) and return the plain model, ready for export."""
        merged = []

        def visit(parent, name, full, child):
            if isinstance(child, LoRALinear):
                _set_child(parent, name, child.merged())
                merged.append(full)
                return False
            return None

        _walk(self.model, "", visit)
        for _, var in self.model.named_parameters():
            var.trainable = True
        return self.model

    def save_pretrained(self, directory) -> None:
        """Write the adapters (lora_model.safetensors) and lora_config.json."""
        import numpy as np
        from safetensors.numpy import save_file

        os.makedirs(directory, exist_ok=True)
        save_file({k: np.asarray(v) for k, v in self.lora_state_dict().items()},
                  os.path.join(directory, _WEIGHTS_NAME))
        with open(os.path.join(directory, _CONFIG_NAME), "w") as f:
            json.dump({**dataclasses.asdict(self.lora_config), "adapted": list(self.adapted)}, f, indent=2)

    @classmethod
    def from_pretrained(cls, model: Layer, directory) -> LoRAModel:
        """Wrap `model` as saved by `save_pretrained` and load the adapter weights."""
        from pdx.checkpoint import load_safetensors

        directory = os.fspath(directory)
        path = os.path.join(directory, _CONFIG_NAME)
        raw = _safefile.read_file(path, max_bytes=_MAX_CONFIG_BYTES, what="lora_config.json", root=directory,
                                  error=lambda message: ConfigError(None, file=path, why=message))
        saved = _safefile.load_json(raw, what=path, error=lambda message: ConfigError(None, why=message))
        if not isinstance(saved, dict):
            fail(None, None, "a JSON object of LoRAConfig fields", file=path, why=f"is a {type(saved).__name__}")
        fields = {f.name for f in dataclasses.fields(LoRAConfig)}
        unknown = sorted(set(saved) - fields - {"adapted"})
        if unknown:
            fail(unknown[0], saved[unknown[0]], f"one of the LoRAConfig fields {sorted(fields)}", file=path,
                 why="is not a LoRAConfig field")
        check_config(saved, file=path)
        saved.pop("adapted", None)
        _check_ranks(os.path.join(directory, _WEIGHTS_NAME), saved.get("r", 8), directory)
        lora = cls(model, LoRAConfig(**saved))
        weights = load_safetensors(os.path.join(directory, _WEIGHTS_NAME))
        own = lora.lora_state_dict()
        missing, unexpected = sorted(set(own) - set(weights)), sorted(set(weights) - set(own))
        if missing or unexpected:
            raise ConfigError(None, file=directory, why=f"the adapters do not match the model: missing {missing[:6]}, "
                                                        f"unexpected {unexpected[:6]}")
        wrong = sorted(k for k in own if tuple(weights[k].shape) != tuple(own[k].shape))
        if wrong:
            raise ConfigError(wrong[0], tuple(weights[wrong[0]].shape), f"shape {tuple(own[wrong[0]].shape)} (the "
                              "model's layer)", file=os.path.join(directory, _WEIGHTS_NAME), why="has another shape")
        lora.model.set_state_dict({**{k: v for k, v in lora.model.state_dict().items()}, **weights})
        return lora
