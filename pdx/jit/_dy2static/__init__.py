"""Control-flow conversion for pdx.jit (Paddle's dy2static, done as an AST rewrite).

`convert_or_fallback(fn)` gives the rewritten function; `_runtime` holds what
the rewritten code calls; `_transform` is the rewrite itself.
"""

from pdx.jit._dy2static._context import full_graph, use_full_graph
from pdx.jit._dy2static._convert import convert, convert_or_fallback, converted_call, get_code
from pdx.jit._dy2static._runtime import Dy2StaticError, max_iterations
from pdx.jit._dy2static._transform import ConversionError

__all__ = ["ConversionError", "Dy2StaticError", "convert", "convert_or_fallback", "converted_call",
           "full_graph", "get_code", "max_iterations", "use_full_graph"]
