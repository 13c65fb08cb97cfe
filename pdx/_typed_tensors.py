"""Paddle's typed tensor factories (`paddle.FloatTensor([1, 2])`, ...) and `paddle.Size`.

pdx tensors are `jax.Array`s of any dtype, so the typed names are factories:
calling one makes a tensor of its dtype. `Size` is the tuple type shapes are
compared with; any tuple of ints counts as one.
"""

from __future__ import annotations

import builtins

import numpy as np

__all__ = ["BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor",
           "HalfTensor", "IntTensor", "LongTensor", "ShortTensor", "Size"]


class _TypedTensor:
    """Calling it makes a tensor of one dtype (Paddle's `paddle.<Kind>Tensor(data)`)."""

    def __init__(self, name: str, dtype: str):
        self.__name__ = self.__qualname__ = name
        self.dtype = dtype
        self.__doc__ = (f"`pdx.{name}(data)`: a tensor of dtype {dtype} from `data` (Paddle's "
                        f"`paddle.{name}`; = `pdx.to_tensor(data, dtype='{dtype}')`).\n\n"
                        f"Example:\n  >>> import pdx\n  >>> str(pdx.{name}([1, 0]).dtype)\n  '{_jax_name(dtype)}'\n")

    def __call__(self, data):
        from pdx.ops import to_tensor

        return to_tensor(data, dtype=self.dtype)

    def __repr__(self):
        return f"pdx.{self.__name__}"


def _jax_name(dtype: str) -> str:
    narrow = {"float64": "float32", "int64": "int32"}  # 32-bit defaults unless jax_enable_x64
    import jax

    return dtype if jax.config.jax_enable_x64 else narrow.get(dtype, dtype)


BFloat16Tensor = _TypedTensor("BFloat16Tensor", "bfloat16")
BoolTensor = _TypedTensor("BoolTensor", "bool")
ByteTensor = _TypedTensor("ByteTensor", "uint8")
CharTensor = _TypedTensor("CharTensor", "int8")
DoubleTensor = _TypedTensor("DoubleTensor", "float64")
FloatTensor = _TypedTensor("FloatTensor", "float32")
HalfTensor = _TypedTensor("HalfTensor", "float16")
IntTensor = _TypedTensor("IntTensor", "int32")
LongTensor = _TypedTensor("LongTensor", "int64")
ShortTensor = _TypedTensor("ShortTensor", "int16")


class _SizeMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, tuple) and builtins.all(isinstance(d, (builtins.int, np.integer)) for d in obj)


class Size(tuple, metaclass=_SizeMeta):
    """A tensor shape (Paddle's `paddle.Size`): a tuple of ints; every shape tuple is an instance.

    Example:
      >>> import pdx
      >>> isinstance(pdx.ones([2, 3]).shape, pdx.Size), pdx.Size([2, 3])
      (True, pdx.Size([2, 3]))
    """

    def __new__(cls, dims=()):
        return super().__new__(cls, (builtins.int(d) for d in dims))

    def numel(self) -> int:
        """The number of elements of a tensor of this shape."""
        return builtins.int(np.prod(self, dtype=np.int64))

    def __repr__(self):
        return f"pdx.Size({list(self)})"
