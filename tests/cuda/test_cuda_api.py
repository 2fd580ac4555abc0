"""ember.cuda's memory, timing and stream API without a GPU: truthful answers here, and the calls it makes on
torch.cuda and CuPy checked against recording stand-ins (the real devices run in ``make test-cuda``)."""

import sys
import types

import pytest

import ember
from ember import cuda

needs_no_gpu = pytest.mark.skipif(cuda.is_available(), reason="checks the answers of a machine without CUDA")


@needs_no_gpu
def test_without_cuda_counters_are_zero_and_devices_are_refused():
    assert cuda.memory_allocated() == cuda.max_memory_allocated() == 0
    assert cuda.memory_reserved() == cuda.max_memory_reserved() == 0
    cuda.empty_cache()
    cuda.reset_peak_memory_stats()
    for make in (cuda.mem_get_info, lambda: cuda.Event(enable_timing=True), cuda.Stream, cuda.current_stream):
        with pytest.raises(RuntimeError, match=r"not available.*Available here"):
            make()


class _Recorder:
    """Stands in for a module: every attribute is a function that records its call and returns ``result``."""

    def __init__(self, result=0):
        self.calls = []
        self.result = result

    def __getattr__(self, name):
        def fn(*args, **kw):
            self.calls.append((name, args, kw))
            return self.result

        return fn


@pytest.fixture
def fake_torch_cuda(monkeypatch, torch):
    rec = _Recorder(result=7)
    for name in ("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
                 "reset_peak_memory_stats", "empty_cache"):  # fmt: skip
        monkeypatch.setattr(torch.cuda, name, getattr(rec, name))
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda i: (rec.calls.append(("mem_get_info", (i,), {})), (5, 9))[1])

    class Event:
        def __init__(self, **kw):
            self.kw, self.recorded = kw, None

        def record(self, stream):
            self.recorded = stream

        def elapsed_time(self, end):
            return 2.5

        def synchronize(self):
            rec.calls.append(("event.synchronize", (), {}))

        def query(self):
            return True

    class Stream:
        def __init__(self, device=None, priority=0):
            self.device, self.priority = device, priority

        def synchronize(self):
            rec.calls.append(("stream.synchronize", (self.device,), {}))

        def query(self):
            return False

        def wait_event(self, event):
            rec.calls.append(("wait_event", (event,), {}))

    class StreamContext:
        def __init__(self, s):
            self.s = s

        def __enter__(self):
            rec.calls.append(("enter", (self.s,), {}))

        def __exit__(self, *exc):
            rec.calls.append(("exit", (self.s,), {}))

    current = Stream(device=0)
    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "Stream", Stream)
    monkeypatch.setattr(torch.cuda, "stream", StreamContext)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda i=None: current)
    monkeypatch.setattr(torch.cuda, "default_stream", lambda i=None: current)
    monkeypatch.setattr(cuda, "_backend_name", lambda: "torch")
    return rec


def test_torch_path_forwards_device_indices(fake_torch_cuda):
    rec = fake_torch_cuda
    assert cuda.memory_allocated("cuda:1") == 7 and cuda.max_memory_allocated(1) == 7
    assert cuda.memory_reserved() == 7 and cuda.max_memory_reserved(ember.device("cuda:2")) == 7
    cuda.reset_peak_memory_stats("cuda:1")
    cuda.empty_cache()
    assert cuda.mem_get_info("cuda:3") == (5, 9)
    assert [(n, a) for n, a, _ in rec.calls] == [
        ("memory_allocated", (1,)), ("max_memory_allocated", (1,)), ("memory_reserved", (0,)),
        ("max_memory_reserved", (2,)), ("reset_peak_memory_stats", (1,)), ("empty_cache", ()), ("mem_get_info", (3,)),
    ]  # fmt: skip
    with pytest.raises(ValueError, match="expected a CUDA device"):
        cuda.memory_allocated("cpu")


