"""Paddle's module tree under pdx, checked against the installed paddle's package tree.

Every public module of paddle (no `_` in its path), walked with pkgutil, is
either a real pdx module, a path of pdx's alias table (pdx/_paddle_tree.py)
or excluded there with a reason; each one pdx has imports, and each class or
function it holds that pdx has is the very object pdx has under Paddle's main
name for it (`paddle.nn.layer.conv.Conv2D is paddle.nn.Conv2D`, so
`pdx.nn.layer.conv.Conv2D is pdx.nn.Conv2D`).
"""

import importlib
import importlib.util
import pkgutil
import subprocess
import sys
import types

import pytest

import pdx
from pdx import _coverage, _paddle_tree

_CALLABLE = (type, types.FunctionType, types.BuiltinFunctionType)
_METHOD_TABLES = ("paddle.Tensor", "paddle.nn.Layer", "paddle.Model")  # coverage rows that are classes


@pytest.fixture(scope="module")
def paddle_modules(paddle) -> list[str]:
    """Paddle's public module paths, relative to `paddle` (walking imports each package once)."""
    return sorted(m.name[len("paddle."):] for m in pkgutil.walk_packages(paddle.__path__, "paddle.",
                                                                        onerror=lambda name: None)
                  if not any(part.startswith("_") for part in m.name.split(".")))


def _excluded(path: str) -> str | None:
    for prefix, reason in _paddle_tree.EXCLUDED.items():
        if prefix.endswith(".") and path.startswith(prefix):
            return reason
        if path == prefix or path.startswith(prefix + "."):
            return reason
    return None


def _real_pdx_module(path: str) -> bool:
    try:
        spec = importlib.util.find_spec(f"pdx.{path}")
    except ModuleNotFoundError:
        return False
    return spec is not None and not isinstance(spec.loader, _paddle_tree._Loader)


def _shadowed_by_a_name(paddle, path: str) -> bool:
    """A module named like the function its parent exports (paddle.nn.utils.clip_grad_norm_)."""
    parent, _, child = path.rpartition(".")
    holder = importlib.import_module(f"paddle.{parent}" if parent else "paddle")
    return hasattr(holder, child) and not isinstance(getattr(holder, child), types.ModuleType)


@pytest.fixture(scope="module")
def tree(paddle, paddle_modules):
    """path -> "real" / "tree" for each public paddle module pdx has; the rest checked to be excluded."""
    found, uncovered = {}, []
    for path in paddle_modules:
        if _real_pdx_module(path):
            found[path] = "real"
        elif path in _paddle_tree.TREE:
            found[path] = "tree"
        elif not (_excluded(path) or _shadowed_by_a_name(paddle, path)):
            uncovered.append(path)
    assert not uncovered, (f"paddle modules neither in pdx/_paddle_tree.py TREE nor EXCLUDED there: {uncovered}")
    return found


def test_every_tree_path_is_a_paddle_module_and_no_real_pdx_module(paddle, paddle_modules, tree):
    stale = sorted(p for p in _paddle_tree.TREE if p not in tree)
    shadowed = {p for p in _paddle_tree.TREE if _shadowed_by_a_name(paddle, p)}
    assert shadowed == _paddle_tree.SHADOWED, "SHADOWED must list the TREE modules paddle's parent names a function"
    for path in _paddle_tree.TREE - shadowed:  # importing a view must not replace one of pdx's names
        parent, _, child = path.rpartition(".")
        holder = importlib.import_module(f"pdx.{parent}" if parent else "pdx")
        value = holder.__dict__.get(child)
        assert value is None or isinstance(value, types.ModuleType), f"pdx.{path} would replace {value!r}"
    assert not stale, f"TREE lists paths paddle has no module for (or real pdx modules hide them): {stale}"
    assert all(len(reason) > 30 for reason in _paddle_tree.EXCLUDED.values())
    unused = sorted(p for p in _paddle_tree.EXCLUDED
                    if not any(m == p.rstrip(".") or m.startswith(p if p.endswith(".") else p + ".")
                               for m in paddle_modules))
    assert not unused, f"EXCLUDED names paths paddle does not have: {unused}"


def _main_names(name: str, obj) -> list[str]:
    """Paddle's main modules (pdx coverage's list) holding `obj` as `name`."""
    found = []
    for main in _coverage.MODULES:
        if main not in _METHOD_TABLES and getattr(importlib.import_module(main), name, None) is obj:
            found.append(main)
    return found


