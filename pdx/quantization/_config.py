"""QuantConfig: which quanter or observer each layer's activations and weights get."""

from __future__ import annotations

import re

from pdx.quantization._base import QuanterFactory

__all__ = ["QuantConfig", "SingleLayerConfig"]


class SingleLayerConfig:
    """The activation and weight quanter factories of one layer (either may be None)."""

    def __init__(self, activation: QuanterFactory | None, weight: QuanterFactory | None):
        for name, value in (("activation", activation), ("weight", weight)):
            if value is not None and not isinstance(value, QuanterFactory):
                raise TypeError(f"{name}={value!r} must be a quanter/observer factory such as "
                                f"FakeQuanterWithAbsMaxObserver() or AbsmaxObserver(), or None")
        self._activation, self._weight = activation, weight

    @property
    def activation(self):
        return self._activation

    @property
    def weight(self):
        return self._weight

    def __repr__(self):
        return f"activation: {self._activation}\nweight: {self._weight}"


def _as_list(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


class QuantConfig:
    """Paddle's QuantConfig: a global quanter pair plus overrides by layer object, name and type.

    Priority: `add_layer_config` > `add_name_config` > `add_type_config` > the
    global `activation=`/`weight=`. Names are the dotted names of
    `model.named_sublayers()` (e.g. "features.0"); a name ending in "*" or
    containing regex characters matches as a regular expression.

    Args:
      activation: factory for the inputs of each quantized layer (None: weight-only).
      weight: factory for each quantized layer's weight.

    Example:
      >>> import pdx
      >>> from pdx.quantization import QuantConfig
      >>> from pdx.quantization.quanters import FakeQuanterWithAbsMaxObserver
      >>> q = FakeQuanterWithAbsMaxObserver()
      >>> config = QuantConfig(activation=None, weight=None)
      >>> config.add_type_config(pdx.nn.Linear, activation=q, weight=q)
    """

    def __init__(self, activation: QuanterFactory | None = None, weight: QuanterFactory | None = None):
        both_none = activation is None and weight is None
        self._global_config = None if both_none else SingleLayerConfig(activation, weight)
        self._layer2config: dict[int, SingleLayerConfig] = {}
        self._name2config: dict[str, SingleLayerConfig] = {}
        self._type2config: dict[type, SingleLayerConfig] = {}
        self._qat_layer_mapping: dict[type, type] = {}
        self._customized_leaves: list[type] = []

    # -- overrides --------------------------------------------------------------
    def add_layer_config(self, layer, activation=None, weight=None):
        """Quanters for these layer objects (a layer or a list)."""
        for one in _as_list(layer):
            self._layer2config[id(one)] = SingleLayerConfig(activation, weight)

    def add_name_config(self, layer_name, activation=None, weight=None):
        """Quanters for the sublayers with these dotted names (a name or a list)."""
        for name in _as_list(layer_name):
            if not isinstance(name, str):
                raise TypeError(f"add_name_config: layer_name={name!r} must be a str (a dotted sublayer name)")
            self._name2config[name] = SingleLayerConfig(activation, weight)

    def add_type_config(self, layer_type, activation=None, weight=None):
        """Quanters for every layer of these types (a type or a list)."""
        for kind in _as_list(layer_type):
            if not isinstance(kind, type):
                raise TypeError(f"add_type_config: layer_type={kind!r} must be a Layer class")
            if self._target_for(kind) is None:
                raise ValueError(self._unsupported(kind.__name__))
            self._type2config[kind] = SingleLayerConfig(activation, weight)

    def add_qat_layer_mapping(self, source: type, target: type):
        """Quantize layers of type `source` by `target(layer, single_layer_config)`."""
        if not isinstance(source, type) or not callable(target):
            raise TypeError("add_qat_layer_mapping(source, target) takes a Layer class and a quantized-layer class")
        self._qat_layer_mapping[source] = target

    def add_customized_leaf(self, layer_type: type):
        """Treat `layer_type` as a leaf: its sublayers are not quantized one by one."""
        self._customized_leaves.append(layer_type)

    @property
    def customized_leaves(self):
        return list(self._customized_leaves)

    @property
    def global_config(self) -> SingleLayerConfig | None:
        return self._global_config

    @property
    def qat_layer_mappings(self) -> dict:
        from pdx.quantization._layers import default_mapping

        return {**default_mapping(), **self._qat_layer_mapping}

    # -- resolution ----------------------------------------------------------------
    def _target_for(self, kind: type):
        mapping = self.qat_layer_mappings
        for source in kind.__mro__:
            if source in mapping:
                return mapping[source]
        return None

    def _unsupported(self, what: str) -> str:
        names = sorted({k.__name__ for k in self.qat_layer_mappings})
        return (f"no quantized layer for {what}; supported layer types: {names} "
                f"(add one with QuantConfig.add_qat_layer_mapping(source, target))")

    def _explicit(self, name: str, layer) -> SingleLayerConfig | None:
        if id(layer) in self._layer2config:
            return self._layer2config[id(layer)]
        for pattern, config in self._name2config.items():
            if name == pattern or (any(c in pattern for c in "*^$[]()|+?\\")
                                   and re.fullmatch(pattern.replace(".*", "\0").replace("*", ".*")
                                                    .replace("\0", ".*"), name)):
                return config
        return None

    def config_for(self, name: str, layer) -> SingleLayerConfig | None:
        """The config that applies to sublayer `name`, or None when it is not quantized.

        A layer named explicitly (by object or name) whose type has no quantized
        form raises a ValueError listing the supported types.
        """
        explicit = self._explicit(name, layer)
        supported = self._target_for(type(layer)) is not None
        if explicit is not None:
            if not supported:
                raise ValueError(self._unsupported(f"layer {name!r} of type {type(layer).__name__}"))
            return explicit
        if not supported:
            return None
        for source in type(layer).__mro__:
            if source in self._type2config:
                return self._type2config[source]
        return self._global_config

    def details(self) -> str:
        return repr(self)

    def __repr__(self):
        return (f"QuantConfig(global={self._global_config!r}, types={list(t.__name__ for t in self._type2config)}, "
                f"names={list(self._name2config)}, layers={len(self._layer2config)})")
