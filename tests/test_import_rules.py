"""No package imports another package's private (underscore) names.

A module in subpackage `pdx.A` (any depth: `pdx.nn.functional` belongs to
`pdx.nn`) may import a private module or name — any dotted part or imported
name starting with `_` — only from `pdx.A` itself or from the top-level core
modules `pdx/_*.py` (`pdx._graph`, `pdx._tensor`, `pdx._dtype`, `pdx._random`,
`pdx._safefile`, ...): the framework core every package builds on. Everything
else crosses packages through the owning package's public names (its
`__init__` / `__all__`). The same holds for attribute reads through a module
(`pdx.nn._layer.x`, `from pdx import nn; nn._layer`). The top-level modules
follow the rule too: they may use each other's private names, and only the
public names of the subpackages.

The test parses every pdx/**/*.py with `ast` (nothing is imported), so it is
fast and sees imports inside functions as well.
"""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "pdx"

# Violations owned by work in progress elsewhere in the tree, each to be removed
# when its file is fixed: (importing module, imported module path or attribute chain).
ALLOWED: frozenset[tuple[str, str]] = frozenset()


def _module_name(path: pathlib.Path, root: pathlib.Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_of(module: str, root: pathlib.Path) -> str:
    """"pdx.nn" for pdx.nn._layer and pdx.nn.functional._norm; "pdx" for the top-level modules."""
    parts = module.split(".")
    if len(parts) >= 2 and (root / parts[1]).is_dir():
        return ".".join(parts[:2])
    return "pdx"


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _owner(dotted: str, root: pathlib.Path) -> str | None:
    """The package whose private part `dotted` reaches, or None when it reaches no private part.
    A private top-level module (pdx._graph) is core: owner "pdx"."""
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        if _is_private(part):
            return _package_of(".".join(parts[:i + 1]), root)
    return None


def _is_module(dotted: str, root: pathlib.Path) -> bool:
    rel = pathlib.Path(*dotted.split(".")[1:])
    return (root / rel).with_suffix(".py").is_file() or (root / rel / "__init__.py").is_file()


def violations(root: pathlib.Path = ROOT) -> list[str]:
    """'file:line: module uses pdx.pkg._private...' for every use that breaks the rule."""
    found = []
    for path in sorted(root.rglob("*.py")):
        module = _module_name(path, root)
        package = _package_of(module, root)
        tree = ast.parse(path.read_text(), filename=str(path))
        modules: dict[str, str] = {}  # local name -> pdx module it is bound to

        def check(dotted, line, module=module, path=path):
            if dotted.split(".")[0] != "pdx":
                return
            owner = _owner(dotted, root)
            if owner not in (None, "pdx", package) and (module, dotted) not in ALLOWED:
                found.append(f"{path.relative_to(root.parent)}:{line}: {module} uses {dotted}")

        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    check(alias.name, node.lineno)
                    if alias.asname:
                        modules[alias.asname] = alias.name
                    else:
                        modules[alias.name.split(".")[0]] = alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                source = _resolve(module, path.name == "__init__.py", node.level, node.module)
                for alias in node.names:
                    if alias.name == "*":
                        check(source, node.lineno)
                        continue
                    dotted = f"{source}.{alias.name}"
                    check(dotted, node.lineno)
                    if source.split(".")[0] == "pdx" and _is_module(dotted, root):
                        modules[alias.asname or alias.name] = dotted
        inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and id(node) not in inner:  # the whole chain a.b.c once
                chain = []
                n = node
                while isinstance(n, ast.Attribute):
                    chain.append(n.attr)
                    n = n.value
                if isinstance(n, ast.Name) and n.id in modules and any(_is_private(a) for a in chain):
                    check(".".join([modules[n.id]] + chain[::-1]), node.lineno)
    return sorted(set(found))


def test_no_package_imports_another_packages_private_names():
    bad = violations()
    assert not bad, ("private names used across packages (import the public name from the owning package, "
                     "add it to that package's __all__, or move a shared helper into a top-level core module "
                     "pdx/_*.py):\n" + "\n".join(bad))


def test_the_rule_catches_each_form(tmp_path):
    pkg = tmp_path / "pdx"
    for sub in ("a", "b"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
        (pkg / sub / "_impl.py").write_text("x = 1\n_y = 2\n")
    (pkg / "__init__.py").write_text("")
    (pkg / "_core.py").write_text("_z = 3\n")
    (pkg / "a" / "user.py").write_text(
        "from pdx.b._impl import x\n"           # a private module of another package
        "from pdx.b import _impl\n"             # the same, as an imported name
        "import pdx.b._impl as impl\n"          # import-as
        "def f():\n"
        "    from ..b._impl import _y\n"        # relative, inside a function
        "from pdx import b\n"
        "v = b._impl.x\n"                       # an attribute read through a module
        "from pdx._core import _z\n"            # the core: allowed
        "from pdx.a._impl import _y as y\n"     # its own package: allowed
        "from pdx.b import x\n"                 # a public name: allowed
        "w = b.x\n")                            # a public attribute: allowed
    (pkg / "_top.py").write_text("from pdx.a._impl import x\n")  # the core uses only public names too
    assert sorted(v.split(": ", 1)[1] for v in violations(pkg)) == [
        "pdx._top uses pdx.a._impl.x",
        "pdx.a.user uses pdx.b._impl",
        "pdx.a.user uses pdx.b._impl",
        "pdx.a.user uses pdx.b._impl._y",
        "pdx.a.user uses pdx.b._impl.x",
        "pdx.a.user uses pdx.b._impl.x",
    ]
