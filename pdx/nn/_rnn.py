"""Recurrent layers (Paddle's `paddle.nn` RNN family) on `lax.scan`.

Cells (`SimpleRNNCell`, `LSTMCell`, `GRUCell`) compute one time step;
`RNN` / `BiRNN` run a cell over a sequence; `SimpleRNN`, `LSTM`, `GRU` stack
layers of them the way Paddle's fused `rnn` op does. Every sequence runs as
one `lax.scan` over time, so a compiled step is traced once per padded shape
whatever the actual lengths (`sequence_length`) are.

Padding (`sequence_length`): a step past a sequence's length keeps the
previous state. The reverse direction flips the whole padded sequence, so it
meets the padding first (state unchanged) and then the valid steps last to
first: only the valid part is reversed. `SimpleRNN`/`LSTM`/`GRU` give zero
outputs at padded steps (Paddle's fused kernel); `RNN`/`BiRNN` output what the
cell returns there (Paddle's `paddle.nn.RNN` does the same).

Parameter names and shapes are Paddle's (`weight_ih [gates*hidden, input]`,
`weight_hh`, `bias_ih`, `bias_hh`, LSTM's `weight_ho [hidden, proj]`; gate
order i, f, g, o for LSTM and r, z, c for GRU), and so are the state-dict keys
of the multi-layer networks: both `weight_ih_l0` / `weight_hh_l1_reverse` and
the sublayer paths `0.cell.weight_ih` / `1.cell_bw.weight_hh`, which name the
same parameters, as in Paddle.
"""

from __future__ import annotations

import collections
import math
from functools import partial

import jax
import jax.numpy as jnp
from flax import nnx

import pdx.nn.functional as F
from pdx.nn import axes
from pdx._args import is_int
from pdx.nn._common import float_dtype, init_rng_state, layer_error, next_rng, value_of
from pdx.nn._container import LayerList
from pdx.nn._layer import Layer, ParamAttr, as_rngs
from pdx.nn.initializer import Constant, Uniform

__all__ = ["BiRNN", "GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNCellBase", "SimpleRNN", "SimpleRNNCell"]

_BIDIRECTIONAL = ("bidirect", "bidirectional")
_DIRECTIONS = ("forward",) + _BIDIRECTIONAL


# -- argument checks ---------------------------------------------------------------------------
def _positive(value, *, layer: str, name: str) -> int:
    if not is_int(value) or value <= 0:
        raise layer_error(layer, f"`{name}` must be a positive int; got {name}={value!r}")
    return int(value)


def _check_step_input(x, input_size: int, *, layer: str):
    x = jnp.asarray(x)
    if x.ndim != 2:
        raise layer_error(layer, f"`inputs` must be 2-D [batch_size, input_size={input_size}]; "
                                 f"got inputs.shape={tuple(x.shape)}")
    if x.shape[-1] != input_size:
        raise layer_error(layer, f"`inputs` has {x.shape[-1]} features but the cell was built with "
                                 f"input_size={input_size}; got inputs.shape={tuple(x.shape)}")
    return x


def _check_sequence(x, input_size, *, layer: str, time_major: bool):
    x = jnp.asarray(x)
    layout = "[time_steps, batch_size, input_size]" if time_major else "[batch_size, time_steps, input_size]"
    if x.ndim != 3:
        raise layer_error(layer, f"`inputs` must be 3-D {layout} (time_major={time_major}); "
                                 f"got inputs.shape={tuple(x.shape)}")
    if input_size is not None and x.shape[-1] != input_size:
        raise layer_error(layer, f"`inputs` has {x.shape[-1]} features but the layer was built with "
                                 f"input_size={input_size}; got inputs.shape={tuple(x.shape)}")
    return x


def _check_lengths(sequence_length, batch: int, *, layer: str):
    if sequence_length is None:
        return None
    lengths = jnp.asarray(sequence_length)
    if lengths.ndim != 1 or lengths.shape[0] != batch or not jnp.issubdtype(lengths.dtype, jnp.integer):
        raise layer_error(layer, f"`sequence_length` must be a 1-D integer tensor of batch_size={batch} "
                                 f"lengths; got shape {tuple(lengths.shape)}, dtype {lengths.dtype}")
    return lengths


# -- the scan ------------------------------------------------------------------------------------
def _keep_where(mask_t, new, old):
    """Per batch row: the new state where `mask_t` is True, the old one elsewhere."""
    def pick(n, o):
        m = mask_t.reshape(mask_t.shape + (1,) * (n.ndim - 1))
        return jnp.where(m, n, o).astype(o.dtype)
    return jax.tree.map(pick, new, old)


def _swap_batch_time(tree):
    return jax.tree.map(lambda a: jnp.swapaxes(a, 0, 1), tree)


