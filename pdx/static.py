"""pdx.static: Paddle's `paddle.static` names that still make sense in pdx.

pdx has one mode (eager ops, compiled on request with `pdx.jit`), so Paddle's
static-graph machinery (Program, Executor, program_guard) has no counterpart;
`InputSpec` and `create_parameter` are the same objects as `pdx.jit.InputSpec`
and `pdx.create_parameter`.
"""

from pdx.jit import InputSpec
from pdx.ops import create_parameter

__all__ = ["InputSpec", "create_parameter"]
