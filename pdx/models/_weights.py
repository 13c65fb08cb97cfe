"""A model directory's weights: one file, or Hugging Face shards listed by `model.safetensors.index.json`.

`locate(path)` finds the weight files and reads only their headers (names,
shapes), so the sizes a config implies can be compared with what is on disk
before any weight is created; `read(files)` then reads the tensors. Every
family's loader (`pdx.models.from_pretrained`, `llama.load_hf_safetensors`,
`bert.load_hf_bert`) goes through these two functions.

Rules for a sharded directory:
- the index is read like every pdx config (`pdx._safefile`: a regular file,
  at most `MAX_INDEX_BYTES`, UTF-8 JSON at most 4 levels deep) and holds
  `{"weight_map": {tensor: shard file}}`;
- a shard is named by a relative path inside the directory: no absolute
  path, no `..`, and a symlink must resolve inside the directory;
- every tensor is stored exactly once: a tensor in two shards, a tensor the
  index lists but its shard lacks, a tensor a shard holds that the index does
  not list, or a shard that does not exist is a `ConfigError` naming the
  index file, the tensor and the shard.

Without an index: `model.safetensors`, else `model.pdparams`, else every
`*.safetensors` (each tensor exactly once across them), else one `*.pdparams`.
"""

from __future__ import annotations

import math
import os
from pathlib import Path, PurePosixPath
from typing import NamedTuple

import numpy as np

from pdx._config_check import ConfigError, fail, safetensors_shapes
from pdx._safefile import load_json, read_file

__all__ = ["INDEX_FILE", "WeightFiles", "locate", "read"]

INDEX_FILE = "model.safetensors.index.json"
MAIN_FILES = ("model.safetensors", "model.pdparams")
MAX_INDEX_BYTES = 16 << 20
_INDEX_DEPTH = 4  # {"weight_map": {name: file}, "metadata": {...}}


class WeightFiles(NamedTuple):
    """The weight files of a checkpoint and, for safetensors, each tensor's shape from the headers.

    shapes: tensor name -> shape (None for a `.pdparams` file: its shapes are known once it is read).
    """

    files: tuple[Path, ...]
    shapes: dict | None
    root: Path | None

    @property
    def elements(self) -> int | None:
        """Numbers stored on disk (None when unknown before reading)."""
        if self.shapes is None:
            return None
        return sum(math.prod(shape) for shape in self.shapes.values())

    def where(self) -> str:
        return str(self.files[0]) if len(self.files) == 1 else f"{str(self.root)!r} ({len(self.files)} shards)"


def _corrupt(path):
    from pdx.checkpoint import CheckpointCorruptError

    return lambda message: CheckpointCorruptError(message, path=path)


def header_shapes(path: Path, *, root: Path | None) -> dict:
    """Tensor name -> shape from a safetensors header, reading only the header."""
    target = path if root is not None else Path(os.path.realpath(path))
    return safetensors_shapes(target, root=root, error=_corrupt(path))


def _shard_path(directory: Path, index_file: str, tensor: str, shard) -> Path:
    allowed = "a relative file name of a .safetensors shard inside the directory"
    field = f"weight_map[{tensor!r}]"
    if not isinstance(shard, str) or not shard or "\0" in shard or "\\" in shard:
        fail(field, shard, allowed, file=index_file)
    parts = PurePosixPath(shard).parts
    if PurePosixPath(shard).is_absolute() or ".." in parts or not shard.endswith(".safetensors"):
        fail(field, shard, allowed, file=index_file)
    path = directory / shard
    if not os.path.lexists(path):
        fail(field, shard, allowed, file=index_file, why="names a shard that does not exist")
    real, real_root = os.path.realpath(path), os.path.realpath(directory)
    if os.path.commonpath([real, real_root]) != real_root:
        fail(field, shard, allowed, file=index_file, why=f"resolves to {real!r}, outside the directory")
    return path


def _read_index(directory: Path) -> dict:
    index_file = str(directory / INDEX_FILE)
    raw = read_file(directory / INDEX_FILE, max_bytes=MAX_INDEX_BYTES, what="weights index", root=directory,
                    error=lambda message: ConfigError(None, why=message, file=index_file))
    index = load_json(raw, what=index_file, max_depth=_INDEX_DEPTH,
                      error=lambda message: ConfigError(None, why=message))
    if not isinstance(index, dict):
        fail(None, None, "a JSON object with a weight_map", file=index_file, why=f"is a {type(index).__name__}")
    weight_map = index.get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        fail("weight_map", weight_map, "an object of tensor name -> shard file name", file=index_file)
    return {tensor: _shard_path(directory, index_file, tensor, shard) for tensor, shard in weight_map.items()}


