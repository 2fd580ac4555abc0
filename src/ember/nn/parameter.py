"""``ember.nn.parameter``: ``Param`` (PyTorch's ``Parameter``) and ``Buffer``; they live on the tensor floor
(``ember/_param.py``)."""

from .._param import Buffer, Param, Parameter, new_param_id

__all__ = ["Param", "Parameter", "Buffer", "new_param_id"]
