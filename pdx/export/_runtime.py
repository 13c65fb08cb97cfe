"""`pdx.export.load`: open a verified artifact and run it on XLA or IREE.

    read_artifact (manifest + sha256 of every file)  ->  Artifact
    Artifact -> Predictor(runtime="xla")   jax.export.deserialize, one jitted call (the oneDNN
                                           program where pdx's kernels run here, else the portable one)
             -> Predictor(runtime="iree")  the host .vmfb in the IREE runtime
             -> TranslatedLayer            (pdx.jit.load, see _translated.py)

Both runtimes validate inputs the same way (`_validate.check_arrays`).
"""

from __future__ import annotations

import weakref

import jax
import numpy as np
from jax import export as jax_export

from pdx import kernels as K
from pdx.export import _artifact
from pdx.export._artifact import ArtifactError
from pdx.export._iree import IREE_TARGETS, IreeModule, function_name, plan_batches
from pdx.export._validate import Signature, check_arrays

__all__ = ["Artifact", "Predictor", "load"]

RUNTIMES = ("xla", "iree")


class Artifact:
    """A verified artifact in memory: manifest, parameters, file bytes."""

    def __init__(self, path):
        self.path = str(path)
        self.manifest, self.files = _artifact.read_artifact(path)
        _artifact.check_manifest(self.manifest, f"{self.path}/{_artifact.MANIFEST}")
        try:
            m = self.manifest
            self.name = str(m["name"])
            self.inputs = list(m["inputs"])
            self.outputs = list(m["outputs"])
            self.param_meta = list(m["params"])
            self.targets = dict(m["targets"])
            self.signature = Signature(self.inputs)
            self.input_specs = tuple(_artifact.spec_from_json(e) for e in self.inputs)
            self.output_names = tuple(str(e["name"]) for e in self.outputs)
        except (KeyError, TypeError, ValueError) as e:
            raise ArtifactError(f"{self.path}: manifest.json is missing or has a malformed entry ({e!r}); "
                                "re-export the model with this version of pdx") from None
        where = f"{self.path}/{_artifact.PARAMS}"
        params = _artifact.load_params(self.files[_artifact.PARAMS], where)
        unlisted = sorted(set(params) - {meta["name"] for meta in self.param_meta})
        if unlisted:
            raise ArtifactError(f"{where} holds parameters the manifest does not list ({unlisted[:5]}); "
                                "re-export the model")
        for meta in self.param_meta:
            value = params.get(meta["name"])
            if value is None or list(value.shape) != meta["shape"] or value.dtype.name != meta["dtype"]:
                got = None if value is None else f"{value.dtype.name}{list(value.shape)}"
                raise ArtifactError(f"{where}: parameter {meta['name']!r} is {got}, manifest says "
                                    f"{meta['dtype']}{meta['shape']}; re-export the model")
        self.params = [params[meta["name"]] for meta in self.param_meta]

    def exported(self, program: str = _artifact.PROGRAM) -> jax_export.Exported:
        """Deserialize a StableHLO program (its bytes were verified on open)."""
        try:
            exported = jax_export.deserialize(bytearray(self.files[program]))
        except Exception as e:  # noqa: BLE001 - a verified file from another jax version
            versions = self.manifest.get("versions", {})
            raise ArtifactError(f"{self.path}/{program} could not be deserialized by jax "
                                f"{jax.__version__} (exported with jax {versions.get('jax')}): {e}; "
                                "re-export the model with the installed jax") from None
        # The program's arguments are (params, *inputs), and the CPU program's (params,
        # weights token, *inputs): they must be what the manifest says.
        token = [((), np.dtype(np.int32))] if program == _artifact.ONEDNN_PROGRAM else []
        want = [(tuple(p.shape), np.dtype(p.dtype)) for p in self.params] + token
        want += [(len(s.shape), np.dtype(d)) for s, d in zip(self.input_specs, self.signature.dtypes)]
        fixed = len(self.params) + len(token)
        got = [(tuple(a.shape), np.dtype(a.dtype)) for a in exported.in_avals[:fixed]]
        got += [(len(a.shape), np.dtype(a.dtype)) for a in exported.in_avals[fixed:]]
        if got != want:
            raise ArtifactError(f"{self.path}/{program} takes arguments {got} but the manifest "
                                f"describes {want}; re-export the model")
        return exported


