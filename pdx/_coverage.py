"""Paddle API coverage: which public names of the installed paddle pdx has.

`pdx coverage` walks the installed paddle's whole package tree (every module
with no `_` in its path, found with pkgutil) and reports each one: the main
modules of `MODULES` by their public names (their `__all__`, plus the public
classes and functions paddle leaves out of `__all__` for the top level,
`paddle.nn` and `paddle.nn.functional`), every other module by the names it
defines or lists in `__all__`, and the public methods of `paddle.Tensor`,
`paddle.nn.Layer` and `paddle.Model`. A module pdx leaves out is listed
with the reason from `pdx._paddle_tree.EXCLUDED` (static-graph internals,
downloaders, ...), so no namespace is outside the report. Each name gets a
pdx status:

* ``implemented`` — pdx has the name in the matching module (for Tensor
  methods: the method exists on `jax.Array` once pdx is imported);
* ``alias`` — implemented, as a second name of a class or function defined
  under another name (`nn.Conv2d is nn.Conv2D`);
* ``in-place`` — Paddle's in-place form (`relu_`, `add_`): pdx tensors are
  immutable `jax.Array`s; where pdx defines the name it raises an error naming
  the functional form. Counted apart, outside the coverage percentage;
* ``different`` — deliberately not the same, with the reason from
  `DIFFERENCES` (the one table of them);
* ``missing`` — not there yet.

Coverage of a module is (implemented + alias) / (names - in-place).

Example:
    $ pdx coverage                      # the summary table
    $ pdx coverage --missing paddle.nn  # and the names still missing there
    $ pdx coverage --json report.json
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import types
from typing import NamedTuple

__all__ = ["DIFFERENCES", "MODULES", "ModuleReport", "all_modules", "configure", "excluded", "exclusions",
           "paddle_modules", "report"]

# paddle module -> pdx module ("paddle.Tensor" is the method table of a tensor).
MODULES: dict[str, str] = {
    "paddle": "pdx",
    "paddle.Tensor": "jax.Array",
    "paddle.nn": "pdx.nn",
    "paddle.nn.functional": "pdx.nn.functional",
    "paddle.nn.initializer": "pdx.nn.initializer",
    "paddle.linalg": "pdx.linalg",
    "paddle.fft": "pdx.fft",
    "paddle.signal": "pdx.signal",
    "paddle.special": "pdx.special",
    "paddle.audio.functional": "pdx.audio.functional",
    "paddle.audio.features": "pdx.audio.features",
    "paddle.distribution": "pdx.distribution",
    "paddle.sparse": "pdx.sparse",
    "paddle.sparse.nn": "pdx.sparse.nn",
    "paddle.sparse.nn.functional": "pdx.sparse.nn.functional",
    "paddle.geometric": "pdx.geometric",
    "paddle.autograd": "pdx.autograd",
    "paddle.device": "pdx.device",
    "paddle.utils": "pdx.utils",
    "paddle.optimizer": "pdx.optimizer",
    "paddle.optimizer.lr": "pdx.optimizer.lr",
    "paddle.regularizer": "pdx.regularizer",
    "paddle.amp": "pdx.amp",
    "paddle.jit": "pdx.jit",
    "paddle.static": "pdx.static",
    "paddle.io": "pdx.io",
    "paddle.metric": "pdx.metric",
    "paddle.callbacks": "pdx.callbacks",
    "paddle.vision.transforms": "pdx.vision.transforms",
    "paddle.vision.models": "pdx.vision.models",
    "paddle.vision.datasets": "pdx.vision.datasets",
    "paddle.distributed": "pdx.distributed",
    "paddle.quantization": "pdx.quantization",
    "paddle.text": "pdx.text",
    "paddle.inference": "pdx.inference",
    "paddle.nn.Layer": "pdx.nn.Layer",
    "paddle.Model": "pdx.Model",
}

# Method tables: paddle class -> the pdx class whose attributes answer (paddle.Tensor is read from pdx._tensor).
_CLASSES = {"paddle.nn.Layer": ("paddle.nn", "Layer", "pdx.nn", "Layer"),
            "paddle.Model": ("paddle", "Model", "pdx.hapi", "Model")}

# Modules whose __all__ leaves out public names users call (paddle.set_device, nn.HuberLoss, F.pdist, ...).
_READ_DIR = {"paddle", "paddle.nn", "paddle.nn.functional"}

# Names paddle exposes that are its own machinery, not API: never counted.
_INTERNAL_PREFIXES = ("monkey_patch_", "FLAGS_")
_INTERNAL = {"original_init", "new_init", "IrGuard", "ir_guard", "use_compat_guard", "async_save",
             "clear_async_save_task_queue", "sdp_kernel"}

# Public names whose value is None in paddle and pdx alike.
_NONE_VALUED = {"newaxis"}

_INPLACE_REASON = ("in-place: pdx tensors are immutable jax.Arrays; use the functional form "
                   "(x = op(x)); pdx raises an error naming it")

# The one table of deliberate differences: full paddle name -> why pdx differs.
DIFFERENCES: dict[str, str] = {
    "paddle.inference.XpuConfig": "settings of Kunlun XPU devices; pdx runs on JAX's CPU/GPU/TPU backends",
    "paddle.inference._get_phi_kernel_name": "a lookup in Paddle's own C++ kernel registry; pdx translates ops to JAX",
    "paddle.incubate.nn.functional.fp8_gemm_blockwise": "fp8 / quantization kernel internals of Paddle's GPU training; pdx.quantization has QAT, PTQ and weight-only int8",
    "paddle.incubate.nn.functional.fp8_quant_blockwise": "fp8 / quantization kernel internals of Paddle's GPU training; pdx.quantization has QAT, PTQ and weight-only int8",
    "paddle.incubate.nn.functional.fused_act_dequant": "fp8 / quantization kernel internals of Paddle's GPU training; pdx.quantization has QAT, PTQ and weight-only int8",
    "paddle.incubate.nn.functional.fused_stack_transpose_quant": "fp8 / quantization kernel internals of Paddle's GPU training; pdx.quantization has QAT, PTQ and weight-only int8",
    "paddle.incubate.nn.functional.fused_transpose_split_quant": "fp8 / quantization kernel internals of Paddle's GPU training; pdx.quantization has QAT, PTQ and weight-only int8",
    "paddle.incubate.nn.functional.fused_transpose_wlch_split_quant": "fp8 / quantization kernel internals of Paddle's GPU training; pdx.quantization has QAT, PTQ and weight-only int8",
    "paddle.incubate.nn.functional.fused_weighted_swiglu_act_quant": "fp8 / quantization kernel internals of Paddle's GPU training; pdx.quantization has QAT, PTQ and weight-only int8",
    "paddle.incubate.nn.functional.fused_swiglu_weighted_bwd": 'a hand-written backward kernel: jax.grad derives the backward of the forward op',
    "paddle.incubate.nn.functional.cross_entropy_with_softmax_bwd_w_downcast": 'a hand-written backward kernel: jax.grad derives the backward of the forward op',
    "paddle.incubate.nn.functional.block_multihead_attention": 'a GPU decoding kernel over a paged KV cache; masked_multihead_attention and pdx.models.llama.generate decode',
    "paddle.incubate.nn.functional.moe_combine": "ERNIE MoE dispatch GPU kernels; pdx.models.llama's MoE routes tokens with plain XLA ops",
    "paddle.incubate.nn.functional.moe_gate_dispatch": "ERNIE MoE dispatch GPU kernels; pdx.models.llama's MoE routes tokens with plain XLA ops",
    "paddle.incubate.nn.functional.moe_gate_dispatch_permute": "ERNIE MoE dispatch GPU kernels; pdx.models.llama's MoE routes tokens with plain XLA ops",
    "paddle.incubate.nn.functional.moe_gate_dispatch_partial_nosoftmaxtopk": "ERNIE MoE dispatch GPU kernels; pdx.models.llama's MoE routes tokens with plain XLA ops",
    "paddle.incubate.nn.functional.moe_gate_dispatch_and_quant": "ERNIE MoE dispatch GPU kernels; pdx.models.llama's MoE routes tokens with plain XLA ops",
    "paddle.incubate.nn.functional.expand_modality_expert_id": "ERNIE MoE dispatch GPU kernels; pdx.models.llama's MoE routes tokens with plain XLA ops",
    "paddle.incubate.nn.functional.cal_aux_loss": "ERNIE MoE dispatch GPU kernels; pdx.models.llama's MoE routes tokens with plain XLA ops",
    "paddle.incubate.nn.functional.build_src_rank_and_local_expert_id": "ERNIE MoE dispatch GPU kernels; pdx.models.llama's MoE routes tokens with plain XLA ops",
    "paddle.incubate.nn.functional.int_bincount": "ERNIE MoE dispatch GPU kernels; pdx.models.llama's MoE routes tokens with plain XLA ops",
    "paddle.incubate.nn.functional.fused_multi_transformer": 'the GPU inference kernel of a whole decoder stack, its parameters keyed by global unique names no state_dict maps onto; stack pdx.incubate.nn.FusedTransformerEncoderLayer or use pdx.models.llama',
    "paddle.incubate.nn.FusedMultiTransformer": 'the GPU inference kernel of a whole decoder stack, its parameters keyed by global unique names no state_dict maps onto; stack pdx.incubate.nn.FusedTransformerEncoderLayer or use pdx.models.llama',
    "paddle.enable_static": "pdx has one mode: eager ops, compiled on request with pdx.jit; raises and says so",
    "paddle.Tensor.clear_grad": "no tape: nothing stores gradients",
    "paddle.Tensor.clear_gradient": "no tape: nothing stores gradients",
    "paddle.Event": "XLA schedules work on its own streams; there are no user streams or events (jax.block_until_ready / pdx.device.synchronize wait)",
    "paddle.Stream": "XLA schedules work on its own streams; there are no user streams or events (jax.block_until_ready / pdx.device.synchronize wait)",
    "paddle.device.Event": "XLA schedules work on its own streams; there are no user streams or events (jax.block_until_ready / pdx.device.synchronize wait)",
    "paddle.device.Stream": "XLA schedules work on its own streams; there are no user streams or events (jax.block_until_ready / pdx.device.synchronize wait)",
    "paddle.device.StreamContext": "XLA schedules work on its own streams; there are no user streams or events (jax.block_until_ready / pdx.device.synchronize wait)",
    "paddle.device.current_stream": "XLA schedules work on its own streams; there are no user streams or events (jax.block_until_ready / pdx.device.synchronize wait)",
    "paddle.device.set_stream": "XLA schedules work on its own streams; there are no user streams or events (jax.block_until_ready / pdx.device.synchronize wait)",
    "paddle.device.stream_guard": "XLA schedules work on its own streams; there are no user streams or events (jax.block_until_ready / pdx.device.synchronize wait)",
    "paddle.device.get_stream_from_external": "XLA schedules work on its own streams; there are no user streams or events (jax.block_until_ready / pdx.device.synchronize wait)",
    "paddle.device.is_current_stream_capturing": "no CUDA graph capture: XLA compiles whole programs (pdx.jit)",
    "paddle.device.ipc_collect": "no CUDA IPC memory sharing in JAX",
    "paddle.device.reset_max_memory_allocated": "XLA's allocator keeps peak statistics that cannot be reset; read them with max_memory_allocated",
    "paddle.device.reset_max_memory_reserved": "XLA's allocator keeps peak statistics that cannot be reset; read them with max_memory_reserved",
    "paddle.device.reset_peak_memory_stats": "XLA's allocator keeps peak statistics that cannot be reset",
    "paddle.device.IPUPlace": "JAX has no Graphcore IPU backend",
    "paddle.IPUPlace": "JAX has no Graphcore IPU backend",
    "paddle.XPUPinnedPlace": "JAX has no Kunlun XPU backend (pinned host memory is handled by JAX)",
    "paddle.Generator": "random state is an explicit JAX key: pdx.seed / pdx.get_rng_state, or key= under jit",
    "paddle.MmapStorage": "tensors are jax.Arrays: no storage objects; load memory-mapped data with numpy.memmap",
    "paddle.pstring": "JAX arrays hold numbers only: strings stay Python str (tokenizers in pdx.text)",
    "paddle.raw": "JAX arrays hold numbers only: no raw-bytes tensor dtype",
    "paddle.check_shape": "static-graph shape check of Paddle's legacy program builder; pdx ops check shapes themselves",
    "paddle.enable_compat": "Paddle's torch-proxy switch; pdx keeps one API (the torch-style names in pdx.nn are plain aliases)",
    "paddle.disable_compat": "Paddle's torch-proxy switch; pdx keeps one API (the torch-style names in pdx.nn are plain aliases)",
    "paddle.Tensor.block":
        "Paddle's static-graph / C++ tensor internals; a jax.Array has none (its value is the array itself)",
    "paddle.Tensor.create_tensor":
        "Paddle's static-graph / C++ tensor internals; a jax.Array has none (its value is the array itself)",
    "paddle.Tensor.get_map_tensor":
        "Paddle's static-graph / C++ tensor internals; a jax.Array has none (its value is the array itself)",
    "paddle.Tensor.get_selected_rows":
        "Paddle's static-graph / C++ tensor internals; a jax.Array has none (its value is the array itself)",
    "paddle.Tensor.get_tensor":
        "Paddle's static-graph / C++ tensor internals; a jax.Array has none (its value is the array itself)",
    "paddle.Tensor.rows":
        "Paddle's static-graph / C++ tensor internals; a jax.Array has none (its value is the array itself)",
    "paddle.Tensor.set_string_list":
        "Paddle's static-graph / C++ tensor internals; a jax.Array has none (its value is the array itself)",
    "paddle.Tensor.set_tensor":
        "Paddle's static-graph / C++ tensor internals; a jax.Array has none (its value is the array itself)",
    "paddle.Tensor.set_vocab":
        "Paddle's static-graph / C++ tensor internals; a jax.Array has none (its value is the array itself)",
    "paddle.Tensor.indices":
        "a sparse-tensor method: pdx sparse tensors are jax BCOO/BCSR; use the pdx.sparse function of the same name (pdx.sparse.indices(x))",
    "paddle.Tensor.num_shard":
        "a distributed-tensor attribute: a pdx tensor's placement is its jax sharding (x.sharding); see pdx.parallel",
    "paddle.Tensor.layout":
        "jax arrays have no data-layout tag; layers take data_format= (NCHW/NHWC) as in Paddle",
    "paddle.Tensor.name":
        "jax arrays carry no names; name arguments of ops are accepted and ignored",
    "paddle.Tensor.type":
        "Paddle's VarType tag; every pdx tensor is a dense jax.Array (check x.dtype / isinstance(x, pdx.Tensor))",
    "paddle.Tensor.top_p_sampling":
        "a fused GPU decoding kernel; pdx.models.llama.generate does top-p sampling (top_p=)",
    "paddle.linalg.fp8_fp8_half_gemm_fused": "a CUDA-only fused FP8 GEMM kernel; use pdx.matmul on fp8-cast inputs",
    "paddle.distributed.CountFilterEntry":
        "parameter-server sparse-table / dataset machinery: pdx has no parameter servers; sparse embeddings are tables sharded over the mesh (pdx.parallel) and data comes from pdx.io",
    "paddle.distributed.ProbabilityEntry":
        "parameter-server sparse-table / dataset machinery: pdx has no parameter servers; sparse embeddings are tables sharded over the mesh (pdx.parallel) and data comes from pdx.io",
    "paddle.distributed.ShowClickEntry":
        "parameter-server sparse-table / dataset machinery: pdx has no parameter servers; sparse embeddings are tables sharded over the mesh (pdx.parallel) and data comes from pdx.io",
    "paddle.distributed.InMemoryDataset":
        "parameter-server sparse-table / dataset machinery: pdx has no parameter servers; sparse embeddings are tables sharded over the mesh (pdx.parallel) and data comes from pdx.io",
    "paddle.distributed.QueueDataset":
        "parameter-server sparse-table / dataset machinery: pdx has no parameter servers; sparse embeddings are tables sharded over the mesh (pdx.parallel) and data comes from pdx.io",
    "paddle.distributed.DistAttr":
        "the legacy static-graph sharding attribute; placements (dist.Shard / Replicate / Partial) are the one way",
    "paddle.distributed.create_nccl_config":
        "NCCL communicator tuning; XLA creates and configures its own communicators",
    "paddle.distributed.restart_process_group":
        "NCCL communicator recovery; a jax.distributed job is restarted by its launcher (checkpoints resume it)",
    "paddle.distributed.ShardedWeight":
        "Paddle's flex-checkpoint internals: pdx saves and reshards sharded arrays directly (dist.save_state_dict / load_state_dict, pdx.checkpoint)",
    "paddle.distributed.ShardedStateDict":
        "Paddle's flex-checkpoint internals: pdx saves and reshards sharded arrays directly (dist.save_state_dict / load_state_dict, pdx.checkpoint)",
    "paddle.distributed.build_sharded_state_dict":
        "Paddle's flex-checkpoint internals: pdx saves and reshards sharded arrays directly (dist.save_state_dict / load_state_dict, pdx.checkpoint)",
    "paddle.distributed.shard_weight":
        "Paddle's flex-checkpoint internals: pdx saves and reshards sharded arrays directly (dist.save_state_dict / load_state_dict, pdx.checkpoint)",
    "paddle.distributed.split":
        "builds parameters inside a function call; use the layers fleet.meta_parallel.ColumnParallelLinear / RowParallelLinear / VocabParallelEmbedding",
    "paddle.text.Conll05st":
        "downloads a public dataset; pdx never downloads: read local files with pdx.text.read_documents / pdx.io datasets",
    "paddle.text.Imdb":
        "downloads a public dataset; pdx never downloads: read local files with pdx.text.read_documents / pdx.io datasets",
    "paddle.text.Imikolov":
        "downloads a public dataset; pdx never downloads: read local files with pdx.text.read_documents / pdx.io datasets",
    "paddle.text.Movielens":
        "downloads a public dataset; pdx never downloads: read local files with pdx.text.read_documents / pdx.io datasets",
    "paddle.text.UCIHousing":
        "downloads a public dataset; pdx never downloads: read local files with pdx.text.read_documents / pdx.io datasets",
    "paddle.text.WMT14":
        "downloads a public dataset; pdx never downloads: read local files with pdx.text.read_documents / pdx.io datasets",
    "paddle.text.WMT16":
        "downloads a public dataset; pdx never downloads: read local files with pdx.text.read_documents / pdx.io datasets",
    "paddle.distributed.to_distributed":
        "automatic layout search; pick the layout with dist.parallelize or fleet's hybrid_configs (pdx.parallel.HybridConfig)",
}


class Entry(NamedTuple):
    """One paddle name: its status in pdx and, for `different` / `in-place`, why."""

    status: str
    reason: str = ""


class ModuleReport(NamedTuple):
    """The status of every public name of one paddle module."""

    paddle: str
    pdx: str
    names: dict[str, Entry]

    def count(self, status: str) -> int:
        return sum(e.status == status for e in self.names.values())

    @property
    def coverage(self) -> float:
        """(implemented + alias) / (names - in-place); 1.0 for a module with nothing to cover."""
        total = len(self.names) - self.count("in-place")
        return (self.count("implemented") + self.count("alias")) / total if total else 1.0


def _public_names(module_name: str, module) -> list[str]:
    names = set(getattr(module, "__all__", ()))
    if module_name in _READ_DIR or not names:
        for n in dir(module):
            obj = getattr(module, n, None)
            if (not n.startswith("_") and isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType))
                    and getattr(obj, "__module__", "").startswith("paddle")):
                names.add(n)
    return sorted(n for n in names if n not in _INTERNAL and not n.startswith(_INTERNAL_PREFIXES)
                  and hasattr(module, n)  # (paddle.device lists names it cannot resolve)
                  and not isinstance(getattr(module, n), types.ModuleType))


def _tensor_names(paddle) -> list[str]:
    return sorted(n for n in dir(paddle.Tensor) if not n.startswith("_"))


def paddle_modules() -> list[str]:
    """Every public module of the installed paddle (no `_` in its path), walking its package tree."""
    import pkgutil

    import paddle

    return sorted(m.name for m in pkgutil.walk_packages(paddle.__path__, "paddle.", onerror=lambda name: None)
                  if not any(part.startswith("_") for part in m.name.split(".")))


def excluded(module_name: str) -> str | None:
    """Why pdx leaves a paddle module out (pdx._paddle_tree.EXCLUDED), or None."""
    from pdx import _paddle_tree

    path = module_name[len("paddle."):]
    for prefix, reason in _paddle_tree.EXCLUDED.items():
        if path.startswith(prefix) if prefix.endswith(".") else (path == prefix or path.startswith(prefix + ".")):
            if path in _paddle_tree.TREE or _is_real_pdx(path):
                return None
            return reason
    return None


def _importable(module_name: str) -> bool:
    import importlib.util

    try:
        return module_name.startswith("paddle.") and importlib.util.find_spec(module_name) is not None
    except ImportError:
        return False


def _is_real_pdx(path: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(f"pdx.{path}") is not None
    except ImportError:
        return False


def _defined_names(module_name: str, module) -> list[str]:
    """A submodule's own names: its `__all__` and the public classes and functions it defines."""
    names = set(getattr(module, "__all__", ())) | {
        n for n in dir(module) if not n.startswith("_")
        and isinstance(getattr(module, n, None), (type, types.FunctionType))
        and getattr(getattr(module, n), "__module__", None) == module_name}
    return sorted(n for n in names if n not in _INTERNAL and not n.startswith(_INTERNAL_PREFIXES)
                  and hasattr(module, n) and not isinstance(getattr(module, n), types.ModuleType))


