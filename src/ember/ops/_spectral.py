"""Spectral operations (torch docs, "Spectral Ops"): ``stft`` and ``istft``, as PyTorch's ``SpectralOps.cpp`` builds
them from differentiable pieces — reflect/constant padding, framing (``Tensor.unfold``), the window, one batched
transform (``ops/_fft.py``'s r2c/c2c/c2r operators), and for ``istft`` overlap-add (the scatter-add that is the
adjoint of framing) divided by the window's squared envelope. Gradients flow to the input and to the window.
"""

from __future__ import annotations

import warnings

from .._dtype import complex128, float32, float64
from .._errors import DTypeError, ShapeError, ValueRangeError
from .._tensor import Tensor
from ._fft import FftC2C, FftC2R, FftR2C, promote
from ._indexing import IndexBackward, unfold
from ._other_shape import Pad, pad
from ._pointwise_complex import view_as_real

__all__ = ["istft", "stft"]
METHODS = ["istft", "stft"]

_NO_WINDOW = (
    "A window was not provided. A rectangular window will be applied, which is known to cause spectral leakage. "
    "Other windows such as ember.hann_window or ember.hamming_window are recommended to reduce spectral leakage. "
    "To suppress this warning and use a rectangular window, explicitly set `window=ember.ones(n_fft)`."
)


def _centred(window: Tensor | None, win_length: int, n_fft: int, like: Tensor) -> Tensor:
    """The window (ones of ``like``'s real precision when None) zero-padded on both sides to ``n_fft``."""
    if window is None:
        from .._creation import ones

        dt = float64 if like.dtype in (float64, complex128) else float32
        window = ones(win_length, dtype=dt, device=like.device)
    left = (n_fft - win_length) // 2
    return pad(window, (left, n_fft - win_length - left)) if win_length < n_fft else window


def _check_window(op: str, window: Tensor | None, win_length: int) -> None:
    if window is not None and (window.ndim != 1 or window.shape[0] != win_length):
        raise ShapeError(f"{op}: expected a 1D window tensor of size equal to win_length={win_length}, "
                         f"but got window with size {list(window.shape)}")  # fmt: skip


