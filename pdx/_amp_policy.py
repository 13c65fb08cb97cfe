"""`auto_cast`: the mixed-precision dtype policy that compute ops consult.

A policy is a small frozen record (level, low-precision dtype, white and black
lists). `auto_cast(...)` makes one current for the code inside the `with`
block; ops that opt in with the `cast_inputs` decorator (`F.linear`, the
`F.conv*` family) cast their floating inputs to the policy's dtype when their
name is on the white list at level O1, or not on the black list at level O2.
Everything else (norms, softmax, cross-entropy) keeps its own precision: those
kernels compute their statistics in float32.

The policy is read when an op runs, so under a compiled function it is read
while tracing. It is a trace-context setting ("pdx.amp.policy",
`pdx/_trace_context.py`): a function compiled outside `auto_cast` and called
inside it traces once more for the policy (and the other way round), so
`auto_cast` may go inside the compiled function or around its call.

This is part of the framework core (it imports only the core): the ops in
`pdx.nn.functional` consult it, and `pdx.amp` exposes it as `auto_cast`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect

import jax
import jax.numpy as jnp

from pdx import _trace_context

__all__ = ["AmpPolicy", "WHITE_LIST", "BLACK_LIST", "auto_cast", "amp_guard", "cast_inputs", "current_policy",
           "make_policy", "use_policy"]

# Ops that run in low precision at O1 (their cost is in matrix units) ...
WHITE_LIST = frozenset({"linear", "matmul", "conv1d", "conv2d", "conv3d",
                        "conv1d_transpose", "conv2d_transpose", "conv3d_transpose", "bilinear"})
# ... and ops that stay in float32 even at O2 (range- or precision-sensitive).
BLACK_LIST = frozenset({"softmax", "log_softmax", "cross_entropy", "softmax_with_cross_entropy", "layer_norm",
                        "batch_norm", "group_norm", "instance_norm", "rms_norm", "exp", "log", "mean", "sum"})

_LEVELS = ("O0", "OD", "O1", "O2")
_DTYPES = {"bfloat16": jnp.bfloat16, "float16": jnp.float16}


@dataclasses.dataclass(frozen=True)
class AmpPolicy:
    """Which ops compute in which dtype (hashable: compiled steps key on it).

    Args:
      level: 'O0' (off), 'OD'/'O1' (white-list ops in low precision) or 'O2'
        (every op but the black list in low precision; `pdx.Model` also keeps
        float32 master weights and computes with low-precision copies).
      dtype: 'bfloat16' or 'float16'.
      white_list / black_list: op names (the default lists plus the custom ones).
    """

    level: str = "O1"
    dtype: str = "bfloat16"
    white_list: frozenset = WHITE_LIST
    black_list: frozenset = BLACK_LIST

    @property
    def enabled(self) -> bool:
        return self.level != "O0"

    @property
    def compute_dtype(self):
        return _DTYPES[self.dtype]

    def casts(self, op: str) -> bool:
        """True when `op` computes in the low-precision dtype under this policy."""
        if not self.enabled or op in self.black_list:
            return False
        return self.level == "O2" or op in self.white_list

    def __hash__(self) -> int:
        # Hashed on every compiled call under auto_cast (it is part of the jit key): computed once.
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash((self.level, self.dtype, self.white_list, self.black_list))
            object.__setattr__(self, "_hash", cached)
        return cached


# One object per distinct policy: a jit key compares the policy of each call with the cached
# one, and the identical object compares without looking at its lists.
_INTERNED: dict[AmpPolicy, AmpPolicy] = {}


_POLICY = _trace_context.AMP_POLICY


def current_policy() -> AmpPolicy | None:
    """The policy of the innermost active `auto_cast`, or None.

    Example:
      >>> import pdx
      >>> with pdx.amp.auto_cast(level="O2"):
      ...     pdx.amp.current_policy().level
      'O2'
    """
    return _POLICY.get()


def make_policy(enable=True, custom_white_list=None, custom_black_list=None, level="O1",
                dtype="bfloat16") -> AmpPolicy:
    """Validate Paddle's auto_cast arguments into an `AmpPolicy`."""
    if not isinstance(level, str) or level.upper() not in _LEVELS:
        raise ValueError(f"auto_cast: level must be one of {_LEVELS}; got level={level!r}")
    if dtype not in _DTYPES:
        raise ValueError(f"auto_cast: dtype must be 'bfloat16' or 'float16'; got dtype={dtype!r}")
    white = frozenset(custom_white_list or ())
    black = frozenset(custom_black_list or ())
    both = sorted(white & black)
    if both:
        raise ValueError(f"auto_cast: {both} appear in both custom_white_list and custom_black_list; put each op in one list")
    level = level.upper() if enable else "O0"
    if level == "OD":
        level = "O1"
    return AmpPolicy(level, dtype, (WHITE_LIST - black) | white, (BLACK_LIST - white) | black)


