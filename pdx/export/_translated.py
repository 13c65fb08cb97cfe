"""`TranslatedLayer`, what `pdx.jit.load` returns (Paddle's `paddle.jit.TranslatedLayer`).

A TranslatedLayer holds the artifact's parameters as its own `nnx.Param` /
`Buffer` Variables, under the same `state_dict()` names as the exported
model, and runs the deserialized StableHLO program with them as arguments.
The program carries its backward pass (exported with `differentiable=True`,
the default), so `pdx.grad` w.r.t. the layer's parameters works and the
layer can be fine-tuned, eagerly or inside `pdx.jit`.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
from flax import nnx

from pdx.export._artifact import ArtifactError
from pdx.export._runtime import Artifact
from pdx.export._validate import check_arrays
from pdx.nn import Buffer, Layer

__all__ = ["TranslatedLayer"]


_NOT_DIFFERENTIABLE = (
    "TranslatedLayer({name}): the artifact was exported with differentiable=False, so its "
    "program has no backward pass; re-export with pdx.jit.save(..., differentiable=True) "
    "(the default) to fine-tune it"
)


class _Program:
    """The deserialized program; compared by identity so a Layer's structure
    (which includes this static attribute) stays hashable."""

    def __init__(self, exported, artifact: Artifact):
        self.signature = artifact.signature
        self.call = exported.call
        if int(artifact.manifest["program"].get("vjp_order", 0)) < 1:
            self.call = _forward_only(exported.call, artifact.name)


def _forward_only(call, name: str):
    """`call` with a backward pass that explains itself instead of JAX's 'No VJP'."""

    @jax.custom_vjp
    def run(params, *inputs):
        return call(params, *inputs)

    def fwd(params, *inputs):
        return call(params, *inputs), None

    def bwd(_, cotangent):
        raise TypeError(_NOT_DIFFERENTIABLE.format(name=name))

    run.defvjp(fwd, bwd)
    return run


class _Scope(Layer):
    """A namespace level of dotted parameter names ("features.0.weight")."""

    def forward(self, *inputs):
        raise TypeError("this is a parameter namespace of a TranslatedLayer; call the TranslatedLayer")


class TranslatedLayer(Layer):
    """A Layer loaded from an exported artifact (Paddle's `paddle.jit.TranslatedLayer`).

    Create it with `pdx.jit.load(path)`. Differences from the exported Layer:
    the program is fixed — train()/eval() do not change it (export in the
    mode you want, normally eval()) — and inputs must match the exported
    InputSpecs (ValueError otherwise).

    Attributes:
      name: the model name from the manifest.
      input_specs: tuple of `pdx.jit.InputSpec`.
      output_names: tuple of output names.
    """

    def __init__(self, artifact: Artifact | str | os.PathLike):
        super().__init__()
        if not isinstance(artifact, Artifact):
            artifact = Artifact(artifact)
        self._program = _Program(artifact.exported(), artifact)
        self.name = artifact.name
        self.input_specs = artifact.input_specs
        self.output_names = artifact.output_names
        self._param_names = tuple(m["name"] for m in artifact.param_meta)
        for meta, value in zip(artifact.param_meta, artifact.params):
            value = jnp.asarray(value)
            if meta.get("kind") == "buffer":
                var = Buffer(value, persistable=True)
            elif meta.get("trainable", True):
                var = nnx.Param(value)
            else:
                var = nnx.Param(value, trainable=False)
            self._place(meta["name"], var)

    def _place(self, dotted: str, var) -> None:
        *scopes, leaf = dotted.split(".")
        node = self
        for part in scopes:
            child = vars(node).get(part)
            if not isinstance(child, _Scope):
                _check_free(node, part, dotted)
                child = _Scope()
                setattr(node, part, child)
            node = child
        _check_free(node, leaf, dotted)
        setattr(node, leaf, var)

    def _lookup(self, dotted: str):
        node = self
        for part in dotted.split("."):
            node = getattr(node, part)
        return node

    def forward(self, *inputs):
        check_arrays(self._program.signature, inputs, fn=f"TranslatedLayer({self.name})", convert=False)
        params = tuple(self._lookup(n).get_value() for n in self._param_names)
        return self._program.call(params, *inputs)

    def extra_repr(self) -> str:
        return f"name={self.name!r}, inputs={list(self.input_specs)}"


def _check_free(node, attr: str, dotted: str) -> None:
    if attr in vars(node) and not isinstance(vars(node)[attr], _Scope):
        raise ArtifactError(f"parameter name {dotted!r} collides with another parameter; re-export the model")
    if attr not in vars(node) and hasattr(type(node), attr):
        raise ArtifactError(f"parameter name {dotted!r} collides with the Layer attribute {attr!r}; "
                            "rename that parameter in the model and re-export")