def test_torch_path_events_and_streams(fake_torch_cuda):
    rec = fake_torch_cuda
    start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
    s = cuda.Stream(device="cuda:1", priority=-1)
    assert (s.native.device, s.native.priority) == (1, -1)
    start.record()
    assert start.native.recorded is cuda.current_stream().native  # the current stream by default
    end.record(s)
    assert end.native.recorded is s.native
    end.synchronize()
    assert start.elapsed_time(end) == 2.5 and end.query() and not s.query()
    with cuda.stream(s):
        pass
    with s:
        pass
    with cuda.stream(None):  # no change
        pass
    s.wait_event(start)
    start.wait(s)
    assert [n for n, *_ in rec.calls] == ["event.synchronize", "enter", "exit", "enter", "exit", "wait_event",
                                          "wait_event"]  # fmt: skip
    with pytest.raises(RuntimeError, match="enable_timing"):
        cuda.Event().elapsed_time(end)


@pytest.fixture
def fake_cupy(monkeypatch):
    """A small stand-in for the parts of CuPy's API ember.cuda calls (names and signatures as CuPy 13)."""
    log = []

    class Pool:
        def __init__(self):
            self.used, self.total = 100, 400

        def used_bytes(self):
            return self.used

        def total_bytes(self):
            return self.total

        def malloc(self, size):
            self.used += size
            self.total = max(self.total, self.used)
            return ("ptr", size)

        def free_all_blocks(self):
            log.append("free_all_blocks")

    pool, pinned = Pool(), Pool()

    class Device:
        def __init__(self, i):
            self.i = i

        def __enter__(self):
            log.append(("device", self.i))

        def __exit__(self, *exc):
            pass

    class Event:
        def __init__(self, block=False, disable_timing=False, interprocess=False):
            self.kw = (block, disable_timing, interprocess)
            self.done = True

        def record(self, stream=None):
            self.stream = stream

        def synchronize(self):
            log.append("event.synchronize")

    class Stream:
        null = None

        def __init__(self, null=False, non_blocking=False, ptds=False):
            self.done = False

        def __enter__(self):
            log.append("stream.enter")
            return self

        def __exit__(self, *exc):
            log.append("stream.exit")

        def synchronize(self):
            log.append("stream.synchronize")

        def wait_event(self, event):
            log.append("wait_event")

    Stream.null = Stream(null=True)
    allocator = []
    cuda_mod = types.SimpleNamespace(
        Device=Device, Event=Event, Stream=Stream, set_allocator=allocator.append,
        get_elapsed_time=lambda a, b: 1.25, get_current_stream=lambda: Stream.null,
        runtime=types.SimpleNamespace(memGetInfo=lambda: (3, 8)),
    )  # fmt: skip
    mod = types.SimpleNamespace(cuda=cuda_mod, get_default_memory_pool=lambda: pool,
                                get_default_pinned_memory_pool=lambda: pinned)  # fmt: skip
    monkeypatch.setitem(sys.modules, "cupy", mod)
    monkeypatch.setattr(cuda, "_backend_name", lambda: "cupy")
    monkeypatch.setattr(cuda._memory, "_PEAK", cuda._memory._CupyPeak())
    return types.SimpleNamespace(log=log, pool=pool, allocator=allocator)


def test_cupy_path_reads_the_pool_and_tracks_peaks(fake_cupy):
    pool = fake_cupy.pool
    assert cuda.memory_allocated() == 100 and cuda.memory_reserved() == 400
    assert cuda.max_memory_allocated() == 100  # installs the peak-tracking allocator
    (malloc,) = fake_cupy.allocator
    malloc(300)  # an allocation through the hook: used 400, reserved 400
    pool.used = 150  # then freed
    assert cuda.memory_allocated() == 150 and cuda.max_memory_allocated() == 400
    cuda.reset_peak_memory_stats()
    assert cuda.max_memory_allocated() == 150 and len(fake_cupy.allocator) == 1  # installed once
    cuda.empty_cache()
    assert fake_cupy.log.count("free_all_blocks") == 2  # the device pool and the pinned one
    assert cuda.mem_get_info(1) == (3, 8) and ("device", 1) in fake_cupy.log