def _pdx_lookup(pdx_name: str):
    """name -> object for the pdx side (None for a module pdx does not have)."""
    try:
        module = importlib.import_module(pdx_name)
    except ImportError:
        return None
    return lambda n: getattr(module, n) if hasattr(module, n) else None


def _tensor_entry(n: str, registered: dict, reasons: dict) -> Entry:
    """A paddle.Tensor method's status from pdx's Tensor-method registry (pdx._tensor)."""
    status = registered.get(n)
    if status in ("implemented", "extended", "jax"):
        return Entry("implemented")
    if status in ("alias", "in-place"):
        return Entry(status, _INPLACE_REASON if status == "in-place" else "")
    if status == "different":
        return Entry("different", reasons.get(n, ""))
    from jax.experimental.sparse import BCOO, BCSR

    if callable(getattr(BCOO, n, None)) or callable(getattr(BCSR, n, None)):
        return Entry("implemented")  # a sparse-tensor method, on pdx's sparse tensors
    return Entry("missing")


def _is_alias(obj, name: str) -> bool:
    """A second name of a class or function defined under another (`Conv2d` for `Conv2D`)."""
    own = getattr(obj, "__name__", None)
    return isinstance(obj, (type, types.FunctionType)) and isinstance(own, str) and own != name


def _module_report(paddle, paddle_name: str, pdx_name: str) -> ModuleReport:
    if paddle_name == "paddle.Tensor":
        from pdx import _tensor

        registered, reasons = _tensor.registered_methods(), _tensor.differences()
        return ModuleReport(paddle_name, pdx_name, {
            n: Entry("different", DIFFERENCES[f"paddle.Tensor.{n}"]) if f"paddle.Tensor.{n}" in DIFFERENCES
            else _tensor_entry(n, registered, reasons) for n in _tensor_names(paddle)})
    if paddle_name in _CLASSES:
        module, cls, pdx_module, pdx_cls = _CLASSES[paddle_name]
        theirs = getattr(importlib.import_module(module), cls)
        ours = getattr(importlib.import_module(pdx_module), pdx_cls)
        entries = {}
        for n in sorted(n for n in dir(theirs) if not n.startswith("_")):
            full = f"{paddle_name}.{n}"
            entries[n] = (Entry("different", DIFFERENCES[full]) if full in DIFFERENCES
                          else Entry("in-place", _INPLACE_REASON) if n.endswith("_")
                          else Entry("implemented") if hasattr(ours, n) else Entry("missing"))
        return ModuleReport(paddle_name, pdx_name, entries)
    paddle_module = importlib.import_module(paddle_name)
    names = (_public_names(paddle_name, paddle_module) if paddle_name in MODULES
             else _defined_names(paddle_name, paddle_module))
    lookup = _pdx_lookup(pdx_name)
    entries = {}
    for n in names:
        full = f"{paddle_name}.{n}"
        if full in DIFFERENCES:
            entries[n] = Entry("different", DIFFERENCES[full])
        elif n.endswith("_") and not n.endswith("__"):
            entries[n] = Entry("in-place", _INPLACE_REASON)
        else:
            obj = lookup(n) if lookup is not None else None
            if obj is None and not (lookup is not None and n in _NONE_VALUED):
                entries[n] = Entry("missing")
            elif _is_alias(obj, n) or (paddle_module is not None and _is_alias(getattr(paddle_module, n, None), n)):
                entries[n] = Entry("alias")
            else:
                entries[n] = Entry("implemented")
    return ModuleReport(paddle_name, pdx_name, entries)


