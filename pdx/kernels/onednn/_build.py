"""Building and loading the oneDNN handlers: one shared library, compiled outside any trace.

`csrc/*.cc` (FFI handlers: convolutions, matmuls, attention, paged attention,
LayerNorm, max pool; shared header `csrc/onednn.h`) is compiled with the system C++ compiler
against the headers and library of the `onednn-cpu-gomp` /
`onednn-devel-cpu-gomp` wheels into one library in a cache directory keyed by
the sources and the versions (`~/.cache/pdx/onednn/<key>/`, or
`$PDX_CACHE_DIR/onednn/`), linked to a private copy of oneDNN's library (Paddle
bundles another oneDNN under the same soname).

When: `prepare()` runs when `pdx.kernels` is first imported (`pdx.nn` imports
it). A cached library costs a hash of the sources; a missing one is built there
and then, once per machine, with a one-line notice on stderr (about a minute;
`pdx kernels build` does it ahead of time). The first JAX trace that wants a
oneDNN kernel only loads the library and registers its handlers, so no trace
waits for a compiler. When the library cannot be built (no compiler, no wheels,
a failed compile) one warning names why and how to enable it, and every op
runs on XLA. `PDX_ONEDNN=0` turns the backend off without a word.

`ABI` is a hash of the handlers' bindings (their `Bind()` chains: operands,
results, attributes, and the handler symbols): an exported artifact records
it, and an artifact written for other bindings runs its portable program.

Example:
  >>> isinstance(unavailable_reason(), (str, type(None)))
  True
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp

from pdx import _cpu

__all__ = ["ABI", "TARGETS", "available", "bf16_capable", "build", "float_dtypes", "load", "prepare",
           "unavailable_reason"]

_CSRC = Path(__file__).parent / "csrc"
_SOURCES = (_CSRC / "conv_matmul.cc", _CSRC / "attention.cc", _CSRC / "norm.cc",  # one library; each includes
            _CSRC / "paged_attention.cc")
_HEADER = _CSRC / "onednn.h"  # the shared header
_TARGETS = {"pdx_onednn_conv_forward": "PdxConvForward", "pdx_onednn_conv_backward_data": "PdxConvBackwardData",
            "pdx_onednn_conv_backward_weights": "PdxConvBackwardWeights", "pdx_onednn_conv_inference": "PdxConvInference",
            "pdx_onednn_matmul": "PdxMatmul", "pdx_onednn_max_pool": "PdxMaxPool",
            "pdx_onednn_matmul_inference": "PdxMatmulInference", "pdx_onednn_attention_forward": "PdxAttentionForward",
            "pdx_onednn_attention_backward": "PdxAttentionBackward", "pdx_onednn_layer_norm_forward": "PdxLayerNormForward",
            "pdx_onednn_layer_norm_backward": "PdxLayerNormBackward",
            "pdx_onednn_paged_attention": "PdxPagedAttention"}
TARGETS = tuple(_TARGETS)  # the custom-call targets a program traced with these kernels may hold

# A binding line: part of a Bind() chain or a handler definition. A change in what
# an operand means that leaves these lines alone adds a `// abi: <why>` comment.
_BINDING = re.compile(r"Bind\(\)|\.(?:template\s+)?(?:Arg|Ret|Attr|Ctx)<|Args<|Rets<|XLA_FFI_DEFINE_HANDLER|//\s*abi:")


def _bindings_hash() -> str:
    lines = []
    for path in (*_SOURCES, _HEADER):
        for line in path.read_text().splitlines():
            if _BINDING.search(line):
                lines.append(" ".join(line.split()))
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:12]


ABI = _bindings_hash()
_LOCK = threading.Lock()
_STATE: dict[str, object] = {}  # "built": library path or reason; "reason": after load(); "library"


def _prefixes():
    seen = []
    for p in (sysconfig.get_path("data"), sys.prefix, sys.base_prefix):
        if p and p not in seen:
            seen.append(p)
    return [Path(p) for p in seen]


def _find_onednn():
    """(include dir, library path) of the oneDNN wheels, or a reason string."""
    for prefix in _prefixes():
        include, lib = prefix / "include", prefix / "lib" / "libdnnl.so.3"
        if (include / "dnnl.hpp").is_file() and lib.is_file():
            return include, lib
    return ("oneDNN was not found (install the `onednn-cpu-gomp` and `onednn-devel-cpu-gomp` wheels, "
            "which `pip install pdx` does on x86-64 Linux)")


def _cache_dir() -> Path:
    root = os.environ.get("PDX_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pdx")
    return Path(root) / "onednn"


# Paddle ships its own libdnnl.so.3 (another oneDNN version), and the dynamic loader
# shares one library per soname: the handlers link a private copy whose soname is
# renamed (same length, in place), so either can load first and each keeps its own.
_PRIVATE_SONAME = b"libpdxdnn.so"
_SONAME = b"libdnnl.so.3"


def _private_onednn(lib: Path, where: Path) -> Path:
    """A copy of oneDNN's library under a soname no other package uses."""
    out = where / _PRIVATE_SONAME.decode()  # the name the loader looks for (rpath = where)
    if out.is_file():
        return out
    data = bytearray(lib.read_bytes())
    at = data.find(_SONAME + b"\0")
    if at < 0 or data.find(_SONAME + b"\0", at + 1) >= 0:
        raise OSError(f"{lib}: expected its soname {_SONAME.decode()!r} exactly once")
    data[at:at + len(_SONAME)] = _PRIVATE_SONAME
    fd, tmp = tempfile.mkstemp(dir=where)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, out)
    return out


