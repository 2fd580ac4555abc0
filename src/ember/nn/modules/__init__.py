"""``ember.nn.modules``: the module paths PyTorch programs import from (``torch.nn.modules.*``).

``from ember.nn.modules.loss import _Loss``, ``from ember.nn.modules.batchnorm import _BatchNorm``,
``ember.nn.modules.utils._pair``: each submodule is a view of ``ember.nn`` holding the names that
PyTorch's submodule of that name holds (and that Ember has), registered in ``sys.modules`` so that
``import ember.nn.modules.conv`` works. The classes are Ember's own; nothing is duplicated.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

#: PyTorch's submodule -> the names it holds (names Ember lacks are skipped)
_SUBMODULES = {
    "module": "Module register_module_forward_pre_hook register_module_forward_hook _IncompatibleKeys "
    "_EXTRA_STATE_KEY_SUFFIX",
    "linear": "Identity Linear Bilinear LazyLinear",
    "conv": "_ConvNd Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d LazyConv1d LazyConv2d "
    "LazyConv3d LazyConvTranspose1d LazyConvTranspose2d LazyConvTranspose3d",
    "activation": "ReLU ReLU6 Sigmoid Tanh SiLU Mish Hardswish Hardsigmoid SELU Softsign LogSigmoid GELU "
    "LeakyReLU ELU CELU Hardtanh Softplus PReLU Softmax LogSoftmax GLU MultiheadAttention Threshold Softmin "
    "Tanhshrink Hardshrink RReLU Softmax2d Softshrink",
    "loss": "_Loss _WeightedLoss CrossEntropyLoss NLLLoss BCELoss BCEWithLogitsLoss MSELoss L1Loss SmoothL1Loss "
    "HuberLoss KLDivLoss CosineEmbeddingLoss MarginRankingLoss CTCLoss GaussianNLLLoss HingeEmbeddingLoss "
    "LinearCrossEntropyLoss MultiLabelMarginLoss MultiLabelSoftMarginLoss MultiMarginLoss NLLLoss2d "
    "PoissonNLLLoss SoftMarginLoss TripletMarginLoss TripletMarginWithDistanceLoss",
    "batchnorm": "_NormBase _BatchNorm BatchNorm1d BatchNorm2d BatchNorm3d SyncBatchNorm LazyBatchNorm1d "
    "LazyBatchNorm2d LazyBatchNorm3d",
    "instancenorm": "_InstanceNorm InstanceNorm1d InstanceNorm2d InstanceNorm3d LazyInstanceNorm1d "
    "LazyInstanceNorm2d LazyInstanceNorm3d",
    "normalization": "LayerNorm GroupNorm RMSNorm LocalResponseNorm CrossMapLRN2d",
    "dropout": "_DropoutNd Dropout Dropout1d Dropout2d Dropout3d AlphaDropout FeatureAlphaDropout",
    "sparse": "Embedding EmbeddingBag",
    "pooling": "_MaxPoolNd _AvgPoolNd MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d "
    "AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveAvgPool3d AdaptiveMaxPool3d "
    "FractionalMaxPool2d FractionalMaxPool3d LPPool1d LPPool2d LPPool3d MaxUnpool1d MaxUnpool2d MaxUnpool3d",
    "padding": "ZeroPad2d ConstantPad2d ReflectionPad2d ReplicationPad2d CircularPad1d CircularPad2d "
    "CircularPad3d ConstantPad1d ConstantPad3d ReflectionPad1d ReflectionPad3d ReplicationPad1d ReplicationPad3d "
    "ZeroPad1d ZeroPad3d",
    "pixelshuffle": "PixelShuffle PixelUnshuffle",
    "upsampling": "Upsample UpsamplingNearest2d UpsamplingBilinear2d",
    "flatten": "Flatten Unflatten",
    "container": "Sequential ModuleList ModuleDict ParameterList ParameterDict Container",
    "rnn": "RNNBase RNN LSTM GRU RNNCellBase RNNCell LSTMCell GRUCell",
    "transformer": "Transformer TransformerEncoder TransformerDecoder TransformerEncoderLayer TransformerDecoderLayer",
    "utils": "_single _pair _triple _quadruple _ntuple",
    "adaptive": "AdaptiveLogSoftmaxWithLoss",
    "channelshuffle": "ChannelShuffle",
    "distance": "CosineSimilarity PairwiseDistance",
    "fold": "Fold Unfold",
}

#: PyTorch's private base classes and renamed classes -> Ember's (module of ember.nn, name)
_RENAMED = {
    "_ConvNd": ("conv", "_ConvNd"), "_Loss": ("loss", "_Loss"), "_WeightedLoss": ("loss", "_Weighted"),
    "_NormBase": ("norm", "_BatchNorm"), "_BatchNorm": ("norm", "_BatchNorm"),
    "_InstanceNorm": ("norm", "_InstanceNorm"),
    "_DropoutNd": ("layers", "Dropout"), "_MaxPoolNd": ("layers", "_Pool"), "_AvgPoolNd": ("layers", "_AvgPool"),
    "ParameterList": ("container", "ParamList"),
    "ParameterDict": ("container", "ParamDict"),
    "register_module_forward_pre_hook": ("_module_hooks", "register_module_forward_pre_hook"),
    "register_module_forward_hook": ("_module_hooks", "register_module_forward_hook"),
    "_IncompatibleKeys": ("module", "IncompatibleKeys"),
    "_EXTRA_STATE_KEY_SUFFIX": ("_module_state", "_EXTRA"),
}  # fmt: skip


def _ntuple(n: int, name: str = "parse") -> Any:
    """PyTorch's ``_ntuple(n)``: a function turning a value or an iterable into an n-tuple."""

    def parse(x: Any) -> tuple[Any, ...]:
        if isinstance(x, (list, tuple)):
            return tuple(x)
        return (x,) * n

    parse.__name__ = name
    return parse


_UTILS = {"_single": _ntuple(1, "_single"), "_pair": _ntuple(2, "_pair"), "_triple": _ntuple(3, "_triple"),
          "_quadruple": _ntuple(4, "_quadruple"), "_ntuple": _ntuple}  # fmt: skip


def _lookup(name: str) -> Any:
    """The Ember object for one of PyTorch's names, or None (looked up when used: ember.nn may still be loading)."""
    if name in _UTILS:
        return _UTILS[name]
    if name in _RENAMED:
        mod, attr = _RENAMED[name]
        return getattr(importlib.import_module(f"ember.nn.{mod}"), attr, None)
    return getattr(importlib.import_module("ember.nn"), name, None)


class _View(types.ModuleType):
    """One of ``torch.nn.modules``' submodules: its names resolve to Ember's classes when read."""

    def __init__(self, name: str, names: list[str]) -> None:
        super().__init__(name, f"``torch.nn.modules.{name.rsplit('.', 1)[1]}``'s names, from ember.nn.")
        self._names = names

    def __getattr__(self, name: str) -> Any:
        if name == "__all__":
            return [n for n in self._names if not n.startswith("_") and _lookup(n) is not None]
        obj = _lookup(name) if name in self._names else None
        if obj is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        return obj


for _sub, _names in _SUBMODULES.items():
    sys.modules[f"{__name__}.{_sub}"] = globals()[_sub] = _View(f"{__name__}.{_sub}", _names.split())


def __getattr__(name: str) -> Any:  # ``ember.nn.modules.Linear``
    obj = _lookup(name)
    if obj is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return obj
