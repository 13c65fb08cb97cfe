"""`InputSpec`: the declared shape/dtype/name of a model input (Paddle's
`paddle.static.InputSpec`). `None` (or -1) marks a dynamic dim; export turns
it into a symbolic dimension."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import numpy as np

from pdx._dtype import convert_dtype

__all__ = ["InputSpec", "check_inputs"]


class InputSpec:
    """Shape, dtype and name of one input.

    Args:
      shape: a list of ints; None or -1 for dynamic dims.
      dtype: Paddle dtype name or numpy/jax dtype ('float32' by default).
      name: the input's name (used in errors and exported signatures).
      stop_gradient: accepted for Paddle compatibility.

    Example:
      >>> from pdx.static import InputSpec
      >>> InputSpec([None, 784], "float32", "x")
      InputSpec(shape=(None, 784), dtype=float32, name=x)
    """

    def __init__(self, shape, dtype="float32", name: str | None = None, stop_gradient: bool = False):
        if isinstance(shape, int):
            shape = (shape,)
        self.shape = tuple(None if (d is None or d == -1) else int(d) for d in shape)
        if any(d is not None and d < 0 for d in self.shape):
            raise ValueError(f"InputSpec: dims must be >= 0, None or -1; got shape={list(shape)}")
        self.dtype = convert_dtype(dtype)
        self.name = name
        self.stop_gradient = stop_gradient

    @classmethod
    def from_tensor(cls, tensor, name: str | None = None) -> "InputSpec":
        return cls(tuple(tensor.shape), tensor.dtype, name)

    def batch(self, batch_size) -> "InputSpec":
        return InputSpec((batch_size,) + self.shape, self.dtype, self.name)

    def unbatch(self) -> "InputSpec":
        return InputSpec(self.shape[1:], self.dtype, self.name)

    def __eq__(self, other) -> bool:
        return isinstance(other, InputSpec) and (self.shape, self.dtype, self.name) == (other.shape, other.dtype, other.name)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.name))

    def __repr__(self) -> str:
        return f"InputSpec(shape={self.shape}, dtype={np.dtype(self.dtype).name}, name={self.name})"


def check_inputs(specs: Sequence[InputSpec], args: Sequence, *, fn: str) -> None:
    """Raise a ValueError naming the input when `args` disagree with `specs`."""
    tensors = [a for a in args if isinstance(a, (jax.Array, np.ndarray)) or hasattr(a, "shape")]
    tensors = [a for a in tensors if not hasattr(a, "named_parameters")]
    if len(tensors) < len(specs):
        raise ValueError(f"{fn}: input_spec declares {len(specs)} inputs but {len(tensors)} tensors were passed")
    for i, (spec, x) in enumerate(zip(specs, tensors)):
        label = spec.name or f"input {i}"
        shape = tuple(x.shape)
        if len(shape) != len(spec.shape):
            raise ValueError(f"{fn}: {label} has rank {len(shape)} (shape {shape}) but input_spec "
                             f"declares rank {len(spec.shape)} (shape {spec.shape})")
        for d, (got, want) in enumerate(zip(shape, spec.shape)):
            if want is not None and got != want:
                raise ValueError(f"{fn}: {label} has shape {shape} but input_spec declares {spec.shape} "
                                 f"(dim {d}: {got} != {want}); use None in the spec for a dynamic dim")
        if np.dtype(x.dtype) != np.dtype(spec.dtype):
            raise ValueError(f"{fn}: {label} has dtype {np.dtype(x.dtype).name} but input_spec declares "
                             f"{np.dtype(spec.dtype).name}; cast with pdx.cast(x, '{np.dtype(spec.dtype).name}')")
