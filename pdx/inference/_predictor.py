"""Paddle Inference's Python API (`paddle.inference`) over translated Paddle programs and pdx artifacts."""

from __future__ import annotations

import contextlib
import enum
import os
import threading
import warnings
import weakref
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from pdx import _lowering
from pdx import kernels as K
from pdx.inference._layer import as_input
from pdx.inference._program_file import ModelFormatError
from pdx.inference._translate import PaddleProgram, find_model_files, trim_outputs

__all__ = ["Config", "DataType", "PlaceType", "PrecisionType", "Predictor", "PredictorPool", "Tensor",
           "create_predictor", "get_num_bytes_of_data_type", "get_trt_compile_version", "get_trt_runtime_version",
           "get_version"]


class PrecisionType(enum.Enum):
    """Paddle Inference's precision names (`Config.enable_use_gpu(..., precision_mode)`, mixed precision)."""
    Float32 = 0
    Int8 = 1
    Half = 2
    Bfloat16 = 3


class PlaceType(enum.Enum):
    """Where a tensor lives, in Paddle Inference's names."""
    UNK = -1
    CPU = 0
    GPU = 1
    XPU = 2
    CUSTOM = 3


class DataType(enum.Enum):
    """Tensor element types, in Paddle Inference's names (`Tensor.type()`)."""
    FLOAT64 = "float64"
    FLOAT32 = "float32"
    FLOAT16 = "float16"
    BFLOAT16 = "bfloat16"
    INT64 = "int64"
    INT32 = "int32"
    UINT8 = "uint8"
    INT8 = "int8"
    BOOL = "bool"


def get_num_bytes_of_data_type(dtype: DataType) -> int:
    """Bytes per element of a `DataType` (`get_num_bytes_of_data_type(DataType.FLOAT32) == 4`)."""
    if not isinstance(dtype, DataType):
        raise TypeError(f"dtype must be a pdx.inference.DataType, got {dtype!r}")
    return 2 if dtype is DataType.BFLOAT16 else np.dtype(dtype.value).itemsize


def get_version() -> str:
    """The version text Paddle Inference prints, with pdx's and JAX's versions.

    Example:
      >>> from pdx import inference
      >>> inference.get_version().splitlines()[0].startswith("version:")
      True
    """
    from pdx.version import full_version

    return f"version: {full_version}\nbackend: jax {jax.__version__} ({jax.default_backend()})\n"


def get_trt_compile_version() -> tuple[int, int, int]:
    """(0, 0, 0): pdx is not built with TensorRT (XLA compiles the program)."""
    return (0, 0, 0)


def get_trt_runtime_version() -> tuple[int, int, int]:
    """(0, 0, 0): pdx runs no TensorRT engine."""
    return (0, 0, 0)


# Config calls that pdx accepts and ignores (each one's reason is in pdx/inference/README.md):
# backends and passes of Paddle's own engine that have no counterpart once XLA compiles the program.
_IGNORED = (
    "enable_mkldnn_bfloat16",
    "enable_onednn_bfloat16", "enable_mkldnn_int8", "enable_onednn_int8", "disable_mkldnn_fc_passes",
    "disable_onednn_fc_passes", "set_mkldnn_cache_capacity", "set_onednn_cache_capacity", "set_mkldnn_op",
    "set_onednn_op", "set_bfloat16_op", "enable_memory_optim", "enable_tensorrt_engine", "enable_tensorrt_dla",
    "enable_tensorrt_explicit_quantization", "enable_tensorrt_inspector", "enable_tensorrt_memory_optim",
    "enable_tensorrt_varseqlen", "enable_tuned_tensorrt_dynamic_shape", "set_trt_dynamic_shape_info",
    "set_tensorrt_optimization_level", "exp_disable_tensorrt_ops", "exp_disable_tensorrt_subgraph",
    "exp_disable_tensorrt_dynamic_shape_ops", "exp_specify_tensorrt_subgraph_precision", "mark_trt_engine_outputs",
    "enable_onnxruntime", "disable_onnxruntime", "enable_ort_optimization", "enable_openvino_engine",
    "enable_cinn", "enable_new_ir", "enable_new_executor", "enable_custom_passes", "delete_pass",
    "set_optimization_level", "switch_use_feed_fetch_ops", "switch_specify_input_names", "switch_ir_debug",
    "enable_profile", "enable_save_optim_model", "set_optim_cache_dir", "collect_shape_range_info",
    "exp_enable_use_cutlass", "exp_sparse_conv_using_buffer", "exp_disable_mixed_precision_ops",
    "exp_enable_mixed_precision_ops", "enable_low_precision_io", "enable_xpu", "set_xpu_device_id",
    "set_xpu_config", "enable_custom_device", "enable_ipu", "set_ipu_config", "set_ipu_custom_info",
    "load_ipu_config", "disable_glog_info",
)


