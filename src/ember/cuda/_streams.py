"""CUDA streams and events: ``torch.cuda.Stream``/``Event`` on the torch backend, ``cupy.cuda`` ones on CuPy.

An Ember ``Stream`` or ``Event`` wraps the library's own object (``.native``), so Ember's kernels, which
run on the library's current stream, follow ``with ember.cuda.stream(s):`` exactly as the library's code
does. Without CUDA, making one raises a ``DeviceError`` that lists what is available.

A stream belongs to the library serving its device (``Stream(x.device)`` of a CuPy tensor is a CuPy stream,
whichever backend ``"cuda"`` means); an event, like PyTorch's, takes its stream's library when it is recorded.
A stream cannot wait for an event of the other library (a ``DeviceError``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["Event", "Stream", "current_stream", "default_stream", "stream"]


def _library(dev: Any = None) -> tuple[str, int]:
    """(backend name, device index) serving CUDA, or the DeviceError saying why there is none."""
    from ._memory import _serving

    s = _serving(dev)
    if s is None:
        from ..backends import get_backend

        get_backend("cuda")  # raises the DeviceError listing what is available here
        raise AssertionError("unreachable")  # pragma: no cover
    return s


class Stream:
    """A CUDA stream (a queue of kernels that run in order). ``with ember.cuda.stream(s):`` makes it current."""

    def __init__(self, device: Any = None, priority: int = 0, *, native: Any = None) -> None:
        self.native: Any
        if native is not None:
            self.library, self.native = ("torch" if type(native).__module__.startswith("torch") else "cupy"), native
            return
        self.library, index = _library(device)
        if self.library == "torch":
            import torch

            self.native = torch.cuda.Stream(device=index, priority=priority)
        else:
            import cupy

            with cupy.cuda.Device(index):  # CuPy's Stream takes no priority (a scheduling hint): ignored there
                self.native = cupy.cuda.Stream(non_blocking=False)

    def synchronize(self) -> None:
        """Wait until every kernel queued on this stream has finished."""
        self.native.synchronize()

    def query(self) -> bool:
        """True when all work queued on this stream has finished."""
        return bool(self.native.query() if self.library == "torch" else self.native.done)

    def record_event(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one when None) on this stream and return it."""
        event = event if event is not None else Event._of(self.library)
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        """Make future work on this stream wait for ``event``."""
        if event.library != self.library:
            from .._errors import DeviceError

            raise DeviceError(
                f"ember.cuda: a {self.library} stream cannot wait for an event recorded on a {event.library} "
                "stream; use the streams of one backend (Stream(x.device), current_stream(x.device))"
            )
        self.native.wait_event(event.native)

    def wait_stream(self, other: Stream) -> None:
        """Make future work on this stream wait for the work queued on ``other`` so far."""
        self.wait_event(other.record_event())

    def __enter__(self) -> Stream:
        self._ctx = stream(self)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._ctx.__exit__(*exc)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and self.native == other.native

    def __hash__(self) -> int:
        return hash(self.native)

    def __repr__(self) -> str:
        return f"ember.cuda.Stream({self.native!r})"


class Event:
    """A marker in a stream: ``record`` it, then ``synchronize``/``query`` it or time between two events.

    ``elapsed_time(end)`` is in milliseconds and needs ``enable_timing=True`` on both.
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self.enable_timing = enable_timing
        self._options = (enable_timing, blocking, interprocess)
        self._make(_library()[0])

    @classmethod
    def _of(cls, library: str) -> Event:
        """A new event of ``library`` (a stream's own, not the default device's)."""
        event = cls.__new__(cls)
        event.enable_timing, event._options = False, (False, False, False)
        event._make(library)
        return event

    def _make(self, library: str) -> None:
        timing, blocking, interprocess = self._options
        self.library = library
        self.native: Any
        if library == "torch":
            import torch

            self.native = torch.cuda.Event(enable_timing=timing, blocking=blocking, interprocess=interprocess)
        else:
            import cupy

            self.native = cupy.cuda.Event(block=blocking, disable_timing=not timing, interprocess=interprocess)

    def record(self, stream: Stream | None = None) -> None:
        """Record the event on ``stream`` (the current stream of the event's library when None); recorded on a
        stream of the other library, the event becomes one of that library."""
        s = stream if stream is not None else _current(self.library, None)
        if s.library != self.library:
            self._make(s.library)
        self.native.record(s.native)

    def synchronize(self) -> None:
        """Wait until the work recorded before this event has finished."""
        self.native.synchronize()

    def query(self) -> bool:
        """True when the work recorded before this event has finished."""
        return bool(self.native.query() if self.library == "torch" else self.native.done)

    def wait(self, stream: Stream | None = None) -> None:
        """Make future work on ``stream`` (the current one of the event's library when None) wait for this event."""
        (stream if stream is not None else _current(self.library, None)).wait_event(self)

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event and ``end_event`` (both recorded, both with ``enable_timing``)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Event.elapsed_time: both events need enable_timing=True")
        if end_event.library != self.library:
            from .._errors import DeviceError

            raise DeviceError(f"Event.elapsed_time: events of two libraries ({self.library}, {end_event.library})")
        if self.library == "torch":
            return float(self.native.elapsed_time(end_event.native))
        import cupy

        end_event.native.synchronize()
        return float(cupy.cuda.get_elapsed_time(self.native, end_event.native))

    def __repr__(self) -> str:
        return f"ember.cuda.Event(enable_timing={self.enable_timing})"


def _wrap(library: str, native: Any) -> Stream:
    s = Stream.__new__(Stream)
    s.library, s.native = library, native
    return s


def _current(library: str, index: int | None) -> Stream:
    """``library``'s current stream on device ``index`` (None: the current device)."""
    if index is None:
        from . import current_device

        index = current_device()
    if library == "torch":
        import torch

        return _wrap(library, torch.cuda.current_stream(index))
    import cupy

    with cupy.cuda.Device(index):
        return _wrap(library, cupy.cuda.get_current_stream())


def current_stream(device: Any = None) -> Stream:
    """The stream kernels are queued on now (on ``device``, default the current CUDA device), of the library
    serving ``device``."""
    return _current(*_library(device))


def default_stream(device: Any = None) -> Stream:
    """The device's default (null) stream."""
    library, index = _library(device)
    if library == "torch":
        import torch

        return _wrap(library, torch.cuda.default_stream(index))
    import cupy

    return _wrap(library, cupy.cuda.Stream.null)


class stream:  # noqa: N801 - PyTorch's name
    """``with ember.cuda.stream(s):`` queues the kernels of the block on stream ``s`` (None: no change)."""

    def __init__(self, s: Stream | None) -> None:
        self.s = s
        self._ctx: Any = None

    def __enter__(self) -> Stream | None:
        if self.s is None:
            return None
        if self.s.library == "torch":
            import torch

            self._ctx = torch.cuda.stream(self.s.native)
        else:
            self._ctx = self.s.native  # a CuPy stream is its own context manager (it becomes current)
        self._ctx.__enter__()
        return self.s

    def __exit__(self, *exc: Any) -> None:
        if self._ctx is not None:
            self._ctx.__exit__(*exc)
            self._ctx = None
