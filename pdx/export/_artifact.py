"""The artifact directory: manifest, checksums, parameters in safetensors.

    ARTIFACT/
      manifest.json          inputs, outputs, parameters, targets, versions, sha256 of every file
      program.jaxexport      serialized `jax.export.Exported` (StableHLO + calling convention)
      program_onednn.jaxexport  optional: the same program for CPUs whose convolutions and matmuls
                             call pdx's oneDNN kernels (custom calls), used where they are available
      params.safetensors     parameters and buffers, by state_dict name (kept apart from the program)
      <target>.vmfb          one IREE module per IREE target (a function per batch bucket)

Every read goes through `read_artifact`, which follows pdx's one loader rule
(`pdx._safefile`): regular files only (no FIFO, device or directory), symlinks
only to files inside the artifact, the manifest capped in size and JSON depth,
every other file's size checked against the manifest before it is read. Then
the manifest's own checksum, every listed file's sha256 and the manifest's
entries (`check_manifest`) are checked before anything is deserialized. Every
failure is one `ArtifactError` naming the file and the fix. The checksums
catch corruption (a truncated copy, a flipped bit); they are not a signature
against someone who rewrites the manifest too.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import re
import shutil
import tempfile

import ml_dtypes
import numpy as np
from safetensors import SafetensorError, TensorSpec, deserialize, serialize

from pdx._safefile import load_json, read_file
from pdx.export._iree import IREE_TARGETS
from pdx.jit import InputSpec

__all__ = ["ArtifactError", "FORMAT", "MANIFEST", "ONEDNN_PROGRAM", "PARAMS", "PROGRAM", "check_manifest", "load_params",
           "read_artifact", "read_manifest", "save_params", "spec_from_json", "spec_to_json", "write_artifact"]

FORMAT = "pdx.export/1"
MANIFEST = "manifest.json"
PROGRAM = "program.jaxexport"
ONEDNN_PROGRAM = "program_onednn.jaxexport"
PARAMS = "params.safetensors"
_CHECKSUM_KEY = "manifest_sha256"
MAX_MANIFEST_BYTES = 64 << 20  # a manifest lists parameters by name: ~150 bytes each
MAX_MANIFEST_DEPTH = 16  # real manifests nest 5 deep (targets -> target -> input_shapes -> shape)


class ArtifactError(Exception):
    """An exported artifact is missing, truncated, corrupted or of an unknown format.

    Raised before any of its bytes are deserialized; re-export the model (or
    copy the artifact again) to fix it.
    """


def _canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, indent=1, ensure_ascii=True).encode("ascii") + b"\n"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_artifact(path, manifest: dict, files: dict[str, bytes]) -> pathlib.Path:
    """Write `files` and the manifest (with sizes and sha256 sums) to directory `path`.

    The artifact is built in a temporary sibling directory and moved into
    place, so a crash never leaves a half-written artifact under `path`. An
    existing artifact at `path` is replaced; any other non-empty directory
    is left alone (ValueError).
    """
    path = pathlib.Path(path)
    if path.exists():
        if not path.is_dir():
            raise ValueError(f"export: path={str(path)!r} is a file; give a directory for the artifact")
        if any(path.iterdir()) and not (path / MANIFEST).exists():
            raise ValueError(f"export: path={str(path)!r} is a non-empty directory that is not a pdx "
                             "artifact; give a new or empty directory so nothing of yours is overwritten")
    path.parent.mkdir(parents=True, exist_ok=True)
    manifest = dict(manifest, format=FORMAT,
                    files={name: {"size": len(data), "sha256": _sha256(data)} for name, data in files.items()})
    manifest[_CHECKSUM_KEY] = _sha256(_canonical(manifest))
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        (tmp / MANIFEST).write_bytes(_canonical(manifest))
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def read_manifest(path) -> dict:
    """Read and verify `path/manifest.json` (regular file, size and depth caps, checksum).

    Returns the manifest dict; its `files` table is checked for shape
    (name -> size and sha256), the files themselves are not read.

    Raises:
      ArtifactError: the directory or manifest is missing, not a regular
        file, too large, too deep, not JSON or altered.
    """
    path_str = str(path)
    if "://" in path_str:
        raise ValueError(f"load: path={path_str!r} looks like a URL; pdx loads artifacts only from a "
                         "local directory (download it yourself, check it, then pass the directory)")
    path = pathlib.Path(path)
    if not path.is_dir():
        raise ArtifactError(f"{path_str!r} is not an artifact directory (it does not exist or is a file); "
                            "pass the directory written by pdx.export.export / pdx.jit.save")
    raw = _read(path, MANIFEST, max_bytes=MAX_MANIFEST_BYTES)
    manifest = load_json(raw, what=str(path / MANIFEST), max_depth=MAX_MANIFEST_DEPTH, error=ArtifactError)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise ArtifactError(f"{path / MANIFEST}: format {found!r} is not {FORMAT!r}; re-export the model "
                            "with this version of pdx")
    # Any byte change either breaks the JSON, changes the canonical form, or
    # changes the content the checksum covers.
    body = {k: v for k, v in manifest.items() if k != _CHECKSUM_KEY}
    if _canonical(manifest) != raw or manifest.get(_CHECKSUM_KEY) != _sha256(_canonical(body)):
        raise ArtifactError(f"{path / MANIFEST} was altered after export (its checksum does not match); "
                            "re-export or copy the artifact again")
    listed = manifest.get("files")
    if not isinstance(listed, dict) or not listed:
        raise ArtifactError(f"{path / MANIFEST} has no checksum table (its 'files' entry is missing or empty); "
                            "re-export the model")
    for name, meta in listed.items():
        if name in (MANIFEST, ".", "..") or pathlib.PurePath(name).name != name or "\0" in name:
            raise ArtifactError(f"{path / MANIFEST} names file {name!r} outside the artifact directory")
        if not (isinstance(meta, dict) and _is_count(meta.get("size")) and isinstance(meta.get("sha256"), str)):
            raise ArtifactError(f"{path / MANIFEST}: the checksum entry of {name!r} is {meta!r}, not "
                                "{'size': int, 'sha256': str}; re-export the model")
    missing = [name for name in (PROGRAM, PARAMS) if name not in listed]
    if missing:
        raise ArtifactError(f"{path / MANIFEST} does not list {missing} in its checksum table; re-export the model")
    return manifest


def read_artifact(path) -> tuple[dict, dict[str, bytes]]:
    """Read and verify an artifact directory.

    The manifest is read first (`read_manifest`); then every file its table
    lists is opened as a regular file inside the directory (a symlink may
    point only inside it), its size checked against the recorded size
    before a byte is read, and its sha256 against the recorded sum.

    Returns:
      (manifest dict, {file name: bytes}) — every listed file, verified.

    Raises:
      ArtifactError: the directory, the manifest or any listed file is
        missing, not a regular file, truncated or altered.
    """
    manifest = read_manifest(path)
    path = pathlib.Path(path)
    files = {}
    for name, meta in manifest["files"].items():
        data = _read(path, name, max_bytes=meta["size"], size=meta["size"])
        if _sha256(data) != meta["sha256"]:
            raise ArtifactError(f"{path / name} does not match its sha256 in the manifest: the file is "
                                "corrupted; re-export or copy the artifact again")
        files[name] = data
    return manifest, files


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _read(root: pathlib.Path, name: str, *, max_bytes: int, size: int | None = None) -> bytes:
    """A file of the artifact, through the shared loader rule (pdx._safefile)."""
    file = root / name
    if not os.path.lexists(file):
        raise ArtifactError(f"{file} is missing; the artifact is incomplete: re-export or copy it again")
    try:
        return read_file(file, max_bytes=max_bytes, size=size, what=f"artifact file {name}", root=root,
                         error=ArtifactError)
    except ArtifactError as e:
        raise ArtifactError(f"{e}; re-export the model or copy the artifact again") from None


# -- parameters in safetensors ---------------------------------------------------------------

# safetensors dtype codes; bfloat16 comes from ml_dtypes (numpy has none).
_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16,
           "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8, "U64": np.uint64,
           "U32": np.uint32, "U16": np.uint16, "U8": np.uint8, "BOOL": np.bool_}


def save_params(params: dict[str, np.ndarray]) -> bytes:
    """Serialize {name: array} to safetensors bytes (bfloat16 included)."""
    # np.asarray(order="C"), not np.ascontiguousarray: the latter turns a 0-d array into shape (1,).
    arrays = {name: np.asarray(value, order="C") for name, value in params.items()}
    specs = {name: TensorSpec(dtype=a.dtype.name, shape=a.shape, data_ptr=a.ctypes.data, data_len=a.nbytes)
             for name, a in arrays.items()}
    return bytes(serialize(specs, metadata={"format": FORMAT}))


def load_params(data: bytes, where: str) -> dict[str, np.ndarray]:
    """Parse safetensors bytes into {name: array}; ArtifactError on anything malformed."""
    try:
        entries = deserialize(data)
    except SafetensorError as e:
        raise ArtifactError(f"{where}: not a valid safetensors file ({e}); re-export the model") from None
    out = {}
    for name, entry in entries:
        dtype = _DTYPES.get(entry["dtype"])
        if dtype is None:
            raise ArtifactError(f"{where}: parameter {name!r} has unsupported dtype {entry['dtype']!r}")
        out[name] = np.frombuffer(bytes(entry["data"]), dtype=dtype).reshape(entry["shape"])
    return out


# -- the manifest's entries ---------------------------------------------------------------------

_PARAM_NAME = re.compile(r"^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$")  # state_dict names: "features.0.weight"


def check_manifest(manifest: dict, where: str) -> None:
    """Refuse a manifest whose entries a loader would misread; one ArtifactError naming the entry.

    The checksum proves the manifest is the one written; this proves it is
    one pdx could have written (types, dtypes, dims, names, target files).
    """
    dtype_names = {np.dtype(t).name for t in _DTYPES.values()}

    def need(ok, entry: str, value) -> None:
        if not ok:
            raise ArtifactError(f"{where}: manifest entry {entry} is {value!r}, which pdx never writes; "
                                "re-export the model with this version of pdx")

    def spec(kind: str, i: int, e, *, symbols: bool) -> None:
        need(isinstance(e, dict) and isinstance(e.get("name"), str) and e["name"], f"{kind}[{i}]", e)
        need(isinstance(e.get("dtype"), str) and e["dtype"] in dtype_names, f"{kind}[{i}].dtype", e.get("dtype"))
        shape = e.get("shape")
        need(isinstance(shape, list) and all(_is_count(d) or (symbols and isinstance(d, str) and d) for d in shape),
             f"{kind}[{i}].shape", shape)

    need(isinstance(manifest.get("name"), str) and manifest["name"], "name", manifest.get("name"))
    for kind in ("inputs", "outputs", "params"):
        need(isinstance(manifest.get(kind), list), kind, manifest.get(kind))
        for i, e in enumerate(manifest[kind]):
            spec(kind, i, e, symbols=kind != "params")
    names = [e["name"] for e in manifest["inputs"]]
    need(len(set(names)) == len(names), "inputs (names)", names)
    for i, e in enumerate(manifest["params"]):
        need(_PARAM_NAME.match(e["name"]), f"params[{i}].name", e["name"])
        need(e.get("kind", "parameter") in ["parameter", "buffer"], f"params[{i}].kind", e.get("kind"))
        need(isinstance(e.get("trainable", True), bool), f"params[{i}].trainable", e.get("trainable"))
    program = manifest.get("program")
    need(isinstance(program, dict) and program.get("file") == PROGRAM, "program", program)
    need(_is_count(program.get("vjp_order", 0)), "program.vjp_order", program.get("vjp_order"))
    targets, files = manifest.get("targets"), manifest["files"]
    need(isinstance(targets, dict) and isinstance(targets.get("xla"), dict), "targets", targets)
    for name, info in targets.items():
        need(isinstance(info, dict) and isinstance(info.get("file"), str) and info["file"] in files,
             f"targets[{name!r}].file",
             info.get("file") if isinstance(info, dict) else info)
        if name == "xla":
            native = info.get("onednn_file")
            need(native is None or native == ONEDNN_PROGRAM and native in files, "targets['xla'].onednn_file",
                 native)
            continue
        need(name in IREE_TARGETS, "targets (name)", name)
        dims, shapes = info.get("dims"), info.get("input_shapes")
        need(isinstance(dims, dict) and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1
                                            for v in dims.values()), f"targets[{name!r}].dims", dims)
        need(isinstance(shapes, list) and len(shapes) == len(manifest["inputs"])
             and all(isinstance(s, list) and len(s) == len(e["shape"]) and all(_is_count(d) for d in s)
                     for s, e in zip(shapes, manifest["inputs"])), f"targets[{name!r}].input_shapes", shapes)
        split = info.get("batch_split", False)
        need(isinstance(split, bool) and (not split or "batch" in dims), f"targets[{name!r}].batch_split", split)
        need(info.get("params", "arguments") in ("arguments", "inline"), f"targets[{name!r}].params",
             info.get("params"))
        need(info.get("conv", "native") in ("native", "patches"), f"targets[{name!r}].conv", info.get("conv"))
        need(info.get("precision", "float32") in ("float32", "bfloat16"), f"targets[{name!r}].precision",
             info.get("precision"))
        need(isinstance(info.get("fold_batchnorm", False), bool), f"targets[{name!r}].fold_batchnorm",
             info.get("fold_batchnorm"))
        error = info.get("max_error", 0.0)
        need(isinstance(error, (int, float)) and not isinstance(error, bool) and error >= 0,
             f"targets[{name!r}].max_error", error)
        buckets = info.get("buckets", [])
        need(isinstance(buckets, list) and (not buckets or "batch" in dims), f"targets[{name!r}].buckets", buckets)
        for i, b in enumerate(buckets):
            need(isinstance(b, dict) and isinstance(b.get("batch"), int) and not isinstance(b["batch"], bool)
                 and b["batch"] >= 1 and isinstance(b.get("input_shapes"), list)
                 and len(b["input_shapes"]) == len(shapes)
                 and all(isinstance(s, list) and len(s) == len(t) and all(_is_count(d) for d in s)
                         for s, t in zip(b["input_shapes"], shapes)),
                 f"targets[{name!r}].buckets[{i}]", b)
        batches = [b["batch"] for b in buckets]
        need(len(set(batches)) == len(batches), f"targets[{name!r}].buckets (batch sizes)", batches)


# -- input/output specs in JSON -----------------------------------------------------------------

def spec_to_json(name: str, shape, dtype) -> dict:
    """One input/output: dims are ints or symbol names (str) for dynamic dims."""
    return {"name": name, "shape": [d if isinstance(d, int) else str(d) for d in shape],
            "dtype": np.dtype(dtype).name}


def spec_from_json(entry: dict) -> InputSpec:
    return InputSpec([d if isinstance(d, int) else None for d in entry["shape"]], entry["dtype"], entry["name"])