def stft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    pad_mode: str = "reflect",
    normalized: bool = False,
    onesided: bool | None = None,
    return_complex: bool | None = None,
    align_to_window: bool | None = None,
) -> Tensor:
    """The short-time Fourier transform of a ``(L,)`` or ``(B, L)`` signal: ``(B?, N, T)`` complex frames
    (``N = n_fft // 2 + 1`` when one-sided, the default for real input and window)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"stft: expected a Tensor, got {type(input).__name__}")
    if center and align_to_window is not None:
        raise ValueRangeError("stft align_to_window should only be set when center = false")
    is_c = input.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None:
        if not is_c:
            raise ValueRangeError("stft requires the return_complex parameter be given for real inputs, and will "
                                  "further require that return_complex=True in a future PyTorch release.")  # fmt: skip
        return_complex = True
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated: use return_complex=True and view_as_real",
                      UserWarning, stacklevel=2)  # fmt: skip
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise DTypeError(f"stft: expected a tensor of floating point or complex values, got {input.dtype}")
    if input.ndim not in (1, 2):
        raise ShapeError(f"stft: expected a 1D or 2D tensor, got shape {tuple(input.shape)}")
    if window is None:
        warnings.warn(_NO_WINDOW, UserWarning, stacklevel=2)
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    win = n_fft if win_length is None else int(win_length)
    x = promote("stft", input)
    x = x.unsqueeze(0) if x.ndim == 1 else x
    if center:
        k = n_fft // 2
        x = pad(x.unsqueeze(0), (k, k), mode=pad_mode).squeeze(0)
    length = x.shape[1]
    if n_fft <= 0 or n_fft > length:
        raise ValueRangeError(f"stft: expected 0 < n_fft <= {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise ValueRangeError(f"stft: expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise ValueRangeError(f"stft: expected 0 < win_length <= n_fft, but got win_length={win}")
    _check_window("stft", window, win)
    if align_to_window and win < n_fft:  # frames of win_length samples, the window at each frame's start
        frames = unfold(x, 1, win, hop)
        if window is not None:
            frames = frames * window
        left = (n_fft - win) // 2
        frames = Pad.apply(frames, ((0, 0), (0, 0), (left, n_fft - win - left)), "constant", 0)
    else:
        frames = unfold(x, 1, n_fft, hop)  # (B, n_frames, n_fft)
        if window is not None or win < n_fft:
            frames = frames * _centred(window, win, n_fft, x)
    complex_fft = frames.dtype.is_complex
    one = (not complex_fft) if onesided is None else bool(onesided)
    norm = 1 if normalized else 0
    if complex_fft:
        if one:
            raise ValueRangeError("stft: Cannot have onesided output if window or input is complex")
        out = FftC2C.apply(frames, (2,), norm, True)
    else:
        out = FftR2C.apply(frames, (2,), norm, one)
    out = out.transpose(1, 2)
    if input.ndim == 1:
        out = out.squeeze(0)
    return out if return_complex else view_as_real(out)


def istft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    normalized: bool = False,
    onesided: bool | None = None,
    length: int | None = None,
    return_complex: bool = False,
) -> Tensor:
    """The inverse of ``stft``: the signal whose windowed frames overlap-add to the least-squares fit of the
    ``(B?, N, T)`` complex spectrogram ``input``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"istft: expected a Tensor, got {type(input).__name__}")
    if not input.dtype.is_complex:
        raise DTypeError(f"istft requires a complex-valued input tensor matching the output from stft with "
                         f"return_complex=True, got {input.dtype}")  # fmt: skip
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    win = n_fft if win_length is None else int(win_length)
    if input.numel() == 0:
        raise ShapeError("istft input tensor cannot be empty")
    if input.ndim not in (2, 3):
        raise ShapeError(
            f"istft: expected a tensor with 2 or 3 dimensions of complex dtype, got shape {tuple(input.shape)}"
        )
    n_frames, fft_size = input.shape[-1], input.shape[-2]
    one = (fft_size != n_fft) if onesided is None else bool(onesided)
    if one and n_fft // 2 + 1 != fft_size:
        raise ShapeError(f"istft expected the frequency dimension (3rd to the last) of the input tensor to match "
                         f"n_fft / 2 + 1 when onesided=True, but got {fft_size}")  # fmt: skip
    if not one and n_fft != fft_size:
        raise ShapeError(f"istft expected the frequency dimension (3rd to the last) of the input tensor to match "
                         f"n_fft when onesided=False, but got {fft_size}")  # fmt: skip
    if not 0 < hop <= win:
        raise ValueRangeError(f"istft expected 0 < hop_length <= win_length, got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise ValueRangeError(f"istft expected 0 < win_length <= n_fft, got win_length={win}")
    _check_window("istft", window, win)
    w = _centred(window, win, n_fft, input)
    x = (input.unsqueeze(0) if input.ndim == 2 else input).transpose(1, 2)  # (B, n_frames, fft_size)
    norm = 1 if normalized else 2
    if return_complex:
        if one:
            raise ValueRangeError("istft: Cannot have onesided output if window or input is complex")
        frames = FftC2C.apply(x, (2,), norm, False)
    else:
        if window is not None and window.dtype.is_complex:
            raise DTypeError("istft: Complex windows are incompatible with return_complex=False")
        if not one:
            x = x[:, :, : n_fft // 2 + 1]
        frames = FftC2R.apply(x, (2,), norm, n_fft)
    expected = n_fft + hop * (n_frames - 1)
    xp = input._backend.xp
    idx = xp.arange(n_frames, dtype=xp.int64)[:, None] * hop + xp.arange(n_fft, dtype=xp.int64)[None, :]
    y = IndexBackward.apply(frames * w, (frames.shape[0], expected), (slice(None), idx), False)
    envelope = IndexBackward.apply((w * w).expand(1, n_frames, n_fft), (1, expected), (slice(None), idx), False)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (expected - n_fft // 2 if center else expected)
    y, envelope = y[:, start:end], envelope[:, start:end]
    if bool((envelope.abs() < 1e-11).any()):  # one read-back on every device, as PyTorch's istft
        least = float(envelope.abs().min())
        raise ValueRangeError(f"istft window overlap add min: {least} (the window's squared overlap-add must be "
                              "nonzero everywhere: check window, hop_length and center)")  # fmt: skip
    y = y / envelope
    if input.ndim == 2:
        y = y.squeeze(0)
    if end > expected:
        msg = ("The length of signal is shorter than the length parameter. Result is being padded with zeros in the "
               "tail. Please check your center and hop_length settings.")  # fmt: skip
        warnings.warn(msg, UserWarning, stacklevel=2)
        y = pad(y, (0, end - expected))
    return y
