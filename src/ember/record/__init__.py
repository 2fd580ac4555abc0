"""Records, recorders, precision settings, checkpoints and PyTorch weights (spec: Serialization)."""

from ._atomic import atomic_write
from ._checkpoint import Checkpointer
from ._precision import PRECISIONS, PrecisionSettings
from ._record import FORMAT_VERSION, Item, Record
from ._recorder import (
    BytesRecorder,
    JsonGzRecorder,
    NamedMpkGzRecorder,
    NamedMpkRecorder,
    Recorder,
    RecordError,
    SafetensorsRecorder,
    load,
    save,
)
from ._state import record_to_state, state_to_record
from ._torch import load_torch_state_dict, load_weights, save_torch_state_dict

__all__ = [
    "FORMAT_VERSION", "PRECISIONS", "BytesRecorder", "Checkpointer", "Item", "JsonGzRecorder", "NamedMpkGzRecorder",
    "NamedMpkRecorder", "PrecisionSettings", "Record", "RecordError", "Recorder", "SafetensorsRecorder",
    "atomic_write", "load", "load_torch_state_dict", "load_weights", "record_to_state", "save",
    "save_torch_state_dict", "state_to_record",
]  # fmt: skip
