"""``ember.onnx``: run and fine-tune ONNX models in Ember; export Ember models to ONNX.

>>> model = ember.onnx.load("resnet18.onnx")       # an ember.nn.Module; initializers are Params
>>> logits = model(ember.randn(1, 3, 224, 224))
>>> ember.onnx.export(net, x, "net.onnx", input_names=["x"], dynamic_axes={"x": {0: "batch"}})

The loaded model trains, saves as a record and moves with ``.to`` like any Module. Operators run as Ember
ops (on any backend); control flow (``If``/``Loop``/``Scan``) runs eagerly; ONNX functions are expanded.
Needs the ``onnx`` package (``pip install 'ember[onnx]'``); nothing in a file is executed.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from ._export import ExportError, export
from ._graph import OnnxModule, UnsupportedOperatorError, newest_opset
from ._ops import supported
from ._proto import INSTALL_HINT, OnnxFormatError, read_model
from ._trace import tracing as _tracing

__all__ = [
    "INSTALL_HINT", "ExportError", "OnnxFormatError", "OnnxModule", "UnsupportedOperatorError", "export",
    "is_in_onnx_export", "load", "newest_opset",
    "operator_counts", "read_model", "supported",
]  # fmt: skip


def is_in_onnx_export() -> bool:
    """Whether ``export`` is recording the model's operators now (on this or another thread), as PyTorch's."""
    return _tracing()


def load(source: str | os.PathLike[str] | bytes, *, base_dir: str | os.PathLike[str] | None = None) -> OnnxModule:
    """Load an ONNX model (a path, or its bytes) as an Ember ``Module`` in eval mode.

    External data files are read from ``base_dir`` (default: beside the model). Raises ``OnnxFormatError``
    for a file that is not a readable ONNX model and ``UnsupportedOperatorError`` naming the first node
    whose operator (or opset) Ember cannot run.
    """
    model, label = read_model(source, base_dir)
    m = OnnxModule(model, label)
    m.eval()
    return m


def operator_counts(model: Any) -> dict[str, int]:
    """How many nodes of each operator type the main graph holds (``domain:type`` outside the default
    domain), most frequent first."""
    names = [f"{n.domain}:{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type for n in model.graph.node]
    return dict(Counter(names).most_common())