def _ignored(name):
    def call(self, *args, **kwargs):
        self._ignored_calls.append(name)

    call.__name__ = name
    call.__doc__ = (f"Accepted for Paddle Inference compatibility and ignored: `{name}` tunes Paddle's own engine; "
                    "pdx compiles the whole program with XLA (see pdx/inference/README.md).")
    return call


class Config:
    """Where the model is and how to run it (Paddle's `paddle.inference.Config`).

    `Config(model_file, params_file)` for a program file and its parameters,
    `Config(model_dir)` for a directory holding one Paddle model,
    `Config()` then `set_model(...)`.

    What changes something in pdx: `switch_ir_optim(False)` runs the
    translated program op by op instead of as one compiled XLA function;
    `enable_use_gpu` / `disable_gpu` choose JAX's first GPU or the CPU;
    on the CPU, `enable_mkldnn()` / `enable_onednn()` (the default, as in
    Paddle) compile convolutions and matmuls onto pdx's oneDNN kernels with
    BatchNorm, residual adds and ReLUs fused and weights kept in oneDNN's
    layout, `disable_mkldnn()` / `disable_onednn()` leave them to XLA;
    `set_cpu_math_library_num_threads` is recorded (XLA's CPU thread pool is
    fixed when the process starts). Paddle's other engine switches
    (TensorRT, passes, memory optimization, ...) are accepted and ignored.

    Example:
      >>> from pdx import inference
      >>> config = inference.Config("m/model.json", "m/model.pdiparams")
      >>> config.disable_gpu(); config.set_cpu_math_library_num_threads(4)
      >>> config.prog_file()
      'm/model.json'
    """

    def __init__(self, model_file=None, params_file=None):
        self._model_dir = self._prog_file = self._params_file = None
        self._use_gpu, self._gpu_id, self._ir_optim, self._threads = False, 0, True, 1
        self._onednn = True
        self._ignored_calls: list[str] = []
        if model_file is not None:
            self.set_model(model_file, params_file)

    def set_model(self, model_file, params_file=None) -> None:
        """Set the model: a directory (one argument), or a program file and its parameters file."""
        if not isinstance(model_file, (str, os.PathLike)):
            raise TypeError(f"model_file must be a path, got {type(model_file).__name__}")
        if params_file is None:
            self._model_dir, self._prog_file, self._params_file = os.fspath(model_file), None, None
        else:
            self._model_dir, self._prog_file, self._params_file = None, os.fspath(model_file), os.fspath(params_file)

    def set_prog_file(self, path) -> None:
        """Set the program file (`model.json`)."""
        self._prog_file, self._model_dir = os.fspath(path), None

    def set_params_file(self, path) -> None:
        """Set the parameters file (`model.pdiparams`)."""
        self._params_file, self._model_dir = os.fspath(path), None

    def model_dir(self):
        """The model directory given to `Config(model_dir)`, else None."""
        return self._model_dir

    def prog_file(self):
        """The program file."""
        return self._prog_file

    def params_file(self):
        """The parameters file."""
        return self._params_file

    def enable_use_gpu(self, memory_pool_init_size_mb=100, device_id=0, precision_mode=PrecisionType.Float32):
        """Run on JAX's GPU `device_id` (the memory pool size is XLA's to manage; precision must be Float32)."""
        if precision_mode is not PrecisionType.Float32:
            raise ValueError(f"precision_mode={precision_mode} is not supported; pdx runs the program in the "
                             "precision it was saved in (use convert_to_mixed_precision for float16 weights)")
        self._use_gpu, self._gpu_id = True, int(device_id)

    def disable_gpu(self) -> None:
        """Run on the CPU."""
        self._use_gpu = False

    def use_gpu(self) -> bool:
        """Whether `enable_use_gpu` was called (and not undone)."""
        return self._use_gpu

    def gpu_device_id(self) -> int:
        """The GPU index given to `enable_use_gpu`."""
        return self._gpu_id

    def switch_ir_optim(self, x: bool = True) -> None:
        """True (default): compile the whole program with XLA; False: run it op by op (for debugging)."""
        self._ir_optim = bool(x)

    def ir_optim(self) -> bool:
        """Whether the program is compiled as one XLA function."""
        return self._ir_optim

    def enable_mkldnn(self) -> None:
        """On the CPU, run convolutions and matmuls on pdx's oneDNN kernels (the default)."""
        self._onednn = True

    def disable_mkldnn(self) -> None:
        """On the CPU, leave convolutions and matmuls to XLA."""
        self._onednn = False

    def mkldnn_enabled(self) -> bool:
        """Whether the CPU program uses pdx's oneDNN kernels (where they are built on this machine)."""
        return self._onednn

    enable_onednn, disable_onednn, onednn_enabled = enable_mkldnn, disable_mkldnn, mkldnn_enabled

    def set_cpu_math_library_num_threads(self, n: int) -> None:
        """Recorded only: XLA's CPU thread pool is sized when the process starts (XLA_FLAGS)."""
        if int(n) < 1:
            raise ValueError(f"set_cpu_math_library_num_threads: n must be >= 1, got {n}")
        self._threads = int(n)

    def cpu_math_library_num_threads(self) -> int:
        """The number given to `set_cpu_math_library_num_threads`."""
        return self._threads

    def glog_info_disabled(self) -> bool:
        """True: pdx writes no glog lines."""
        return True

    def summary(self) -> str:
        """A table of the settings, as Paddle's `Config.summary()`."""
        rows = [("model_dir", self._model_dir), ("prog_file", self._prog_file), ("params_file", self._params_file),
                ("use_gpu", self._use_gpu), ("gpu_device_id", self._gpu_id), ("ir_optim", self._ir_optim),
                ("onednn", self._onednn),
                ("cpu_math_library_num_threads", self._threads),
                ("ignored calls", ", ".join(sorted(set(self._ignored_calls))) or "-")]
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)

    def _device(self):
        if not self._use_gpu:
            return jax.devices("cpu")[0]
        try:
            gpus = jax.devices("gpu")
        except RuntimeError:
            raise RuntimeError("Config.enable_use_gpu: JAX sees no GPU here; call disable_gpu() to run on the "
                               "CPU") from None
        if self._gpu_id >= len(gpus):
            raise ValueError(f"enable_use_gpu(device_id={self._gpu_id}): JAX sees {len(gpus)} GPU(s)")
        return gpus[self._gpu_id]


