"""`pdx export`: export a model to a StableHLO artifact from the command line.

    pdx export MODULE:FACTORY --input-spec "image:None,1,8,8:float32" \\
        [--weights model.safetensors|model.pdparams|MODEL_SAVE_PREFIX] \\
        --target xla --target iree-llvm-cpu --out artifacts/lenet
    pdx export resnet18 --out artifacts/resnet18          # a pdx.models zoo name
    pdx export out/bert-cls --out artifacts/bert          # a pdx.models.save_pretrained directory
    pdx export resnet18 --target onnx --out artifacts/r18  # also artifacts/r18/model.onnx (pdx.onnx.export)
    pdx export paddle:inference_model/ --out artifacts/det  # a model Paddle saved (paddle.jit.save)

MODULE:FACTORY names a Layer, or a function/class that returns one when
called without arguments (`pdx.vision.models:resnet18`,
`recipes.quickstart:LeNet`); the current directory is importable. A zoo name
(`pdx.models.list()`) or a `from_pretrained` directory needs no
--input-spec: the zoo knows each model's inputs. Prints a
summary (parameters, program size, op histogram, targets written); exits 1
with a one-line reason when the export fails, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pathlib
import sys

__all__ = ["configure", "parse_input_spec", "run"]

_DYNAMIC = {"none", "-1", "?"}


def configure(parser: argparse.ArgumentParser) -> None:
    """Add `pdx export`'s arguments and set `func`."""
    from pdx.export._export import TARGETS

    parser.add_argument("model", metavar="MODULE:FACTORY|ZOO_NAME|DIR|paddle:DIR",
                        help="a Layer, or a function/class returning one, e.g. pdx.vision.models:resnet18; "
                             "a pdx.models zoo name (resnet18); a pdx.models.from_pretrained directory; or a model "
                             "Paddle saved (paddle:DIR or paddle:DIR/model: PIR model.json or legacy model.pdmodel "
                             "with its .pdiparams), whose inputs come from the program")
    parser.add_argument("--input-spec", action="append", metavar="[NAME:]DIMS[:DTYPE]",
                        help="one per input, e.g. 'image:None,3,224,224:float32' (None, -1 or ? = dynamic); "
                             "zoo models default to their registered inputs")
    parser.add_argument("--target", action="append", choices=TARGETS + ("onnx",), metavar="TARGET",
                        help=f"repeatable; one of {', '.join(TARGETS)}, onnx (xla is always written; onnx writes "
                             "OUT/model.onnx with pdx.onnx.export)")
    parser.add_argument("--out", required=True, metavar="DIR", help="the artifact directory to write")
    parser.add_argument("--weights", metavar="FILE",
                        help="a state dict to load first: safetensors, pdx.save, Paddle .pdparams, or the "
                             "prefix given to pdx.Model.save (PREFIX.pdparams.safetensors)")
    parser.add_argument("--name", help="model name in the manifest (default: the Layer's class)")
    parser.add_argument("--platforms", default="cpu,cuda", help="XLA platforms to lower for (default cpu,cuda)")
    parser.add_argument("--iree-batch-sizes", metavar="N,N,...",
                        help="batch buckets of the IREE modules, one function each (default 1,4,16 with "
                             "--iree-batch-split, else 1)")
    parser.add_argument("--iree-batch-split", action="store_true",
                        help="batch rows are independent: the IREE runtime covers any batch with bucket calls "
                             "(default: checked at export on XLA)")
    parser.add_argument("--no-differentiable", action="store_true",
                        help="leave the backward pass out (smaller program; no fine-tuning after pdx.jit.load)")
    parser.add_argument("--quantize", choices=QUANTIZE,
                        help="ptq-int8: int8 weights and activations (needs --calib), int8 x int8 -> int32 ops; "
                             "weight-only-int8 / weight-only-int4: Linear weights only (no backward pass is exported)")
    parser.add_argument("--calib", metavar="FILE",
                        help="calibration inputs for --quantize ptq-int8: a .npy array (one input) or a .npz with "
                             "one array per input name; a regular file read without pickle, at most 1 GiB once "
                             "inflated (checked from the headers), numeric, finite, batch-first with the input "
                             "spec's rank; the quantized model must give finite outputs on the first batch")
    parser.add_argument("--calib-batch-size", type=int, default=32, help="calibration batch size, >= 1 (default 32)")
    parser.set_defaults(func=run)