def _scan(cell_fn, xs, states, mask, zero_padded):
    """`cell_fn(x_t, states) -> (outputs, new_states)` over the leading (time) axis of `xs`;
    where `mask` [T, B] is False the state is kept (and the output zeroed if `zero_padded`)."""
    carry_def = jax.tree.structure(states)

    def body(carry, sliced):
        x_t, mask_t = sliced
        out, new = cell_fn(x_t, carry)
        leaves = jax.tree.leaves(new)
        if len(leaves) == carry_def.num_leaves:  # states given as lists ([h, c], as Paddle takes) stay lists
            new = carry_def.unflatten(leaves)
        if mask_t is not None:
            new = _keep_where(mask_t, new, carry)
            if zero_padded:
                out = jax.tree.map(lambda o: jnp.where(mask_t.reshape(mask_t.shape + (1,) * (o.ndim - 1)),
                                                       o, jnp.zeros((), o.dtype)), out)
        else:
            new = jax.tree.map(lambda n, o: n.astype(o.dtype), new, carry)
        return new, out

    final, outs = jax.lax.scan(body, states, (xs, mask))
    return outs, final


@partial(jax.jit, static_argnames=("kind", "zero_padded"))
def _scan_builtin(kind, params, xs, states, mask, zero_padded):
    # Compiled once per (cell kind, shapes) and shared by both directions, both layouts, every
    # eager call and every network of the same sizes; pdx.jit inlines it into the caller's program.
    step = _STEPS[kind]
    return _scan(lambda x, h: step(params, x, h), xs, states, mask, zero_padded)


def run_cell(cell, inputs, states, sequence_length=None, *, time_major=False, is_reverse=False,
             zero_padded=False, **kwargs):
    """Run `cell` over the time axis of `inputs` with one `lax.scan`.

    Args:
      cell: a callable `(step_inputs, states, **kwargs) -> (outputs, new_states)`.
      inputs: a (nested structure of) [B, T, ...] arrays ([T, B, ...] if time_major).
      states: the initial states (a nested structure of [B, ...] arrays).
      sequence_length: None or [B] integer valid lengths.
      time_major: layout of inputs and outputs.
      is_reverse: run from the last step to the first (outputs come back in input order).
      zero_padded: zero the outputs of steps past a sequence's length.

    Returns:
      (outputs, final_states), outputs in the layout of `inputs`.
    """
    builtin = cell._builtin_step() if isinstance(cell, RNNCellBase) else None
    if builtin is not None and (kwargs or isinstance(inputs, (list, tuple, dict))):
        builtin = None
    if builtin is not None:
        inputs = _check_sequence(inputs, cell.input_size, layer=type(cell).__name__, time_major=time_major)
    xs = inputs if time_major else _swap_batch_time(inputs)
    mask = None
    if sequence_length is not None:
        steps = jax.tree.leaves(xs)[0].shape[0]
        mask = jnp.arange(steps)[:, None] < jnp.asarray(sequence_length)[None, :]  # (T, B)
    if is_reverse:  # the whole padded sequence flips: padding first, then the valid steps last to first
        xs = jax.tree.map(lambda a: jnp.flip(a, 0), xs)
        mask = None if mask is None else jnp.flip(mask, 0)
    if builtin is not None:
        kind, params = builtin
        outs, final = _scan_builtin(kind, params, xs, states, mask, zero_padded)
    else:
        outs, final = _scan(lambda x, h: cell(x, h, **kwargs), xs, states, mask, zero_padded)
    if is_reverse:
        outs = jax.tree.map(lambda a: jnp.flip(a, 0), outs)
    if not time_major:
        outs = _swap_batch_time(outs)
    return outs, final


# -- cells -------------------------------------------------------------------------------------------
def _is_shape(value) -> bool:
    return isinstance(value, (list, tuple)) and all(is_int(v) for v in value)


class RNNCellBase(Layer):
    """Base of the recurrent cells (Paddle's `nn.RNNCellBase`).

    A cell maps `(inputs [B, input_size], states)` to `(outputs, new_states)`;
    subclasses define `forward` and the `state_shape` property (a shape, or a
    nested structure of shapes, without the batch dim).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> cell = pdx.nn.GRUCell(3, 4)
      >>> cell.get_initial_states(jnp.ones((2, 3))).shape
      (2, 4)
    """

    def get_initial_states(self, batch_ref, shape=None, dtype=None, init_value=0.0, batch_dim_idx=0):
        """States filled with `init_value`, batch size taken from `batch_ref.shape[batch_dim_idx]`.

        Args:
          batch_ref: a (nested structure of) tensor(s); the first one gives the batch size.
          shape: a shape or nested structure of shapes (default `self.state_shape`); a
            leading -1 (the batch dim) is added where missing.
          dtype: one dtype or a structure like `shape` (default: the cell's `state_dtype`,
            else its parameter dtype).
          init_value: the fill value.
          batch_dim_idx: which dim of `batch_ref` is the batch.

        Returns:
          A tensor or a structure of tensors like `shape`.
        """
        ref = jax.tree.leaves(batch_ref)[0]
        batch = jnp.shape(ref)[batch_dim_idx]
        shapes = self.state_shape if shape is None else shape
        if dtype is None:
            try:
                dtype = self.state_dtype
            except NotImplementedError:
                dtype = self._dtype

        def build(shp, dt):
            if _is_shape(shp):
                dims = list(shp)
                dims = dims[1:] if dims and dims[0] == -1 else dims
                return jnp.full([batch] + dims, init_value, dtype=float_dtype(dt))
            if isinstance(dt, (list, tuple)):
                return type(shp)(build(s, d) for s, d in zip(shp, dt))
            return type(shp)(build(s, dt) for s in shp)

        return build(shapes, dtype)

    def _builtin_step(self):
        """(step kind, parameter arrays) for the compiled scan of the built-in cells; None for others."""
        return None

    @property
    def state_shape(self):
        """The state shape(s) without the batch dim; cells must define it."""
        raise NotImplementedError(f"{type(self).__name__} must define the `state_shape` property")

    @property
    def state_dtype(self):
        """The state dtype(s); optional (the parameter dtype when undefined)."""
        raise NotImplementedError(f"{type(self).__name__} does not define `state_dtype`")