for _name in _IGNORED:
    setattr(Config, _name, _ignored(_name))
del _name


class Tensor:
    """An input or output handle of a `Predictor` (Paddle's `paddle.inference.Tensor`).

    Example:
      >>> handle = predictor.get_input_handle("x")          # doctest: +SKIP
      >>> handle.reshape([1, 3, 224, 224]); handle.copy_from_cpu(image)  # doctest: +SKIP
    """

    def __init__(self, name: str, dtype: str, shape):
        self._name, self._dtype, self._decl = name, dtype, tuple(shape)
        self._value = None
        self._shape = None

    @property
    def name(self) -> str:
        return self._name

    def reshape(self, shape) -> None:
        """Declare the shape of the next `copy_from_cpu` (checked against the program's input)."""
        shape = [int(d) for d in shape]
        self._check_shape(shape)
        self._shape = shape

    def _check_shape(self, shape):
        if len(shape) != len(self._decl) or any(d is not None and d != s for d, s in zip(self._decl, shape)):
            raise ValueError(f"input {self._name!r}: shape {list(shape)} does not fit the program's "
                             f"{[-1 if d is None else d for d in self._decl]} (-1: any size)")

    def copy_from_cpu(self, data) -> None:
        """Copy a numpy array into this input."""
        data = np.array(data, copy=True)
        if self._shape is not None and list(data.shape) != self._shape and data.size == int(np.prod(self._shape)):
            data = data.reshape(self._shape)
        self._check_shape(data.shape)
        self._value = data

    def share_external_data(self, data) -> None:
        """Use `data` (a numpy or JAX array, a pdx tensor) as this input without copying it."""
        self._check_shape(np.shape(data))
        self._value = data

    def copy_to_cpu(self) -> np.ndarray:
        """This output as a numpy array (of the program's dtype)."""
        if self._value is None:
            raise RuntimeError(f"tensor {self._name!r} holds no data yet: run the predictor first")
        out = np.asarray(self._value)
        return out.astype(self._dtype) if self._dtype not in ("bfloat16",) and out.dtype != self._dtype else out

    def shape(self) -> list[int]:
        """The shape of the data held (or of `reshape`'s, before any data)."""
        if self._value is not None:
            return list(np.shape(self._value))
        return list(self._shape) if self._shape is not None else [-1 if d is None else d for d in self._decl]

    def type(self) -> DataType:
        """The element type, as a `DataType`."""
        return DataType(self._dtype)

    def lod(self) -> list:
        """Empty: pdx tensors carry no LoD."""
        return []

    def set_lod(self, lod) -> None:
        """Refused unless empty: LoD (variable-length sequences in one tensor) is not supported."""
        if lod:
            raise ValueError("set_lod: LoD tensors are not supported; pad the batch and pass lengths")