class Predictor:
    """A callable over numpy arrays for one artifact and runtime.

    Attributes:
      name: the model name from the manifest.
      input_specs: tuple of `pdx.jit.InputSpec` (None marks a dynamic dim).
      output_names: tuple of output names.
      runtime: "xla" or "iree".
      program: for runtime "xla", "onednn" (the artifact's CPU program on pdx's
        oneDNN kernels, where they are available) or "portable".

      manifest: the artifact's manifest dict.

    An IREE module has static shapes: one function per batch bucket
    (recorded in the manifest). With `iree=IreeOptions(batch_split=True)` at export, `input_specs`
    keep a `None` batch dim and any batch size runs as the cheapest sequence
    of bucket calls (`plan_batches`; the last chunk padded with zero rows
    that are dropped). Without it, the batch must be one of the buckets; a
    single bucket's `input_specs` are its static shapes.
    """

    def __init__(self, artifact: Artifact, runtime: str, target: str | None = None):
        self.name = artifact.name
        self.input_specs = artifact.input_specs
        self.output_names = artifact.output_names
        self.runtime = runtime
        self.manifest = artifact.manifest
        self._sig = artifact.signature
        self._fn_name = f"{self.name} ({runtime})"
        if runtime == "xla":
            # The CPU program on pdx's oneDNN kernels where they run here (and it calls them as
            # this pdx does), else the portable one.
            native = artifact.targets["xla"].get("onednn_file")
            usable = native and artifact.targets["xla"].get("onednn_abi") == K.onednn.ABI
            # a bfloat16 oneDNN program needs a CPU with AVX-512; elsewhere the portable one runs
            usable = usable and (artifact.targets["xla"].get("onednn_precision", "float32") == "float32"
                                 or K.onednn.bf16_capable())
            self.program = "onednn" if usable and K.onednn.unavailable_reason() is None else "portable"
            exported = artifact.exported(native if self.program == "onednn" else _artifact.PROGRAM)
            params = tuple(jax.device_put(p) for p in artifact.params)
            call = jax.jit(exported.call)
            fixed = (params,)
            if self.program == "onednn":
                # Its convolutions keep their weights' oneDNN layout under this predictor's
                # token (the parameters never change), freed with the predictor.
                token = K.onednn.new_weights_token()
                weakref.finalize(self, K.onednn.forget_weights, int(token))
                fixed = (params, jax.device_put(token))
            self._run = lambda arrays: [np.asarray(o) for o in jax.tree.leaves(call(*fixed, *arrays))]
            return
        self.program = None
        target = target or "iree-llvm-cpu"
        if target not in artifact.targets:
            raise ValueError(f"load: the artifact has no {target!r} target (it has {sorted(artifact.targets)}); "
                             f"export it with targets=[..., {target!r}]")
        if not IREE_TARGETS[target][2]:
            raise ValueError(f"load: target {target!r} is compiled for another device; it cannot run on "
                             "this host (use 'iree-llvm-cpu' here, or copy the .vmfb to the device)")
        info = artifact.targets[target]
        buckets = info.get("buckets") or [{"batch": None, "input_shapes": info["input_shapes"]}]
        inline = info.get("params") == "inline"
        self._module = IreeModule(artifact.files[info["file"]], [] if inline else artifact.params)
        self._static = {b["batch"]: Signature([dict(e, shape=s) for e, s in zip(artifact.inputs, b["input_shapes"])])
                        for b in buckets}
        self._buckets = tuple(b["batch"] for b in buckets)
        self._chunked = bool(info.get("batch_split"))
        if not self._chunked and len(buckets) == 1:  # the module takes exactly the shapes it was specialized to
            self._sig = self._static[self._buckets[0]]
            self._fn_name = (f"{self.name} (iree module specialized to static shapes; export with "
                             "iree=IreeOptions(batch_sizes=...) or IreeOptions(batch_split=True) for other batch sizes)")
            self.input_specs = tuple(_artifact.spec_from_json(dict(e, shape=s))
                                     for e, s in zip(artifact.inputs, buckets[0]["input_shapes"]))
        self._run = self._run_iree

    def __repr__(self) -> str:
        inputs = "; ".join(self._sig.describe(i) for i in range(len(self._sig.names)))
        return f"Predictor(name={self.name!r}, runtime={self.runtime!r}, inputs=[{inputs}], outputs={list(self.output_names)})"

    def check_inputs(self, *arrays) -> list[np.ndarray]:
        """Validate inputs against the manifest and return them as numpy arrays.

        Arrays must have the declared dtype; nested lists/scalars (decoded
        JSON) are converted to it. Raises ValueError naming the input with
        expected vs got (arity, dtype, rank, static dims, dynamic dims >= 1
        and equal across inputs).
        """
        return check_arrays(self._sig, arrays, fn=self._fn_name, convert=True)

    def __call__(self, *arrays):
        """Run the model: one numpy array, or a tuple for several outputs."""
        outs = self._run(self.check_inputs(*arrays))
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _run_iree(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        if len(self._buckets) == 1 and not self._chunked:
            return self._module(*arrays, function=function_name(self._buckets[0]))
        n = arrays[0].shape[0]
        if not self._chunked:
            if n not in self._buckets:
                raise ValueError(f"{self.name} (iree): batch size {n} is not one the modules were compiled for "
                                 f"({list(self._buckets)}); pass one of those, or export with "
                                 "iree=IreeOptions(batch_split=True) to run any batch size")
            chunk = check_arrays(self._static[n], arrays, fn=self._fn_name, convert=True)
            return self._module(*chunk, function=function_name(n))
        # Cover the batch with bucket calls (plan_batches); only the last chunk is padded.
        pieces, start = [], 0
        for k in plan_batches(n, self._buckets):
            chunk = [a[start:start + k] for a in arrays]
            rows = chunk[0].shape[0]
            if rows < k:
                chunk = [np.concatenate([c, np.zeros((k - rows,) + c.shape[1:], c.dtype)]) for c in chunk]
            chunk = check_arrays(self._static[k], chunk, fn=f"{self._fn_name} static shapes", convert=True)
            pieces.append([o[:rows] for o in self._module(*chunk, function=function_name(k))])
            start += k
        return [np.concatenate(parts) for parts in zip(*pieces)]


def load(path, runtime: str = "xla", *, target: str | None = None) -> Predictor:
    """Load an exported artifact for inference.

    Reads the artifact by pdx's loader rule (regular files only, symlinks
    only inside the directory, sizes checked against the manifest before
    reading) and checks the manifest and the sha256 of every file before
    deserializing anything. A checksum is not a signature: load artifacts
    you trust.

    Args:
      path: the artifact directory written by `pdx.export.export` / `pdx.jit.save`.
      runtime: "xla" (the StableHLO program on XLA, any batch size) or
        "iree" (an IREE `.vmfb` on the IREE runtime).
      target: for runtime="iree", the IREE target to run (default "iree-llvm-cpu").

    Returns:
      A `Predictor`: `predictor(*arrays)` returns numpy arrays.

    Raises:
      ArtifactError: missing, truncated, corrupted or malformed artifact, or
        a file that is a FIFO, a device or a symlink leaving the directory.

    Example:
      >>> predictor = pdx.export.load("artifacts/lenet")           # doctest: +SKIP
      >>> predictor(np.zeros((2, 1, 28, 28), np.float32)).shape    # doctest: +SKIP
      (2, 10)
    """
    if runtime not in RUNTIMES:
        raise ValueError(f"load: runtime={runtime!r} must be one of {RUNTIMES}")
    if target is not None and runtime != "iree":
        raise ValueError(f"load: target={target!r} applies to runtime='iree' only")
    return Predictor(Artifact(path), runtime, target)
