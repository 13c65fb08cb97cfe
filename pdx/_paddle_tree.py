"""Paddle's module tree under pdx: `pdx.nn.layer.conv`, `pdx.tensor.math`, `pdx.base.core`, ...

Paddle programs import names from where Paddle defines them
(`from paddle.nn.layer.conv import Conv2D`, `import paddle.tensor.math as M`,
`from paddle.vision.transforms import transforms`,
`paddle.framework.random`, `paddle.base.core.is_compiled_with_cuda()`). pdx
defines each name once, in the package a user looks in first (`pdx.nn.Conv2D`,
`pdx.sum`, `pdx.device.is_compiled_with_cuda`); this module is the one alias
table that gives Paddle's other module paths as module objects holding the
same objects: `pdx.nn.layer.conv.Conv2D is pdx.nn.Conv2D`.

`TREE` lists Paddle's public module paths that pdx has no file for. Each one
becomes, on first import, a module whose names come from its *sources*: the
pdx modules listed in `SOURCES` for it or its nearest listed ancestor, else
its nearest ancestor that is a real pdx module (`nn.layer.conv` -> `pdx.nn`,
`tensor.math` -> `pdx`, `vision.transforms.transforms` ->
`pdx.vision.transforms`). `LEGACY` adds the few names Paddle's legacy modules
hold under another spelling (`paddle.base.dygraph.guard`). A real pdx module
always wins over a path here: the finder is the last one asked.

`NAMES` gives Paddle's names to a real pdx module whose objects another pdx
package defines, where the module cannot import that package without an import
cycle: `pdx.jit.save` is `pdx.export.save_layer` (export builds on jit's
tracing). The names resolve on first use and join the module's `__all__`.

Paddle modules not in the tree are listed in `EXCLUDED` with the reason
(static-graph internals, parameter-server runtime, downloaders, ...);
tests/test_paddle_module_tree.py walks the installed paddle's package tree and
checks that every public module is in `TREE`, is a real pdx module or is
excluded, and that each name it holds is the object pdx has under Paddle's
main name for it.

Example:
    >>> import pdx
    >>> from pdx.nn.layer.conv import Conv2D
    >>> import pdx.tensor.math as M
    >>> Conv2D is pdx.nn.Conv2D and M.sum is pdx.sum
    True
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

__all__ = ["EXCLUDED", "HOOKED", "LEGACY", "NAMES", "SHADOWED", "SOURCES", "TREE", "install"]


def _paths(groups: dict[str, str]) -> frozenset[str]:
    return frozenset(f"{parent}.{child}" if parent else child
                     for parent, children in groups.items() for child in children.split())


# parent -> its children (Paddle's public module paths, relative to `paddle`), for those pdx has no file for.
TREE: frozenset[str] = _paths({
    "": "base cuda framework functional random tensor",
    "amp": "amp_lists auto_cast debugging grad_scaler",
    "audio.features": "layers",
    "audio.functional": "functional window",
    "autograd": "autograd backward_mode py_layer saved_tensors_hooks",
    "base": "core dygraph framework",
    "base.dygraph": "base",
    "device": "cpu custom_device custom_streams xpu",
    "distributed": "collective communication fsdp parallel sharding spawn",
    "distributed.communication": "group",
    "distribution": "bernoulli beta binomial categorical cauchy chi2 constraint continuous_bernoulli dirichlet "
                    "distribution exponential exponential_family gamma geometric gumbel independent kl laplace "
                    "lkj_cholesky lognormal multinomial multivariate_normal normal poisson student_t transform "
                    "transformed_distribution uniform variable",
    "framework": "dtype framework io io_utils random",
    "geometric": "math message_passing reindex sampling",
    "geometric.message_passing": "send_recv utils",
    "geometric.sampling": "neighbors",
    "hapi": "callbacks dynamic_flops hub logger model model_summary static_flops",
    "io": "dataloader reader",
    "io.dataloader": "batch_sampler collate dataset sampler",
    "jit": "api translated_layer",
    "metric": "metrics",
    "nn": "attention clip init layer modules parameter utils",
    "nn.attention": "sdpa",
    "nn.functional": "activation common conv distance extension flash_attention input loss norm pooling sdpa "
                     "sparse_attention transformer vision",
    "nn.initializer": "assign bilinear constant dirac initializer kaiming lazy_init normal orthogonal uniform xavier",
    "nn.layer": "activation common container conv distance layers loss norm pooling rnn transformer vision",
    "nn.modules": "container module",
    "nn.utils": "dygraph_utils spectral_norm_hook transform_parameters weight_norm_hook",
    "optimizer": "adadelta adagrad adam adamax adamw asgd fusion_utils lamb lbfgs momentum nadam optimizer radam "
                 "rmsprop rprop sgd",
    "profiler": "profiler profiler_statistic statistic_helper timer utils",
    "quantization": "base_observer base_quanter config factory ptq qat quantize wrapper",
    "sparse": "binary creation multiary unary",
    "sparse.nn.functional": "activation conv pooling transformer",
    "tensor": "attribute creation linalg logic manipulation math ops random search stat",
    "text": "viterbi_decode",
    "utils": "decorator_utils deprecated download environments flops image_util inplace_utils layers_utils",
    "vision": "image",
    "vision.models": "alexnet densenet googlenet inceptionv3 lenet mobilenetv1 mobilenetv2 mobilenetv3 resnet "
                     "shufflenetv2 squeezenet vgg",
    "vision.transforms": "functional_cv2 functional_pil functional_tensor transforms",
})

# Tree modules named like a function their parent holds (`paddle.amp.auto_cast` is the function; the module
# `paddle.amp.auto_cast` defines it). They are in sys.modules from the start, so importing one never replaces
# the parent's function with the module, as in Paddle.
SHADOWED: frozenset[str] = frozenset({
    "amp.auto_cast", "autograd.saved_tensors_hooks", "distributed.spawn", "nn.functional.sparse_attention", "tensor",
    "text.viterbi_decode", "utils.deprecated", "vision.models.alexnet", "vision.models.googlenet"})

# Paths whose names live somewhere other than their nearest real pdx ancestor (the first source that has a name wins).
SOURCES: dict[str, tuple[str, ...]] = {
    "audio.functional.window": ("pdx.audio.functional", "pdx"),
    "base.core": ("pdx.device", "pdx", "pdx.distributed", "pdx.inference"),
    "base.framework": ("pdx", "pdx.utils"),
    "cuda": ("pdx.device.cuda", "pdx.device"),
    "functional": ("pdx.autograd", "pdx", "pdx.linalg"),
    "hapi.callbacks": ("pdx.callbacks", "pdx.hapi"),
    "hapi.hub": ("pdx.hub",),
    "hapi.dynamic_flops": ("pdx.hapi",),
    "nn.functional.vision": ("pdx.nn.functional", "pdx.vision.ops"),
    "nn.initializer.lazy_init": ("pdx.nn.initializer", "pdx"),
    "tensor": ("pdx", "pdx.nn.functional"),  # (the in-place tanh_ of paddle.tensor.math is F.tanh_)
    "tensor.linalg": ("pdx", "pdx.linalg"),
    "utils.flops": ("pdx.hapi", "pdx.utils"),
}

# Names Paddle's legacy modules hold that pdx spells elsewhere: path -> {name: "module:attribute"}.
# (`grad` there is Paddle's `paddle.grad(outputs, inputs)`, pdx.autograd.grad; pdx.grad is the function transform.)
_DYGRAPH = {"guard": "pdx._paddle_tree:dygraph_guard", "to_variable": "pdx:to_tensor", "grad": "pdx.autograd:grad"}
_PIR = {"use_pir_api": "pdx._paddle_tree:use_pir_api", "in_pir_mode": "pdx._paddle_tree:in_pir_mode"}
LEGACY: dict[str, dict[str, str]] = {
    "base.dygraph": _DYGRAPH,
    "base.dygraph.base": _DYGRAPH,
    "base.framework": {"in_dygraph_mode": "pdx:in_dynamic_mode", "in_dynamic_or_pir_mode": "pdx:in_dynamic_mode",
                       "Variable": "pdx.static:Variable", **_PIR},
    "framework": {"grad": "pdx.autograd:grad", "core": "pdx.base:core", **_PIR},
}

# Paddle module paths (prefixes) that are not part of pdx, each with the reason.
_STATIC_GRAPH = ("Paddle's static-graph program machinery (ProgramDesc, executors, passes, C++ bindings); pdx has "
                 "one mode, eager ops compiled on request by pdx.jit")
EXCLUDED: dict[str, str] = {
    "base": _STATIC_GRAPH + "; base, base.core, base.framework and base.dygraph are kept for the names programs use",
    "static.": _STATIC_GRAPH + "; pdx.static (one module) holds the names programs use (InputSpec, ...)",
    "pir": _STATIC_GRAPH,
    "pir_utils": _STATIC_GRAPH,
    "framework.ir": _STATIC_GRAPH,
    "decomposition": _STATIC_GRAPH + " (op decomposition for the static-graph compiler)",
    "autograd.ir_backward": _STATIC_GRAPH + " (the static-graph backward builder)",
    "autograd.backward_utils": _STATIC_GRAPH + " (the static-graph backward builder)",
    "cinn_config": "Paddle's CINN compiler settings: XLA compiles pdx programs",
    "cost_model": "Paddle's static-graph cost model: XLA's own cost analysis is what pdx.flops and jit read",
    "jit": "Paddle's dy2static / SOT translator internals: pdx.jit traces Python with JAX; jit, jit.api and "
           "jit.translated_layer are kept",
    "distributed": "Paddle's distributed runtime internals (parameter servers, launch scripts, static-graph passes, "
                   "the auto-parallel planner, RPC): pdx's parallelism is jax sharding over a mesh (pdx.parallel); "
                   "the modules users import (distributed, fleet, fleet.meta_parallel, fleet.utils, "
                   "communication, collective, parallel, spawn, sharding, fsdp, launch, checkpoint) are kept",
    "dataset": "Paddle's legacy dataset downloaders: pdx never downloads (read local files with pdx.io datasets)",
    "text.datasets": "downloads public datasets: pdx never downloads (read local files with pdx.text / pdx.io)",
    "vision.datasets": "downloads public datasets: pdx never downloads; vision.datasets itself (DatasetFolder, "
                       "ImageFolder, local MNIST/Cifar files) is kept",
    "audio.datasets": "downloads public datasets: pdx never downloads",
    "audio.backends": "Paddle's sound-file backends (soundfile/wave); pdx.audio works on arrays",
    "api_tracer": "Paddle's API-call tracing for its own test tooling",
    "check_import_scipy": "an import-time check of Paddle's own installation",
    "common_ops_import": "re-exports of Paddle's static-graph op helpers for its own modules",
    "cuda_env": "the CUDA library paths of Paddle's own GPU build",
    "sysconfig": "the include and library paths of Paddle's C++ build (for custom C++ ops)",
    "library": "Paddle's custom C++ op registration; pdx ops are jax functions (kernels plug in via jax.ffi)",
    "utils.cpp_extension": "builds Paddle custom C++ ops; pdx ops are jax functions (kernels plug in via jax.ffi)",
    "utils.gast": "a vendored copy of the gast AST library used by Paddle's dy2static",
    "utils.lazy_import": "Paddle's helper for importing optional dependencies",
    "utils.install_check": "checks Paddle's own installation (paddle.utils.run_check)",
    "utils.op_version": "Paddle's op-version registry for saved static-graph programs",
    "utils.bwd_graph_utils": _STATIC_GRAPH,
    "utils.fwd_graph_utils": _STATIC_GRAPH,
    "compat": "Paddle's torch-proxy layer; pdx keeps one API (the torch-style names in pdx.nn are plain aliases)",
    "framework.recall_error": "the text of Paddle's internal error messages",
    "reader": "Paddle 1.x reader decorators over generators; pdx.io.DataLoader takes their place",
    "batch": "Paddle 1.x `paddle.batch` reader decorator; pdx.io.DataLoader / BatchSampler take its place",
    "io.dataloader.worker": "Paddle's DataLoader worker-process internals (pdx.io runs on grain)",
    "io.dataloader.fetcher": "Paddle's DataLoader worker-process internals (pdx.io runs on grain)",
    "io.dataloader.dataloader_iter": "Paddle's DataLoader worker-process internals (pdx.io runs on grain)",
    "io.dataloader.flat": "Paddle's DataLoader worker-process internals (pdx.io runs on grain)",
    "io.multiprocess_utils": "Paddle's DataLoader worker-process internals (pdx.io runs on grain)",
    "device.cuda.": "CUDA streams, events and CUDA graphs: XLA schedules its own streams and compiles whole "
                    "programs; device.cuda itself is kept",
    "device.xpu.": "Kunlun XPU streams: JAX has no XPU backend",
    "device.gpgpu_backend": "Paddle's selection among its GPU builds (CUDA / ROCm / custom)",
    "device.default_backend": "Paddle's selection among its GPU builds (CUDA / ROCm / custom)",
    "amp.accuracy_compare": "compares dumped tensors of Paddle's AMP debugging runs (files Paddle writes)",
    "tensor.layer_function_generator": "Paddle's code generator for its own op wrappers",
    "tensor.to_string": "Paddle's tensor printing internals (pdx.set_printoptions sets the options)",
    "tensor.compat_softmax": "the softmax of Paddle's torch-proxy layer (paddle.compat)",
    "tensor.tensor": "a module holding only Paddle's Tensor class: pdx.Tensor",
    "tensor.array": "Paddle's static-graph TensorArray ops (array_read / array_write on LoDTensorArray)",
    "nn.functional.moe_permute": "fused GPU kernels of Paddle's MoE token permutation",
    "nn.functional.moe_unpermute": "fused GPU kernels of Paddle's MoE token permutation",
    "nn.quant": "Paddle's legacy quantized layers; quantization is pdx.quantization (QAT / PTQ / weight-only)",
    "quantization.observers.": "pdx.quantization.observers is one module holding every observer class",
    "quantization.quanters.": "pdx.quantization.quanters is one module holding every quanter class",
    "quantization.imperative": "Paddle's legacy imperative quantization; pdx.quantization has QAT and PTQ",
    "incubate.": "pdx.incubate, pdx.incubate.nn(.functional), .optimizer and .jit hold Paddle's incubate names; "
                 "its other experimental submodules (autograd, distributed, cc, ...) are not mirrored",
    "inference.contrib": "copy_tensor between Paddle Inference's C++ tensors (pdx handles hold arrays)",
    "inference.wrapper": "the glue that adds copy_from_cpu / share_external_data to Paddle's C++ classes; "
                         "pdx.inference defines them on its own classes",
    "onnx": "Paddle's ONNX export through paddle2onnx over static-graph programs",
}


# real pdx module -> {Paddle name: "defining module:attribute"}, for names defined in a package above the module.
# A private name is for pdx's own use, left out of `__all__`: pdx.inference runs pdx artifacts through pdx.export's
# loader, the package above it.
NAMES: dict[str, dict[str, str]] = {
    "pdx.jit": {"save": "pdx.export:save_layer", "load": "pdx.export:load_layer",
                "TranslatedLayer": "pdx.export:TranslatedLayer"},
    "pdx.inference": {"_load_artifact": "pdx.export:load"},
    "pdx.device": {name: f"pdx._typed_tensors:{name}" for name in (  # the roof's factories (they call pdx.ops)
        "BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor", "HalfTensor",
        "IntTensor", "LongTensor", "ShortTensor")},
}


@contextlib.contextmanager
def dygraph_guard(place=None):
    """Paddle's `paddle.base.dygraph.guard(place=None)`: pdx always runs eagerly, so nothing switches.

    Example:
        >>> import pdx
        >>> from pdx.base import dygraph
        >>> with dygraph.guard():
        ...     y = pdx.ones([2]) + 1
    """
    yield


def use_pir_api() -> bool:
    """Paddle's `paddle.framework.use_pir_api()`: True, as in Paddle 3.x, whose saved programs are PIR JSON.

    Paddle scripts branch on it to name the saved program (`model.json` vs `model.pdmodel`); pdx.inference
    reads both formats, and `pdx.jit.save`'s artifact directory `X` is found under either name `X.json` /
    `X.pdmodel`.

    Example:
        >>> import pdx
        >>> pdx.framework.use_pir_api()
        True
    """
    return True


def in_pir_mode() -> bool:
    """Paddle's `paddle.base.framework.in_pir_mode()`: False, since pdx never builds a static program.

    Example:
        >>> import pdx
        >>> pdx.base.framework.in_pir_mode()
        False
    """
    return False


def sources(path: str) -> tuple[str, ...]:
    """The pdx modules a tree path takes its names from (see the module docstring)."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        head = ".".join(parts[:i])
        if head in SOURCES:
            return SOURCES[head]
        if head not in TREE and i < len(parts):
            return (f"pdx.{head}",)
    return ("pdx",)


