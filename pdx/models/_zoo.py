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

Every config is checked before anything is built (`pdx._config_check`):
the family validates its fields (types, ranges, cross-field rules), then the
parameter count the config implies is compared with the numbers stored in
the weights' headers, so a config that asks for more than is on disk fails
in milliseconds with a `ConfigError` instead of allocating. Sharded Hugging
Face directories (`model.safetensors.index.json`) are read by
`pdx.models._weights`.
"""

from __future__ import annotations

import builtins
import json
import math
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple

import numpy as np

CONFIG_FILE = "config.json"
WEIGHTS_FILES = ("model.safetensors", "model.pdparams")
NAME_KEY = "pdx_model"
MAX_CONFIG_BYTES = 1 << 20
OVERRIDES_KEY = "overrides"
# A config implying more than 2 x the stored numbers + this many parameters is refused before building;
# a smaller one is built and compared tensor by tensor (strict=False may add a fresh task head).
EXTRA_PARAMS = 1 << 24
_MAX_OVERRIDES = 256
# What a family's builder raises for an argument of the wrong kind (reported as the config's fault).
_BUILD_ERRORS = (TypeError, ValueError, ArithmeticError, KeyError, IndexError, AttributeError)


class Foreign(NamedTuple):
    """How to read another framework's directory for one family.

    build(config_json) -> Layer builds the model from that framework's config;
    name_map(state_dict) -> state_dict renames (and transposes) its weights;
    num_params(config_json) -> int validates the config (raising ConfigError)
    and returns the parameters the model will have (a lower bound is fine),
    without building it.
    """

    build: Callable[[Mapping[str, Any]], Any]
    name_map: Callable[[Mapping[str, np.ndarray]], dict]
    num_params: Callable[[Mapping[str, Any]], int] | None = None


class ZooEntry(NamedTuple):
    """One named model: how to build it and what it is."""

    name: str
    family: str
    task: str
    build: Callable[..., Any]
    config: Mapping[str, Any]
    description: str
    inputs: tuple[str, ...]
    num_params: Callable[..., int] | None = None


_ENTRIES: dict[str, ZooEntry] = {}
_FOREIGN: dict[str, Foreign] = {}


def register(name: str, build: Callable[..., Any], *, family: str, task: str,
             config: Mapping[str, Any] | None = None, description: str = "",
             inputs: tuple[str, ...] = (), num_params: Callable[..., int] | None = None) -> None:
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
      num_params: num_params(**overrides) -> the parameter count, validating the
        overrides without building (else it is counted from shapes).

    Example:
      >>> register("lenet", LeNet, family="lenet", task="image-classification",
      ...          config={"num_classes": 10})                      # doctest: +SKIP
    """
    if name in _ENTRIES:
        raise ValueError(f"pdx.models.register: {name!r} is already registered")
    _ENTRIES[name] = ZooEntry(name, family, task, build, dict(config or {}), description, tuple(inputs), num_params)


def register_foreign(model_type: str, build: Callable[[Mapping[str, Any]], Any],
                     name_map: Callable[[Mapping[str, np.ndarray]], dict], *,
                     num_params: Callable[[Mapping[str, Any]], int] | None = None) -> None:
    """Teach `from_pretrained` another framework's directory with config.json "model_type".

    `num_params(config_json)` validates the config and counts the model's
    parameters without building it, so a config larger than its weights fails
    before allocating (see `Foreign`).
    """
    _FOREIGN[model_type] = Foreign(build, name_map, num_params)


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


def _with_file(err, file: str):
    if getattr(err, "file", "") is None or getattr(err, "file", None) in ("LlamaConfig", "BertConfig", "ErnieConfig"):
        err.file = file
    return err


def _zoo_arguments(config: Mapping, name: str | None, overrides: Mapping, file: str) -> tuple[str, dict]:
    """The zoo name and build arguments of a pdx directory, each checked (ConfigError)."""
    from pdx._config_check import fail

    if name is None:
        name = config[NAME_KEY]
        if not isinstance(name, str) or name not in _ENTRIES:
            fail(NAME_KEY, name, "a zoo name (see pdx.models.list())", file=file)
    saved = config.get(OVERRIDES_KEY, {})
    if not isinstance(saved, dict) or len(saved) > _MAX_OVERRIDES:
        fail(OVERRIDES_KEY, saved, f"an object of at most {_MAX_OVERRIDES} build arguments", file=file)
    return name, {**saved, **overrides}


def _count(entry: ZooEntry, kwargs: dict, file: str) -> int:
    from pdx._config_check import ConfigError, fail

    try:
        if entry.num_params is not None:
            return int(entry.num_params(**kwargs))
        return _param_count(lambda: entry.build(**kwargs))
    except ConfigError as err:
        raise _with_file(err, file) from None
    except _BUILD_ERRORS as err:
        fail(OVERRIDES_KEY, kwargs, f"the build arguments of {entry.name!r} (its config: {dict(entry.config)})",
             file=file, why=f"are refused by the model: {type(err).__name__}: {err}")


def _check_size(params: int, stored: int, *, file: str, where: str) -> None:
    """Refuse, before building, a config that implies far more parameters than the weights hold.

    Up to `2 * stored + EXTRA_PARAMS` is built (cheap even when wrong) and then
    compared tensor by tensor, which names the exact tensor and shape.
    """
    from pdx._config_check import fail

    limit = 2 * stored + EXTRA_PARAMS
    if params > limit:
        fail(None, None, None, file=file,
             why=f"implies {params:,} parameters but {where} holds {stored:,} numbers (at most {limit:,} are "
                 "built to compare shapes): a size field (hidden_size, num_hidden_layers, vocab_size, "
                 "intermediate_size, ...) does not match the weights' shapes")


