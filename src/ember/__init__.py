"""Ember: tensors with reverse-mode autodiff over pluggable backends, and the tools to train models."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import (
    _memory,  # first: tunes the process's malloc (opt out: EMBER_MALLOC_TUNING=0)
    _torch_alias,
    accelerator,
    autograd,
    backends,
    cuda,
)
from ._control_flow import cond, while_loop
from ._creation import (
    Generator,
    arange,
    as_tensor,
    default_generator,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    get_rng_state,
    initial_seed,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    seed,
    set_rng_state,
    tensor,
    to_dlpack,
    zeros,
    zeros_like,
)
from ._determinism import (
    are_deterministic_algorithms_enabled,
    is_deterministic_algorithms_warn_only_enabled,
    use_deterministic_algorithms,
)
from ._device import device, get_default_device, set_default_device
from ._dtype import (
    DType,
    bfloat16,
    bool_,
    channels_last,
    channels_last_3d,
    complex64,
    complex128,
    contiguous_format,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float8_e8m0fnu,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    memory_format,
    preserve_format,
    promote_types,
    set_default_dtype,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ._legacy import (
    BFloat16Tensor,
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
    set_default_tensor_type,
)
from ._storage import TypedStorage, UntypedStorage
from ._tensor import Tensor
from ._threads import get_num_interop_threads, get_num_threads, set_num_interop_threads, set_num_threads
from ._torch_extras import *  # noqa: F403 - more of PyTorch's names: lu, frombuffer, strided, set_warn_always ...
from ._torch_extras import __all__ as _extras_all
from ._torch_names import *  # noqa: F403 - PyTorch's top-level names served by what Ember has: finfo, pi, clone
from ._torch_names import __all__ as _names_all
from ._version import __version__
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .backends.cuda import get_float32_matmul_precision, set_float32_matmul_precision
from .ops import *  # noqa: F403 - the operator functions: ember.exp, ember.matmul, ...
from .ops import __all__ as _ops_all

_SUBMODULES = frozenset(
    {
        "_C",  # PyTorch's core: only the names libraries call (``_C.py``)
        "_tensor_str",  # PyTorch's print options module (``printoptions``)
        "data",
        "distributed",
        "func",
        "fx",
        "models",
        "nn",
        "onnx",
        "optim",
        "pnnx",
        "quasirandom",
        "random",
        "record",
        "testing",
        "train",
        "types",
        "version",
    }
)

if not TYPE_CHECKING:  # hidden from mypy, which would otherwise accept any ``ember.<typo>``

    def __getattr__(name: str) -> object:
        """``ember.models``, ``ember.pnnx``, ... after a plain ``import ember`` (imported on first use), and
        PyTorch's top-level functionals (``ember.conv2d``: ``nn/functional/_toplevel.py``). ``ember.torch`` is the
        module itself, as PyTorch's ``torch.torch`` is (kornia annotates with ``torch.torch.Tensor``)."""
        import importlib

        if name == "torch":
            import sys

            return sys.modules[__name__]
        if name in _SUBMODULES:
            return importlib.import_module(f"{__name__}.{name}")
        fn = None if name[0] == "_" else importlib.import_module(f"{__name__}.nn.functional._toplevel").NAMES.get(name)
        if fn is not None:
            return fn
        raise AttributeError(f"module 'ember' has no attribute {name!r}")


bool = bool_
float = float32
double = float64
half = float16
cfloat = complex64
cdouble = complex128
long = int64
int = int32
short = int16
dtype = DType  # PyTorch's name for the type of dtypes (``isinstance(x, torch.dtype)``)