def _artifact_dir(config: Config) -> Path | None:
    """The pdx artifact directory `config` names, or None for a Paddle program.

    `Config(dir)` / `Config(dir, params)` naming an artifact directory, or the files Paddle's
    `paddle.jit.save(layer, "out/m")` would write, `Config("out/m.json", "out/m.pdiparams")`
    (or `.pdmodel`), when they do not exist and `out/m` is the directory `pdx.jit.save` wrote.
    """
    named = config.model_dir() or config.prog_file()
    if named is None:
        return None
    path = Path(named)
    if path.suffix in (".json", ".pdmodel") and not path.exists():
        path = path.with_suffix("")
    return path if (path / "manifest.json").is_file() else None


class _ArtifactEngine:
    """A pdx artifact (`pdx.jit.save` / `pdx.export.export`), run by `pdx.export.load`'s predictor."""

    def __init__(self, path: Path):
        import pdx.inference  # its `_load_artifact` is pdx.export.load (pdx/_paddle_tree.py NAMES: the package above)

        self.model = pdx.inference._load_artifact(path)
        self.inputs = [(spec.name or f"x{i}", jnp.dtype(spec.dtype).name, tuple(spec.shape))
                       for i, spec in enumerate(self.model.input_specs)]
        self.outputs = [(name, None) for name in self.model.output_names]

    def run(self, arrays):
        outs = self.model(*arrays)
        return list(outs) if isinstance(outs, tuple) else [outs]


def _open(config: Config):
    artifact = _artifact_dir(config)
    return _ArtifactEngine(artifact) if artifact is not None else _Engine(config)


class _Engine:
    """One loaded model, shared by a predictor and its clones (Paddle's clones share the weights)."""

    def __init__(self, config: Config):
        self.device = config._device()
        if config.model_dir() is None and (config.prog_file() is None or config.params_file() is None):
            raise ValueError("Config names no model: use Config(model_dir) or Config(model_file, params_file)")
        model_file, params_file = find_model_files(config.model_dir() or config.prog_file(),
                                                   None if config.model_dir() else config.params_file())
        self.program = PaddleProgram(model_file, params_file)
        self.inputs = [(f.name, f.dtype, f.shape) for f in self.program.feeds]
        self.outputs = [(f.name, None) for f in self.program.fetches]
        self.params = {k: jax.device_put(jnp.asarray(v), self.device) for k, v in self.program.values.items()}
        self.compiled = jax.jit(lambda params, inputs: self.program(params, inputs))
        self.eager = config.ir_optim() is False
        self.lock = threading.Lock()
        self.native = None
        if not self.eager and config.mkldnn_enabled() and self.device.platform == "cpu" \
                and K.onednn.unavailable_reason() is None:
            # The CPU program: convolutions whose weights come from the parameters keep oneDNN's layout
            # between calls under this engine's token (freed with the engine), BatchNorm folded into them.
            token = K.onednn.new_weights_token()
            weakref.finalize(self, K.onednn.forget_weights, int(token))
            self.token = jax.device_put(token, self.device)
            self.native = jax.jit(lambda params, token, inputs: K.rewrite_program(
                self.program, conv="native", weights_argnum=0, weights_token=token)(params, inputs))

    def run(self, arrays):
        self.program.check_inputs(arrays)
        inputs = [jax.device_put(as_input(x, dtype), self.device) for x, (_, dtype, _) in zip(arrays, self.inputs)]
        if self.eager:
            outs = self.program(self.params, inputs)
        elif self.native is not None:
            outs = self._run_native(inputs)
        else:
            outs = self._run_xla(inputs)
        # NMS outputs come back padded with per-image counts: trimmed here, to the rows Paddle returns
        return trim_outputs(outs)

    def compiled_count(self) -> int:
        """How many input shapes the running program was compiled for."""
        return (self.native if self.native is not None else self.compiled)._cache_size()

    def _run_native(self, inputs):
        try:
            with _lowering.native():
                return self.native(self.params, self.token, inputs)
        except Exception as e:  # noqa: BLE001 - where XLA runs what the oneDNN rewrite cannot, XLA it is, said once
            outs = self._run_xla(inputs)  # the program's own errors (bad inputs, refused ops) raise here
            warnings.warn(f"pdx.inference: the oneDNN CPU program of {self.program.model_file} failed to build or "
                          f"run ({type(e).__name__}: {str(e)[:300]}); running it on XLA (Config.disable_mkldnn() "
                          "skips this attempt)", RuntimeWarning, stacklevel=3)
            self.native = None
            return outs

    def _run_xla(self, inputs):
        # on the CPU: XLA's own convolutions and matmuls (disable_mkldnn(), or no oneDNN kernels here)
        with _lowering.portable() if self.device.platform == "cpu" else contextlib.nullcontext():
            return self.compiled(self.params, inputs)


