"""Converting function objects: source -> transformed code -> a new function
that shares the original's globals and closure cells.

The expensive part (getsource, parse, transform, compile) runs once per code
object; each function object then costs one `types.FunctionType` call, and is
cached too. Conversion happens while pdx.jit traces, so compiled calls never
pay for it.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
import types
import weakref

from pdx._static_layers import static_layers
from pdx.jit._dy2static import _runtime
from pdx.jit._dy2static._context import full_graph
from pdx.jit._dy2static._transform import RT, ConversionError, transform

__all__ = ["convert", "converted_call", "get_code"]

_code_cache: dict = {}  # code object -> (_Template | ConversionError)
_fn_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_SKIP_MODULES = ("pdx", "jax", "jaxlib", "flax", "optax", "numpy", "orbax", "chex", "grain",
                 "functools", "builtins", "typing", "abc", "collections", "contextlib", "inspect")


class _Template:
    __slots__ = ("code", "source", "lines", "filename", "qualname")

    def __init__(self, code, source, lines, filename, qualname):
        self.code, self.source, self.lines = code, source, lines
        self.filename, self.qualname = filename, qualname


def _is_library(fn) -> bool:
    module = getattr(fn, "__module__", None) or ""
    return module.split(".")[0] in _SKIP_MODULES


def _template(fn: types.FunctionType) -> _Template:
    code = fn.__code__
    hit = _code_cache.get(code)
    if hit is None:
        try:
            hit = _build(fn)
        except ConversionError as e:
            hit = e
        except (OSError, TypeError, SyntaxError) as e:
            hit = ConversionError(f"the source of {fn.__qualname__} is not available ({e})")
            hit.lineno = code.co_firstlineno
        except Exception as e:  # noqa: BLE001 - a construct the rewrite does not handle: run as written
            hit = ConversionError(f"{type(e).__name__}: {e}")
            hit.lineno = code.co_firstlineno
        _code_cache[code] = hit
    if isinstance(hit, ConversionError):
        raise hit
    return hit


def _build(fn: types.FunctionType) -> _Template:
    code = fn.__code__
    lines, first = inspect.getsourcelines(fn)
    source = textwrap.dedent("".join(lines))
    if code.co_name == "<lambda>":
        node = _lambda_def(source, code)
        ast.increment_lineno(node, first - 1)
    else:
        tree = ast.parse(source)
        node = tree.body[0]
        if not isinstance(node, ast.FunctionDef) or node.name != code.co_name:
            raise ConversionError(f"could not find the definition of {fn.__qualname__} in its source")
        ast.increment_lineno(tree, first - 1)
    parts = fn.__qualname__.split(".")
    class_name = parts[-2] if len(parts) >= 2 and parts[-2] != "<locals>" else None
    node, locs = transform(node, class_name)
    # Defined under another name in the factory, so a recursive call still
    # finds the function through the module globals, as the original does.
    source_text = ast.unparse(node)
    node.name = "_pdx_converted"
    freevars = list(code.co_freevars)
    if "__class__" not in freevars and any(isinstance(n, ast.Name) and n.id == "__class__" for n in ast.walk(node)):
        freevars.append("__class__")
    factory = ast.FunctionDef(
        name="_pdx_factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in [RT] + freevars], vararg=None,
                           kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=[node, ast.Return(value=ast.Name(id=node.name, ctx=ast.Load()))],
        decorator_list=[], returns=None, type_comment=None, type_params=[])
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    compiled = compile(module, code.co_filename, "exec", dont_inherit=True)
    factory_code = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    inner = next(c for c in factory_code.co_consts if isinstance(c, types.CodeType) and c.co_name == node.name)
    inner = inner.replace(co_name=code.co_name, co_qualname=code.co_qualname)
    return _Template(inner, source_text, locs, code.co_filename, fn.__qualname__)


def _lambda_def(source: str, code) -> ast.FunctionDef:
    """`def <lambda>(args): return body` for the one lambda in `source` with
    this code's arguments (the lines inspect gives may be a fragment)."""
    tree = None
    for text in (source, "(\n" + source + "\n)"):
        try:
            tree = ast.parse(text)
            break
        except SyntaxError:
            continue
    if tree is None:
        raise ConversionError("could not parse the source of a lambda")
    offset = 0 if text is source else -1
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)
             and tuple(a.arg for a in n.args.posonlyargs + n.args.args + n.args.kwonlyargs) == names]
    if len(found) != 1:
        raise ConversionError("several lambdas with these arguments on one line; use a def")
    lam = found[0]
    if offset:
        ast.increment_lineno(lam, offset)
    fn = ast.FunctionDef(name="<lambda>", args=lam.args, body=[ast.Return(value=lam.body)],
                         decorator_list=[], returns=None, type_comment=None, type_params=[])
    return ast.fix_missing_locations(ast.copy_location(fn, lam))