def report(modules: list[str] | None = None) -> dict[str, ModuleReport]:
    """Coverage of each paddle module (default: `MODULES` and every public module of paddle's tree) by pdx.

    Modules pdx leaves out (`excluded`) are not in the result; `exclusions()` lists them with the reason.

    Requires the paddlepaddle package (the names are read from it).

    Example:
        >>> r = report(["paddle.nn"])                       # doctest: +SKIP
        >>> r["paddle.nn"].coverage >= 0.9                   # doctest: +SKIP
        True
    """
    os.environ.setdefault("GLOG_minloglevel", "2")
    try:
        import paddle
    except ImportError:
        raise RuntimeError("pdx coverage reads the public names from paddle: pip install paddlepaddle") from None
    not_paddle = [m for m in modules or () if m not in MODULES and not _importable(m)]
    if not_paddle:  # (answered before walking paddle's tree)
        raise ValueError(f"modules={not_paddle} are not paddle modules; choose from `pdx coverage` "
                         f"(e.g. {sorted(MODULES)[:5]})")
    known = MODULES if modules and all(m in MODULES for m in modules) else all_modules()
    unknown = [m for m in modules or () if m not in known]
    if unknown:
        raise ValueError(f"modules={unknown} are not covered; choose from `pdx coverage` (e.g. {sorted(MODULES)[:5]})")
    return {m: _module_report(paddle, m, known[m]) for m in (modules or known)}


