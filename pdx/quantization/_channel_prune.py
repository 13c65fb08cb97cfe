"""Structured channel pruning: remove whole filters of a convolution (or Linear outputs) and resize
every layer that carries or consumes those channels, so the pruned model is really smaller.

A `ChannelGroup` names one producer (Conv with groups=1, or Linear), the followers that carry its
channels (BatchNorm, depthwise convs with groups == channels) and the consumers whose inputs shrink
(Conv with groups=1, or Linear; a Linear after Flatten drops the channel's H*W rows). `channel_groups`
finds them in pdx's ResNet blocks and inside `nn.Sequential` chains; residual connections are never
pruned across (their channels must match the shortcut).
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from pdx import nn

__all__ = ["ChannelGroup", "ChannelPruner", "channel_groups", "sensitivity"]

_CONVS = (nn.Conv1D, nn.Conv2D, nn.Conv3D)
_NORMS = (nn.BatchNorm1D, nn.BatchNorm2D, nn.BatchNorm3D, nn.BatchNorm)
_PASS = (nn.ReLU, nn.ReLU6, nn.LeakyReLU, nn.GELU, nn.Sigmoid, nn.Tanh, nn.Swish, nn.Hardswish, nn.Dropout,
         nn.MaxPool1D, nn.MaxPool2D, nn.MaxPool3D, nn.AvgPool1D, nn.AvgPool2D, nn.AvgPool3D, nn.Identity)


@dataclasses.dataclass(frozen=True)
class ChannelGroup:
    """Layers (dotted names) that share one channel dimension."""

    producer: str
    followers: tuple = ()
    consumers: tuple = ()


def _is_dense_conv(layer) -> bool:
    return isinstance(layer, _CONVS) and layer._groups == 1


def _is_depthwise(layer) -> bool:
    return isinstance(layer, _CONVS) and layer._groups == layer._in_channels == layer._out_channels


def _leaves(seq, prefix, expanded):
    """A Sequential's children with nested Sequentials (e.g. ConvBNReLU) expanded, as (dotted name, layer)."""
    for name, layer in seq.named_children():
        full = f"{prefix}.{name}" if prefix else name
        if isinstance(layer, nn.Sequential):
            expanded.add(full)
            yield from _leaves(layer, full, expanded)
        else:
            yield full, layer


def _chain_groups(seq, prefix, expanded):
    groups, items = [], list(_leaves(seq, prefix, expanded))
    for i, (name, layer) in enumerate(items):
        if not (_is_dense_conv(layer) or isinstance(layer, nn.Linear)):
            continue
        followers, consumers = [], []
        for full, other in items[i + 1:]:
            if isinstance(other, _NORMS) or _is_depthwise(other):
                followers.append(full)
            elif isinstance(other, (*_PASS, nn.Flatten)):
                continue
            elif _is_dense_conv(other) or isinstance(other, nn.Linear):
                consumers.append(full)
                break
            else:
                break
        if consumers:
            groups.append(ChannelGroup(name, tuple(followers), tuple(consumers)))
    return groups


def channel_groups(model) -> list[ChannelGroup]:
    """The prunable channel groups of `model`: ResNet blocks' inner convolutions and Sequential chains.

    Example:
      >>> import pdx
      >>> net = pdx.nn.Sequential(pdx.nn.Conv2D(1, 4, 3), pdx.nn.BatchNorm2D(4), pdx.nn.ReLU(), pdx.nn.Conv2D(4, 2, 1))
      >>> channel_groups(net)
      [ChannelGroup(producer='0', followers=('1',), consumers=('3',))]
    """
    groups, inside = [], set()
    for prefix, layer in model.named_sublayers(include_self=True):
        if isinstance(layer, nn.Sequential):
            if prefix not in inside:          # a nested Sequential is part of its parent's chain
                groups += _chain_groups(layer, prefix, inside)
            continue
        inner = [("conv1", "bn1", "conv2"), ("conv2", "bn2", "conv3")]
        for producer, norm, consumer in inner:
            p, b, c = (getattr(layer, n, None) for n in (producer, norm, consumer))
            if _is_dense_conv(p) and isinstance(b, _NORMS) and _is_dense_conv(c):
                join = (lambda n: f"{prefix}.{n}" if prefix else n)
                groups.append(ChannelGroup(join(producer), (join(norm),), (join(consumer),)))
    return groups


def _scores(weight, axis: int, criterion: str):
    w = np.moveaxis(np.asarray(weight, np.float64), axis, 0).reshape(weight.shape[axis], -1)
    if criterion == "l1":
        return np.abs(w).sum(1)
    if criterion == "l2":
        return np.sqrt((w ** 2).sum(1))
    if criterion == "fpgm":   # filters near the geometric median are the most replaceable
        return np.sqrt(((w[:, None, :] - w[None, :, :]) ** 2).sum(-1)).sum(1)
    raise ValueError(f"criterion={criterion!r} must be 'l1', 'l2' or 'fpgm'")


