"""pdx.hub: Paddle's `paddle.hub` over local directories.

`list`, `help` and `load` read a directory's `hubconf.py` the way Paddle does:
its public callables are the entry points, an optional `dependencies` list
names modules that must be importable, and `load(repo_dir, model, **kwargs)`
calls the entry point. pdx never downloads: `source="local"` is the one source;
"github" / "gitee" raise an error naming the local form (clone or unpack the
repository, then pass its directory).

Loading a hubconf.py executes it, as in Paddle: it is the user's own code in
the directory they chose explicitly. Do not point `repo_dir` at a directory
you would not run `python hubconf.py` in. (Weights an entry point loads go
through pdx's safe loaders, `pdx.load` / `pdx.checkpoint`.)

Example:
    $ cat my_models/hubconf.py
    dependencies = ["pdx"]
    def mlp(width=8):
        '''A two-layer MLP.'''
        import pdx
        return pdx.nn.Sequential(pdx.nn.Linear(4, width), pdx.nn.ReLU(), pdx.nn.Linear(width, 2))

    >>> pdx.hub.list("my_models", source="local")              # doctest: +SKIP
    ['mlp']
    >>> net = pdx.hub.load("my_models", "mlp", source="local", width=16)   # doctest: +SKIP
"""

from __future__ import annotations

import builtins
import importlib.util
import os
import sys
import types

__all__ = ["help", "list", "load", "load_state_dict_from_url"]

_HUBCONF = "hubconf.py"
_DEPENDENCIES = "dependencies"
_SOURCES = ("github", "gitee", "local")

_REMOTE = ("pdx.hub: source={source!r} would download {repo!r}; pdx never downloads. Fetch the repository "
           "yourself (git clone / unpack its archive), then load it from the directory: "
           "pdx.hub.{fn}('path/to/{name}', {extra}source='local')")


def _check_source(repo_dir, source: str, fn: str, model=None) -> str:
    if source not in _SOURCES:
        raise ValueError(f"pdx.hub.{fn}: unknown source={source!r}; allowed values: 'github' | 'gitee' | 'local'")
    if source != "local":
        name = str(repo_dir).split(":")[0].rstrip("/").split("/")[-1] or "repo"
        extra = f"{model!r}, " if model is not None else ""
        raise RuntimeError(_REMOTE.format(source=source, repo=repo_dir, fn=fn, name=name, extra=extra))
    if not isinstance(repo_dir, (str, os.PathLike)):
        raise TypeError(f"pdx.hub.{fn}: repo_dir must be a directory path; got {type(repo_dir).__name__}")
    repo_dir = os.fspath(repo_dir)
    if not os.path.isdir(repo_dir):
        raise FileNotFoundError(f"pdx.hub.{fn}: repo_dir={repo_dir!r} is not a directory")
    if not os.path.isfile(os.path.join(repo_dir, _HUBCONF)):
        raise FileNotFoundError(f"pdx.hub.{fn}: {repo_dir!r} has no {_HUBCONF}; a hub directory defines its entry "
                                "points there")
    return repo_dir


def _import_hubconf(repo_dir: str) -> types.ModuleType:
    """Execute repo_dir/hubconf.py as a fresh module, with repo_dir first on sys.path while it runs
    (so it can import its sibling modules), as Paddle does; the module is not left in sys.modules."""
    path = os.path.join(repo_dir, _HUBCONF)
    spec = importlib.util.spec_from_file_location("hubconf", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, repo_dir)
    try:
        spec.loader.exec_module(module)
    except ImportError as e:
        raise RuntimeError(f"pdx.hub: importing {path} failed: {e}") from e
    finally:
        if sys.path and sys.path[0] == repo_dir:
            del sys.path[0]
        else:
            sys.path.remove(repo_dir)
    return module


