"""Softmax approximations over large label sets: hierarchical sigmoid and adaptive softmax."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pdx.nn.functional._args import array, compiled, error, float_array, is_int

__all__ = ["adaptive_log_softmax_with_loss", "hsigmoid_loss"]


def _int_labels(label, *, op, name="label"):
    label = array(label, op=op, name=name)
    if not jnp.issubdtype(label.dtype, jnp.integer):
        raise TypeError(f"pdx.nn.functional.{op}: `{name}` must be an integer tensor; got {name}.dtype={label.dtype}")
    return label


# ----------------------------------------------------------------------------- hierarchical sigmoid

def _default_paths(label, num_classes):
    """Paddle's default complete binary tree: node indices, branch bits and validity, each [N, L].

    Class c is leaf code c + num_classes; bit j of the code picks the branch at
    the node (code >> (j + 1)) - 1, for the code's bit length - 1 steps.
    """
    depth = int(num_classes - 1).bit_length()
    code = label.astype(jnp.int32)[:, None] + num_classes
    j = jnp.arange(depth)[None, :]
    nodes = (code >> (j + 1)) - 1
    bits = (code >> j) & 1
    length = jnp.floor(jnp.log2(code.astype(jnp.float32))).astype(jnp.int32)
    return nodes, bits, j < length


def hsigmoid_loss(input, label, num_classes, weight, bias=None, path_table=None, path_code=None, is_sparse=False,
                  name=None):
    """Hierarchical sigmoid loss (Paddle's `F.hsigmoid_loss`).

    Each class is a leaf of a binary tree; the loss is the sum of the binary
    logistic losses of the decisions on its root-to-leaf path. As in Paddle,
    every unused slot of the path (shorter paths, or -1 padding of a custom
    path_table) adds log(2), and node scores are clipped to [-40, 40].

    Args:
      input: [N, D] features.
      label: [N] or [N, 1] int classes in [0, num_classes).
      num_classes: number of classes (>= 2).
      weight: [num_classes - 1, D] node weights ([num_nodes, D] for a custom tree).
      bias: optional [num_classes - 1, 1] node biases.
      path_table: optional [N, L] int node ids of each sample's path, padded with -1 (custom tree).
      path_code: optional [N, L] int branch bits (0/1) of each path (custom tree).
      is_sparse: accepted for compatibility (gradients are dense in JAX).
      name: ignored (Paddle compatibility).

    Returns:
      [N, 1] per-sample losses.

    Example:
      >>> F.hsigmoid_loss(jnp.ones((2, 3)), jnp.array([0, 3]), 4, jnp.zeros((3, 3))).shape
      (2, 1)
    """
    return _hsigmoid_loss(input, label, num_classes, weight, bias, path_table, path_code)


@compiled("input", "label", "weight", "bias", "path_table", "path_code")
def _hsigmoid_loss(input, label, num_classes, weight, bias, path_table, path_code):
    op = "hsigmoid_loss"
    x = float_array(input, op=op, name="input")
    if x.ndim != 2:
        raise error(op, f"input must be [N, D]; got input.shape={tuple(x.shape)}")
    label = _int_labels(label, op=op)
    if label.shape not in ((x.shape[0],), (x.shape[0], 1)):
        raise error(op, f"label must be [N] or [N, 1] with N={x.shape[0]}; got label.shape={tuple(label.shape)}")
    label = label.reshape(-1)
    if not is_int(num_classes) or num_classes < 2:
        raise error(op, f"num_classes must be an int >= 2; got num_classes={num_classes!r}")
    w = array(weight, op=op, name="weight").astype(x.dtype)
    if w.ndim != 2 or w.shape[1] != x.shape[1]:
        raise error(op, f"weight must be [num_nodes, D={x.shape[1]}]; got weight.shape={tuple(w.shape)}")
    if (path_table is None) != (path_code is None):
        raise error(op, "path_table and path_code must be given together (custom tree) or both left None")
    if path_table is None:
        if w.shape[0] < num_classes - 1:
            raise error(op, f"the default tree needs weight.shape[0] >= num_classes - 1 = {num_classes - 1}; got "
                            f"weight.shape={tuple(w.shape)}")
        nodes, bits, valid = _default_paths(label, num_classes)
    else:
        nodes = _int_labels(path_table, op=op, name="path_table")
        bits = _int_labels(path_code, op=op, name="path_code")
        if nodes.ndim != 2 or nodes.shape[0] != x.shape[0] or bits.shape != nodes.shape:
            raise error(op, f"path_table and path_code must both be [N={x.shape[0]}, L]; got "
                            f"path_table.shape={tuple(nodes.shape)}, path_code.shape={tuple(bits.shape)}")
        # A path ends at its first negative node id.
        valid = jnp.cumprod((nodes >= 0).astype(jnp.int32), axis=1).astype(bool)
    safe = jnp.where(valid, nodes, 0).astype(jnp.int32)
    score = jnp.einsum("nd,nld->nl", x, w[safe])
    if bias is not None:
        b = array(bias, op=op, name="bias").astype(x.dtype).reshape(-1)
        if b.shape[0] != w.shape[0]:
            raise error(op, f"bias must have one entry per weight row ({w.shape[0]}); got "
                            f"bias.shape={tuple(np.shape(bias))}")
        score = score + b[safe]
    score = jnp.clip(score, -40.0, 40.0)
    per_node = jax.nn.softplus(score) - bits.astype(x.dtype) * score
    per_node = jnp.where(valid, per_node, jnp.log(2.0).astype(x.dtype))
    return jnp.sum(per_node, axis=1, keepdims=True)


# ----------------------------------------------------------------------------- adaptive softmax

def _check_cutoffs(cutoffs, *, op):
    if not isinstance(cutoffs, (list, tuple)) or not cutoffs or not all(is_int(c) for c in cutoffs):
        raise error(op, f"cutoffs must be a non-empty list of ints ending with n_classes; got cutoffs={cutoffs!r}")
    cutoffs = [int(c) for c in cutoffs]
    if cutoffs != sorted(set(cutoffs)) or cutoffs[0] <= 0:
        raise error(op, f"cutoffs must be unique, positive and increasing; got cutoffs={cutoffs}")
    return cutoffs


def adaptive_full_log_prob(input, head_weight, tail_weights, cutoffs, head_bias=None):
    """log p(class | input) for every class, [N, n_classes], of an adaptive softmax.

    Args:
      input: [N, in_features].
      head_weight: [in_features, shortlist + n_clusters].
      tail_weights: per cluster a pair ([in_features, hidden], [hidden, cluster_size]).
      cutoffs: class boundaries ending with n_classes, e.g. [10, 50, 100].
      head_bias: optional [shortlist + n_clusters].

    Returns:
      [N, n_classes] log-probabilities.
    """
    head = input @ head_weight
    if head_bias is not None:
        head = head + head_bias
    head_logp = jax.nn.log_softmax(head, axis=-1)
    shortlist = cutoffs[0]
    parts = [head_logp[:, :shortlist]]
    for i, (w_in, w_out) in enumerate(tail_weights):
        cluster_logp = jax.nn.log_softmax((input @ w_in) @ w_out, axis=-1)
        parts.append(cluster_logp + head_logp[:, shortlist + i, None])
    return jnp.concatenate(parts, axis=1)


def adaptive_log_softmax_with_loss(input, label, head_weight, tail_weights, cutoffs, head_bias=None, name=None):
    """Adaptive softmax (Grave et al.): log-probability of each label and the mean loss.

    Frequent classes (below cutoffs[0]) are scored by the head; every other
    class by its cluster's two-matrix projection plus the head's cluster score.
    pdx evaluates every cluster for every row (fixed shapes, jit-friendly)
    where Paddle gathers the rows of each cluster.

    Args:
      input: [N, in_features] (or [in_features] with a 0-D label).
      label: [N] (or 0-D) int classes in [0, n_classes).
      head_weight: [in_features, cutoffs[0] + n_clusters].
      tail_weights: per cluster [W_proj [in_features, hidden], W_out [hidden, cluster_size]].
      cutoffs: class boundaries ending with n_classes (the layer's `cutoffs`).
      head_bias: optional [cutoffs[0] + n_clusters].
      name: ignored (Paddle compatibility).

    Returns:
      (output, loss): output [N] (or 0-D) holds log p(label), loss = mean(-output).

    Example:
      >>> out, loss = F.adaptive_log_softmax_with_loss(jnp.ones((2, 4)), jnp.array([0, 5]), jnp.zeros((4, 3)),
      ...                                              [[jnp.zeros((4, 2)), jnp.zeros((2, 4))]], [2, 6])
      >>> out.shape, round(float(loss), 4)
      ((2,), 1.7918)
    """
    op = "adaptive_log_softmax_with_loss"
    cutoffs = _check_cutoffs(list(cutoffs), op=op)
    if not isinstance(label, jax.core.Tracer):
        values = np.asarray(label)
        if values.size and jnp.issubdtype(values.dtype, jnp.integer) and (values.min() < 0
                                                                          or values.max() >= cutoffs[-1]):
            raise error(op, f"label values must be in [0, n_classes - 1 = {cutoffs[-1] - 1}]; got values in "
                            f"[{values.min()}, {values.max()}]")
    tails = [tuple(pair) for pair in tail_weights]
    return _adaptive(input, label, head_weight, tails, tuple(cutoffs), head_bias)


@compiled("input", "label", "head_weight", "tail_weights", "head_bias")
def _adaptive(input, label, head_weight, tail_weights, cutoffs, head_bias):
    op = "adaptive_log_softmax_with_loss"
    x = float_array(input, op=op, name="input")
    label = _int_labels(label, op=op)
    if label.ndim == 0:
        if x.ndim != 1:
            raise error(op, f"a 0-D label needs a 1-D input; got input.shape={tuple(x.shape)}")
        out, loss = _adaptive(x[None], label[None], head_weight, tail_weights, cutoffs, head_bias)
        return out[0], loss
    if label.ndim != 1:
        raise error(op, f"label must be 0-D or 1-D (multi-label is not supported); got "
                        f"label.shape={tuple(label.shape)}")
    if x.ndim != 2 or x.shape[0] != label.shape[0]:
        raise error(op, f"a 1-D label needs input [N={label.shape[0]}, in_features]; got input.shape={tuple(x.shape)}")
    head_weight = array(head_weight, op=op, name="head_weight").astype(x.dtype)
    n_clusters = len(cutoffs) - 1
    if head_weight.shape != (x.shape[1], cutoffs[0] + n_clusters):
        raise error(op, f"head_weight must be [in_features, cutoffs[0] + n_clusters] = "
                        f"{[x.shape[1], cutoffs[0] + n_clusters]}; got head_weight.shape={tuple(head_weight.shape)}")
    if len(tail_weights) != n_clusters:
        raise error(op, f"tail_weights must hold {n_clusters} [proj, out] pairs (one per cluster); got "
                        f"{len(tail_weights)}")
    tails = []
    for i, pair in enumerate(tail_weights):
        w_in, w_out = (array(w, op=op, name=f"tail_weights[{i}]").astype(x.dtype) for w in pair)
        size = cutoffs[i + 1] - cutoffs[i]
        if w_in.shape[0] != x.shape[1] or w_out.shape != (w_in.shape[1], size):
            raise error(op, f"tail_weights[{i}] must be ([{x.shape[1]}, hidden], [hidden, {size}]); got "
                            f"{tuple(w_in.shape)}, {tuple(w_out.shape)}")
        tails.append((w_in, w_out))
    bias = None if head_bias is None else array(head_bias, op=op, name="head_bias").astype(x.dtype)
    logp = adaptive_full_log_prob(x, head_weight, tails, cutoffs, bias)
    safe = jnp.clip(label, 0, cutoffs[-1] - 1).astype(jnp.int32)
    out = jnp.take_along_axis(logp, safe[:, None], axis=1)[:, 0]
    return out, jnp.mean(-out)