def _sharded(directory: Path) -> WeightFiles:
    index_file = str(directory / INDEX_FILE)
    listed = _read_index(directory)
    files = tuple(dict.fromkeys(sorted(listed.values())))
    shapes, owner = {}, {}
    for file in files:
        for tensor, shape in header_shapes(file, root=directory).items():
            if tensor in owner:
                fail(tensor, file.name, "one shard per tensor", file=index_file,
                     why=f"is stored in two shards ({owner[tensor].name} and {file.name})")
            if listed.get(tensor) != file:
                want = listed[tensor].name if tensor in listed else "nothing (it is not listed)"
                fail(f"weight_map[{tensor!r}]", want, f"{file.name!r}, the shard that holds it", file=index_file,
                     why=f"does not name the shard {file.name!r} that stores it")
            owner[tensor], shapes[tensor] = file, shape
    absent = sorted(set(listed) - set(owner))
    if absent:
        fail(f"weight_map[{absent[0]!r}]", listed[absent[0]].name, "a shard that stores the tensor",
             file=index_file, why=f"lists {len(absent)} tensor(s) its shards do not hold (e.g. {absent[:3]})")
    return WeightFiles(files, shapes, directory)


def _several(directory: Path, files: list[Path]) -> WeightFiles:
    shapes, owner = {}, {}
    for file in files:
        for tensor, shape in header_shapes(file, root=directory).items():
            if tensor in owner:
                fail(tensor, file.name, "each tensor in one file", file=str(directory),
                     why=f"is stored in both {owner[tensor].name} and {file.name}")
            owner[tensor], shapes[tensor] = file, shape
    return WeightFiles(tuple(files), shapes, directory)


def locate(path) -> WeightFiles:
    """The weight files of a file or directory (headers read, tensors not).

    Raises:
      FileNotFoundError: no weights. ConfigError: a bad index or a tensor stored twice.
    """
    path = Path(path)
    if path.is_file():
        return WeightFiles((path,), header_shapes(path, root=None) if path.suffix == ".safetensors" else None, None)
    if not path.is_dir():
        raise FileNotFoundError(f"from_pretrained: {str(path)!r} is neither a weights file nor a directory")
    if os.path.lexists(path / INDEX_FILE):
        return _sharded(path)
    for name in MAIN_FILES:
        if os.path.lexists(path / name):
            file = path / name
            shapes = header_shapes(file, root=path) if file.suffix == ".safetensors" else None
            return WeightFiles((file,), shapes, path)
    safetensors = sorted(path.glob("*.safetensors"))
    if safetensors:
        return _several(path, safetensors)
    pdparams = sorted(path.glob("*.pdparams"))
    if len(pdparams) == 1:
        return WeightFiles((pdparams[0],), None, path)
    if pdparams:
        raise FileNotFoundError(f"from_pretrained: {str(path)!r} holds several .pdparams files "
                                f"{[p.name for p in pdparams][:4]}; pass the one to load")
    raise FileNotFoundError(f"from_pretrained: no weights in {str(path)!r}; expected {INDEX_FILE} with its shards, "
                            f"one of {MAIN_FILES}, or *.safetensors / *.pdparams")


def read(weights: WeightFiles) -> dict:
    """name -> numpy array of every tensor in `weights` (safetensors or pickle-free `.pdparams`)."""
    from pdx.checkpoint import load_pdparams, load_safetensors

    state = {}
    for file in weights.files:
        if file.suffix == ".safetensors":
            state.update(load_safetensors(file))
        else:
            state.update({k: np.asarray(v) for k, v in load_pdparams(file).items()})
    if weights.shapes is not None:
        changed = sorted(k for k in set(state) | set(weights.shapes)
                         if k not in state or k not in weights.shapes or tuple(state[k].shape) != weights.shapes[k])
        if changed:
            raise ConfigError(changed[0], None, None, file=weights.where(),
                              why="changed between reading the header and the data")
    return state
