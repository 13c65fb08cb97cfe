"""A Paddle program, translated op by op into a pure JAX function `(params, inputs) -> outputs`."""

from __future__ import annotations

import os
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from pdx.inference._ops import OPS, PaddedRows, is_static
from pdx.inference._program_desc import read_program_desc
from pdx.inference._program_file import (
    ModelFormatError,
    Program,
    read_params,
    read_program,
    walk_ops,
)

__all__ = ["PaddleProgram", "find_model_files", "is_paddle_model", "trim_outputs"]

_PROGRAM_SUFFIXES = (".json", ".pdmodel")
# Control-flow ops: run by the translator over their blocks (lax.cond / lax.while_loop), not by an OPS entry.
CONTROL_FLOW = ("pd_op.if", "pd_op.while")


def find_model_files(path, params_file=None) -> tuple[Path, Path | None]:
    """(program file, params file) for a model directory, a path prefix, or a program file.

    A directory holds one program, PIR JSON (`inference.json`, `model.json`) or
    legacy ProgramDesc (`model.pdmodel`), next to its `.pdiparams`; a prefix
    `dir/model` names `dir/model.json` (or, when only that exists,
    `dir/model.pdmodel`) and `dir/model.pdiparams`. A program without
    parameters has no `.pdiparams` (paddle.jit.save writes none): a directory
    holding only its program finds it, and `params_file=""` (Paddle
    Inference's `Config(model_file, "")`) names no parameters file (None).
    """
    path = Path(path)
    if params_file is not None:
        return path, (Path(params_file) if os.fspath(params_file) != "" else None)
    if path.is_dir():
        programs = sorted(p for p in path.iterdir() if p.suffix in _PROGRAM_SUFFIXES and p.is_file())
        with_params = [p for p in programs if p.with_suffix(".pdiparams").exists()]
        candidates = with_params or [p for p in programs if p.name != "manifest.json"]
        if len(candidates) != 1:
            found = [p.name for p in candidates]
            raise ModelFormatError(f"{str(path)!r}: expected one Paddle program (*.json or *.pdmodel, with the "
                                   ".pdiparams next to it when it has parameters), found "
                                   f"{found or 'none'}; pass Config(model_file, params_file)")
        return candidates[0], candidates[0].with_suffix(".pdiparams")
    if path.suffix in _PROGRAM_SUFFIXES:
        return path, path.with_suffix(".pdiparams")
    if not Path(f"{path}.json").exists() and Path(f"{path}.pdmodel").exists():
        return Path(f"{path}.pdmodel"), Path(f"{path}.pdiparams")
    return Path(f"{path}.json"), Path(f"{path}.pdiparams")


def _read_any_program(path) -> Program:
    """The PIR JSON program, or the legacy ProgramDesc protobuf for a `.pdmodel` file."""
    return read_program_desc(path) if Path(path).suffix == ".pdmodel" else read_program(path)


def is_paddle_model(path) -> bool:
    """True when `path` (a directory, prefix or program file) names a Paddle-saved model (PIR JSON or ProgramDesc).

    A program with no `.pdiparams` next to it counts only when it reads as a Paddle program that declares no
    parameters (so a directory of other JSON files, such as a Hugging Face checkpoint, is not taken for one).
    """
    try:
        program, params = find_model_files(path)
    except (ModelFormatError, OSError):
        return False
    if not program.is_file() or (Path(path).is_dir() and (Path(path) / "manifest.json").exists()):
        return False
    if params is not None and params.is_file():
        return True
    try:
        return not any(p.persistable for p in _read_any_program(program).params)
    except (ModelFormatError, OSError):
        return False