__all__ = [
    "BFloat16Tensor",
    "BoolTensor",
    "ByteTensor",
    "CharTensor",
    "DoubleTensor",
    "FloatTensor",
    "HalfTensor",
    "IntTensor",
    "LongTensor",
    "ShortTensor",
    "cond",
    "set_default_tensor_type",
    "get_float32_matmul_precision",
    "get_num_interop_threads",
    "get_num_threads",
    "load",
    "masked",
    "multiprocessing",
    "save",
    "serialization",
    "set_float32_matmul_precision",
    "set_num_interop_threads",
    "set_num_threads",
    "utils",
    "while_loop",
    "DType",
    "channels_last",
    "channels_last_3d",
    "contiguous_format",
    "memory_format",
    "preserve_format",
    "accelerator",
    "cuda",
    "Generator",
    "Tensor",
    "TypedStorage",
    "UntypedStorage",
    "arange",
    "as_tensor",
    "autograd",
    "backends",
    "bfloat16",
    "bool_",
    "default_generator",
    "device",
    "get_default_device",
    "set_default_device",
    "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled",
    "use_deterministic_algorithms",
    "amp",
    "autocast",
    "cpu",
    "get_autocast_dtype",
    "is_autocast_enabled",
    "GradScaler",
    "as_torch",
    "empty",
    "empty_like",
    "enable_grad",
    "eye",
    "float16",
    "float32",
    "float64",
    "uint16",
    "uint32",
    "uint64",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "complex64",
    "complex128",
    "cfloat",
    "cdouble",
    "from_dlpack",
    "from_numpy",
    "full",
    "full_like",
    "get_default_dtype",
    "get_rng_state",
    "inference_mode",
    "initial_seed",
    "int8",
    "int16",
    "int32",
    "int64",
    "is_grad_enabled",
    "linspace",
    "manual_seed",
    "no_grad",
    "ones",
    "ones_like",
    "promote_types",
    "rand",
    "rand_like",
    "randint",
    "randint_like",
    "randn",
    "randn_like",
    "randperm",
    "seed",
    "set_default_dtype",
    "set_grad_enabled",
    "set_rng_state",
    "tensor",
    "to_dlpack",
    "uint8",
    "zeros",
    "zeros_like",
    "__version__",
    "nn",
    "record",
    "optim",
    "data",
    "train",
    "Config",
    "compile",
    "CaptureError",
    "distributions",
    "fft",
    "linalg",
    "signal",
    "special",
    "sparse",
    "sparse_coo_tensor",
    "spmm",
    *_ops_all,
    *_names_all,
    *_extras_all,
]

from . import nn  # noqa: E402, I001  (the API layer, imported last: it builds on everything above)
from . import data, distributions, fft, linalg, optim, record, signal, sparse, special, train  # noqa: E402
from . import masked, multiprocessing, serialization, utils  # noqa: E402
from . import _tensor_extras  # noqa: E402, F401 - Tensor.apply_, map_, as_subclass, nonzero_static
from . import torch_version  # noqa: E402, F401 - torch.torch_version
from ._as_torch import as_torch  # noqa: E402 - `import torch` giving Ember
from .serialization import load, save  # noqa: E402
from .sparse import sparse_coo_tensor, spmm  # noqa: E402
from .nn.config import Config  # noqa: E402
from ._compile import CaptureError, compile  # noqa: E402 - PyTorch's name
from . import _dynamo, compiler, hub, jit, library, profiler  # noqa: E402, F401 - torch.compiler, .jit, .library, ._dynamo
from .jit import ScriptFunction, ScriptModule  # noqa: E402, F401 - PyTorch's top-level names of the jit classes

# mixed precision: ember.amp, ember.cpu.amp (ember.cuda.amp is in ember.cuda), and PyTorch's top-level autocast
from . import amp, cpu  # noqa: E402
from .amp import GradScaler, autocast, get_autocast_dtype, is_autocast_enabled  # noqa: E402
from .amp._autocast_state import *  # noqa: E402, F403 - torch.set_autocast_enabled, get_autocast_gpu_dtype ...
from .amp._autocast_state import __all__ as _autocast_state_names  # noqa: E402

__all__ += _autocast_state_names

from . import _factory  # noqa: E402 - after _memory, which must tune malloc before anything allocates

_factory.install(globals())  # PyTorch's layout=/pin_memory=/memory_format=/out= on the public creation functions
_torch_alias.install()  # `import torch.nn` with torch aliased to Ember: Ember's own modules, not a second copy
_memory.freeze_gc()  # last: the objects made by importing Ember leave the GC's walks (EMBER_GC_FREEZE=0)
