"""The zoo's registry: every model by name, with its config and size, and one loader.

Each model family registers its named presets here when `pdx.models` is
imported (`register`). `list()` shows them; `create(name, **overrides)` builds
one with fresh weights; `save_pretrained` writes a directory
(config.json + model.safetensors) that `from_pretrained` reads back. A
directory written by another framework loads too when a family registered a
`foreign` reader for its `config.json` "model_type" (Hugging Face BERT, LLaMA)
or when the weights are a Paddle `.pdparams` file with Paddle's names.

Nothing here executes code from a file: config.json is parsed as JSON,
weights are read as safetensors or through the pickle-free `.pdparams` reader.
"""

from __future__ import annotations

import builtins
import json
import math
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple

import numpy as np

CONFIG_FILE = "config.json"
WEIGHTS_FILES = ("model.safetensors", "model.pdparams")
NAME_KEY = "pdx_model"
MAX_CONFIG_BYTES = 1 << 20
OVERRIDES_KEY = "overrides"


class Foreign(NamedTuple):
    """How to read another framework's directory for one family.

    build(config_json) -> Layer builds the model from that framework's config;
    name_map(state_dict) -> state_dict renames (and transposes) its weights.
    """

    build: Callable[[Mapping[str, Any]], Any]
    name_map: Callable[[Mapping[str, np.ndarray]], dict]


class ZooEntry(NamedTuple):
    """One named model: how to build it and what it is."""

    name: str
    family: str
    task: str
    build: Callable[..., Any]
    config: Mapping[str, Any]
    description: str
    inputs: tuple[str, ...]


_ENTRIES: dict[str, ZooEntry] = {}
_FOREIGN: dict[str, Foreign] = {}


def register(name: str, build: Callable[..., Any], *, family: str, task: str,
             config: Mapping[str, Any] | None = None, description: str = "",
             inputs: tuple[str, ...] = ()) -> None:
    """Add a named model to the zoo.

    Args:
      name: the zoo name, e.g. "bert-tiny".
      build: build(**overrides) -> a fresh pdx.nn.Layer.
      family: e.g. "bert", "llama", "resnet".
      task: e.g. "sequence-classification", "causal-lm", "image-classification".
      config: the hyperparameters shown by `list()` (plain JSON values).
      description: one line.
      inputs: its inputs as `pdx export --input-spec` strings ("[NAME:]DIMS[:DTYPE]",
        e.g. "image:None,3,224,224:float32"), so `pdx export NAME` needs no spec.

    Example:
      >>> register("lenet", LeNet, family="lenet", task="image-classification",
      ...          config={"num_classes": 10})                      # doctest: +SKIP
    """
    if name in _ENTRIES:
        raise ValueError(f"pdx.models.register: {name!r} is already registered")
    _ENTRIES[name] = ZooEntry(name, family, task, build, dict(config or {}), description, tuple(inputs))


def register_foreign(model_type: str, build: Callable[[Mapping[str, Any]], Any],
                     name_map: Callable[[Mapping[str, np.ndarray]], dict]) -> None:
    """Teach `from_pretrained` another framework's directory with config.json "model_type"."""
    _FOREIGN[model_type] = Foreign(build, name_map)


def _param_count(build: Callable[..., Any]) -> int:
    """Parameters of a model without allocating them (shapes only)."""
    import jax
    from flax import nnx

    from pdx._random import traced_generator

    def shapes_only():
        with traced_generator(jax.random.key(0)):
            return build()

    abstract = nnx.eval_shape(shapes_only)
    leaves = jax.tree_util.tree_leaves(nnx.state(abstract, nnx.Param))
    return builtins.sum(math.prod(leaf.shape) for leaf in leaves)


def list(family: str | None = None, *, params: bool = True) -> builtins.list[dict]:  # noqa: A001
    """The zoo's models: name, family, task, config and parameter count.

    Args:
      family: only this family (e.g. "bert").
      params: count parameters (from shapes; nothing is allocated).

    Example:
      >>> [m["name"] for m in pdx.models.list("llama")][:2]     # doctest: +SKIP
      ['llama-tiny', 'llama-125m']
    """
    if family is not None and family not in {e.family for e in _ENTRIES.values()}:
        raise ValueError(f"pdx.models.list: family={family!r} is not in the zoo; "
                         f"families: {sorted({e.family for e in _ENTRIES.values()})}")
    rows = []
    for entry in _ENTRIES.values():
        if family is not None and entry.family != family:
            continue
        row = {"name": entry.name, "family": entry.family, "task": entry.task,
               "config": dict(entry.config), "description": entry.description, "inputs": builtins.list(entry.inputs)}
        if params:
            row["params"] = _param_count(entry.build)
        rows.append(row)
    return rows


def _entry(name: str) -> ZooEntry:
    if name not in _ENTRIES:
        raise ValueError(f"pdx.models: no model named {name!r}; see pdx.models.list() for the "
                         f"{len(_ENTRIES)} names (e.g. {sorted(_ENTRIES)[:4]})")
    return _ENTRIES[name]


def get(name: str) -> ZooEntry:
    """The registry entry of a zoo model (its builder, config and export inputs)."""
    return _entry(name)