QUANTIZE = ("ptq-int8", "weight-only-int8", "weight-only-int4")


# Calibration files are read with the loader rules: regular files only, no pickle, sizes from headers first.
_MAX_CALIB_BYTES = 1 << 30
_MAX_CALIB_MEMBERS = 16
_NPY_MAGIC = b"\x93NUMPY"


def _npy_header(f, label: str):
    """(shape, fortran_order, dtype) of the .npy stream `f`, with the dtype checked before any data is read."""
    import numpy as np

    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise ValueError(f"unsupported .npy version {version}")
    except Exception as e:  # noqa: BLE001 - numpy's header parser raises many types; all mean a damaged file
        raise ValueError(f"--calib {label}: not a valid .npy array ({type(e).__name__}: {e})") from None
    if dtype.hasobject or dtype.kind not in "biuf":
        raise ValueError(f"--calib {label}: dtype {dtype} is not numeric (bool, int, uint or float); calibration "
                         "inputs are arrays of numbers")
    return shape, fortran, dtype


def _read_npy(f, label: str, budget: int):
    """One array from the .npy stream `f`, refused from its header if it holds more than `budget` bytes."""
    import math

    import numpy as np

    shape, fortran, dtype = _npy_header(f, label)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > budget:
        raise ValueError(f"--calib {label}: the array's header declares {nbytes} bytes ({shape} {dtype}), over the "
                         f"calibration limit of {budget} bytes")
    data = f.read(nbytes)
    if len(data) != nbytes:
        raise ValueError(f"--calib {label}: the file holds {len(data)} data bytes but its header declares {nbytes} "
                         "(truncated)")
    array = np.frombuffer(data, dtype=dtype)
    return array.reshape(shape[::-1]).T if fortran else array.reshape(shape)


def _load_calibration(path: str, names: list) -> list:
    """The calibration arrays of `path` (.npy: one input; .npz: one array per input name), in input order."""
    import struct
    import zipfile
    import zlib

    from pdx import _safefile

    fd, size = _safefile.open_regular(path, what="--calib file", error=ValueError)
    with open(fd, "rb", closefd=True) as f:
        magic = f.read(len(_NPY_MAGIC))
        f.seek(0)
        if magic == _NPY_MAGIC:
            return [_read_npy(f, path, min(size, _MAX_CALIB_BYTES))]
        if not magic.startswith(b"PK"):
            raise ValueError(f"--calib {path}: neither a .npy nor a .npz file (np.save / np.savez write them)")
        try:
            with zipfile.ZipFile(f) as zf:
                members = zf.infolist()
                if len(members) > len(names) + _MAX_CALIB_MEMBERS:
                    raise ValueError(f"--calib {path}: holds {len(members)} members; the model has {len(names)} "
                                     f"inputs {names}")
                for m in members:
                    if m.flag_bits & 0x1 or m.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                        raise ValueError(f"--calib {path}: member {m.filename!r} is encrypted or uses compression "
                                         f"method {m.compress_type}; write it with np.savez / np.savez_compressed")
                declared = sum(m.file_size for m in members)
                if declared > _MAX_CALIB_BYTES:  # from the zip's directory, before inflating a byte
                    raise ValueError(f"--calib {path}: its members declare {declared} bytes once inflated, over "
                                     f"the calibration limit of {_MAX_CALIB_BYTES} bytes")
                by_name = {m.filename[:-4] if m.filename.endswith(".npy") else m.filename: m for m in members}
                missing = [n for n in names if n not in by_name]
                if missing:
                    raise ValueError(f"--calib {path}: has arrays {sorted(by_name)}, the inputs are named {names}")
                arrays = []
                for n in names:
                    with zf.open(by_name[n]) as member:  # stops at the member's declared size
                        arrays.append(_read_npy(member, f"{path}[{n!r}]", by_name[n].file_size))
                return arrays
        except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, struct.error, EOFError, OSError,
                NotImplementedError, RuntimeError, UnicodeDecodeError) as e:  # what a damaged archive raises
            raise ValueError(f"--calib {path}: not a valid .npz file ({type(e).__name__}: {e})") from None