def _cell_params(cell: Layer, gates: int, input_size: int, hidden_size: int, hh_cols: int, attrs, rngs):
    """weight_ih, weight_hh, bias_ih, bias_hh with Paddle's shapes and U(-1/sqrt(H), 1/sqrt(H)) init.

    An attr of False gives a frozen parameter (weights 1, biases 0), as Paddle does.
    """
    std = 1.0 / math.sqrt(hidden_size)
    rows = gates * hidden_size
    specs = (("weight_ih", (rows, input_size), False), ("weight_hh", (rows, hh_cols), False),
             ("bias_ih", (rows,), True), ("bias_hh", (rows,), True))
    for (name, shape, is_bias), attr in zip(specs, attrs):
        names = (axes.MLP,) if is_bias else (axes.MLP, axes.EMBED)
        if attr is False:
            frozen = ParamAttr(initializer=Constant(0.0 if is_bias else 1.0), trainable=False)
            param = cell.create_parameter(shape, frozen, is_bias=is_bias, axis_names=names, rngs=rngs)
        else:
            param = cell.create_parameter(shape, attr, is_bias=is_bias, default_initializer=Uniform(-std, std),
                                          axis_names=names, rngs=rngs)
        setattr(cell, name, param)


def _affine(x, weight, bias):
    """x @ weight.T + bias (Paddle stores recurrent weights as [out, in])."""
    return jnp.matmul(x, weight.T) + bias


def _simple_step(activation, params, x, h):
    w_ih, w_hh, b_ih, b_hh = params
    pre = _affine(x, w_ih, b_ih) + _affine(h, w_hh, b_hh)
    h = jnp.tanh(pre) if activation == "tanh" else jax.nn.relu(pre)
    return h, h


def _lstm_step(params, x, states):
    w_ih, w_hh, b_ih, b_hh, *w_ho = params
    h, c = states
    gates = _affine(x, w_ih, b_ih) + _affine(h, w_hh, b_hh)
    i, f, g, o = jnp.split(gates, 4, axis=-1)  # Paddle's gate order
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    h = jax.nn.sigmoid(o) * jnp.tanh(c)
    if w_ho:
        h = jnp.matmul(h, w_ho[0])
    return h, (h, c)


def _gru_step(params, x, h):
    w_ih, w_hh, b_ih, b_hh = params
    x_r, x_z, x_c = jnp.split(_affine(x, w_ih, b_ih), 3, axis=-1)
    h_r, h_z, h_c = jnp.split(_affine(h, w_hh, b_hh), 3, axis=-1)
    r = jax.nn.sigmoid(x_r + h_r)
    z = jax.nn.sigmoid(x_z + h_z)
    c = jnp.tanh(x_c + r * h_c)  # the reset gate applies after the matmul
    h = (h - c) * z + c
    return h, h


_STEPS = {"rnn_tanh": partial(_simple_step, "tanh"), "rnn_relu": partial(_simple_step, "relu"),
          "lstm": _lstm_step, "gru": _gru_step}


def _params(cell, names=("weight_ih", "weight_hh", "bias_ih", "bias_hh")) -> tuple:
    return tuple(value_of(getattr(cell, name)) for name in names)


