"""``ZeroRedundancyOptimizer``: ZeRO stage 1 — each rank keeps and steps the optimizer state of its shard.

Parameters are partitioned as PyTorch does (per group, largest first, each to the rank with the fewest
elements so far). ``step()`` runs the wrapped optimizer over this rank's shard only (its momentum, Adam
moments ... exist only here: 1/world of the memory), then every rank broadcasts its updated parameters to
the others. Gradients must already be averaged (DDP does it). ``consolidate_state_dict(to)`` gathers the
shards on one rank, whose ``state_dict()`` is then a plain optimizer's over all parameters, loadable on a
single process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._tensor import Tensor
from ..._tensor_grad import clear_grads
from ...autograd._capture import collective, opaque
from .._coalesced import broadcast_coalesced, check_same_across_ranks
from .._group import DistUsageError, backend_error, require

__all__ = ["ZeroRedundancyOptimizer"]


def _key(p: Any) -> str:
    pid = getattr(p, "id", None)
    return pid if pid is not None else f"tensor-{id(p)}"


class ZeroRedundancyOptimizer:
    """Wrap ``optimizer_class`` so that each rank of ``process_group`` holds the state of 1/world of ``params``.

    ``parameters_as_bucket_view`` (a memory layout choice in PyTorch) is accepted and changes nothing here.
    """

    def __init__(
        self,
        params: Any,
        optimizer_class: type,
        process_group: Any = None,
        parameters_as_bucket_view: bool = False,
        overlap_with_ddp: bool = False,
        **defaults: Any,
    ) -> None:
        tdist = require("ZeroRedundancyOptimizer")
        if overlap_with_ddp:
            raise DistUsageError("ZeroRedundancyOptimizer: overlap_with_ddp is not supported; step after backward")
        if hasattr(params, "parameters") and callable(params.parameters):
            params = params.parameters()
        params = list(params)
        if not params:
            raise DistUsageError("ZeroRedundancyOptimizer: got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        self.optimizer_class, self.process_group = optimizer_class, process_group
        self.world_size = tdist.get_world_size(process_group)
        self.rank = tdist.get_rank(process_group)
        self._ranks = (
            list(tdist.get_process_group_ranks(process_group))
            if process_group is not None
            else list(range(self.world_size))
        )
        self.defaults = dict(defaults)
        self.param_groups: list[dict[str, Any]] = []
        for g in groups:
            ps = g["params"]
            ps = [ps] if isinstance(ps, Tensor) else list(ps)
            self.param_groups.append({**defaults, **{k: v for k, v in g.items() if k != "params"}, "params": ps})
        flat = [p for g in self.param_groups for p in g["params"]]
        check_same_across_ranks(
            "ZeroRedundancyOptimizer",
            [(str(i), tuple(p.shape), str(p.dtype)) for i, p in enumerate(flat)],
            process_group,
        )
        self._owner = self._partition()
        local = []
        self._local_groups: list[int] = []  # which global group each local group is
        for gi, g in enumerate(self.param_groups):
            mine = [p for p in g["params"] if self._owner[id(p)] == self.rank]
            if mine:
                local.append({**{k: v for k, v in g.items() if k != "params"}, "params": mine})
                self._local_groups.append(gi)
        self.optim = optimizer_class(local, **defaults) if local else None
        self._consolidated: dict[str, Any] | None = None

    def _partition(self) -> dict[int, int]:
        """PyTorch's greedy partition: per group, largest first, to the rank with the fewest elements so far."""
        sizes = [0] * self.world_size
        owner: dict[int, int] = {}
        for g in self.param_groups:
            for p in sorted(g["params"], key=lambda t: t.numel(), reverse=True):
                r = sizes.index(min(sizes))
                owner[id(p)] = r
                sizes[r] += p.numel()
        return owner

    def params_of(self, rank: int) -> list[Any]:
        """The parameters whose state rank ``rank`` keeps (in group order)."""
        return [p for g in self.param_groups for p in g["params"] if self._owner[id(p)] == rank]

    @property
    def state(self) -> dict[str, Any]:
        """This rank's shard of the state."""
        return self.optim.state if self.optim is not None else {}

    @state.setter
    def state(self, value: dict[str, Any]) -> None:  # (ember.compile puts it back after a checked replay)
        if self.optim is not None:
            self.optim.state = value

    @opaque
    def zero_grad(self, set_to_none: bool = True) -> None:
        clear_grads(self.param_groups, set_to_none)

    @collective  # ember.compile: one host step (the shard's update, then the broadcasts), replayed as this call
    def step(self, closure: Callable[[], Any] | None = None, **kwargs: Any) -> Any:
        """Step this rank's shard, then broadcast every shard from its owner."""
        loss = None
        if self.optim is not None:
            for lg, gi in zip(self.optim.param_groups, self._local_groups, strict=True):
                for k, v in self.param_groups[gi].items():  # a scheduler changed the global groups' options
                    if k != "params":
                        lg[k] = v
            loss = self.optim.step(closure, **kwargs)
        elif closure is not None:
            loss = closure()
        for r in range(self.world_size):
            broadcast_coalesced(self.params_of(r), self._ranks[r], self.process_group)
        return loss

    def add_param_group(self, group: dict[str, Any]) -> None:
        raise DistUsageError(
            "ZeroRedundancyOptimizer: add_param_group after construction is not supported; "
            "pass every group to the constructor"
        )

    # -- state ------------------------------------------------------------------------------------------
    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather every rank's shard on rank ``to`` (every rank must call it); then ``state_dict()`` there."""
        tdist = require("consolidate_state_dict")
        if to not in range(self.world_size):
            raise DistUsageError(
                f"consolidate_state_dict: to={to} is not a rank of the group (0..{self.world_size - 1})"
            )
        flat = [p for g in self.param_groups for p in g["params"]]
        index = {id(p): i for i, p in enumerate(flat)}
        local = self.optim.state_dict() if self.optim is not None else {"state": {}, "param_groups": []}
        mine = self.params_of(self.rank)
        ids = {_key(p): index[id(p)] for p in mine}
        shard = {ids[k]: v for k, v in local["state"].items() if k in ids}
        gathered: list[Any] = [None] * self.world_size if self.rank == to else []
        try:
            tdist.gather_object(
                shard, gathered if self.rank == to else None, dst=self._ranks[to], group=self.process_group
            )
        except RuntimeError as e:
            raise backend_error("consolidate_state_dict", self.process_group, e) from e
        if self.rank != to:
            self._consolidated = None
            return
        state = {}
        for part in gathered:
            for i, s in part.items():
                state[_key(flat[i])] = s
        groups = [
            {**{k: v for k, v in g.items() if k != "params"}, "params": [_key(p) for p in g["params"]]}
            for g in self.param_groups
        ]
        self._consolidated = {"optimizer": self.optimizer_class.__name__, "state": state, "param_groups": groups}

    def state_dict(self) -> dict[str, Any]:
        """The whole optimizer's state, as a plain ``optimizer_class`` would save it (after consolidating here)."""
        if self._consolidated is None:
            raise DistUsageError(
                "ZeroRedundancyOptimizer.state_dict: the state is not consolidated on rank "
                f"{self.rank}; call consolidate_state_dict(to={self.rank}) on every rank first"
            )
        return self._consolidated

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a whole optimizer's state (a consolidated or a plain one): each rank keeps its shard."""
        groups = state_dict.get("param_groups")
        if not isinstance(groups, list) or len(groups) != len(self.param_groups):
            raise DistUsageError(
                f"ZeroRedundancyOptimizer.load_state_dict: expected {len(self.param_groups)} param "
                "groups (a state_dict of the same optimizer over the same parameters)"
            )
        by_pos = {}
        for sg, g in zip(groups, self.param_groups, strict=True):
            if len(sg["params"]) != len(g["params"]):
                raise DistUsageError(
                    "ZeroRedundancyOptimizer.load_state_dict: a saved group has "
                    f"{len(sg['params'])} params, this one has {len(g['params'])}"
                )
            for saved, p in zip(sg["params"], g["params"], strict=True):
                by_pos[str(saved)] = p
            for k, v in sg.items():
                if k != "params":
                    g[k] = v
        if self.optim is None:
            return
        local_groups = []
        state = {}
        for lg, gi in zip(self.optim.param_groups, self._local_groups, strict=True):
            opts = {k: v for k, v in self.param_groups[gi].items() if k != "params"}
            local_groups.append({**opts, "params": [_key(p) for p in lg["params"]]})
        mine = {id(p) for p in self.params_of(self.rank)}
        for saved, s in state_dict["state"].items():
            p = by_pos.get(str(saved))
            if p is not None and id(p) in mine:
                state[_key(p)] = s
        kind = state_dict.get("optimizer", type(self.optim).__name__)
        self.optim.load_state_dict({"optimizer": kind, "state": state, "param_groups": local_groups})

    def __repr__(self) -> str:
        return (
            f"ZeroRedundancyOptimizer({self.optimizer_class.__name__}, rank {self.rank} of {self.world_size}, "
            f"{len(self.params_of(self.rank))} of {sum(len(g['params']) for g in self.param_groups)} params)"
        )
