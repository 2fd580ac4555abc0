"""``Function.apply``'s shortcuts to grad mode and the operator flags (``_grad_mode.GRAD_OFF``, ``_apply_flags``).

``apply`` reads the per-thread grad mode only while some thread has it off (``GRAD_OFF`` holds a key per such
thread), and reads an operator's four flags from one tuple taken when the class was made. These tests pin the keys
(kept by every way grad mode changes, taken out when a thread ends with it off) and that each thread still records,
or does not, by its own grad mode while another thread has it the other way.
"""

import threading

import ember
from ember.autograd._function import Function
from ember.autograd._grad_mode import GRAD_OFF, STATE


def _all_subclasses(cls):
    out, todo = [], [cls]
    while todo:
        for c in todo.pop().__subclasses__():
            out.append(c)
            todo.append(c)
    return out


def test_apply_flags_are_each_operators_flags():
    import ember.nn  # (the operator classes of every layer)
    import ember.nn.functional  # noqa: F401

    classes = [Function, *_all_subclasses(Function)]
    assert len(classes) > 100
    for c in classes:
        assert c._apply_flags == (c._array_io, c.differentiable, c.saves_inputs, c.saves_output), c
    kinds = {c._apply_flags for c in classes}
    assert len(kinds) >= 4  # the flags differ between operators: the tuple is per class


def test_a_users_function_gets_its_own_flags():
    class NoGrad(Function):
        differentiable = False

        @staticmethod
        def forward(ctx, x):
            return x * 2

    x = ember.ones(3, requires_grad=True)
    assert NoGrad._apply_flags == (False, False, True, False)
    y = NoGrad.apply(x)
    assert not y.requires_grad and y.grad_fn is None


def test_count_follows_this_threads_grad_mode():
    base = len(GRAD_OFF)
    with ember.no_grad():
        assert len(GRAD_OFF) == base + 1 and not STATE.enabled
        with ember.no_grad():
            assert len(GRAD_OFF) == base + 1  # one per thread, not per block
        with ember.enable_grad():
            assert len(GRAD_OFF) == base and STATE.enabled
        assert len(GRAD_OFF) == base + 1
    assert len(GRAD_OFF) == base and STATE.enabled
    ember.set_grad_enabled(False)
    try:
        assert len(GRAD_OFF) == base + 1 and not ember.is_grad_enabled()
    finally:
        ember.set_grad_enabled(True)
    assert len(GRAD_OFF) == base

    @ember.no_grad()
    def f():
        return len(GRAD_OFF)

    assert f() == base + 1 and len(GRAD_OFF) == base

    @ember.set_grad_enabled(False)
    def g():
        return len(GRAD_OFF)

    assert len(GRAD_OFF) == base  # a decorator, not a switch
    assert g() == base + 1 and len(GRAD_OFF) == base


def test_count_released_when_a_thread_ends_with_grad_off():
    base = len(GRAD_OFF)
    seen = []

    def run():
        ember.set_grad_enabled(False)  # never switched back on
        seen.append(len(GRAD_OFF))

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert seen == [base + 1]
    assert len(GRAD_OFF) == base


def test_each_thread_records_by_its_own_grad_mode():
    """One thread holds grad mode off while the other records, and the other way round."""
    x = ember.randn(4, requires_grad=True)
    for off_in_thread in (True, False):
        inside = threading.Event()
        done = threading.Event()
        out = {}

        def other(off_in_thread=off_in_thread, inside=inside, done=done, out=out):
            if off_in_thread:
                with ember.no_grad():
                    inside.set()
                    out["other"] = (x + 1.0).tanh() * 2.0
                    done.wait(10)
            else:
                inside.wait(10)
                out["other"] = (x + 1.0).tanh() * 2.0
                done.set()

        t = threading.Thread(target=other)
        t.start()
        if off_in_thread:
            inside.wait(10)
            assert len(GRAD_OFF) >= 1
            here = (x + 1.0).tanh() * 2.0  # this thread's grad mode is on: recorded
            done.set()
        else:
            with ember.no_grad():
                inside.set()
                here = (x + 1.0).tanh() * 2.0  # off here, while the other thread records
                done.wait(10)
        t.join()
        recorded, not_recorded = (here, out["other"]) if off_in_thread else (out["other"], here)
        assert recorded.requires_grad and recorded.grad_fn is not None
        assert not not_recorded.requires_grad and not_recorded.grad_fn is None
        x.grad = None
        recorded.sum().backward()
        expected = 2.0 * (1 - (x.detach() + 1.0).tanh() ** 2)
        assert ember.allclose(x.grad, expected)