_MISSING = object()


class _TreeModule(types.ModuleType):
    """A Paddle module path under pdx: its names are read from its source modules on first use."""

    def __getattr__(self, name: str):
        path = self.__name__[len("pdx."):]
        legacy = LEGACY.get(path, {})
        if name in legacy:
            module, _, attribute = legacy[name].partition(":")
            value = getattr(importlib.import_module(module), attribute)
        elif name == "__all__":
            value = sorted({n for s in sources(path) for n in getattr(importlib.import_module(s), "__all__", ())}
                           | set(legacy))
        elif name.startswith("__") and name not in self.__dict__.get("__all__", ()):  # __file__, ...: not forwarded
            raise AttributeError(name)
        elif f"{path}.{name}" in TREE:
            return importlib.import_module(f"{self.__name__}.{name}")
        else:
            for source in sources(path):
                module = importlib.import_module(source)
                value = getattr(module, name, _MISSING)
                # (a tree view imported under a real package is set on it as an attribute: not its name)
                if value is not _MISSING and not isinstance(value, _TreeModule):
                    break
            else:
                raise AttributeError(f"module {self.__name__!r} has no attribute {name!r} "
                                     f"(its names come from {', '.join(sources(path))})")
        setattr(self, name, value)
        return value

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.__all__))


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        module = _TreeModule(spec.name, f"Paddle's `paddle.{spec.name[4:]}` under pdx (see pdx/_paddle_tree.py).")
        module.__path__ = []  # a package: its children in TREE import through the finder
        return module

    def exec_module(self, module):
        pass


