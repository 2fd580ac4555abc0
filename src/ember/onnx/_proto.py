"""Reading ONNX files with the ``onnx`` package: the model proto, external data, tensors and attributes.

This module knows the file format only (through ``onnx``'s protobuf classes; no parser of our own).
Nothing read is executed: tensors are copied into arrays, attributes become Python values, and a
file that is not ONNX, is truncated, or names external data that is missing is refused with its name.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import EmberError

__all__ = ["OnnxFormatError", "attribute_value", "read_model", "require_onnx", "sparse_array", "tensor_array"]

#: what to install when the ``onnx`` package is missing
INSTALL_HINT = "ember.onnx needs the onnx package: pip install 'ember[onnx]' (onnx, and onnxruntime for the checks)"


class OnnxFormatError(EmberError, ValueError):
    """A file that is not a readable ONNX model: not protobuf, truncated, inconsistent, missing data."""


def require_onnx() -> Any:
    """The ``onnx`` module, or an ImportError that says in one line what to install."""
    try:
        import onnx
    except ImportError as e:
        raise ImportError(INSTALL_HINT) from e
    return onnx


def read_model(
    source: str | os.PathLike[str] | bytes, base_dir: str | os.PathLike[str] | None = None
) -> tuple[Any, str]:
    """Parse ``source`` (a path, or the model's bytes) into a ``ModelProto``, external data loaded.

    Returns ``(model, label)``; ``label`` names the source in messages. External-data files are looked up
    in ``base_dir`` (default: the model file's folder) and must stay inside it.
    """
    onnx = require_onnx()
    from google.protobuf.message import DecodeError

    if isinstance(source, (bytes, bytearray, memoryview)):
        data, label = bytes(source), "<bytes>"
        folder = Path(base_dir) if base_dir is not None else None
    else:
        path = Path(source)
        label = str(path)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise FileNotFoundError(f"ONNX model {path} not found") from None
        folder = Path(base_dir) if base_dir is not None else path.parent
    if not data:
        raise OnnxFormatError(f"{label}: empty file, not an ONNX model")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise OnnxFormatError(f"{label}: not an ONNX model, or truncated ({len(data)} bytes): {e}") from None
    if not model.HasField("graph") or not model.opset_import or model.ir_version <= 0:
        missing = "graph" if not model.HasField("graph") else "opset_import" if not model.opset_import else "ir_version"
        raise OnnxFormatError(f"{label}: not an ONNX model, or truncated ({len(data)} bytes): it has no {missing}")
    _load_external(model, folder, label)
    return model, label


def _external_tensors(model: Any) -> list[Any]:
    from onnx.external_data_helper import _get_all_tensors, uses_external_data

    return [t for t in _get_all_tensors(model) if uses_external_data(t)]


def _load_external(model: Any, folder: Path | None, label: str) -> None:
    """Check every external-data reference (file present, inside ``folder``, long enough), then load them."""
    tensors = _external_tensors(model)
    if not tensors:
        return
    if folder is None:
        raise OnnxFormatError(f"{label}: the model keeps tensors in external files ({tensors[0].name!r}); "
                              "load it from its path, or pass base_dir=")  # fmt: skip
    root = folder.resolve()
    for t in tensors:
        info = {e.key: e.value for e in t.external_data}
        loc = info.get("location", "")
        target = (root / loc).resolve()
        if not loc or Path(loc).is_absolute() or root not in (target, *target.parents):
            raise OnnxFormatError(f"{label}: tensor {t.name!r} names external file {loc!r}, which is not a "
                                  f"file inside the model's folder {root}")  # fmt: skip
        if not target.is_file():
            raise OnnxFormatError(f"{label}: external data file {loc!r} of tensor {t.name!r} not found in {root}")
        size = target.stat().st_size
        offset, length = int(info.get("offset", 0) or 0), info.get("length")
        end = offset + int(length) if length else size
        if offset > size or end > size:
            raise OnnxFormatError(f"{label}: external data file {loc!r} holds {size} bytes; tensor {t.name!r} "
                                  f"needs bytes {offset}..{end} (truncated?)")  # fmt: skip
    from onnx.checker import ValidationError
    from onnx.external_data_helper import load_external_data_for_model

    try:
        load_external_data_for_model(model, str(root))
    except (OSError, ValueError, ValidationError) as e:
        raise OnnxFormatError(f"{label}: cannot load external data: {e}") from None


def tensor_array(t: Any, where: str = "") -> Any:
    """A ``TensorProto`` as a NumPy array (copied; float8/int4 and friends widened by ``onnx``'s helper)."""
    from onnx import numpy_helper

    try:
        return numpy_helper.to_array(t)
    except (ValueError, TypeError, KeyError) as e:
        raise OnnxFormatError(f"{where}tensor {t.name!r}: cannot be read: {e}") from None


def attribute_value(attr: Any, where: str = "") -> Any:
    """An ``AttributeProto`` as a Python value: numbers, ``str`` (decoded), lists, arrays; graphs stay protos."""
    from onnx import AttributeProto, helper

    if attr.type == AttributeProto.TENSOR:
        return tensor_array(attr.t, where)
    if attr.type == AttributeProto.TENSORS:
        return [tensor_array(t, where) for t in attr.tensors]
    if attr.type == AttributeProto.SPARSE_TENSOR:
        return sparse_array(attr.sparse_tensor, where)
    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list):
        return [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
    return value


def sparse_array(sp: Any, where: str) -> np.ndarray:
    """A ``SparseTensorProto`` made dense (indices flat, or one row of coordinates per value)."""
    values = tensor_array(sp.values, where)
    indices = tensor_array(sp.indices, where)
    dense = np.zeros(tuple(sp.dims), dtype=values.dtype)
    flat = indices if indices.ndim == 1 else np.ravel_multi_index(tuple(indices.T), dense.shape)
    dense.reshape(-1)[flat] = values
    return dense