class SimpleRNNCell(RNNCellBase):
    """Elman RNN cell `h = act(x W_ih^T + b_ih + h W_hh^T + b_hh)` (Paddle's `nn.SimpleRNNCell`).

    Args:
      input_size: features of each step's input.
      hidden_size: size of the hidden state.
      activation: "tanh" (default) or "relu".
      weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr: None, a `ParamAttr`
        or an initializer; False gives a frozen parameter (weight 1 / bias 0), as in Paddle.
      name: ignored.
      dtype: keyword-only parameter dtype.
      rngs: keyword-only seed / key / nnx.Rngs for the initializers.

    `forward(inputs, states=None)` -> `(h, h)`; inputs [B, input_size], states [B, hidden_size].

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> cell = pdx.nn.SimpleRNNCell(3, 4)
      >>> out, h = cell(jnp.ones((2, 3)))
      >>> out.shape, cell.weight_ih.shape
      ((2, 4), (4, 3))
    """

    def __init__(self, input_size, hidden_size, activation="tanh", weight_ih_attr=None, weight_hh_attr=None,
                 bias_ih_attr=None, bias_hh_attr=None, name=None, *, dtype=None, rngs=None):
        super().__init__(dtype=float_dtype(dtype))
        self.input_size = _positive(input_size, layer="SimpleRNNCell", name="input_size")
        self.hidden_size = _positive(hidden_size, layer="SimpleRNNCell", name="hidden_size")
        if activation not in ("tanh", "relu"):
            raise layer_error("SimpleRNNCell", f"`activation` must be 'tanh' or 'relu'; got activation={activation!r}")
        self.activation = activation
        _cell_params(self, 1, self.input_size, self.hidden_size, self.hidden_size,
                     (weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr), as_rngs(rngs))

    def forward(self, inputs, states=None):
        x = _check_step_input(inputs, self.input_size, layer="SimpleRNNCell")
        h = self.get_initial_states(x) if states is None else states
        return _simple_step(self.activation, _params(self), x, h)

    def _builtin_step(self):
        if type(self).forward is not SimpleRNNCell.forward:
            return None
        return f"rnn_{self.activation}", _params(self)

    @property
    def state_shape(self):
        return (self.hidden_size,)

    def extra_repr(self) -> str:
        act = "" if self.activation == "tanh" else f", activation={self.activation}"
        return f"{self.input_size}, {self.hidden_size}{act}"


class LSTMCell(RNNCellBase):
    """Long short-term memory cell (Paddle's `nn.LSTMCell`).

    Gates come from `x W_ih^T + b_ih + h W_hh^T + b_hh` split in Paddle's order
    i, f, g, o: `c = sigmoid(f) * c + sigmoid(i) * tanh(g)`, `h = sigmoid(o) * tanh(c)`,
    then `h = h @ weight_ho` when `proj_size > 0`.

    Args:
      input_size: features of each step's input.
      hidden_size: size of the cell state c.
      weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr: as in `SimpleRNNCell`
        (weight_hh_attr also initializes `weight_ho`).
      proj_size: 0, or the size (< hidden_size) h is projected to.
      name: ignored.
      dtype: keyword-only parameter dtype.
      rngs: keyword-only seed / key / nnx.Rngs for the initializers.

    `forward(inputs, states=None)` -> `(h, (h, c))`; states is `(h [B, proj_size or
    hidden_size], c [B, hidden_size])`.

    Unlike Paddle 3.3, `state_shape` puts the projected size on h (Paddle lists it
    on c, so its default states do not fit a projected cell).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> cell = pdx.nn.LSTMCell(3, 4)
      >>> out, (h, c) = cell(jnp.ones((2, 3)))
      >>> out.shape, c.shape, cell.weight_ih.shape
      ((2, 4), (2, 4), (16, 3))
    """

    def __init__(self, input_size, hidden_size, weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None,
                 bias_hh_attr=None, proj_size=0, name=None, *, dtype=None, rngs=None):
        super().__init__(dtype=float_dtype(dtype))
        self.input_size = _positive(input_size, layer="LSTMCell", name="input_size")
        self.hidden_size = _positive(hidden_size, layer="LSTMCell", name="hidden_size")
        if not is_int(proj_size) or not 0 <= proj_size < self.hidden_size:
            raise layer_error("LSTMCell", f"`proj_size` must be an int in [0, hidden_size={self.hidden_size}); "
                                          f"got proj_size={proj_size!r}")
        self.proj_size = int(proj_size)
        rngs = as_rngs(rngs)
        _cell_params(self, 4, self.input_size, self.hidden_size, self.proj_size or self.hidden_size,
                     (weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr), rngs)
        if self.proj_size > 0:
            std = 1.0 / math.sqrt(self.hidden_size)
            self.weight_ho = self.create_parameter((self.hidden_size, self.proj_size), weight_hh_attr,
                                                   default_initializer=Uniform(-std, std),
                                                   axis_names=(axes.MLP, axes.EMBED), rngs=rngs)

    def forward(self, inputs, states=None):
        x = _check_step_input(inputs, self.input_size, layer="LSTMCell")
        h, c = self.get_initial_states(x) if states is None else states
        return _lstm_step(self._all_params(), x, (h, c))

    def _all_params(self) -> tuple:
        return _params(self) + ((value_of(self.weight_ho),) if self.proj_size > 0 else ())

    def _builtin_step(self):
        if type(self).forward is not LSTMCell.forward:
            return None
        return "lstm", self._all_params()

    @property
    def state_shape(self):
        return ((self.proj_size or self.hidden_size,), (self.hidden_size,))

    def extra_repr(self) -> str:
        proj = f", proj_size={self.proj_size}" if self.proj_size else ""
        return f"{self.input_size}, {self.hidden_size}{proj}"


