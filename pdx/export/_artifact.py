"""The artifact directory: manifest, checksums, parameters in safetensors.

    ARTIFACT/
      manifest.json          inputs, outputs, parameters, targets, versions, sha256 of every file
      program.jaxexport      serialized `jax.export.Exported` (StableHLO + calling convention)
      params.safetensors     parameters and buffers, by state_dict name (kept apart from the program)
      <target>.vmfb          one IREE module per IREE target

Every read goes through `read_artifact`, which checks the manifest's own
checksum, then every listed file's size and sha256, before anything is
deserialized. Every failure is one `ArtifactError` naming the file and the fix.
The checksums catch corruption (a truncated copy, a flipped bit); they are
not a signature against someone who rewrites the manifest too.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import shutil
import tempfile

import ml_dtypes
import numpy as np
from safetensors import SafetensorError, TensorSpec, deserialize, serialize

from pdx.jit import InputSpec

__all__ = ["ArtifactError", "FORMAT", "MANIFEST", "PARAMS", "PROGRAM", "load_params", "read_artifact",
           "save_params", "spec_from_json", "spec_to_json", "write_artifact"]

FORMAT = "pdx.export/1"
MANIFEST = "manifest.json"
PROGRAM = "program.jaxexport"
PARAMS = "params.safetensors"
_CHECKSUM_KEY = "manifest_sha256"


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


def read_artifact(path) -> tuple[dict, dict[str, bytes]]:
    """Read and verify an artifact directory.

    Returns:
      (manifest dict, {file name: bytes}) — every listed file, verified.

    Raises:
      ArtifactError: the directory, the manifest or any listed file is
        missing, truncated or altered.
    """
    path_str = str(path)
    if "://" in path_str:
        raise ValueError(f"load: path={path_str!r} looks like a URL; pdx loads artifacts only from a "
                         "local directory (download it yourself, check it, then pass the directory)")
    path = pathlib.Path(path)
    if not path.is_dir():
        raise ArtifactError(f"{path_str!r} is not an artifact directory (it does not exist or is a file); "
                            "pass the directory written by pdx.export.export / pdx.jit.save")
    raw = _read(path / MANIFEST)
    try:
        manifest = json.loads(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ArtifactError(f"{path / MANIFEST} is not valid JSON ({type(e).__name__}); the artifact is "
                            "corrupted: re-export or copy it again") from None
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
    files = {}
    listed = manifest.get("files")
    if not isinstance(listed, dict):
        raise ArtifactError(f"{path / MANIFEST} lists no files; re-export the model")
    for name, meta in listed.items():
        if pathlib.PurePath(name).name != name:
            raise ArtifactError(f"{path / MANIFEST} names file {name!r} outside the artifact directory")
        data = _read(path / name)
        if len(data) != meta["size"]:
            raise ArtifactError(f"{path / name} has {len(data)} bytes but the manifest says {meta['size']}: "
                                "the file is truncated or was replaced; re-export or copy the artifact again")
        if _sha256(data) != meta["sha256"]:
            raise ArtifactError(f"{path / name} does not match its sha256 in the manifest: the file is "
                                "corrupted; re-export or copy the artifact again")
        files[name] = data
    return manifest, files


def _read(file: pathlib.Path) -> bytes:
    try:
        return file.read_bytes()
    except FileNotFoundError:
        raise ArtifactError(f"{file} is missing; the artifact is incomplete: re-export or copy it again") from None
    except OSError as e:
        raise ArtifactError(f"cannot read {file}: {e.strerror}") from None


# -- parameters in safetensors ---------------------------------------------------------------

# safetensors dtype codes; bfloat16 comes from ml_dtypes (numpy has none).
_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16,
           "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8, "U64": np.uint64,
           "U32": np.uint32, "U16": np.uint16, "U8": np.uint8, "BOOL": np.bool_}


def save_params(params: dict[str, np.ndarray]) -> bytes:
    """Serialize {name: array} to safetensors bytes (bfloat16 included)."""
    arrays = {name: np.ascontiguousarray(np.asarray(value)) for name, value in params.items()}
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


# -- input/output specs in JSON -----------------------------------------------------------------

def spec_to_json(name: str, shape, dtype) -> dict:
    """One input/output: dims are ints or symbol names (str) for dynamic dims."""
    return {"name": name, "shape": [d if isinstance(d, int) else str(d) for d in shape],
            "dtype": np.dtype(dtype).name}


def spec_from_json(entry: dict) -> InputSpec:
    return InputSpec([d if isinstance(d, int) else None for d in entry["shape"]], entry["dtype"], entry["name"])
