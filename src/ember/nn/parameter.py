"""``ember.nn.parameter``: ``Param`` (PyTorch's ``Parameter``) and ``Buffer``, which live on the tensor floor
(``ember/_param.py``), and the lazy modules' placeholders ``UninitializedParameter``/``UninitializedBuffer``."""

from .._param import Buffer, Param, Parameter, new_param_id
from ._uninitialized import UninitializedBuffer, UninitializedParameter, is_lazy

__all__ = ["Param", "Parameter", "Buffer", "UninitializedBuffer", "UninitializedParameter", "is_lazy", "new_param_id"]