def _slice(var, keep, axis, repeat: int = 1):
    value = var.get_value()
    index = keep if repeat == 1 else (keep[:, None] * repeat + np.arange(repeat)[None, :]).reshape(-1)
    var.set_value(jnp.take(value, jnp.asarray(index), axis=axis))


class ChannelPruner:
    """Prune whole channels by filter importance (L1, L2 norm or FPGM) and shrink the layers that use them.

    Args:
      model: a pdx Layer (pruned in place).
      criterion: "l1", "l2" or "fpgm".
      groups: the ChannelGroups to prune (default: `channel_groups(model)`).

    Example:
      >>> import pdx
      >>> net = pdx.nn.Sequential(pdx.nn.Conv2D(1, 8, 3), pdx.nn.ReLU(), pdx.nn.Conv2D(8, 2, 1))
      >>> ChannelPruner(net).prune(0.5)
      {'0': 4}
      >>> net[0].weight.shape, net[2].weight.shape
      ((4, 1, 3, 3), (2, 4, 1, 1))
    """

    def __init__(self, model, criterion: str = "l1", groups=None):
        self.model, self.criterion = model, criterion
        self.groups = list(channel_groups(model) if groups is None else groups)
        self._layers = dict(model.named_sublayers())
        for g in self.groups:
            for name in (g.producer, *g.followers, *g.consumers):
                if name not in self._layers:
                    raise ValueError(f"ChannelGroup names {name!r}, which is not a sublayer of "
                                     f"{type(model).__name__}; names: {sorted(self._layers)[:20]}...")
        _scores(np.ones((2, 2)), 0, criterion)

    def prune(self, ratios) -> dict:
        """Remove `ratio` of each group's channels (a float for all, or {producer name: ratio}).

        Returns:
          {producer name: channels kept}.
        """
        kept = {}
        for g in self.groups:
            ratio = ratios.get(g.producer) if isinstance(ratios, dict) else ratios
            if ratio is None:
                continue
            if not 0.0 <= ratio < 1.0:
                raise ValueError(f"prune ratio for {g.producer!r} is {ratio!r}; it must lie in [0, 1)")
            kept[g.producer] = self._prune_group(g, ratio)
        return kept

    def _prune_group(self, g: ChannelGroup, ratio: float) -> int:
        producer = self._layers[g.producer]
        axis = 1 if isinstance(producer, nn.Linear) else 0
        channels = producer.weight.shape[axis]
        n_keep = max(1, channels - int(round(channels * ratio)))
        keep = np.sort(np.argsort(-_scores(producer.weight.get_value(), axis, self.criterion), kind="stable")[:n_keep])
        _slice(producer.weight, keep, axis)
        if producer.bias is not None:
            _slice(producer.bias, keep, 0)
        self._set_width(producer, out=n_keep)
        for name in g.followers:
            layer = self._layers[name]
            for var in (layer.weight, layer.bias, getattr(layer, "_mean", None), getattr(layer, "_variance", None)):
                if var is not None:
                    _slice(var, keep, 0)
            if isinstance(layer, _NORMS):
                layer._num_features = n_keep
            else:
                self._set_width(layer, out=n_keep, inp=n_keep, groups=n_keep)
        for name in g.consumers:
            layer = self._layers[name]
            if isinstance(layer, nn.Linear):
                rows = layer.weight.shape[0]
                if rows % channels:
                    raise ValueError(f"{name!r}: {rows} input features are not a multiple of the {channels} "
                                     f"channels of {g.producer!r}; give this group explicitly")
                _slice(layer.weight, keep, 0, repeat=rows // channels)   # NCHW flatten: channel c -> rows c*HW..
            else:
                _slice(layer.weight, keep, 1)
                self._set_width(layer, inp=n_keep)
        return n_keep

    @staticmethod
    def _set_width(layer, out=None, inp=None, groups=None):
        if isinstance(layer, _CONVS):
            layer._out_channels = out if out is not None else layer._out_channels
            layer._in_channels = inp if inp is not None else layer._in_channels
            layer._groups = groups if groups is not None else layer._groups


def sensitivity(model, eval_fn, ratios=(0.1, 0.3, 0.5, 0.7), criterion: str = "l1", groups=None) -> dict:
    """Accuracy (or any metric `eval_fn(model)` returns) after pruning each group alone at each ratio.

    The model is restored after every trial. Returns {producer: {ratio: metric}} and prints a table.
    """
    import copy

    base = eval_fn(model)
    groups = list(channel_groups(model) if groups is None else groups)
    result = {}
    for g in groups:
        result[g.producer] = {}
        for r in ratios:
            trial = copy.deepcopy(model)
            ChannelPruner(trial, criterion, [g]).prune(r)
            result[g.producer][r] = float(eval_fn(trial))
    header = "layer".ljust(24) + "".join(f"{r:>8.2f}" for r in ratios)
    lines = [f"sensitivity (metric unpruned: {base:.4f})", header]
    lines += [g.ljust(24) + "".join(f"{v:>8.4f}" for v in row.values()) for g, row in result.items()]
    print("\n".join(lines))
    return result