class GRUCell(RNNCellBase):
    """Gated recurrent unit cell (Paddle's `nn.GRUCell`).

    With `x W_ih^T + b_ih` split into (x_r, x_z, x_c) and `h W_hh^T + b_hh` into
    (h_r, h_z, h_c): `r = sigmoid(x_r + h_r)`, `z = sigmoid(x_z + h_z)`,
    `c = tanh(x_c + r * h_c)`, `h = z * h + (1 - z) * c` (the reset gate applies
    after the matmul, as in Paddle and cuDNN).

    Args:
      input_size: features of each step's input.
      hidden_size: size of the hidden state.
      weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr: as in `SimpleRNNCell`.
      name: ignored.
      dtype: keyword-only parameter dtype.
      rngs: keyword-only seed / key / nnx.Rngs for the initializers.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> cell = pdx.nn.GRUCell(3, 4)
      >>> out, h = cell(jnp.ones((2, 3)))
      >>> out.shape, cell.weight_hh.shape
      ((2, 4), (12, 4))
    """

    def __init__(self, input_size, hidden_size, weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None,
                 bias_hh_attr=None, name=None, *, dtype=None, rngs=None):
        super().__init__(dtype=float_dtype(dtype))
        self.input_size = _positive(input_size, layer="GRUCell", name="input_size")
        self.hidden_size = _positive(hidden_size, layer="GRUCell", name="hidden_size")
        _cell_params(self, 3, self.input_size, self.hidden_size, self.hidden_size,
                     (weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr), as_rngs(rngs))

    def forward(self, inputs, states=None):
        x = _check_step_input(inputs, self.input_size, layer="GRUCell")
        h = self.get_initial_states(x) if states is None else states
        return _gru_step(_params(self), x, h)

    def _builtin_step(self):
        if type(self).forward is not GRUCell.forward:
            return None
        return "gru", _params(self)

    @property
    def state_shape(self):
        return (self.hidden_size,)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}"


# -- sequence wrappers -----------------------------------------------------------------------------
class RNN(Layer):
    """Run a cell over a sequence (Paddle's `nn.RNN`), as one `lax.scan`.

    Args:
      cell: an `RNNCellBase` (or any Layer with `forward(inputs, states)` ->
        `(outputs, new_states)` and `get_initial_states`).
      is_reverse: run from the last step to the first.
      time_major: inputs are [time_steps, batch, ...] instead of [batch, time_steps, ...].
      rngs: keyword-only, unused (the cell holds the parameters).

    `forward(inputs, initial_states=None, sequence_length=None, **kwargs)` ->
    `(outputs, final_states)`; kwargs reach the cell at every step. Steps past
    `sequence_length` keep the state; their outputs are what the cell returns
    there, as in Paddle. The cell runs inside `lax.scan`: it must not change
    its own Variables (dropout keys, buffers) in `forward`.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> rnn = pdx.nn.RNN(pdx.nn.SimpleRNNCell(3, 4))
      >>> out, h = rnn(jnp.ones((2, 5, 3)))
      >>> out.shape, h.shape
      ((2, 5, 4), (2, 4))
    """

    def __init__(self, cell, is_reverse=False, time_major=False, *, rngs=None):
        super().__init__()
        if not isinstance(cell, Layer):
            raise TypeError(f"pdx.nn.RNN: `cell` must be a Layer such as pdx.nn.LSTMCell; got {type(cell).__name__}")
        self.cell = cell
        self.is_reverse = bool(is_reverse)
        self.time_major = bool(time_major)

    def forward(self, inputs, initial_states=None, sequence_length=None, **kwargs):
        batch = jnp.shape(jax.tree.leaves(inputs)[0])[1 if self.time_major else 0]
        if initial_states is None:
            initial_states = self.cell.get_initial_states(inputs, batch_dim_idx=1 if self.time_major else 0)
        lengths = _check_lengths(sequence_length, batch, layer="RNN")
        return run_cell(self.cell, inputs, initial_states, lengths, time_major=self.time_major,
                        is_reverse=self.is_reverse, **kwargs)

    def extra_repr(self) -> str:
        return f"is_reverse={self.is_reverse}, time_major={self.time_major}"


