"""``ember.version`` (PyTorch's ``torch.version``): the version, and which GPU toolkits this build targets.

Ember is pure Python: it is built for no GPU toolkit (``cuda``/``hip``/``rocm``/``xpu`` are None, as in a CPU
build of PyTorch); ``ember.cuda`` runs on whichever CUDA the installed torch or CuPy brings.
"""

from ._version import __version__

__all__ = ["__version__", "cuda", "debug", "git_version", "hip", "rocm", "xpu"]

cuda: str | None = None
hip: str | None = None
rocm: str | None = None
xpu: str | None = None
debug = False
git_version = "Unknown"