def all_modules() -> dict[str, str]:
    """paddle module -> pdx module for every reported module: MODULES first, then the tree, excluded ones left out."""
    found = dict(MODULES)
    for m in paddle_modules():
        if m not in found and excluded(m) is None:
            found[m] = "pdx." + m[len("paddle."):]
    return found


def exclusions() -> dict[str, str]:
    """paddle module -> why pdx leaves it out, for every public paddle module not in the report."""
    return {m: reason for m in paddle_modules() if m not in MODULES and (reason := excluded(m))}


def _as_json(reports: dict[str, ModuleReport]) -> dict:
    import paddle

    import pdx

    return {
        "paddle_version": paddle.__version__,
        "pdx_version": pdx.__version__,
        "modules": {
            m: {"pdx": r.pdx, "coverage": round(r.coverage, 4),
                "counts": {s: r.count(s) for s in ("implemented", "alias", "different", "in-place", "missing")},
                "names": {n: ({"status": e.status, "reason": e.reason} if e.reason else {"status": e.status})
                          for n, e in r.names.items()}}
            for m, r in reports.items()},
    }


def _table(reports: dict[str, ModuleReport]) -> str:
    head = f"{'paddle module':<44} {'names':>5} {'impl':>5} {'alias':>5} {'diff':>5} {'inpl':>5} {'miss':>5} {'cover':>7}"
    rows = [head, "-" * len(head)]
    for m, r in reports.items():
        rows.append(f"{m:<44} {len(r.names):>5} {r.count('implemented'):>5} {r.count('alias'):>5} "
                    f"{r.count('different'):>5} {r.count('in-place'):>5} {r.count('missing'):>5} "
                    f"{100 * r.coverage:>6.1f}%")
    return "\n".join(rows)