def _build(*, quiet: bool) -> Path | str:
    """Compile the handlers unless cached, returning the library or a reason."""
    found = _find_onednn()
    if isinstance(found, str):
        return found
    include, lib = found
    sources = [path.read_bytes() for path in (*_SOURCES, _HEADER)]
    key = hashlib.sha256(b"\0".join([*sources, jax.__version__.encode(), str(lib.resolve()).encode(),
                                     str(lib.stat().st_size).encode()])).hexdigest()[:16]
    where = _cache_dir() / key
    out = where / "pdx_onednn.so"
    if out.is_file():
        return out
    compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if not compiler:
        return "no C++ compiler found (set CXX or install g++)"
    where.mkdir(parents=True, exist_ok=True)
    if not quiet:
        print(f"pdx: building the oneDNN CPU kernels once for this machine (about a minute; cached in {where}; "
              "`pdx kernels build` does it ahead of time)", file=sys.stderr, flush=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=where)
    os.close(fd)
    try:
        private = _private_onednn(lib, where)
        cmd = [compiler, "-O2", "-std=c++17", "-shared", "-fPIC", "-fopenmp", "-w", f"-I{jax.ffi.include_dir()}",
               f"-I{include}", *map(str, _SOURCES), "-o", tmp, str(private),
               f"-Wl,-rpath,{where}"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if done.returncode:
            return f"compiling {' and '.join(p.name for p in _SOURCES)} failed: {done.stderr.strip()[-2000:]}"
        os.replace(tmp, out)  # atomic: concurrent builders each write their own temp file
    except (OSError, subprocess.SubprocessError) as e:
        return f"building {' and '.join(p.name for p in _SOURCES)} failed: {e}"
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return out


def _skip_reason() -> str | None:
    """Why this process does not even try (None when it does)."""
    if os.environ.get("PDX_ONEDNN", "1") == "0":
        return "disabled by PDX_ONEDNN=0"
    if sys.platform != "linux":
        return f"oneDNN kernels are built for Linux only (this is {sys.platform})"
    return None


def _expected_here() -> bool:
    """Whether pdx installs oneDNN on this platform, so a missing build deserves a warning."""
    import platform

    return sys.platform == "linux" and platform.machine() in ("x86_64", "AMD64")


def build(*, quiet: bool = True) -> Path | str:
    """Compile the library if it is not cached (once per source/version); its path, or why not.

    `pdx kernels build` calls this; `prepare()` does on first import.

    >>> isinstance(build(), (Path, str))
    True
    """
    skip = _skip_reason()
    if skip:
        return skip
    return _build(quiet=quiet)


def prepare() -> None:
    """Have the library built before any trace wants it (called when `pdx.kernels` is imported).

    Warns once, on one line, when it cannot be built on a platform where pdx installs oneDNN.
    """
    with _LOCK:
        if "built" in _STATE:
            return
        skip = _skip_reason()
        built = _STATE["built"] = skip or _build(quiet=False)
    if isinstance(built, str) and not skip and _expected_here():
        first = built.splitlines()[0] if built else built
        warnings.warn(f"pdx: the oneDNN CPU kernels are off ({first}); convolutions, matmuls and attention "
                      "run on XLA. To enable them install a C++ compiler (g++) and run `pdx kernels build`; "
                      "PDX_ONEDNN=0 silences this.", RuntimeWarning, stacklevel=2)


def load() -> str | None:
    """Load and register the built handlers once; None when ready, else why not. Never compiles
    unless `prepare()` was skipped (then it builds here, as a fallback)."""
    with _LOCK:
        if "reason" not in _STATE:
            _STATE["reason"] = _register()
        return _STATE["reason"]


def _register() -> str | None:
    built = _STATE.get("built")
    if built is None:
        skip = _skip_reason()
        built = _STATE["built"] = skip or _build(quiet=True)
    if isinstance(built, str):
        return built
    try:
        # Its own scope first: never bind to another package's oneDNN symbols.
        lib = ctypes.CDLL(str(built), mode=os.RTLD_NOW | os.RTLD_LOCAL | os.RTLD_DEEPBIND)
        for name, symbol in _TARGETS.items():
            jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(lib, symbol)), platform="cpu")
    except (OSError, AttributeError) as e:
        return f"loading {built} failed: {e}"
    _STATE["library"] = lib
    return None


def unavailable_reason() -> str | None:
    """Why the oneDNN kernels cannot run here (None when they can). Loads them on first call."""
    return load()


def available() -> bool:
    """Whether the oneDNN kernels can run in this process (loads them on first call).

    >>> isinstance(available(), bool)
    True
    """
    return load() is None


@functools.cache
def bf16_capable() -> bool:
    """Whether this CPU runs oneDNN's bfloat16 primitives: AVX-512 (core) or newer.

    oneDNN has no bfloat16 convolution or matmul for AVX2-only CPUs (it fails
    creating the primitive), so there bfloat16 operands run on XLA.

    >>> isinstance(bf16_capable(), bool)
    True
    """
    return _cpu.bf16_native()


def float_dtypes() -> tuple:
    """The floating dtypes oneDNN's primitives take on this CPU."""
    return (jnp.float32, jnp.bfloat16) if bf16_capable() else (jnp.float32,)