def from_pretrained(path, *, name: str | None = None, strict: bool = True, **overrides) -> Any:
    """Build a model and load its weights from a local directory or weights file.

    Reads, in order: a pdx directory (config.json with "pdx_model", written by
    `save_pretrained`); a foreign directory whose config.json "model_type" a
    family registered (e.g. Hugging Face "bert" or "llama", one
    model.safetensors or shards listed by model.safetensors.index.json); or,
    with `name=`, any safetensors / .pdparams file with the model's own names.

    The config is validated and its implied parameter count compared with the
    weights' headers before the model is built; every tensor's shape is
    compared with the model's before it is loaded.

    Args:
      path: a directory or a single weights file.
      name: the zoo name to build (needed when there is no config.json).
      strict: every parameter must be in the file and every tensor used.
        With strict=False, tensors the model lacks, parameters the file lacks
        and tensors of another shape are skipped and named in a warning.
      **overrides: build arguments (override the saved ones).

    Raises:
      ConfigError: a bad config field, index file, or weights that do not
        match the config (names the file, the field or tensor, the value and
        what is allowed).

    Example:
      >>> m = pdx.models.from_pretrained("out/lenet")              # doctest: +SKIP
      >>> m = pdx.models.from_pretrained("paddle_lenet.pdparams", name="lenet")  # doctest: +SKIP
    """
    from pdx._config_check import ConfigError, fail
    from pdx.models import _weights

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"from_pretrained: {str(path)!r} does not exist")
    config_file = path / CONFIG_FILE if path.is_dir() else path.with_name(CONFIG_FILE)
    file = str(config_file)
    config = read_config(config_file) if config_file.exists() else {}
    if name is not None and (not isinstance(name, str) or name not in _ENTRIES):
        fail("name", name, f"a zoo name (see pdx.models.list(), e.g. {sorted(_ENTRIES)[:4]})")
    weights = _weights.locate(path)
    if name is not None or NAME_KEY in config:
        name, kwargs = _zoo_arguments(config, name, overrides, file)
        entry = _entry(name)
        params = _count(entry, kwargs, file)
        build, name_map = (lambda: entry.build(**kwargs)), None
    else:
        model_type = config.get("model_type")
        if not isinstance(model_type, str) or model_type not in _FOREIGN:
            if "model_type" in config:
                fail("model_type", model_type, f"one of {sorted(_FOREIGN)}", file=file,
                     why=f"names no family pdx knows: cannot tell which model {str(path)!r} holds; pass name= "
                         "(a zoo name) to load the weights by their own names")
            raise ValueError(f"from_pretrained: cannot tell which model {str(path)!r} holds: no config.json "
                             f"with {NAME_KEY!r} or a known model_type {sorted(_FOREIGN)}; pass name=")
        foreign = _FOREIGN[model_type]
        merged = {**config, **overrides}
        try:
            params = foreign.num_params(merged) if foreign.num_params is not None else None
        except ConfigError as err:
            raise _with_file(err, file) from None
        build, name_map = (lambda: foreign.build(merged)), foreign.name_map
    if params is not None and weights.elements is not None:
        _check_size(params, weights.elements, file=file, where=weights.where())
    state = _weights.read(weights)
    if params is not None and weights.elements is None:
        _check_size(params, builtins.sum(int(np.size(v)) for v in state.values()), file=file, where=weights.where())
    if name_map is not None:
        state = name_map(state)
    try:
        model = build()
    except ConfigError as err:
        raise _with_file(err, file) from None
    load_checked(model, state, strict=strict, where=weights.where())
    return model


def load_checked(model, state: Mapping[str, np.ndarray], *, strict: bool, where: str,
                 what: str = "from_pretrained") -> tuple[builtins.list, builtins.list]:
    """Load `state` into `model`, never a tensor of another shape; returns (missing, unexpected).

    strict: any missing, unexpected or shape-mismatched tensor is a ConfigError.
    Otherwise those tensors are skipped and named in a UserWarning.
    """
    from pdx._config_check import ConfigError

    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    mismatched = {k: (tuple(np.shape(v)), tuple(expected[k].shape)) for k, v in state.items()
                  if k in expected and tuple(np.shape(v)) != tuple(expected[k].shape)}
    if strict and mismatched:
        key, (disk, want) = next(iter(sorted(mismatched.items())))
        raise ConfigError(key, disk, f"shape {want}, the one the config implies", file=where,
                          why=f"on disk ({len(mismatched)} tensor(s) disagree with the config)")
    if strict and (missing or unexpected):
        raise ConfigError(None, None, None, file=where,
                          why=f"does not match the model: missing {missing[:5]}{'...' if len(missing) > 5 else ''}, "
                              f"unexpected {unexpected[:5]}{'...' if len(unexpected) > 5 else ''}; "
                              "pass strict=False to load the common names")
    if missing or unexpected or mismatched:
        shown = {k: f"{d} on disk, {w} in the model" for k, (d, w) in builtins.list(sorted(mismatched.items()))[:8]}
        warnings.warn(f"{what}: {where}: skipped {len(missing)} missing parameter(s) (left at their initial "
                      f"values) {missing[:8]}, {len(unexpected)} unexpected tensor(s) {unexpected[:8]}, "
                      f"{len(mismatched)} tensor(s) of another shape {shown}", UserWarning, stacklevel=3)
    model.set_state_dict({k: v for k, v in state.items() if k in expected and k not in mismatched})
    return missing, unexpected