def create(name: str, **overrides) -> Any:
    """Build a zoo model with fresh weights: `pdx.models.create("bert-tiny", num_classes=3)`."""
    return _entry(name).build(**overrides)


def save_pretrained(model, path, *, name: str, **overrides) -> Path:
    """Write `model` as a directory `from_pretrained` reads: config.json + model.safetensors.

    Args:
      model: a pdx.nn.Layer built by `create(name, **overrides)`.
      path: the directory (created).
      name: its zoo name.
      **overrides: the keyword arguments it was created with (JSON values).

    Example:
      >>> m = pdx.models.create("lenet")
      >>> pdx.models.save_pretrained(m, "out/lenet", name="lenet")   # doctest: +SKIP
    """
    from pdx.checkpoint import save_safetensors

    _entry(name)
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    try:
        text = json.dumps({NAME_KEY: name, OVERRIDES_KEY: overrides}, indent=1, sort_keys=True)
    except TypeError as err:
        raise TypeError(f"save_pretrained: overrides must be JSON values; got {overrides!r} ({err})") from None
    (path / CONFIG_FILE).write_text(text)
    save_safetensors(model.state_dict(), path / WEIGHTS_FILES[0])
    return path


def read_config(config_file) -> dict:
    """A directory's config.json: a regular file of at most 1 MiB holding a JSON object (depth-limited)."""
    from pdx._safefile import load_json, read_file

    what = f"from_pretrained: {str(config_file)!r}"
    config = load_json(read_file(config_file, max_bytes=MAX_CONFIG_BYTES, what=what), what=what)
    if not isinstance(config, dict):
        raise ValueError(f"{what} must hold a JSON object, not {type(config).__name__}")
    return config


def _read_weights(path: Path) -> dict:
    from pdx.checkpoint import load_pdparams, load_safetensors

    if path.is_file():
        files = [path]
    else:
        files = [path / f for f in WEIGHTS_FILES if (path / f).exists()]
        files += sorted(p for p in path.glob("*.pdparams") if p not in files)
        files += sorted(p for p in path.glob("*.safetensors") if p not in files)
    if not files:
        raise FileNotFoundError(f"from_pretrained: no weights in {str(path)!r}; expected one of "
                                f"{WEIGHTS_FILES} (or any *.safetensors / *.pdparams)")
    weights = files[0]
    if weights.suffix == ".safetensors":
        return load_safetensors(weights)
    return {k: np.asarray(v) for k, v in load_pdparams(weights).items()}


def from_pretrained(path, *, name: str | None = None, strict: bool = True, **overrides) -> Any:
    """Build a model and load its weights from a local directory or weights file.

    Reads, in order: a pdx directory (config.json with "pdx_model", written by
    `save_pretrained`); a foreign directory whose config.json "model_type" a
    family registered (e.g. Hugging Face "bert" with model.safetensors); or,
    with `name=`, any safetensors / .pdparams file with the model's own names.

    Args:
      path: a directory or a single weights file.
      name: the zoo name to build (needed when there is no config.json).
      strict: every parameter must be in the file and every tensor used.
      **overrides: build arguments (override the saved ones).

    Example:
      >>> m = pdx.models.from_pretrained("out/lenet")              # doctest: +SKIP
      >>> m = pdx.models.from_pretrained("paddle_lenet.pdparams", name="lenet")  # doctest: +SKIP
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"from_pretrained: {str(path)!r} does not exist")
    config_file = path / CONFIG_FILE if path.is_dir() else path.with_name(CONFIG_FILE)
    config = read_config(config_file) if config_file.exists() else {}
    state = _read_weights(path)
    if name is not None or NAME_KEY in config:
        name = name or config[NAME_KEY]
        model = create(name, **{**config.get(OVERRIDES_KEY, {}), **overrides})
    elif config.get("model_type") in _FOREIGN:
        foreign = _FOREIGN[config["model_type"]]
        model = foreign.build({**config, **overrides})
        state = foreign.name_map(state)
    else:
        raise ValueError(f"from_pretrained: cannot tell which model {str(path)!r} holds: no config.json "
                         f"with {NAME_KEY!r} or a known model_type {sorted(_FOREIGN)}; pass name=")
    _load(model, state, strict=strict, where=str(path))
    return model


def _load(model, state: Mapping[str, np.ndarray], *, strict: bool, where: str) -> None:
    expected = model.state_dict()
    if strict:
        missing = sorted(set(expected) - set(state))
        unexpected = sorted(set(state) - set(expected))
        if missing or unexpected:
            raise ValueError(f"from_pretrained: {where!r} does not match the model: "
                             f"missing {missing[:5]}{'...' if len(missing) > 5 else ''}, "
                             f"unexpected {unexpected[:5]}{'...' if len(unexpected) > 5 else ''}; "
                             "pass strict=False to load the common names")
    for key, value in state.items():
        if key in expected and tuple(np.shape(value)) != tuple(expected[key].shape):
            raise ValueError(f"from_pretrained: {key!r} has shape {np.shape(value)} in {where!r}, "
                             f"the model wants {tuple(expected[key].shape)}")
    model.set_state_dict({k: v for k, v in state.items() if k in expected})