def test_each_module_imports_and_holds_pdxs_objects(paddle, tree):
    wrong, lacking, checked = [], [], 0
    for path in tree:
        ours = importlib.import_module(f"pdx.{path}")
        theirs = importlib.import_module(f"paddle.{path}")
        for name in dir(theirs):
            obj = getattr(theirs, name, None)
            if name.startswith("_") or not isinstance(obj, _CALLABLE):
                continue
            mains = [_coverage.MODULES[m] for m in _main_names(name, obj)]
            # (where pdx's main modules hold different objects for one paddle object, the view may hold any)
            expected = {id(v): m for m in mains if (v := getattr(importlib.import_module(m), name, None)) is not None}
            got = getattr(ours, name, None)
            defines = getattr(obj, "__module__", None) == theirs.__name__ or name in getattr(theirs, "__all__", ())
            if got is None and expected and defines and tree[path] == "tree":  # (a real module's gaps: pdx coverage)
                lacking.append(f"pdx.{path}.{name} (pdx has {', '.join(expected.values())}.{name})")
            elif got is not None and expected:
                checked += 1
                if id(got) not in expected:
                    wrong.append(f"pdx.{path}.{name} is not {' / '.join(expected.values())}.{name}")
    assert not wrong and not lacking, "\n".join(["different objects:"] + wrong + ["names the module lacks:"] + lacking)
    assert checked > 1500  # the walk reached the names, not just the modules


def test_programs_import_forms():
    from pdx.nn.layer.conv import Conv2D
    import pdx.tensor.math as M
    from pdx.vision.transforms import transforms
    from pdx.base import dygraph
    from pdx.hapi.model import Model

    assert Conv2D is pdx.nn.Conv2D and M.sum is pdx.sum and transforms.Resize is pdx.vision.transforms.Resize
    assert Model is pdx.Model and pdx.framework.random.seed is pdx.seed
    assert pdx.base.core.is_compiled_with_cuda is pdx.device.is_compiled_with_cuda
    assert pdx.base.framework.in_dygraph_mode is pdx.in_dynamic_mode
    with dygraph.guard():
        assert (pdx.ones([2]) + 1).tolist() == [2.0, 2.0]
    ns = {}
    exec("from pdx.nn.layer.loss import *", ns)
    assert ns["CrossEntropyLoss"] is pdx.nn.CrossEntropyLoss
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("pdx.nn.layer.no_such_module")
    with pytest.raises(AttributeError, match="pdx.nn.layer.conv.*no_such_name"):
        getattr(importlib.import_module("pdx.nn.layer.conv"), "no_such_name")


def test_the_tree_costs_import_pdx_nothing():
    code = ("import sys, pdx; import pdx.tensor.math, pdx.framework.random; "
            "print(sorted(m for m in ('pdx.nn', 'pdx.hapi', 'pdx.vision', 'pdx.device') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={"JAX_PLATFORMS": "cpu", "PATH": ""}, check=True)
    assert out.stdout.strip() == "[]"  # the views load their sources on first use of a name


def test_tree_children_are_attributes_where_paddles_are(paddle):
    """`paddle.nn.layer.MaxPool1D` without an import first: a child module Paddle exposes as an attribute is one."""
    checked = 0
    for name in sorted(_paddle_tree.HOOKED):
        ours = importlib.import_module(name)
        theirs = importlib.import_module("paddle" + name[len("pdx"):])
        for child in sorted(_paddle_tree._tree_children(name)):
            if isinstance(getattr(theirs, child, None), types.ModuleType):
                assert getattr(ours, child) is importlib.import_module(f"{name}.{child}"), (name, child)
                checked += 1
    assert checked >= 20
    assert pdx.nn.layer.MaxPool1D is pdx.nn.MaxPool1D
    # the framework queries Paddle scripts branch on, in dygraph mode
    assert pdx.framework.use_pir_api() is paddle.framework.use_pir_api() is True
    assert pdx.base.framework.in_pir_mode() is paddle.base.framework.in_pir_mode() is False
    from pdx.framework import core
    assert core is pdx.base.core
    for value in (pdx.ones([2]), pdx.nn.Linear(2, 2).weight[...]):
        assert isinstance(value, pdx.static.Variable)
    assert isinstance(paddle.ones([2]), paddle.static.Variable)
    assert not isinstance([1.0], pdx.static.Variable)
    with pytest.raises(TypeError, match="to_tensor"):
        pdx.static.Variable()