def _entry(module: types.ModuleType, model, fn: str):
    if not isinstance(model, str):
        raise ValueError(f"pdx.hub.{fn}: model must be the str name of an entry point; got {model!r}")  # noqa: TRY004  (Paddle's error type)
    func = getattr(module, model, None)
    if func is None or not callable(func) or model.startswith("_"):
        raise RuntimeError(f"pdx.hub.{fn}: no entry point {model!r} in hubconf; it has {_entries(module)}")
    return func


def _entries(module: types.ModuleType) -> builtins.list[str]:
    return [n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n))]


def list(repo_dir, source="github", force_reload=False) -> builtins.list[str]:
    """The entry points of `repo_dir/hubconf.py`: its public callables, sorted.

    Args:
      repo_dir: a local directory holding hubconf.py.
      source: must be 'local' ('github' / 'gitee' raise: pdx never downloads).
      force_reload: ignored (nothing is cached).

    Example:
      >>> import os, tempfile, pdx
      >>> d = tempfile.mkdtemp()
      >>> _ = open(os.path.join(d, "hubconf.py"), "w").write("def tiny():\\n    return 1\\n")
      >>> pdx.hub.list(d, source="local")
      ['tiny']
    """
    return _entries(_import_hubconf(_check_source(repo_dir, source, "list")))


def help(repo_dir, model, source="github", force_reload=False):
    """The docstring of entry point `model` in `repo_dir/hubconf.py` (source must be 'local').

    Example:
      >>> import os, tempfile, pdx
      >>> d = tempfile.mkdtemp()
      >>> _ = open(os.path.join(d, "hubconf.py"), "w").write("def tiny():\\n    '''One.'''\\n    return 1\\n")
      >>> pdx.hub.help(d, "tiny", source="local")
      'One.'
    """
    return _entry(_import_hubconf(_check_source(repo_dir, source, "help", model)), model, "help").__doc__


def load(repo_dir, model, source="github", force_reload=False, **kwargs):
    """Call entry point `model` of `repo_dir/hubconf.py` with `**kwargs` (source must be 'local').

    The hubconf's `dependencies` list (if any) must name importable modules.

    Example:
      >>> import os, tempfile, pdx
      >>> d = tempfile.mkdtemp()
      >>> _ = open(os.path.join(d, "hubconf.py"), "w").write("def lin(n=2):\\n    import pdx\\n    return pdx.nn.Linear(n, 1)\\n")
      >>> pdx.hub.load(d, "lin", source="local", n=3).weight.shape
      (3, 1)
    """
    module = _import_hubconf(_check_source(repo_dir, source, "load", model))
    deps = getattr(module, _DEPENDENCIES, None)
    if deps is not None:
        missing = [name for name in deps if importlib.util.find_spec(name) is None]
        if missing:
            raise RuntimeError(f"pdx.hub.load: hubconf's dependencies are missing: {', '.join(missing)}; install them")
    return _entry(module, model, "load")(**kwargs)


def load_state_dict_from_url(url, model_dir=None, check_hash=False, file_name=None, map_location=None):
    """Load a state dict from a local file (a path or a file:// URL) with `pdx.load`; pdx never downloads.

    Example:
      >>> import os, tempfile, pdx, jax.numpy as jnp
      >>> path = os.path.join(tempfile.mkdtemp(), "w.pdparams")
      >>> pdx.save({"w": jnp.ones(2)}, path)
      >>> pdx.hub.load_state_dict_from_url("file://" + path)["w"].tolist()
      [1.0, 1.0]
    """
    if not isinstance(url, (str, os.PathLike)):
        raise TypeError(f"pdx.hub.load_state_dict_from_url: url must be a str; got {type(url).__name__}")
    path = os.fspath(url)
    if path.startswith("file://"):
        path = path[len("file://"):]
    elif "://" in path:
        raise RuntimeError(f"pdx.hub.load_state_dict_from_url: {url!r} would be downloaded; pdx never downloads. "
                           "Fetch the file yourself, then pass its local path (or a file:// URL)")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"pdx.hub.load_state_dict_from_url: {path!r} is not a file")
    from pdx import checkpoint

    return checkpoint.load(path)