def convert(fn: types.FunctionType) -> types.FunctionType:
    """The converted version of a plain Python function (cached); raises
    ConversionError when it cannot be converted."""
    hit = _fn_cache.get(fn)
    if hit is not None:
        return hit
    tpl = _template(fn)
    runtime = _runtime.FunctionRuntime(tpl.filename, tpl.qualname, tpl.lines, converted_call)
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    cells[RT] = types.CellType(runtime)
    closure = []
    for name in tpl.code.co_freevars:
        if name not in cells:
            if name == "__class__":  # zero-argument super() in a method that never used it before
                raise ConversionError(f"cannot resolve super() in {fn.__qualname__}")
            raise ConversionError(f"free variable {name!r} of {fn.__qualname__} has no cell")
        closure.append(cells[name])
    new = types.FunctionType(tpl.code, fn.__globals__, fn.__name__, fn.__defaults__, tuple(closure))
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__dict__.update(fn.__dict__)
    new.__pdx_converted__ = True
    _fn_cache[fn] = new
    return new


def _convertible(fn) -> bool:
    return (isinstance(fn, types.FunctionType) and not getattr(fn, "__pdx_not_to_static__", False)
            and not getattr(fn, "__pdx_converted__", False)
            and not _is_library(fn)
            and not fn.__code__.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE
                                           | inspect.CO_ASYNC_GENERATOR))


def convert_or_fallback(fn):
    """`convert(fn)`, or `fn` itself when it cannot be converted (an error
    instead under full_graph=True)."""
    try:
        return convert(fn)
    except ConversionError as e:
        if full_graph():
            line = e.lineno or fn.__code__.co_firstlineno
            import linecache
            src = linecache.getline(fn.__code__.co_filename, line).strip()
            raise _runtime.Dy2StaticError(
                f"pdx.jit(full_graph=True): cannot convert {fn.__qualname__}: {e}\n"
                f'  File "{fn.__code__.co_filename}", line {line}, in {fn.__qualname__}\n    {src}\n'
                "Rewrite that construct, mark the function with @pdx.jit.not_to_static, or use "
                "full_graph=False to run it unconverted.") from None
        return fn


def converted_call(f):
    """What a converted function calls instead of `f`: the converted version of
    user functions, methods and Layers; anything else unchanged."""
    if isinstance(f, types.FunctionType):
        if _convertible(f):
            return convert_or_fallback(f)
        if (f.__module__ or "").split(".")[0] in _HIGHER_ORDER:
            return functools.partial(_library_call, f)
        return f
    if isinstance(f, types.MethodType):
        func = f.__func__
        if _convertible(func):
            new = convert_or_fallback(func)
            return f if new is func else types.MethodType(new, f.__self__)
        return f
    from pdx.nn import Layer

    if isinstance(f, Layer):
        if static_layers.get(f) is not None:
            return f
        forward = getattr(type(f), "forward", None)
        if isinstance(forward, types.FunctionType) and _convertible(forward):
            new = convert_or_fallback(forward)
            if new is not forward:
                return types.MethodType(new, f)
        return f
    if isinstance(f, functools.partial) and isinstance(f.func, types.FunctionType) and _convertible(f.func):
        new = convert_or_fallback(f.func)
        return functools.partial(new, *f.args, **f.keywords) if new is not f.func else f
    if (getattr(f, "__module__", None) or "").split(".")[0] in _HIGHER_ORDER:
        return functools.partial(_library_call, f)
    return f


_HIGHER_ORDER = ("pdx", "jax", "flax", "optax")


def _library_call(f, *args, **kwargs):
    """Call a pdx/JAX function, converting user functions passed to it
    (`pdx.grad(loss_fn)`, `lax.scan(step, ...)`, ...)."""
    if any(type(a) is types.FunctionType for a in args):
        args = [convert_or_fallback(a) if type(a) is types.FunctionType and _convertible(a) else a
                for a in args]
    if kwargs and any(type(a) is types.FunctionType for a in kwargs.values()):
        kwargs = {k: convert_or_fallback(a) if type(a) is types.FunctionType and _convertible(a) else a
                  for k, a in kwargs.items()}
    return f(*args, **kwargs)


def get_code(fn) -> str:
    """The converted source of a function, method, Layer or `pdx.jit` function.

    Args:
      fn: what you would pass to `pdx.jit`.

    Returns:
      Python source of the rewritten function (control flow as `_pdx_rt.*` calls).

    Example:
      >>> import pdx
      >>> def f(x):
      ...     if x > 0:
      ...         x = -x
      ...     return x
      >>> print(pdx.jit.get_code(f).splitlines()[0])
      def f(x):
    """
    from pdx.jit._static_function import StaticFunction
    from pdx.nn import Layer

    if isinstance(fn, StaticFunction):
        fn = fn.dygraph_function
    if isinstance(fn, Layer):
        fn = type(fn).forward
    if isinstance(fn, (types.MethodType, functools.partial)):
        fn = getattr(fn, "__func__", None) or fn.func
    fn = inspect.unwrap(fn)
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"pdx.jit.get_code(fn) needs a Python function, method, Layer or pdx.jit "
                        f"function; got {type(fn).__name__}")
    return _template(fn).source


def _reset_caches():
    """Forget every conversion (benchmarks measure the cold cost with this)."""
    _code_cache.clear()
    _fn_cache.clear()