class BiRNN(Layer):
    """A forward and a backward cell over one sequence, outputs concatenated (Paddle's `nn.BiRNN`).

    Args:
      cell_fw: the cell run first to last.
      cell_bw: the cell run last to first (only over the valid steps when
        `sequence_length` is given).
      time_major: inputs are [time_steps, batch, ...].
      rngs: keyword-only, unused (the cells hold the parameters).

    `forward(inputs, initial_states=None, sequence_length=None, **kwargs)` ->
    `(outputs [..., fw + bw features], (states_fw, states_bw))`.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> rnn = pdx.nn.BiRNN(pdx.nn.GRUCell(3, 4), pdx.nn.GRUCell(3, 4))
      >>> out, (h_fw, h_bw) = rnn(jnp.ones((2, 5, 3)))
      >>> out.shape, h_bw.shape
      ((2, 5, 8), (2, 4))
    """

    def __init__(self, cell_fw, cell_bw, time_major=False, *, rngs=None):
        super().__init__()
        for name, cell in (("cell_fw", cell_fw), ("cell_bw", cell_bw)):
            if not isinstance(cell, Layer):
                raise TypeError(f"pdx.nn.BiRNN: `{name}` must be a Layer such as pdx.nn.LSTMCell; "
                                f"got {type(cell).__name__}")
        fw_in, bw_in = getattr(cell_fw, "input_size", None), getattr(cell_bw, "input_size", None)
        if fw_in != bw_in:
            raise layer_error("BiRNN", f"cell_fw.input_size={fw_in} and cell_bw.input_size={bw_in} must be equal")
        self.cell_fw = cell_fw
        self.cell_bw = cell_bw
        self.time_major = bool(time_major)

    def forward(self, inputs, initial_states=None, sequence_length=None, **kwargs):
        batch_dim = 1 if self.time_major else 0
        batch = jnp.shape(jax.tree.leaves(inputs)[0])[batch_dim]
        if initial_states is None:
            states_fw = self.cell_fw.get_initial_states(inputs, batch_dim_idx=batch_dim)
            states_bw = self.cell_bw.get_initial_states(inputs, batch_dim_idx=batch_dim)
        else:
            if not isinstance(initial_states, (list, tuple)) or len(initial_states) != 2:
                raise layer_error("BiRNN", "`initial_states` must be a pair (states_fw, states_bw); got "
                                           f"{type(initial_states).__name__}")
            states_fw, states_bw = initial_states
        lengths = _check_lengths(sequence_length, batch, layer="BiRNN")
        out_fw, st_fw = run_cell(self.cell_fw, inputs, states_fw, lengths, time_major=self.time_major, **kwargs)
        out_bw, st_bw = run_cell(self.cell_bw, inputs, states_bw, lengths, time_major=self.time_major,
                                 is_reverse=True, **kwargs)
        outputs = jax.tree.map(lambda a, b: jnp.concatenate([a, b], axis=-1), out_fw, out_bw)
        return outputs, (st_fw, st_bw)

    def extra_repr(self) -> str:
        return f"time_major={self.time_major}"


# -- multi-layer networks ------------------------------------------------------------------------------
_CELLS = {"LSTM": LSTMCell, "GRU": GRUCell, "RNN_TANH": SimpleRNNCell, "RNN_RELU": SimpleRNNCell}


