"""``ember.quasirandom`` (PyTorch's ``torch.quasirandom``): ``SobolEngine``, Sobol' low-discrepancy sequences.

The points are SciPy's (``scipy.stats.qmc.Sobol``, Joe and Kuo's direction numbers, 30 bits, up to 21,201
dimensions), which are PyTorch's own points when not scrambled. Scrambled sequences use the same kind of scrambling
(a random linear matrix scramble and a digital shift) drawn from ``seed``, or from Ember's default generator when
``seed`` is None, so they are reproducible under ``ember.manual_seed`` but are not PyTorch's numbers.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any

from . import _creation
from ._creation import from_numpy
from ._dtype import as_dtype, get_default_dtype
from ._tensor import Tensor

__all__ = ["SobolEngine"]


def _qmc() -> Any:
    try:
        from scipy.stats import qmc
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("ember.quasirandom.SobolEngine needs SciPy: pip install scipy") from None
    return qmc


class SobolEngine:
    """Draws from a Sobol' sequence of ``dimension`` dimensions (``scramble``: Owen-type scrambling from ``seed``)."""

    MAXBIT = 30
    MAXDIM = 21201

    def __init__(self, dimension: int, scramble: bool = False, seed: int | None = None) -> None:
        if not isinstance(dimension, int) or dimension > self.MAXDIM or dimension < 1:
            raise ValueError(f"Supported range of dimensionality for SobolEngine is [1, {self.MAXDIM}]")
        self.dimension, self.scramble, self.seed = dimension, scramble, seed
        self.reset()

    def reset(self) -> SobolEngine:
        """Back to the first point of the same sequence (the same scrambling)."""
        qmc = _qmc()
        rng = self.seed
        if self.scramble and rng is None:
            rng = getattr(self, "_drawn_seed", None)
            if rng is None:
                rng = self._drawn_seed = int(_creation.randint(0, 2**62, ()).item())
        key = "rng" if "rng" in inspect.signature(qmc.Sobol).parameters else "seed"
        self._engine = qmc.Sobol(self.dimension, scramble=self.scramble, bits=self.MAXBIT, **{key: rng})
        self.num_generated = 0
        return self

    def draw(self, n: int = 1, out: Tensor | None = None, dtype: Any = None) -> Tensor:
        """The next ``n`` points, a ``(n, dimension)`` tensor (the default dtype unless ``dtype``; into ``out``)."""
        if not isinstance(n, int) or n < 0:
            raise RuntimeError(f"SobolEngine.draw: n must be a non-negative integer, got {n!r}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SciPy's note on draws that are not powers of 2
            points = self._engine.random(n)
        self.num_generated += n
        result = from_numpy(points).to(as_dtype(dtype) if dtype is not None else get_default_dtype())
        if out is not None:  # (the points are made on the host; ``out`` may be on another device, as PyTorch's)
            out.resize_as_(result).copy_(result.to(out.device))
            return out
        return result

    def draw_base2(self, m: int, out: Tensor | None = None, dtype: Any = None) -> Tensor:
        """The next ``2**m`` points; the total drawn must stay a power of 2 (the sequence's balance)."""
        n = 2**m
        total = n + self.num_generated
        if total & (total - 1):
            raise ValueError(
                "The balance properties of Sobol' points require n to be a power of 2. "
                f"{self.num_generated} points have been previously generated, then: n={self.num_generated}+2**{m}"
                f"={total}. If you still want to do this, please use 'SobolEngine.draw()' instead."
            )
        return self.draw(n, out=out, dtype=dtype)

    def fast_forward(self, n: int) -> SobolEngine:
        """Skip the next ``n`` points."""
        self._engine.fast_forward(n)
        self.num_generated += n
        return self

    def __repr__(self) -> str:
        fields = [f"dimension={self.dimension}"]
        if self.scramble:
            fields.append("scramble=True")
        if self.seed is not None:
            fields.append(f"seed={self.seed}")
        return f"SobolEngine({', '.join(fields)})"
