"""pdx.static: Paddle's `paddle.static` names that still make sense in pdx.

pdx has one mode (eager ops, compiled on request with `pdx.jit`), so Paddle's
static-graph machinery (Program, Executor, program_guard) has no counterpart;
`InputSpec` and `create_parameter` are the same objects as `pdx.jit.InputSpec`
and `pdx.create_parameter`; `Variable` is Paddle's name that dygraph code tests
tensors against (`isinstance(x, paddle.static.Variable)`).
"""

import jax

from pdx.jit import InputSpec
from pdx.ops import create_parameter

__all__ = ["InputSpec", "Variable", "create_parameter"]


class _VariableMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, jax.Array)

    def __call__(cls, *args, **kwargs):
        raise TypeError("pdx.static.Variable: pdx builds no static program, so there are no Variables to "
                        "create; make a tensor with pdx.to_tensor(data) (a Variable check, isinstance(x, "
                        "pdx.static.Variable), holds for every tensor)")


class Variable(metaclass=_VariableMeta):
    """Paddle's `paddle.static.Variable` as dygraph code sees it: `isinstance(x, Variable)` holds for tensors.

    Example:
        >>> import pdx
        >>> isinstance(pdx.ones([2]), pdx.static.Variable)
        True
    """