class _Finder(importlib.abc.MetaPathFinder):
    """Finds `pdx.<path>` for a path in TREE; asked after the finders of real modules."""

    _loader = _Loader()

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("pdx.") or fullname[4:] not in TREE:
            return None
        return importlib.machinery.ModuleSpec(fullname, self._loader, is_package=True)


TOP_LEVEL: frozenset[str] = frozenset(p for p in TREE if "." not in p)


def _tree_children(module_name: str) -> frozenset[str]:
    """The TREE paths directly below a real pdx module, as attribute names (`pdx.nn` -> {"layer", "loss", ...})."""
    path = module_name[len("pdx."):]
    return frozenset(p.rpartition(".")[2] for p in TREE if p.rpartition(".")[0] == path)


# Real pdx modules that get names on first use: their NAMES, and their TREE children as attributes
# (`pdx.nn.layer.MaxPool1D` without an import first, as `paddle.nn.layer` is an attribute of `paddle.nn`).
HOOKED: frozenset[str] = frozenset(NAMES) | frozenset(
    f"pdx.{p.rpartition('.')[0]}" for p in TREE if "." in p and p.rpartition(".")[0] not in TREE)


def _add_names(module: types.ModuleType) -> None:
    """Give `module` its `NAMES` (resolved on first use, listed in `__all__` and `dir()`) and its TREE children."""
    names = NAMES.get(module.__name__, {})
    children = _tree_children(module.__name__)
    own = module.__dict__.get("__getattr__")

    def __getattr__(name: str):
        if name in children:
            return importlib.import_module(f"{module.__name__}.{name}")
        if name not in names:
            if own is not None:
                return own(name)
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")
        source, _, attribute = names[name].partition(":")
        value = getattr(importlib.import_module(source), attribute)
        setattr(module, name, value)
        return value

    module.__getattr__ = __getattr__
    public = [name for name in names if not name.startswith("_")]
    module.__dir__ = lambda: sorted(set(module.__dict__) | set(public) | children)
    if public:
        module.__all__ = sorted({*getattr(module, "__all__", ()), *public})


class _NamesLoader(importlib.abc.Loader):
    """Runs a real module's own loader, then adds its `NAMES` and TREE children."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _add_names(module)


class _NamesFinder(importlib.abc.MetaPathFinder):
    """Finds the real modules in `HOOKED` (asked first) and wraps their loader."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in HOOKED:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                spec.loader = _NamesLoader(spec.loader)
                return spec
        return None


def install() -> None:
    """Put the tree's finder on `sys.meta_path` (last, so real modules win) and `NAMES`' (first); done once by
    `import pdx`."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _NamesFinder())
        for name in HOOKED:
            if name in sys.modules:
                _add_names(sys.modules[name])
        sys.meta_path.append(_Finder())
        for path in SHADOWED:
            spec = importlib.machinery.ModuleSpec(f"pdx.{path}", _Finder._loader, is_package=True)
            sys.modules.setdefault(spec.name, importlib.util.module_from_spec(spec))
