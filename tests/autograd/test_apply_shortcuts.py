"""``Function.apply``'s shortcut to the operator flags (``_apply_flags``): it reads an operator's four flags from
one tuple taken when the class was made; these tests pin that the tuple is each class's own flags."""

import ember
from ember.autograd._function import Function


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
