"""Vocabulary shared by the rewrite passes: the runtime's name in generated
code, the prefix of generated names, the conversion error and small builders
of AST nodes."""

from __future__ import annotations

import ast

__all__ = ["RT", "ConversionError"]

RT = "_pdx_rt"
_PREFIX = "_pdx_"


class ConversionError(Exception):
    """A construct the converter cannot rewrite (the function runs unconverted
    unless `full_graph=True`)."""

    def __init__(self, message: str, node: ast.AST | None = None):
        super().__init__(message)
        self.lineno = getattr(node, "lineno", None)



def _name(id_: str, store: bool = False) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _rt(attr: str) -> ast.Attribute:
    return ast.Attribute(value=_name(RT), attr=attr, ctx=ast.Load())


def _call(func: ast.expr, *args: ast.expr, **kwargs: ast.expr) -> ast.Call:
    return ast.Call(func=func, args=list(args), keywords=[ast.keyword(arg=k, value=v) for k, v in kwargs.items()])


def _assign(name: str, value: ast.expr) -> ast.Assign:
    return ast.Assign(targets=[_name(name, store=True)], value=value)


def _tuple(names, store=False) -> ast.Tuple:
    return ast.Tuple(elts=[_name(n, store) for n in names], ctx=ast.Store() if store else ast.Load())


def _strs(names) -> ast.Tuple:
    return ast.Tuple(elts=[ast.Constant(n) for n in names], ctx=ast.Load())


def _not(expr: ast.expr) -> ast.UnaryOp:
    return ast.UnaryOp(op=ast.Not(), operand=expr)


def _lambda(body: ast.expr, args=()) -> ast.Lambda:
    return ast.Lambda(args=_arguments(args), body=body)


def _arguments(names) -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in names], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def _located(nodes, src):
    for node in nodes:
        for n in ast.walk(node):
            if "lineno" in n._attributes and not hasattr(n, "lineno"):
                ast.copy_location(n, src)
            if "end_lineno" in n._attributes and getattr(n, "end_lineno", None) is None:
                n.end_lineno, n.end_col_offset = n.lineno, getattr(n, "col_offset", 0)
    return nodes