@contextlib.contextmanager
def auto_cast(enable: bool = True, custom_white_list=None, custom_black_list=None, level: str = "O1",
              dtype: str = "bfloat16", use_promote: bool = True):
    """Run the ops inside the block under a mixed-precision policy (Paddle's `paddle.amp.auto_cast`).

    Args:
      enable: False runs everything in the parameters' precision.
      custom_white_list: extra op names to run in low precision.
      custom_black_list: op names to keep in float32.
      level: 'O1' (white-list ops such as linear/conv in low precision) or
        'O2' (all but black-list ops; pair with `decorate` for low-precision weights).
      dtype: 'bfloat16' (default; no loss scaling needed) or 'float16'
        (pair with `GradScaler`).
      use_promote: accepted for Paddle compatibility; jax promotes mixed
        dtypes (a bfloat16 result plus a float32 tensor gives float32).

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> net = pdx.nn.Linear(4, 2)
      >>> with pdx.amp.auto_cast(dtype="bfloat16"):
      ...     y = net(jnp.ones((1, 4)))
      >>> str(y.dtype)
      'bfloat16'
    """
    with use_policy(make_policy(enable, custom_white_list, custom_black_list, level, dtype)) as policy:
        yield policy


@contextlib.contextmanager
def use_policy(policy: AmpPolicy | None):
    """Make `policy` (an `AmpPolicy`, or None for none) current inside the block.

    Example:
      >>> with use_policy(make_policy(level="O2")) as policy:
      ...     current_policy() is policy
      True
    """
    if policy is not None and not isinstance(policy, AmpPolicy):
        raise TypeError(f"use_policy(policy) needs a pdx.amp.AmpPolicy or None; got {type(policy).__name__}")
    if policy is not None:
        policy = _INTERNED.setdefault(policy, policy)
    with _POLICY.set(policy):
        yield policy


amp_guard = auto_cast  # Paddle's older name


def _cast(value, dtype):
    if isinstance(value, jax.Array) or hasattr(value, "dtype"):
        if jnp.issubdtype(value.dtype, jnp.floating) and value.dtype != dtype:
            return jnp.asarray(value).astype(dtype)
    return value


def cast_inputs(op: str, *array_params: str):
    """Decorator for a compute op: cast its floating `array_params` to the
    current policy's dtype when the policy says `op` runs in low precision.

    Sits outside any per-configuration compile cache (the cast happens before
    the cached program is looked up), so eager calls never reuse a program
    compiled for the other precision.
    """

    def decorate(fn):
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            policy = current_policy()
            if policy is None or not policy.casts(op):
                return fn(*args, **kwargs)
            bound = sig.bind(*args, **kwargs)
            dtype = policy.compute_dtype
            for name in array_params:
                if bound.arguments.get(name) is not None:
                    bound.arguments[name] = _cast(bound.arguments[name], dtype)
            return fn(*bound.args, **bound.kwargs)

        return wrapper

    return decorate
