"""The trace context (pdx/_trace_context.py): one registry of the settings that change a trace.

- the JAX adapter: exactly what pdx relies on in `jax.make_user_context`;
- the registry: set / set_global / get, hashable values, current();
- `auto_cast`, `use_mesh` and `use_impl`: a function compiled with `pdx.jit`
  or plain `jax.jit` gives the eager result whether it was traced inside or
  outside the setting and called inside or outside it, retracing exactly once
  per new context;
- every module of pdx: module-level ContextVars, threading.locals and JAX
  config states, and `global` statements in functions, are registered
  settings or allow-listed here with the reason they do not change a trace.
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import importlib
import pathlib
import pkgutil
import subprocess
import sys
import threading
import types
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax._src import config as jax_config

import pdx
from pdx import _trace_context
from pdx.parallel import HybridConfig

ROOT = pathlib.Path(pdx.__file__).resolve().parent


@pytest.fixture(autouse=True)
def _fresh_jit_caches():
    """These tests count jit cache entries: start each from empty caches, whatever ran before in this
    process (a worker late in a run holds thousands of jitted functions in JAX's shared C++ caches)."""
    jax.clear_caches()


# --- The JAX adapter. -----------------------------------------------------------------------------

def test_jax_adapter():
    """What `_trace_context._jax_state` relies on, point by point."""
    state = _trace_context._jax_state(0)
    # 1. jax.make_user_context(default) -> a state with .value / .get_global() / .set_global(v) ...
    assert state is not None and state.value == 0 and state.get_global() == 0
    # 2. ... and state(v): a context manager holding v inside, restoring the old value after
    with state(1):
        assert state.value == 1 and state.get_global() == 0
        with state(2):
            assert state.value == 2
        assert state.value == 1
    assert state.value == 0
    state.set_global(5)
    assert state.value == 5
    with state(6):
        assert state.value == 6  # a block wins over the global value
    state.set_global(0)

    # 3. the value is thread-local inside a block; the global value is seen by every thread
    seen = []
    with state(7):
        worker = threading.Thread(target=lambda: seen.append(state.value))
        worker.start()
        worker.join()
    assert seen == [0]

    # 4. jax.jit keys its cache (the C++ fast path included) on the value: one trace per value
    traces = []

    @jax.jit
    def f(x):
        traces.append(state.value)
        return x + (state.value if isinstance(state.value, int) else state.value[0])

    x = jnp.ones(2)
    for value in (0, 1, 1, 0, 1, (2, "a"), (2, "a")):
        with state(value) if value else contextlib.nullcontext():
            out = f(x)
            out = f(x)
        np.testing.assert_array_equal(out, np.full(2, 1 + (value if isinstance(value, int) else value[0])))
    assert traces == [0, 1, (2, "a")] and f._cache_size() == 3

    # 5. the jaxprs of lax.cond / lax.scan bodies are cached per value too (the same body functions
    # reach them in each trace)
    def body(c, _):
        return c + state.value, None

    def scanned(x):
        return lax.scan(body, x, None, length=2)[0]

    def kept(x):
        return x

    g = jax.jit(lambda x: lax.cond(x[0] > 0, scanned, kept, x))
    assert float(g(x)[0]) == 1.0
    with state(3):
        assert float(g(x)[0]) == 7.0
    assert float(g(x)[0]) == 1.0


# --- The registry. ---------------------------------------------------------------------------------

# Registered when this module is collected, before any test compiles anything: a setting
# registered later makes every function compiled before it trace once more.
PROBE = _trace_context.register("pdx.test.probe", "a", doc="a setting only these tests read")


@pytest.fixture
def probe():
    return PROBE


def test_setting_set_get_and_global(probe):
    assert _trace_context.registered()["pdx.test.probe"] is probe
    assert probe.get() == "a" and probe.default == "a"
    with probe.set("b") as value:
        assert value == "b" and probe.get() == "b"
        assert ("pdx.test.probe", "b") in _trace_context.current()
    assert probe.get() == "a"

    @probe.set("c")
    def read():
        return probe.get()

    assert read() == "c" and probe.get() == "a"
    scope = probe.set("d")
    with scope:
        with scope:  # one scope object entered twice restores in order
            assert probe.get() == "d"
        assert probe.get() == "d"
    assert probe.get() == "a"
    probe.set_global("g")
    try:
        assert probe.get() == "g" and probe.get_global() == "g"
        with probe.set("h"):
            assert probe.get() == "h" and probe.get_global() == "g"
    finally:
        probe.set_global("a")
    hash(_trace_context.current())
    with pytest.raises(TypeError):
        _trace_context.registered()["x"] = probe


def test_values_must_be_hashable_and_names_unique(probe):
    with pytest.raises(TypeError, match="must be hashable.*got \\['x'\\] of type list"):
        probe.set(["x"])
    with pytest.raises(TypeError, match="must be hashable"):
        probe.set_global({"x": 1})
    with pytest.raises(ValueError, match="'pdx.test.probe' is registered already"):
        _trace_context.register("pdx.test.probe", "a", doc="again")


def test_every_setting_has_a_doc_and_a_hashable_value():
    # all of pdx's settings exist from `import pdx` on (so importing a subpackage later,
    # e.g. while tracing, adds none and retraces nothing)
    expected = {"pdx.amp.policy", "pdx.parallel.mesh", "pdx.kernels.impl", "pdx.lowering.pointwise_as_matmul",
                "pdx.lowering.native_kernels", "pdx.default_dtype", "pdx.jit.max_iterations",
                "pdx.jit.full_graph", "pdx.distributed.mesh", "pdx.autograd.grad_enabled",
                "pdx.autograd.saved_tensors_hooks"}
    settings = _trace_context.registered()
    assert expected <= set(settings)
    fresh = subprocess.run([sys.executable, "-c", "import sys, pdx; from pdx._trace_context import registered; "
                            "print(sorted(registered())); print('pdx.parallel' in sys.modules)"],
                           capture_output=True, text=True, timeout=300, check=True).stdout.splitlines()
    assert fresh[-2:] == [str(sorted(expected)), "False"]
    for name, setting in settings.items():
        assert setting.name == name and setting.doc
        hash(setting.get())


# --- Compiled functions follow the settings they are called under. -----------------------------------

class Case(NamedTuple):
    """One setting: `scope()` enters it; `build(jit)` compiles the code with `jit` (`None`: eager);
    `args(jit)` are its arguments; `same(a, b)` compares two results."""

    scope: Callable
    build: Callable
    args: Callable
    same: Callable


def _amp_case() -> Case:
    net = pdx.nn.Linear(4, 4)
    x = jnp.ones((2, 4))

    def linear(w, b, x):
        return pdx.nn.functional.linear(x, w, b)

    def build(jit):
        if jit is pdx.jit:
            return pdx.jit(lambda net, x: net(x))
        return linear if jit is None else jit(linear)

    def args(jit):
        return (net, x) if jit is pdx.jit else (net.weight[...], net.bias[...], x)

    def same(a, b):
        return a.dtype == b.dtype and np.allclose(np.asarray(a, np.float32), np.asarray(b, np.float32))

    return Case(lambda: pdx.amp.auto_cast(dtype="bfloat16"), build, args, same)


def _mesh_case() -> Case:
    config = HybridConfig(dp_degree=2)
    mesh = config.mesh(jax.devices()[:2])
    x = jnp.arange(8.0).reshape(4, 2)

    def fn(x):
        return pdx.parallel.constrain(x * 2, ("batch", "embed"))

    def same(a, b):
        return a.sharding.is_equivalent_to(b.sharding, a.ndim) and np.array_equal(a, b)

    return Case(lambda: pdx.parallel.use_mesh(config, mesh), lambda jit: fn if jit is None else jit(fn),
                lambda jit: (x,), same)


def _impl_case() -> Case:
    # an op whose implementations give different answers, so the one that ran shows
    op = pdx.kernels.Op("probe", {"xla": lambda x: x + 1, "pallas": lambda x: x + 2})

    def fn(x):
        return op("auto", x)

    return Case(lambda: pdx.kernels.use_impl("pallas"), lambda jit: fn if jit is None else jit(fn),
                lambda jit: (jnp.zeros(3),), lambda a, b: np.array_equal(a, b))


CASES = {"auto_cast": _amp_case, "use_mesh": _mesh_case, "use_impl": _impl_case}


def _cache_size(f) -> int:
    return f.cache_size() if isinstance(f, pdx.jit.StaticFunction) else f._cache_size()


@pytest.mark.parametrize("jit", [pdx.jit, jax.jit], ids=["pdx.jit", "jax.jit"])
@pytest.mark.parametrize("traced_inside", [True, False], ids=["traced-inside", "traced-outside"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_equals_eager_inside_and_outside(name, traced_inside, jit):
    case = CASES[name]()
    eager = case.build(None)
    with case.scope():
        inside = eager(*case.args(None))
    outside = eager(*case.args(None))
    assert not case.same(inside, outside), "the setting must change the result for this test to mean anything"
    expected = {case.scope: inside, contextlib.nullcontext: outside}

    f, args = case.build(jit), case.args(jit)
    first, second = (case.scope, contextlib.nullcontext) if traced_inside else (contextlib.nullcontext, case.scope)
    with first():
        assert case.same(f(*args), expected[first])
    assert _cache_size(f) == 1
    with first():
        assert case.same(f(*args), expected[first])
    assert _cache_size(f) == 1  # no retrace on a repeated call
    with second():
        assert case.same(f(*args), expected[second])
    assert _cache_size(f) == 2  # one retrace for the new context
    for scope in (first, second, first, second):
        with scope():
            assert case.same(f(*args), expected[scope])
    assert _cache_size(f) == 2


def test_mesh_scope_puts_the_constraint_in_the_lowered_program():
    config = HybridConfig(mp_degree=2)
    mesh = config.mesh(jax.devices()[:2])
    f = jax.jit(lambda x: pdx.parallel.constrain(x, ("batch", "mlp")))
    x = jnp.ones((4, 8))
    assert "sharding_constraint" not in f.lower(x).as_text()
    with pdx.parallel.use_mesh(config, mesh):
        text = f.lower(x).as_text()
        assert "sharding_constraint" in text
        assert f(x).sharding.spec == jax.sharding.PartitionSpec(None, "mp")
    assert "sharding_constraint" not in f.lower(x).as_text()


def test_other_settings_retrace_pdx_jit():
    """The lowering switch and the dy2static bound, through one pdx.jit function each."""
    conv = pdx.nn.Conv2D(2, 3, 1)
    f = pdx.jit(lambda m, x: m(x))
    x = jnp.ones((1, 2, 4, 4))
    plain = f.lower(conv, x).as_text()
    with pdx._lowering.convolutions_kept():
        kept = f.lower(conv, x).as_text()
        np.testing.assert_allclose(f(conv, x), conv(x), rtol=1e-6)
    assert "convolution" in kept and "convolution" not in plain
    f(conv, x)
    assert f.cache_size() == 2

    @pdx.jit
    def halvings(x):
        i = 0
        while x > 1:
            x = x / 2
            i += 1
        return i

    assert int(halvings(jnp.float32(20.0))) == 5
    with pdx.jit.max_iterations(3):  # at most 3 iterations: the loop stops there
        assert int(halvings(jnp.float32(20.0))) == 3
    assert int(halvings(jnp.float32(20.0))) == 5
    assert halvings.cache_size() == 2


def test_default_dtype_and_grad_mode_retrace_jax_jit():
    f = jax.jit(lambda x: x + pdx.zeros([2]))
    g = jax.jit(lambda x: x * (2.0 if pdx.is_grad_enabled() else 3.0))
    x16 = jnp.ones(2, jnp.float16)
    assert f(x16).dtype == jnp.float32
    pdx.set_default_dtype("float16")
    try:
        assert f(x16).dtype == jnp.float16
    finally:
        pdx.set_default_dtype("float32")
    assert f(x16).dtype == jnp.float32 and f._cache_size() == 2
    assert float(g(1.0)) == 2.0
    with pdx.no_grad():
        assert float(g(1.0)) == 3.0
    assert float(g(1.0)) == 2.0 and g._cache_size() == 2


def test_hapi_compiled_step_retraces_under_a_new_setting():
    """pdx.Model keeps one jax.jit per step kind; its cache keys on the trace context too."""
    op = pdx.kernels.Op("probe", {"xla": lambda x: x + 1, "pallas": lambda x: x + 2})

    class Net(pdx.nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = pdx.nn.Linear(2, 2)

        def forward(self, x):
            return op("auto", self.fc(x))

    model = pdx.Model(Net())
    model.prepare()
    x = np.ones((1, 2), np.float32)
    base = np.asarray(model.predict_batch([x])[0])
    with pdx.kernels.use_impl("pallas"):
        np.testing.assert_allclose(np.asarray(model.predict_batch([x])[0]), base + 1, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(model.predict_batch([x])[0]), base, rtol=1e-6)
    assert model._fns["predict"]._cache_size() == 2


# --- Every module of pdx: no unregistered setting. ----------------------------------------------------

# Module-level state that does not change what a trace produces: "module.name" -> why.
ALLOWED_STATE = {
    "pdx.text._template._STATE":
        "the budget of the chat template rendering now in this thread (deadline, sizes); rendering runs outside traces",
    "pdx.jit._dy2static._context._local":
        "the graph of the StaticFunction tracing now: pdx.jit sets it for the length of its own trace",
    "pdx.io._worker._local":
        "the sample a DataLoader worker thread is loading (its seeded numpy RNG); loading runs outside traces",
    "pdx.models.rec._embedding._Capture._local":
        "entered only inside the traced sparse step that builds it; it holds that trace's own tracers",
}
# `global` statements in functions: "module:function" -> why.
ALLOWED_GLOBALS = {
    "pdx._tensor:register": "keeps the pdx module the Tensor methods call into; not a setting",
}
# Modules not imported: name -> why.
NOT_IMPORTED = {
    "pdx.distributed.launch.__main__": "the `python -m pdx.distributed.launch` command line: runs on import",
}


def _is_state(value) -> bool:
    return isinstance(value, (contextvars.ContextVar, threading.local, jax_config.config_ext.Config,
                              jax_config.UserConfig))


def unregistered_state(modules) -> dict[str, str]:
    """'module.name' (or 'module.Class.name') -> type name of each ContextVar, threading.local or
    JAX config state held by a module or a class it defines, and each `Setting` not registered.
    A registered `Setting` holds its own JAX state; an object found under several names (re-exports)
    is reported under each, so an allow-list entry for any of its names covers it."""
    registered = {id(s) for s in _trace_context.registered().values()}
    found: dict[int, list[str]] = {}
    kinds: dict[int, str] = {}
    for module in modules:
        places = [(module.__name__, vars(module))]
        places += [(f"{module.__name__}.{name}", vars(cls)) for name, cls in vars(module).items()
                   if isinstance(cls, type) and cls.__module__ == module.__name__]
        for prefix, namespace in places:
            for name, value in namespace.items():
                if isinstance(value, _trace_context.Setting):
                    if id(value) in registered:
                        continue
                elif not _is_state(value):
                    continue
                found.setdefault(id(value), []).append(f"{prefix}.{name}")
                kinds[id(value)] = type(value).__name__
    return {where: kinds[key] for key, places in found.items() if not set(places) & set(ALLOWED_STATE)
            for where in places}


def unallowed_globals(sources: dict[str, str]) -> list[str]:
    """'module:function: global names' for each `global` statement in a function of `sources`
    (module name -> source text) not in ALLOWED_GLOBALS."""
    bad = []
    for module, source in sources.items():
        for fn in ast.walk(ast.parse(source)):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Global) and f"{module}:{fn.name}" not in ALLOWED_GLOBALS:
                    bad.append(f"{module}:{fn.name}: global {', '.join(node.names)}")
    return sorted(set(bad))


def _pdx_modules():
    failed = []
    names = []
    for info in pkgutil.walk_packages(pdx.__path__, "pdx.", onerror=failed.append):
        if info.name in NOT_IMPORTED:
            continue
        names.append(info.name)
    assert not failed, f"packages that could not be walked: {failed}"
    modules = []
    for name in names:
        modules.append(importlib.import_module(name))  # an import error fails the test: nothing is skipped
    return modules


def test_every_module_registers_its_settings():
    modules = _pdx_modules()
    assert len(modules) > 300
    bad = unregistered_state(modules)
    assert not bad, ("module-level state that is neither a registered trace-context setting nor allow-listed "
                     "(register it with pdx._trace_context.register, or add it to ALLOWED_STATE with the "
                     f"reason it does not change what a trace produces): {bad}")
    stale = [name for name in ALLOWED_STATE if not _is_state(_resolve(name))]
    assert not stale, f"ALLOWED_STATE entries that no longer name a state object: {stale}"


def _resolve(dotted: str):
    """The object `dotted` ("pdx.mod.Class.attr") names, or None."""
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr, None)
        return obj
    return None


def test_no_unallowed_global_statements():
    sources = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        sources[".".join(parts)] = path.read_text()
    bad = unallowed_globals(sources)
    assert not bad, ("`global` statements in functions (make the value a registered trace-context setting, "
                     f"or add it to ALLOWED_GLOBALS with the reason it does not change a trace): {bad}")


def test_the_detectors_catch_a_new_setting(probe):
    fake = types.ModuleType("pdx_fake_module")
    fake.__dict__.update(_mode=contextvars.ContextVar("mode", default=0), _local=threading.local(),
                         _state=jax_config.config_ext.Config("fake", 0), _ok=probe, _plain={"a": 1})

    class Holder:
        _stack = threading.local()

    Holder.__module__ = "pdx_fake_module"
    fake.Holder = Holder
    fake._unregistered = object.__new__(_trace_context.Setting)
    assert set(unregistered_state([fake])) == {
        "pdx_fake_module._mode", "pdx_fake_module._local", "pdx_fake_module._state",
        "pdx_fake_module.Holder._stack", "pdx_fake_module._unregistered"}
    source = ("def f():\n    global _x\n    _x = 1\n"
              "class C:\n    def g(self):\n        global _y, _z\n")
    assert unallowed_globals({"pdx_fake": source}) == ["pdx_fake:f: global _x", "pdx_fake:g: global _y, _z"]
    assert unallowed_globals({"pdx._tensor": "def register():\n    global _PDX\n"}) == []