def test_cupy_path_events_and_streams(fake_cupy):
    start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
    assert start.native.kw == (False, False, False)
    assert cuda.Event().native.kw == (False, True, False)  # timing off unless asked
    s = cuda.Stream()
    start.record()
    end.record(s)
    assert end.native.stream is s.native
    assert start.elapsed_time(end) == 1.25 and end.query() and not s.query()
    with cuda.stream(s):
        pass
    s.synchronize()
    assert fake_cupy.log[-4:] == ["event.synchronize", "stream.enter", "stream.exit", "stream.synchronize"]


def test_a_tensors_device_reads_its_own_backends_counters(fake_cupy, monkeypatch):
    """With torch and CuPy both serving CUDA, ``memory_allocated(x.device)`` of a CuPy tensor read torch's
    allocator (the GPU run: 256 MiB allocated, no change seen)."""
    monkeypatch.setattr(cuda, "_backend_name", lambda: "torch")  # what a bare "cuda:0" would ask
    assert cuda.memory_allocated(ember.device("cuda:0").served_by("cupy")) == 100  # CuPy's pool
    assert cuda.memory_reserved(ember.device("cuda:0").served_by("cupy")) == 400


def test_the_backend_selected_for_cuda_answers(monkeypatch):
    served = types.SimpleNamespace(devices=["cpu", "cuda:0"])
    monkeypatch.setattr(ember.backends, "available", lambda: {"torch": served, "cupy": served})
    for name in ("cupy", "torch"):  # EMBER_BACKEND=cupy must not get torch's counters (torch ranks first)
        monkeypatch.setattr(ember.backends, "current", lambda device_type="cpu", name=name: name)
        assert cuda._backend_name() == name
    monkeypatch.setattr(ember.backends, "available", lambda: {"torch": types.SimpleNamespace(devices=["cpu"])})
    assert cuda._backend_name() is None


def test_streams_and_events_follow_the_devices_library(fake_torch_cuda, fake_cupy, monkeypatch):
    """torch serving ``"cuda"``, a CuPy tensor's device: its streams, its current stream and the events they
    record are CuPy's (the GPU run recorded a torch Event on a CuPy stream: "expected stream to be a
    torch.Stream"); the default device's are torch's; and neither waits for the other's events."""
    monkeypatch.setattr(cuda, "_backend_name", lambda: "torch")
    cupy_dev = ember.device("cuda:0").served_by("cupy")
    s, cur = cuda.Stream(cupy_dev), cuda.current_stream(cupy_dev)
    assert (s.library, cur.library) == ("cupy", "cupy") and cur.native is sys.modules["cupy"].cuda.Stream.null
    s.wait_stream(cur)  # a CuPy event recorded on CuPy's current stream, then waited for
    assert fake_cupy.log[-1] == "wait_event"
    event = s.record_event()
    assert event.library == "cupy" and event.native.stream is s.native
    default = cuda.Event()  # made for the default device (torch), recorded on a CuPy stream: CuPy's then
    assert default.library == "torch"
    default.record(s)
    assert default.library == "cupy" and default.native.stream is s.native
    default.wait()  # the current CuPy stream waits
    assert fake_cupy.log[-1] == "wait_event"
    t = cuda.Stream("cuda:0")  # the default device's: torch's
    t.wait_stream(cuda.current_stream())
    assert t.library == "torch" and fake_torch_cuda.calls[-1][0] == "wait_event"
    with pytest.raises(RuntimeError, match="a torch stream cannot wait for an event recorded on a cupy stream"):
        t.wait_stream(s)
    with pytest.raises(RuntimeError, match="a cupy stream cannot wait for an event recorded on a torch stream"):
        s.wait_event(t.record_event())