def _check_calibration(path: str, arrays: list, specs, names: list) -> None:
    """Rank, static dims, batch agreement and finiteness of each calibration array."""
    import numpy as np

    batch = None
    for a, spec, name in zip(arrays, specs, names):
        if a.ndim < 1 or a.shape[0] < 1:
            raise ValueError(f"--calib {path}: array {name!r} has shape {a.shape}; it needs a batch dimension "
                             "with at least one example")
        if a.ndim != len(spec.shape) or any(d is not None and d != s for d, s in zip(spec.shape[1:], a.shape[1:])):
            raise ValueError(f"--calib {path}: array {name!r} has shape {a.shape}, the input spec is "
                             f"{[d if d is not None else 'None' for d in spec.shape]} (rank {len(spec.shape)})")
        if batch is not None and a.shape[0] != batch:
            raise ValueError(f"--calib {path}: array {name!r} holds {a.shape[0]} examples, the others {batch}")
        batch = a.shape[0]
        if a.dtype.kind == "f":
            bad = np.flatnonzero(~np.isfinite(a.reshape(-1)))
            if bad.size:
                index = tuple(int(i) for i in np.unravel_index(bad[0], a.shape))
                raise ValueError(f"--calib {path}: array {name!r} holds {bad.size} non-finite value(s) (NaN or "
                                 f"Inf), the first {a[index]} at index {list(index)}; calibrating on it would make "
                                 "the int8 scales non-finite")


def _calibration_batches(path: str, specs, batch_size: int):
    if not path:
        raise ValueError("--quantize ptq-int8 needs --calib FILE (a .npy or .npz of representative inputs)")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"--calib-batch-size must be an integer >= 1; got {batch_size!r}")
    names = [s.name or f"input{i}" for i, s in enumerate(specs)]
    arrays = _load_calibration(path, names)
    if len(arrays) != len(specs):
        raise ValueError(f"--calib {path}: expected {len(specs)} array(s) named {names} (a .npz names them by input)")
    _check_calibration(path, arrays, specs, names)
    return [[a[start:start + batch_size] for a in arrays] for start in range(0, len(arrays[0]), batch_size)]