class RNNBase(LayerList):
    """Shared body of SimpleRNN, LSTM and GRU (Paddle's `RNNBase`): a LayerList of
    `RNN` / `BiRNN` layers, with every parameter also an attribute named
    `weight_ih_l{k}[_reverse]`, `weight_hh_l{k}...`, `bias_ih_l{k}...`, `bias_hh_l{k}...`.
    """

    def __init__(self, mode, input_size, hidden_size, num_layers=1, direction="forward", time_major=False,
                 dropout=0.0, weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None,
                 proj_size=0, *, dtype=None, rngs=None):
        super().__init__()
        kind = {"RNN_TANH": "SimpleRNN", "RNN_RELU": "SimpleRNN"}.get(mode, mode)
        self.mode = mode
        self.input_size = _positive(input_size, layer=kind, name="input_size")
        self.hidden_size = _positive(hidden_size, layer=kind, name="hidden_size")
        self.num_layers = _positive(num_layers, layer=kind, name="num_layers")
        if direction not in _DIRECTIONS:
            raise layer_error(kind, f"`direction` must be one of {list(_DIRECTIONS)}; got direction={direction!r}")
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout <= 1:
            raise layer_error(kind, f"`dropout` must be a float in [0, 1]; got dropout={dropout!r}")
        if not is_int(proj_size) or not 0 <= proj_size < self.hidden_size or (proj_size and mode != "LSTM"):
            raise layer_error(kind, f"`proj_size` must be an int in [0, hidden_size={self.hidden_size}) "
                                    f"(LSTM only); got proj_size={proj_size!r}")
        self.direction = direction
        self.num_directions = 2 if direction in _BIDIRECTIONAL else 1
        self.time_major = bool(time_major)
        self.dropout = float(dropout)
        self.proj_size = int(proj_size)
        self.state_components = 2 if mode == "LSTM" else 1
        rngs = as_rngs(rngs)
        if self.dropout > 0:
            self.rng = init_rng_state(rngs, op=kind)

        kwargs = dict(weight_ih_attr=weight_ih_attr, weight_hh_attr=weight_hh_attr, bias_ih_attr=bias_ih_attr,
                      bias_hh_attr=bias_hh_attr, dtype=dtype, rngs=rngs)
        if mode == "LSTM":
            kwargs["proj_size"] = self.proj_size
        elif mode != "GRU":
            kwargs["activation"] = "relu" if mode == "RNN_RELU" else "tanh"
        cell_cls = _CELLS[mode]
        out_size = self.proj_size or self.hidden_size
        for layer in range(self.num_layers):
            size = self.input_size if layer == 0 else out_size * self.num_directions
            if self.num_directions == 1:
                self.append(RNN(cell_cls(size, self.hidden_size, **kwargs), False, self.time_major))
            else:
                self.append(BiRNN(cell_cls(size, self.hidden_size, **kwargs),
                                  cell_cls(size, self.hidden_size, **kwargs), self.time_major))
        # Paddle names no flat parameter for a bias given attr=False (it stays frozen at 0).
        self._unnamed = tuple(name for name, attr in (("bias_ih", bias_ih_attr), ("bias_hh", bias_hh_attr))
                              if attr is False)
        for name, param in self._flat_names():
            setattr(self, name, param)
        self.could_use_cudnn = False

    def _cells(self) -> list:
        """The cells in Paddle's state order: layer by layer, forward before backward."""
        cells = []
        for layer in self:
            cells.extend([layer.cell] if isinstance(layer, RNN) else [layer.cell_fw, layer.cell_bw])
        return cells

    def _flat_names(self):
        for index, cell in enumerate(self._cells()):
            layer, direction = divmod(index, self.num_directions)
            suffix = "_reverse" if direction else ""
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                if name in self._unnamed:
                    continue
                yield f"{name}_l{layer}{suffix}", getattr(cell, name)

    def flatten_parameters(self) -> None:
        """No-op kept for ported code (Paddle packs weights for cuDNN here)."""

    # -- state dict: flat names first, then the sublayer paths of the same parameters (Paddle's layout)
    def _aliases(self, prefix: str = "") -> dict:
        out = {}
        for name, child in self.named_children():
            for path, var in child._named_variables((nnx.Param,)):
                out[f"{prefix}{name}.{path}"] = var
        return out

    def state_dict(self, include_sublayers: bool = True, structured_name_prefix: str = "") -> dict:
        """Parameters by Paddle's names: `weight_ih_l0`, ... then `0.cell.weight_ih`, ...

        Returns:
          An OrderedDict name -> jax.Array; a parameter appears under both names, as in Paddle.
        """
        out = super().state_dict(False, structured_name_prefix)
        if include_sublayers:
            for path, var in self._aliases(structured_name_prefix).items():
                out[path] = var.get_value()
        return out

    def set_state_dict(self, state_dict, use_structured_name: bool = True):
        """Load a state dict keyed by flat names, sublayer paths or both (Paddle's save has both).

        Returns:
          (missing_keys, unexpected_keys) over the flat names.
        """
        if not hasattr(state_dict, "items"):
            raise TypeError(f"set_state_dict needs a mapping name -> tensor; got {type(state_dict).__name__}")
        flat = dict(self._named_variables((nnx.Param,)))
        by_id = {id(var): name for name, var in flat.items()}
        aliases = {path: by_id[id(var)] for path, var in self._aliases().items()}
        merged, unexpected = collections.OrderedDict(), []
        for key, value in state_dict.items():
            if key in flat:
                merged.setdefault(key, value)
            elif key in aliases:
                merged[aliases[key]] = value  # the sublayer path is exact where Paddle's flat names shift
            else:
                unexpected.append(key)
        missing, _ = super().set_state_dict(merged, use_structured_name)
        return missing, unexpected

    load_dict = set_state_dict
    set_dict = set_state_dict

    # -- running ------------------------------------------------------------------------------------------
    def _split_states(self, initial_states, batch: int, dtype):
        count = self.num_layers * self.num_directions
        dims = ((self.proj_size or self.hidden_size), self.hidden_size)
        kind = type(self).__name__
        if initial_states is None:
            parts = tuple(jnp.zeros((count, batch, dims[i]), dtype) for i in range(self.state_components))
        else:
            if self.state_components == 2:
                if not isinstance(initial_states, (list, tuple)) or len(initial_states) != 2:
                    raise layer_error(kind, "`initial_states` must be a pair (h, c), each "
                                            f"[num_layers * num_directions={count}, batch_size, hidden]")
                parts = tuple(jnp.asarray(s) for s in initial_states)
            else:
                if isinstance(initial_states, (list, tuple)) and len(initial_states) == 1:
                    initial_states = initial_states[0]
                parts = (jnp.asarray(initial_states),)
            for i, s in enumerate(parts):
                if tuple(s.shape) != (count, batch, dims[i]):
                    raise layer_error(kind, f"`initial_states` must have shape [num_layers * num_directions, "
                                            f"batch_size, size] = {[count, batch, dims[i]]}; got {list(s.shape)}")
        if self.state_components == 2:
            return [(parts[0][i], parts[1][i]) for i in range(count)]
        return [parts[0][i] for i in range(count)]

    def forward(self, inputs, initial_states=None, sequence_length=None):
        kind = type(self).__name__
        x = _check_sequence(inputs, self.input_size, layer=kind, time_major=self.time_major)
        batch = x.shape[1 if self.time_major else 0]
        lengths = _check_lengths(sequence_length, batch, layer=kind)
        states = self._split_states(initial_states, batch, x.dtype)
        finals = []
        for index, layer in enumerate(self):
            if index > 0 and self.dropout > 0 and self.training:
                x = F.dropout(x, p=self.dropout, training=True, mode="upscale_in_train", key=next_rng(self.rng))
            if isinstance(layer, RNN):
                x, final = run_cell(layer.cell, x, states[index], lengths, time_major=self.time_major,
                                    zero_padded=True)
                finals.append(final)
            else:
                pair = self.num_directions * index
                out_fw, fin_fw = run_cell(layer.cell_fw, x, states[pair], lengths, time_major=self.time_major,
                                          zero_padded=True)
                out_bw, fin_bw = run_cell(layer.cell_bw, x, states[pair + 1], lengths,
                                          time_major=self.time_major, is_reverse=True, zero_padded=True)
                x = jnp.concatenate([out_fw, out_bw], axis=-1)
                finals.extend([fin_fw, fin_bw])
        if self.state_components == 2:
            final_states = (jnp.stack([h for h, _ in finals]), jnp.stack([c for _, c in finals]))
        else:
            final_states = jnp.stack(finals)
        return x, final_states

    def extra_repr(self) -> str:
        out = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            out += f", num_layers={self.num_layers}"
        if self.time_major:
            out += f", time_major={self.time_major}"
        if self.dropout != 0:
            out += f", dropout={self.dropout}"
        return out


