"""Neural-network building blocks: Module, Param, Config, layers, losses, init (PyTorch's ``torch.nn`` names)."""

from . import attention, functional, grad, init, modules, parallel, utils  # noqa: F401
from .activation import *  # noqa: F403
from .config import Config, config_for  # noqa: F401
from .container import *  # noqa: F403
from .conv import *  # noqa: F403
from .distance import *  # noqa: F403
from .embedding_bag import *  # noqa: F403
from .layers import *  # noqa: F403
from .lazy import *  # noqa: F403
from .linear import *  # noqa: F403
from .loss import *  # noqa: F403
from .loss_density import *  # noqa: F403
from .loss_margin import *  # noqa: F403
from .module import IncompatibleKeys, Module, Ref  # noqa: F401
from .norm import *  # noqa: F403
from .padding import *  # noqa: F403
from .parallel import DataParallel, SyncBatchNorm  # noqa: F401
from .parameter import Buffer, Param, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
from .pooling import *  # noqa: F403
from .rearrange import *  # noqa: F403
from .rectifiers import *  # noqa: F403
from .rnn import *  # noqa: F403
from .transformer import *  # noqa: F403
from .vision import *  # noqa: F403
