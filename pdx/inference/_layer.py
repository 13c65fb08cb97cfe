"""`PaddleTranslatedLayer`: a Paddle-saved program as a fine-tunable pdx Layer."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from pdx.inference._translate import PaddleProgram, find_model_files
from pdx.nn import Buffer, Layer

__all__ = ["PaddleTranslatedLayer"]


class _Scope(Layer):
    """A namespace level of dotted parameter names ("conv2d_0.w_0")."""

    def forward(self, *inputs):
        raise TypeError("this is a parameter namespace of a PaddleTranslatedLayer; call the layer itself")


def as_input(x, dtype: str):
    """An input array of the program's dtype (int64/float64 narrow when jax_enable_x64 is off)."""
    if isinstance(x, (jax.Array, jax.core.Tracer)):
        return x
    return jnp.asarray(np.asarray(x), jax.dtypes.canonicalize_dtype(np.dtype(dtype)))


class PaddleTranslatedLayer(Layer):
    """A program saved by `paddle.jit.save` (PIR JSON + `.pdiparams`), as a pdx Layer.

    Parameters are `nnx.Param`s (frozen when Paddle marked them not
    trainable), batch-norm statistics are `Buffer`s, under Paddle's names
    (`state_dict()` keys such as `"conv2d_0.w_0"`). Calls run the translated
    program eagerly, under `pdx.jit`, and under `jax.grad`: gradients flow to
    every parameter, so the layer fine-tunes. The program is the one Paddle
    saved (normally in eval mode): `train()` / `eval()` do not change it, so
    batch norm keeps using its stored statistics and dropout stays off.

    Args:
      path: a model directory, a path prefix (`dir/model` for `dir/model.json`),
        or the program file.
      params_file: the `.pdiparams` file when `path` is the program file and the
        parameters live elsewhere.

    Example:
      >>> import pdx                                   # doctest: +SKIP
      >>> net = pdx.jit.load("resnet/model")            # doctest: +SKIP
      >>> net(pdx.randn([2, 3, 224, 224])).shape        # doctest: +SKIP
      (2, 1000)
    """

    def __init__(self, path, params_file=None):
        super().__init__()
        model_file, params_file = find_model_files(path, params_file)
        program = PaddleProgram(model_file, params_file)
        self._program = program
        self.input_names = tuple(f.name for f in program.feeds)
        self.output_names = tuple(f.name for f in program.fetches)
        self._param_names = tuple(p.name for p in program.params if p.persistable)
        for p in program.params:
            if not p.persistable:
                continue
            value = jnp.asarray(program.values[p.name])
            var = nnx.Param(value) if p.trainable else Buffer(value, persistable=True)
            self._place(p.name, var)

    @property
    def feeds(self):
        """The program's inputs: records of (name, value, dtype, shape), None marking a dynamic size."""
        return self._program.feeds

    def _place(self, dotted: str, var) -> None:
        *scopes, leaf = dotted.split(".")
        node = self
        for part in scopes:
            child = vars(node).get(part)
            if child is None:
                if hasattr(node, part):
                    raise ValueError(f"parameter name {dotted!r} collides with the Layer attribute {part!r}")
                child = _Scope()
                setattr(node, part, child)
            node = child
        if leaf in vars(node) or hasattr(node, leaf):
            raise ValueError(f"parameter name {dotted!r} collides with an attribute of the layer")
        setattr(node, leaf, var)

    def _lookup(self, dotted: str):
        node = self
        for part in dotted.split("."):
            node = getattr(node, part)
        return node

    def forward(self, *inputs):
        program = self._program
        program.check_inputs(inputs)
        inputs = [as_input(x, f.dtype) for x, f in zip(inputs, program.feeds)]
        params = {n: self._lookup(n).get_value() for n in self._param_names}
        outs = program(params, inputs)
        return outs[0] if len(outs) == 1 else outs

    def extra_repr(self) -> str:
        return f"inputs={list(self.input_names)}, outputs={list(self.output_names)}"