def _markdown(reports: dict[str, ModuleReport]) -> str:
    rows = ["| paddle module | names | impl | alias | diff | in-place | missing | coverage |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for m, r in reports.items():
        rows.append(f"| {m} | {len(r.names)} | {r.count('implemented')} | {r.count('alias')} | "
                    f"{r.count('different')} | {r.count('in-place')} | {r.count('missing')} | {100 * r.coverage:.1f}% |")
    return "\n".join(rows)


def configure(parser: argparse.ArgumentParser) -> None:
    """`pdx coverage`: arguments and `func`."""
    parser.add_argument("modules", nargs="*", metavar="MODULE",
                        help="paddle modules to report (default: all), e.g. paddle.nn paddle.Tensor")
    parser.add_argument("--missing", action="store_true", help="also list each module's missing names")
    parser.add_argument("--different", action="store_true", help="also list the deliberate differences and why")
    parser.add_argument("--excluded", action="store_true", help="also list the paddle modules pdx leaves out and why")
    parser.add_argument("--markdown", action="store_true", help="the table as Markdown, one line per module")
    parser.add_argument("--json", metavar="FILE", help="write the full report (every name) as JSON ('-' = stdout)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        reports = report(args.modules or None)
    except (RuntimeError, ValueError) as e:
        print(f"pdx coverage: {e}", file=sys.stderr)
        return 2
    if args.json:
        text = json.dumps(_as_json(reports), indent=1, sort_keys=True)
        if args.json == "-":
            print(text)
            return 0
        with open(args.json, "w") as f:
            f.write(text + "\n")
    print(_markdown(reports) if args.markdown else _table(reports))
    if args.excluded:
        for m, reason in exclusions().items():
            print(f"{m}: excluded: {reason}")
    for m, r in reports.items():
        if args.missing and r.count("missing"):
            print(f"\n{m} missing: " + ", ".join(n for n, e in r.names.items() if e.status == "missing"))
        if args.different:
            for n, e in r.names.items():
                if e.status == "different":
                    print(f"{m}.{n}: {e.reason}")
    return 0


if __name__ == "__main__":
    _parser = argparse.ArgumentParser(prog="pdx coverage")
    configure(_parser)
    sys.exit(_run(_parser.parse_args()))