class PaddleProgram:
    """A saved Paddle program with its parameters, callable as a pure JAX function.

    Args:
      model_file: the PIR JSON program (`model.json`) or the legacy ProgramDesc (`model.pdmodel`).
      params_file: its `.pdiparams` stream; None (or a path that does not exist) for a program that declares
        no parameters, for which paddle.jit.save writes no `.pdiparams`.

    Attributes:
      feeds / fetches / params: typed records of the inputs, outputs and parameters.
      values: {parameter name: numpy array} as stored.

    Example:
      >>> prog = PaddleProgram("m/model.json", "m/model.pdiparams")  # doctest: +SKIP
      >>> outs = prog(prog.values, [x])                               # doctest: +SKIP
    """

    def __init__(self, model_file, params_file):
        self.program: Program = _read_any_program(model_file)
        unknown = [(op.index, op.name) for op in walk_ops(self.program.ops)
                   if op.name not in OPS and op.name not in CONTROL_FLOW]
        if unknown:
            index, name = unknown[0]
            raise ModelFormatError(
                f"{model_file}: op #{index} is {name!r}, which pdx cannot translate"
                + (f" ({len(unknown)} ops of {len({n for _, n in unknown})} unsupported kinds: "
                   f"{sorted({n for _, n in unknown})})" if len(unknown) > 1 else "")
                + f". Supported ops: {', '.join(sorted((*OPS, *CONTROL_FLOW)))}")
        self.values = read_params(params_file, self.program.params)
        self.model_file = os.fspath(model_file)
        self.params_file = None if params_file is None else os.fspath(params_file)

    @property
    def feeds(self):
        return self.program.feeds

    @property
    def fetches(self):
        return self.program.fetches

    @property
    def params(self):
        return self.program.params

    def check_inputs(self, inputs) -> None:
        """Raise ValueError unless `inputs` match the program's inputs in count, rank and fixed sizes."""
        feeds = self.program.feeds
        if len(inputs) != len(feeds):
            raise ValueError(f"the program takes {len(feeds)} inputs ({[f.name for f in feeds]}), got {len(inputs)}")
        for feed, x in zip(feeds, inputs):
            shape = tuple(np.shape(x))
            if len(shape) != len(feed.shape) or any(d is not None and d != s for d, s in zip(feed.shape, shape)):
                raise ValueError(f"input {feed.name!r} has shape {list(shape)}; the program takes "
                                 f"{[-1 if d is None else d for d in feed.shape]} (-1: any size)")

    def __call__(self, params: dict, inputs) -> list:
        """Run the program: `params` maps names to arrays (persistable ones at least), `inputs` is a list.

        An output whose row count depends on the data (multiclass_nms3's Out and Index) is a `PaddedRows`:
        fixed-size rows per image and the real count of each; `trim_outputs` gives Paddle's arrays on the host.
        """
        env = {0: None}
        for p in self.program.params:
            env[p.value] = params.get(p.name) if p.persistable else None
        for feed, x in zip(self.program.feeds, inputs):
            env[feed.value] = x
        self._run(self.program.ops, env)
        return [env[f.value] for f in self.program.fetches]

    def _run(self, ops, env: dict) -> None:
        """Run `ops` in order, reading and writing values in `env`."""
        for op in ops:
            ins = [env[v] for v in op.inputs]
            if any(isinstance(v, PaddedRows) for v in ins):
                raise ModelFormatError(
                    f"{self.model_file}: op #{op.index} ({op.name}) reads an output of multiclass_nms3, whose row "
                    "count depends on the data; pdx returns such outputs padded to a fixed size and trims them "
                    "when they are fetched, so they cannot feed further ops. Fetch the NMS outputs directly")
            static = is_static(ins) and not op.blocks
            try:
                if op.name == "pd_op.if":
                    outs = self._if(op, ins, env)
                elif op.name == "pd_op.while":
                    outs = self._while(op, ins, env)
                elif static:  # shapes and constants: computed now, so reshape targets stay Python ints
                    with jax.ensure_compile_time_eval():
                        outs = OPS[op.name](ins, op.attrs)
                else:
                    outs = OPS[op.name](ins, op.attrs)
            except (TypeError, ValueError, IndexError) as e:
                if isinstance(e, ModelFormatError):
                    raise
                shapes = [getattr(v, "shape", None) if not isinstance(v, list) else "list" for v in ins]
                raise ValueError(f"{self.model_file}: op #{op.index} ({op.name}, inputs {shapes}) failed: "
                                 f"{e}") from e
            if len(op.outputs) == 1 and not isinstance(outs, tuple):
                outs = (outs,)
            if not isinstance(outs, tuple):
                outs = (outs,)
            if len(outs) < len(op.outputs):
                outs = outs + (None,) * (len(op.outputs) - len(outs))
            if static and op.name != "builtin.combine":  # computed from constants and shapes only
                outs = tuple(np.asarray(o) if o is not None and not isinstance(o, list) else o for o in outs)
            for vid, value in zip(op.outputs, outs):
                env[vid] = value

    def _block(self, block, env: dict, args) -> list:
        """The values `block` yields, run in a scope over `env` with its arguments bound to `args`."""
        scope = dict(env)
        scope.update(zip(block.args, args))
        self._run(block.ops, scope)
        return [scope[v] for v in block.yields]

    def _if(self, op, ins, env) -> tuple:
        """pd_op.if: a condition known at trace time picks its block now; a traced one is lax.cond."""
        self._need_blocks(op, 2)
        cond, (then, other) = ins[0], op.blocks
        if is_static(cond):
            return tuple(self._block(then if bool(np.asarray(cond).reshape(())) else other, env, ()))

        def branch(block):
            return lambda: [jnp.asarray(v) for v in self._block(block, env, ())]

        return tuple(jax.lax.cond(jnp.reshape(cond, ()).astype(bool), branch(then), branch(other)))

    def _while(self, op, ins, env) -> tuple:
        """pd_op.while(cond, *vars): the body binds vars and yields (cond, *vars); lax.while_loop.

        XLA's loop keeps each variable's shape and dtype: a body that changes a shape is refused, naming the
        variable (a body's dtype drift, such as int64 narrowed to int32, is cast back).
        """
        self._need_blocks(op, 1)
        (body,) = op.blocks
        if len(body.args) != len(ins) - 1 or len(body.yields) != len(ins):
            raise ModelFormatError(f"{self.model_file}: op #{op.index} (pd_op.while) has {len(ins) - 1} loop "
                                   f"variables, its body binds {len(body.args)} and yields {len(body.yields)} "
                                   "(the condition, then each variable)")
        carry = tuple(jnp.asarray(v) for v in ins)

        def step(values):
            new = self._block(body, env, values[1:])
            out = []
            for i, (v, old) in enumerate(zip(new, values)):
                v = jnp.asarray(v)
                if v.shape != old.shape:
                    raise ModelFormatError(
                        f"{self.model_file}: op #{op.index} (pd_op.while): loop variable {i} (value "
                        f"%{op.inputs[i]}) has shape {list(old.shape)} on entry and {list(v.shape)} after the body; "
                        "pdx compiles a while loop with fixed shapes (pad the variable to its largest size)")
                out.append(v.astype(old.dtype))
            return tuple(out)

        final = jax.lax.while_loop(lambda values: jnp.reshape(values[0], ()).astype(bool), step, carry)
        return tuple(final[1:])

    def _need_blocks(self, op, n: int) -> None:
        if len(op.blocks) != n:
            raise ModelFormatError(f"{self.model_file}: op #{op.index} ({op.name}) needs {n} block(s), the "
                                   f"program gives it {len(op.blocks)}")


def trim_outputs(outputs) -> list:
    """Host-side numpy outputs, each `PaddedRows` trimmed to its real rows (Paddle Inference's arrays)."""
    return [o.to_numpy() if isinstance(o, PaddedRows) else o for o in outputs]