class Predictor:
    """Runs a model (Paddle's `paddle.inference.Predictor`); make one with `create_predictor(config)`.

    Two ways to run, as in Paddle: fill the input handles and call `run()`,
    then read the output handles; or `run([array, ...])`, which returns the
    outputs as a list of arrays.
    """

    def __init__(self, config: Config, _engine: _Engine | None = None):
        if not isinstance(config, Config):
            raise TypeError(f"create_predictor takes a pdx.inference.Config, got {type(config).__name__}")
        self._config = config
        self._engine = _engine or _open(config)
        self._inputs = {n: Tensor(n, d, s) for n, d, s in self._engine.inputs}
        self._outputs = {n: Tensor(n, d or "float32", ()) for n, d in self._engine.outputs}

    def get_input_names(self) -> list[str]:
        """The program's input names, in order."""
        return list(self._inputs)

    def get_output_names(self) -> list[str]:
        """The program's output names, in order."""
        return list(self._outputs)

    def get_input_handle(self, name: str) -> Tensor:
        """The input `Tensor` called `name`."""
        if name not in self._inputs:
            raise KeyError(f"no input {name!r}; the inputs are {list(self._inputs)}")
        return self._inputs[name]

    def get_output_handle(self, name: str) -> Tensor:
        """The output `Tensor` called `name`."""
        if name not in self._outputs:
            raise KeyError(f"no output {name!r}; the outputs are {list(self._outputs)}")
        return self._outputs[name]

    def run(self, inputs=None):
        """Run the model: on the input handles (returns True), or on `inputs` (returns the outputs)."""
        if inputs is None:
            missing = [n for n, t in self._inputs.items() if t._value is None]
            if missing:
                raise RuntimeError(f"inputs {missing} hold no data: copy_from_cpu / share_external_data first")
            outs = self._engine.run([t._value for t in self._inputs.values()])
            for handle, value in zip(self._outputs.values(), outs):
                handle._value = value
                handle._dtype = str(np.dtype(value.dtype)) if value.dtype != jnp.bfloat16 else "bfloat16"
            return True
        if not isinstance(inputs, (list, tuple)):
            raise TypeError(f"run(inputs): inputs must be a list of arrays, got {type(inputs).__name__}")
        return list(self._engine.run(list(inputs)))

    def clone(self, stream=None) -> Predictor:
        """A predictor sharing this one's weights and compiled program, with its own handles."""
        return Predictor(self._config, self._engine)

    def clear_intermediate_tensor(self) -> None:
        """Nothing to clear: intermediates live inside the compiled program."""

    def try_shrink_memory(self) -> int:
        """0: XLA owns the buffers; nothing is pooled by the predictor."""
        return 0


def create_predictor(config: Config) -> Predictor:
    """A `Predictor` for `config` (Paddle's `paddle.inference.create_predictor`).

    Example:
      >>> from pdx import inference                                       # doctest: +SKIP
      >>> p = inference.create_predictor(inference.Config("m/model.json", "m/model.pdiparams"))  # doctest: +SKIP
      >>> h = p.get_input_handle(p.get_input_names()[0]); h.copy_from_cpu(x); p.run()  # doctest: +SKIP
    """
    return Predictor(config)


class PredictorPool:
    """`size` predictors over one model (Paddle's `PredictorPool`): `retrieve(i)` gives the i-th."""

    def __init__(self, config: Config, size: int = 1):
        if int(size) < 1:
            raise ValueError(f"PredictorPool: size must be >= 1, got {size}")
        first = Predictor(config)
        self._predictors = [first] + [first.clone() for _ in range(int(size) - 1)]

    def retrieve(self, idx: int) -> Predictor:
        """The predictor at `idx`."""
        if not 0 <= idx < len(self._predictors):
            raise IndexError(f"PredictorPool has {len(self._predictors)} predictors, asked for {idx}")
        return self._predictors[idx]