_NETWORK_ARGS = """
    Args:
      input_size: features of the first layer's input.
      hidden_size: hidden size of every layer.
      num_layers: number of stacked layers.
      direction: "forward", or "bidirect" / "bidirectional" (outputs of both
        directions concatenated).
      time_major: inputs/outputs are [time_steps, batch, ...] instead of [batch, time_steps, ...].
      dropout: drop probability on the input of every layer but the first
        (training mode only; the layer keeps its own key, as `nn.Dropout` does).
"""


class SimpleRNN(RNNBase):
    __doc__ = """Multi-layer Elman RNN (Paddle's `nn.SimpleRNN`), one `lax.scan` per layer and direction.
""" + _NETWORK_ARGS + """      activation: "tanh" or "relu".
      weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr: attributes of every cell's parameters.
      name: ignored.
      dtype: keyword-only parameter dtype.
      rngs: keyword-only seed / key / nnx.Rngs (initializers and the dropout key).

    `forward(inputs, initial_states=None, sequence_length=None)` -> `(outputs,
    final_states)`: outputs [B, T, num_directions * hidden_size] (zero past each
    sequence's length), final_states [num_layers * num_directions, B, hidden_size]
    (directions interleaved: forward at even indices).

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> rnn = pdx.nn.SimpleRNN(3, 4, num_layers=2)
      >>> out, h = rnn(jnp.ones((2, 5, 3)))
      >>> out.shape, h.shape
      ((2, 5, 4), (2, 2, 4))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward", time_major=False, dropout=0.0,
                 activation="tanh", weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None,
                 name=None, *, dtype=None, rngs=None):
        if activation not in ("tanh", "relu"):
            raise layer_error("SimpleRNN", f"`activation` must be 'tanh' or 'relu'; got activation={activation!r}")
        self.activation = activation
        super().__init__("RNN_TANH" if activation == "tanh" else "RNN_RELU", input_size, hidden_size, num_layers,
                         direction, time_major, dropout, weight_ih_attr, weight_hh_attr, bias_ih_attr,
                         bias_hh_attr, 0, dtype=dtype, rngs=rngs)


class LSTM(RNNBase):
    __doc__ = """Multi-layer LSTM (Paddle's `nn.LSTM`), one `lax.scan` per layer and direction.
""" + _NETWORK_ARGS + """      weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr: attributes of every cell's parameters.
      proj_size: 0, or the size (< hidden_size) each layer's h is projected to.
      name: ignored.
      dtype: keyword-only parameter dtype.
      rngs: keyword-only seed / key / nnx.Rngs (initializers and the dropout key).

    `forward(inputs, initial_states=None, sequence_length=None)` -> `(outputs,
    (h, c))`: outputs [B, T, num_directions * (proj_size or hidden_size)] (zero
    past each sequence's length, also with proj_size, where Paddle's per-cell path
    returns the cell's outputs); h and c [num_layers * num_directions, B, size].

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> lstm = pdx.nn.LSTM(3, 4, direction="bidirect")
      >>> out, (h, c) = lstm(jnp.ones((2, 5, 3)), sequence_length=jnp.array([5, 2]))
      >>> out.shape, h.shape, list(lstm.state_dict())[:2]
      ((2, 5, 8), (2, 2, 4), ['weight_ih_l0', 'weight_hh_l0'])
    """

    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward", time_major=False, dropout=0.0,
                 weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None, proj_size=0,
                 name=None, *, dtype=None, rngs=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, direction, time_major, dropout,
                         weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr, proj_size,
                         dtype=dtype, rngs=rngs)


class GRU(RNNBase):
    __doc__ = """Multi-layer GRU (Paddle's `nn.GRU`), one `lax.scan` per layer and direction.
""" + _NETWORK_ARGS + """      weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr: attributes of every cell's parameters.
      name: ignored.
      dtype: keyword-only parameter dtype.
      rngs: keyword-only seed / key / nnx.Rngs (initializers and the dropout key).

    `forward(inputs, initial_states=None, sequence_length=None)` -> `(outputs,
    final_states)` with SimpleRNN's shapes.

    Example:
      >>> import pdx, jax.numpy as jnp
      >>> gru = pdx.nn.GRU(3, 4, time_major=True)
      >>> out, h = gru(jnp.ones((5, 2, 3)))
      >>> out.shape, h.shape
      ((5, 2, 4), (1, 2, 4))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward", time_major=False, dropout=0.0,
                 weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None, name=None, *,
                 dtype=None, rngs=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, direction, time_major, dropout,
                         weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr, 0, dtype=dtype, rngs=rngs)