def _check_finite_outputs(model, batch, path: str) -> None:
    """Refuse a quantized model whose outputs on a calibration batch are not finite."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    outputs = model(*[jnp.asarray(a) for a in batch])
    for i, leaf in enumerate(jax.tree_util.tree_leaves(outputs)):
        leaf = np.asarray(leaf)
        if leaf.dtype.kind in "fc" and not np.isfinite(leaf).all():
            raise ValueError(f"the quantized model's output {i} on the first calibration batch of {path} holds "
                             f"{int((~np.isfinite(leaf)).sum())} non-finite value(s) of {leaf.size}; the artifact "
                             "was not written (check the calibration data's range, or quantize fewer layers)")


def _quantize(model, mode: str, specs, calib: str | None, batch_size: int):
    import jax.numpy as jnp

    from pdx import quantization

    if mode.startswith("weight-only"):
        return quantization.weight_only_quantize(model, f"weight_only_int{mode[-1]}", exclude=r"^$")
    batches = _calibration_batches(calib, specs, batch_size)  # every check before the model is touched
    ptq = quantization.PTQ(quantization.QuantConfig(activation=quantization.observers.AbsmaxObserver(),
                                                    weight=quantization.observers.PerChannelAbsmaxObserver()))
    calibrated = ptq.quantize(model)
    for batch in batches:
        calibrated(*[jnp.asarray(a) for a in batch])
    converted = ptq.convert(calibrated)
    _check_finite_outputs(converted, batches[0], calib)
    return converted


def parse_input_spec(text: str, index: int):
    """'[NAME:]DIMS[:DTYPE]' -> InputSpec; ValueError with the accepted form."""
    from pdx.jit import InputSpec

    parts = text.split(":")
    form = "[NAME:]DIMS[:DTYPE], e.g. 'image:None,3,224,224:float32'"
    if not 1 <= len(parts) <= 3:
        raise ValueError(f"--input-spec {text!r}: expected {form}")
    if len(parts) == 3:
        name, dims, dtype = parts
    elif len(parts) == 2 and _is_dims(parts[0]):
        name, (dims, dtype) = None, parts
    elif len(parts) == 2:
        (name, dims), dtype = parts, "float32"
    else:
        name, dims, dtype = None, parts[0], "float32"
    if not _is_dims(dims):
        raise ValueError(f"--input-spec {text!r}: {dims!r} is not a list of dims; expected {form}")
    shape = [None if d.strip().lower() in _DYNAMIC else int(d) for d in dims.strip("[]() ").split(",") if d.strip()]
    try:
        return InputSpec(shape, dtype, name or f"input_{index}")
    except TypeError as e:
        raise ValueError(f"--input-spec {text!r}: {e}") from None


def _is_dims(text: str) -> bool:
    items = [d.strip().lower() for d in text.strip("[]() ").split(",")]
    return all(d in _DYNAMIC or d.isdigit() for d in items) and any(items)


def _zoo_model(ref: str):
    """(model, zoo entry) for a zoo name or a from_pretrained directory; None for MODULE:FACTORY."""
    from pdx import models
    from pdx._safefile import load_json, read_file

    path = pathlib.Path(ref)
    if (path / "config.json").is_file():
        config = load_json(read_file(path / "config.json", max_bytes=1 << 20, what="config.json"), what="config.json")
        name = config.get("pdx_model") if isinstance(config, dict) else None
        return models.from_pretrained(path), (models.get(name) if name else None)
    if ":" not in ref and ref in {row["name"] for row in models.list(params=False)}:
        return models.create(ref), models.get(ref)
    return None


def _paddle_model(ref: str):
    """(model, input specs) for `paddle:PATH` (a model Paddle saved), else None."""
    if not ref.startswith("paddle:"):
        return None
    from pdx.inference import PaddleTranslatedLayer, is_paddle_model

    path = ref[len("paddle:"):]
    if not is_paddle_model(path):
        raise ValueError(f"{ref!r}: {path!r} holds no model saved by Paddle (model.json or model.pdmodel, with its "
                         ".pdiparams when it has parameters); pass its directory or path prefix")
    model = PaddleTranslatedLayer(path)
    specs = [f"{f.name}:{','.join('None' if d is None else str(d) for d in f.shape)}:{f.dtype}" for f in model.feeds]
    return model, specs


def _batch_sizes(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        sizes = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 1:
        raise ValueError(f"--iree-batch-sizes={text!r} must be comma-separated ints >= 1, e.g. 1,4,16")
    return sizes


def _resolve_model(ref: str):
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"model {ref!r} must be MODULE:FACTORY (e.g. pdx.vision.models:resnet18), a zoo name "
                         f"from pdx.models.list() or a pdx.models.save_pretrained directory")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like `python -m`: the user's own modules
    module = importlib.import_module(module_name)
    obj = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    from pdx.nn import Layer

    if isinstance(obj, Layer):
        return obj
    model = obj() if isinstance(obj, type) or callable(obj) else obj
    if not isinstance(model, Layer):
        raise TypeError(f"{ref} returned {type(model).__name__}, not a pdx.nn.Layer")
    return model


def _load_weights(model, path: str) -> None:
    from pdx.checkpoint import load

    if not os.path.exists(path) and os.path.exists(path + ".pdparams.safetensors"):
        path += ".pdparams.safetensors"  # a pdx.Model.save prefix
    state = load(path, return_numpy=True)
    if not isinstance(state, dict) or not all(hasattr(v, "shape") for v in state.values()):
        raise ValueError(f"--weights {path}: expected a flat state dict name -> array")
    missing, unexpected = model.set_state_dict(state)
    if missing or unexpected:
        raise ValueError(f"--weights {path}: names do not match the model (missing {missing[:5]}, "
                         f"unexpected {unexpected[:5]})")


def run(args: argparse.Namespace) -> int:
    """Run `pdx export`; returns the exit code."""
    try:
        paddle_model = _paddle_model(args.model)
        zoo = None if paddle_model is not None else _zoo_model(args.model)
        model, entry = zoo if zoo is not None else (None, None)
        if paddle_model is not None:
            model = paddle_model[0]
        if zoo is None and paddle_model is None and ":" not in args.model:
            raise ValueError(f"model {args.model!r} is not a zoo name from pdx.models.list(), a "
                             "pdx.models.save_pretrained directory or MODULE:FACTORY (e.g. pdx.vision.models:resnet18)")
        texts = args.input_spec or (entry.inputs if entry is not None else paddle_model[1] if paddle_model else ())
        if not texts:
            raise ValueError(f"{args.model!r} needs --input-spec (one per input, e.g. 'image:None,3,224,224:float32')")
        specs = [parse_input_spec(s, i) for i, s in enumerate(texts)]
    except (ValueError, OSError) as e:
        print(f"pdx export: error: {e}", file=sys.stderr)
        return 2
    try:
        from pdx.export._export import export
        from pdx.export._iree_export import IreeOptions

        model = model if model is not None else _resolve_model(args.model)
        if args.weights:
            _load_weights(model, args.weights)
        model.eval()
        if args.quantize:
            model = _quantize(model, args.quantize, specs, args.calib, args.calib_batch_size)
        targets = [t for t in args.target or ("xla",) if t != "onnx"]
        path = export(model, args.out, specs, targets=tuple(targets), name=args.name,
                      platforms=tuple(p.strip() for p in args.platforms.split(",") if p.strip()),
                      iree=IreeOptions(batch_sizes=_batch_sizes(args.iree_batch_sizes), batch_split=True if args.iree_batch_split else "auto"),
                      differentiable=not (args.no_differentiable or args.quantize))
        if "onnx" in (args.target or ()):
            from pdx.onnx import export as onnx_export

            onnx_file = onnx_export(model, str(path / "model"), specs)
    except Exception as e:  # noqa: BLE001 - the CLI's contract: one line, non-zero exit
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        print(f"pdx export: error: {type(e).__name__}: {first}", file=sys.stderr)
        return 1
    print(summary(path))
    if "onnx" in (args.target or ()):
        print(f"    onnx                {onnx_file.name} {_size(onnx_file.stat().st_size)} (symbolic dims)")
    return 0


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def summary(path) -> str:
    """A human-readable summary of an artifact's manifest.

    The manifest is read and checked as every loader reads it
    (`pdx.export.ArtifactError` if it is not one pdx wrote); the other files
    are not read.
    """
    from pdx.export import _artifact

    path = pathlib.Path(path)
    m = _artifact.read_manifest(path)
    _artifact.check_manifest(m, str(path / _artifact.MANIFEST))
    try:
        return _summary(path, m)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise _artifact.ArtifactError(f"{path / _artifact.MANIFEST}: malformed entry ({e!r}); "
                                      "re-export the model with this version of pdx") from None


def _summary(path: pathlib.Path, m: dict) -> str:
    files = m["files"]

    def sig(e):
        return f"{e['name']} {e['dtype']}[{', '.join(map(str, e['shape']))}]"

    n_params = sum(int(_prod(p["shape"])) for p in m["params"])
    trainable = sum(int(_prod(p["shape"])) for p in m["params"] if p["trainable"])
    ops = sorted(m["program"]["ops"].items(), key=lambda kv: (-kv[1], kv[0]))
    op_text = ", ".join(f"{k.split('.', 1)[1]} {v}" for k, v in ops[:12]) + (", ..." if len(ops) > 12 else "")
    lines = [f"exported {m['name']} -> {path}",
             f"  inputs   {'; '.join(sig(e) for e in m['inputs'])}",
             f"  outputs  {'; '.join(sig(e) for e in m['outputs'])}",
             f"  params   {n_params:,} ({trainable:,} trainable) in {len(m['params'])} tensors, "
             f"params.safetensors {_size(files['params.safetensors']['size'])}",
             f"  program  program.jaxexport {_size(files['program.jaxexport']['size'])}, "
             f"{sum(v for _, v in ops):,} StableHLO ops, platforms {', '.join(m['targets']['xla']['platforms'])}"
             f"{', with backward pass' if m['program']['vjp_order'] else ''}",
             f"  ops      {op_text}",
             "  targets"]
    for name, t in sorted(m["targets"].items(), key=lambda kv: kv[0] != "xla"):
        if name == "xla":
            lines.append(f"    xla                 {t['file']} (symbolic dims)")
        else:
            batch = "any batch, split" if t.get("batch_split") else "static shapes"
            lines.append(f"    {name:<19} {t['file']} {_size(files[t['file']]['size'])} "
                         f"({t['backend']}, dims {t['dims']}, {batch})")
    return "\n".join(lines)


def _prod(shape) -> int:
    out = 1
    for d in shape:
        out *= int(d)
    return out
