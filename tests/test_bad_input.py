"""Bad input across the API: a clear error of a type PyTorch code catches, never a silent wrong answer (issue 16)."""

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember._errors import DivisionByZeroError, DTypeError, ShapeError, ValueRangeError
from ember.data import DataLoader, TensorDataset
from ember.optim import SGD
from ember.optim import lr_scheduler as S
from ember.train import Learner


def sgd():
    return SGD(nn.Linear(2, 2).parameters(), lr=0.1)


def param_twice():
    p = nn.Linear(2, 2).weight
    return SGD([p, p], lr=0.1)


# (what, call, error type, message regex): each call used to give a silent wrong result or a poor error
CASES = [
    # creation
    ("ragged list", lambda: ember.tensor([[1, 2], [3]]), ShapeError,
     r"tensor: ragged nested sequence: expected a sequence of length 2 at index \[1\] \(dim 1\), got length 1"),
    ("ragged depth", lambda: ember.tensor([1, [2]]), ShapeError, r"expected a number at index \[1\]"),
    ("string", lambda: ember.tensor("abc"), DTypeError, r"tensor: cannot make a tensor from str 'abc'"),
    ("None", lambda: ember.tensor(None), DTypeError, r"tensor: cannot make a tensor from NoneType None"),
    ("None inside", lambda: ember.tensor([1.0, None]), DTypeError, r"NoneType None at index \[1\]"),
    ("int too large", lambda: ember.tensor(2**70), ValueRangeError, r"tensor: the integer 1180591620717411303424"),
    ("uint64-sized int as int64", lambda: ember.tensor([2**63]), ValueRangeError, r"does not fit in int64"),
    ("NaN as int64", lambda: ember.tensor([float("nan")], dtype=ember.int64), ValueRangeError,
     r"tensor: cannot convert nan to int64"),
    ("inf as int32", lambda: ember.tensor(np.array([np.inf]), dtype=ember.int32), ValueRangeError, r"to int32"),
    ("300 as int8", lambda: ember.tensor([300], dtype=ember.int8), ValueRangeError,
     r"tensor: value 300 does not fit in int8 \(range -128 to 127\)"),
    # (PyTorch's checked conversion: uint8 takes -255..255, negatives wrapped; -1 is 255)
    ("-256 as uint8", lambda: ember.tensor([-256], dtype=ember.uint8), ValueRangeError, r"does not fit in uint8"),
    ("zeros(2.5)", lambda: ember.zeros(2.5), TypeError, r"zeros: size must be a tuple of ints, but element 0 is float"),
    ("ones('3')", lambda: ember.ones(2, "3"), TypeError, r"ones: size must be a tuple of ints, but element 1 is str"),
    ("randn(2.0)", lambda: ember.randn(2.0), TypeError, r"randn: size must be a tuple of ints"),
    ("negative size", lambda: ember.zeros(2, -1), ShapeError, r"zeros: negative dimension in size \(2, -1\)"),
    ("eye(-2)", lambda: ember.eye(-2), ShapeError, r"eye: n must be >= 0, got -2"),
    ("eye(2.5)", lambda: ember.eye(2.5), TypeError, r"eye: n must be an integer"),
    ("linspace steps -5", lambda: ember.linspace(0, 1, -5), ShapeError, r"linspace: steps must be >= 0, got -5"),
    ("full 'x'", lambda: ember.full((2,), "x"), TypeError, r"full: fill_value must be a number or bool, got str 'x'"),
    ("full None", lambda: ember.full((2,), None), TypeError, r"full: fill_value must be a number or bool"),
    ("full 300 as int8", lambda: ember.full((2,), 300, dtype=ember.int8), ValueRangeError,
     r"full: value 300 does not fit in int8"),
    ("full NaN as int64", lambda: ember.full((2,), float("nan"), dtype=ember.int64), ValueRangeError,
     r"full: cannot convert nan to int64"),
    ("randint bounds beyond int8", lambda: ember.randint(0, 300, (2,), dtype=ember.int8), ValueRangeError,
     r"randint: value 299 does not fit in int8"),
    ("arange to inf", lambda: ember.arange(0, float("inf")), ValueRangeError, r"arange: end must be finite"),
    ("arange wrong sign", lambda: ember.arange(5, 0), ValueRangeError, r"arange: the bounds \[5, 0\) and step 1"),
    ("manual_seed('a')", lambda: ember.manual_seed("a"), TypeError, r"manual_seed: seed must be an integer, got str"),
    ("manual_seed(1.5)", lambda: ember.manual_seed(1.5), TypeError, r"manual_seed: seed must be an integer"),
    ("manual_seed(2**64)", lambda: ember.manual_seed(2**64), ValueRangeError, r"seed must be in \[-2\*\*63, 2\*\*64\)"),
    # arithmetic
    ("int // 0 tensor", lambda: ember.tensor([1, 2]) // ember.tensor([0, 1]), DivisionByZeroError,
     r"floor_divide: integer division by zero"),
    ("int % 0", lambda: ember.tensor([1, 2]) % 0, DivisionByZeroError, r"remainder: integer division by zero"),
    ("int scalar // tensor with 0", lambda: 5 // ember.tensor([0, 1]), DivisionByZeroError, r"floor_divide"),
    ("bool - bool", lambda: ember.tensor([True]) - ember.tensor([False]), DTypeError,
     r"sub: subtracting two bool tensors is not supported; use \^ or logical_xor\(\)"),
    ("-bool", lambda: -ember.tensor([True]), DTypeError, r"neg: negating a bool tensor is not supported"),
    # nn.functional
    ("bce target 2", lambda: F.binary_cross_entropy(ember.full((3,), 0.5), ember.tensor([0.0, 2.0, 1.0])),
     ValueRangeError, r"binary_cross_entropy: target values must be in \[0, 1\].*found 2.0"),
    ("bce target -1 int", lambda: F.binary_cross_entropy(ember.full((2,), 0.5), ember.tensor([0, -1])),
     ValueRangeError, r"found -1"),
    ("bce-with-logits target", lambda: F.binary_cross_entropy_with_logits(ember.zeros(2), ember.tensor([0.0, 3.0])),
     ValueRangeError, r"binary_cross_entropy_with_logits: target values must be in \[0, 1\]"),
    ("conv stride 0", lambda: F.conv2d(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 2, 2), stride=0), ValueError,
     r"conv2d: stride must be >= 1, got 0"),
    ("conv padding -1", lambda: F.conv2d(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 2, 2), padding=-1), ValueError,
     r"conv2d: padding must be >= 0, got -1"),
    ("conv stride 2.5", lambda: F.conv1d(ember.ones(1, 1, 4), ember.ones(1, 1, 2), stride=2.5), ValueError,
     r"conv1d: stride must be an int or 1 ints"),
    ("conv_transpose dilation 0", lambda: F.conv_transpose2d(ember.ones(1, 1, 3, 3), ember.ones(1, 1, 2, 2),
                                                             dilation=0), ValueError, r"dilation must be >= 1"),
    ("max_pool stride 0", lambda: F.max_pool2d(ember.ones(1, 1, 4, 4), 2, stride=0), ValueError,
     r"max_pool2d: stride must be >= 1"),
    ("avg_pool padding -1", lambda: F.avg_pool2d(ember.ones(1, 1, 4, 4), 2, padding=-1), ValueError,
     r"avg_pool2d: padding must be >= 0"),
    ("interpolate size (0, -2)", lambda: F.interpolate(ember.ones(1, 1, 4, 4), size=(0, -2)), ValueError,
     r"interpolate: every output size must be >= 1"),
    ("interpolate scale 0", lambda: F.interpolate(ember.ones(1, 1, 4, 4), scale_factor=0), ValueError,
     r"interpolate: scale_factor must be finite and > 0"),
    ("interpolate from an empty dim", lambda: F.interpolate(ember.ones(1, 1, 3, 0), size=(3, 7), mode="bilinear"),
     ValueError, r"interpolate: an empty spatial dim of input \(1, 1, 3, 0\) cannot make output size \(3, 7\)"),
    # nn, optim, data
    ("load_state_dict(list)", lambda: nn.Linear(2, 2).load_state_dict([1, 2]), TypeError,
     r"load_state_dict for Linear: expected a mapping of parameter names to tensors"),
    ("optimizer state without param_groups", lambda: sgd().load_state_dict({"state": {}}), ValueError,
     r"load_state_dict: not an optimizer state dict .*'param_groups'"),
    ("optimizer state of a model", lambda: sgd().load_state_dict(nn.Linear(2, 2).state_dict()), ValueError,
     r"not an optimizer state dict"),
    ("param twice", param_twice, ValueError,
     r"SGD: the same parameter \(shape \(2, 2\)\) is given twice, at positions 0 and 1"),
    ("scheduler on a module", lambda: S.StepLR(nn.Linear(2, 2), 1), TypeError,
     r"StepLR: expected an optimizer, got Linear \(a module"),
    ("StepLR gamma -1", lambda: S.StepLR(sgd(), 1, gamma=-1), ValueError, r"StepLR: gamma .* must be a finite number"),
    ("StepLR step_size 0", lambda: S.StepLR(sgd(), 0), ValueError, r"StepLR: step_size must be >= 1, got 0"),
    ("MultiStepLR gamma -0.5", lambda: S.MultiStepLR(sgd(), [1], gamma=-0.5), ValueError, r"MultiStepLR: gamma"),
    ("ExponentialLR gamma nan", lambda: S.ExponentialLR(sgd(), float("nan")), ValueError, r"ExponentialLR: gamma"),
    ("CosineAnnealingLR T_max 0", lambda: S.CosineAnnealingLR(sgd(), T_max=0), ValueError,
     r"CosineAnnealingLR: T_max must be >= 1, got 0"),
    ("PolynomialLR total_iters 0", lambda: S.PolynomialLR(sgd(), total_iters=0), ValueError, r"total_iters must be"),
    ("clip_grad_norm_ max_norm -1", lambda: nn.utils.clip_grad_norm_(nn.Linear(2, 2).parameters(), -1.0), ValueError,
     r"clip_grad_norm_: max_norm must be a number >= 0, got -1.0"),
    ("clip_grad_norm_ norm_type 0", lambda: nn.utils.clip_grad_norm_(nn.Linear(2, 2).parameters(), 1.0, 0),
     ValueError, r"norm_type must be > 0"),
    ("clip_grad_value_ -1", lambda: nn.utils.clip_grad_value_(nn.Linear(2, 2).parameters(), -1), ValueError,
     r"clip_grad_value_: clip_value must be a number >= 0"),
    ("DataLoader batch_size 0", lambda: DataLoader(TensorDataset(np.ones((4, 2))), batch_size=0), ValueError,
     r"DataLoader: batch_size must be a positive integer"),
    ("DataLoader batch_size 2.5", lambda: DataLoader(TensorDataset(np.ones((4, 2))), batch_size=2.5), ValueError,
     r"batch_size must be a positive integer"),
    # configs name the field the user set
    ("LeNet5Config(width=-1)", lambda: ember.models.LeNet5Config(width=-1), ValueError,
     r"LeNet5Config: width must be a positive integer, got -1"),
    ("MLPConfig hidden 0", lambda: ember.models.MLPConfig(4, 2, hidden=(3, 0)), ValueError,
     r"MLPConfig: hidden must be positive integers, got \(3, 0\)"),
    ("GPTConfig n_embd 0", lambda: ember.models.GPTConfig(n_embd=0), ValueError, r"GPTConfig: n_embd must be"),
]  # fmt: skip


#: value checks made only where they cost no wait for a device (``Backend.host_checks``: not torch's CUDA)
_HOST_CHECKS = {"bce target 2", "bce target -1 int", "bce-with-logits target"}


@pytest.mark.parametrize(("what", "call", "error", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_gives_a_clear_error(what, call, error, message):
    if what in _HOST_CHECKS and not ember.zeros(1)._backend.host_checks:
        pytest.skip("a loss-target value check: on torch's CUDA it would wait for the device, so it is not made")
    with pytest.raises(error, match=message):
        call()


def test_the_error_types_are_runtime_errors_too():
    for error in (ShapeError, DTypeError, ValueRangeError, DivisionByZeroError):
        assert issubclass(error, RuntimeError)
    assert issubclass(ValueRangeError, ValueError) and issubclass(DivisionByZeroError, ZeroDivisionError)


def test_good_input_next_to_the_bad_still_works():
    assert ember.tensor([[1, 2], [3, 4]]).shape == (2, 2)
    assert ember.tensor([127, -128], dtype=ember.int8).tolist() == [127, -128]
    assert ember.tensor([1.7, -1.7], dtype=ember.int64).tolist() == [1, -1]  # truncation, as in PyTorch
    assert ember.tensor([2**63 - 1]).tolist() == [2**63 - 1]
    assert ember.zeros(np.int64(2), 3).shape == (2, 3) and ember.zeros((2, 3)).shape == (2, 3)
    assert ember.arange(5, 0, -1).tolist() == [5, 4, 3, 2, 1] and ember.arange(0).tolist() == []
    assert ember.linspace(0, 1, 0).shape == (0,) and ember.eye(0).shape == (0, 0)
    assert (ember.tensor([7, -7]) // ember.tensor([2, 2])).tolist() == [3, -4]
    assert (ember.tensor([1.0]) / ember.tensor([0.0])).tolist() == [float("inf")]  # floats follow IEEE
    assert (ember.tensor([True]) - 1).tolist() == [0]
    S.CosineAnnealingLR(sgd(), T_max=1)
    S.StepLR(sgd(), 1, gamma=0.0)


def test_tensor_copies_a_numpy_array_even_with_the_same_dtype():
    a = np.zeros(3)
    t = ember.tensor(a, dtype=ember.float64)  # used to share memory with `a` when the dtype matched
    a[0] = 5.0
    assert t.tolist() == [0.0, 0.0, 0.0]


def test_manual_seed_accepts_negative_seeds_as_pytorch_does():
    ember.manual_seed(-1)
    assert ember.initial_seed() == 2**64 - 2  # PyTorch: 0xffff_ffff_ffff_ffff + seed
    a = ember.rand(3).tolist()
    ember.manual_seed(-1)
    assert ember.rand(3).tolist() == a


def test_mse_loss_with_different_broadcastable_shapes_warns_as_pytorch_does():
    x, y = ember.zeros(4, 1), ember.arange(4.0)
    with pytest.warns(UserWarning, match=r"mse_loss: using a target size \(4,\) that is different to the input size "
                                         r"\(4, 1\)"):  # fmt: skip
        F.mse_loss(x, y)
    for loss in (F.l1_loss, F.smooth_l1_loss, F.huber_loss):
        with pytest.warns(UserWarning, match="different to the input size"):
            loss(x, y)
    with pytest.raises(ValueError, match="cannot broadcast"):
        F.mse_loss(ember.zeros(3), ember.zeros(4))


def test_grad_of_the_wrong_shape_or_dtype_is_refused_on_assignment():
    w = nn.Linear(2, 3).weight
    with pytest.raises(ShapeError, match=r"Param.grad: assigned a gradient of shape \(3,\) to a parameter of shape"):
        w.grad = ember.ones(3)
    with pytest.raises(DTypeError, match=r"dtype ember\.float64 to a parameter of dtype ember\.float32"):
        w.grad = ember.ones(3, 2, dtype=ember.float64)
    with pytest.raises(TypeError, match="expected a Tensor or None"):
        w.grad = np.ones((3, 2))
    w.grad = ember.ones(3, 2)
    assert w.grad.shape == (3, 2)
    w.grad = None
    assert w.grad is None


def test_backward_through_a_gradient_without_create_graph_mentions_it():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    (g,) = ember.autograd.grad((x**2).sum(), x)
    with pytest.raises(RuntimeError, match="create_graph=True"):
        g.sum().backward()


def _learner(**kw):
    model = nn.Linear(2, 2)
    opt = kw.pop("optimizer", None) or SGD(model.parameters(), lr=0.1)
    return Learner(model, opt, kw.pop("loss_fn", F.cross_entropy), progress=False, plot=False, **kw)


def _loader(n=8):
    return DataLoader(TensorDataset(np.ones((n, 2), np.float32), np.zeros(n, np.int64)), batch_size=4)


def test_learner_refuses_what_would_train_nothing_or_log_nonsense():
    model = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="the optimizer holds none of the model's 2 trainable parameters"):
        Learner(model, SGD(nn.Linear(2, 2).parameters(), lr=0.1), F.cross_entropy)
    with pytest.raises(ValueError, match=r"best_metric 'valid_acc' is not one of the logged metrics \['valid_loss'"):
        _learner(best_metric="valid_acc")
    with pytest.raises(ValueError, match="the train loader yielded no batches"):
        _learner().fit(_loader(0), epochs=1)
    with pytest.raises(ValueError, match=r"loss_fn must return a single-value tensor, got \(4,\); use reduction="):
        _learner(loss_fn=lambda out, y: F.cross_entropy(out, y, reduction="none")).fit(_loader(), epochs=1)
    assert len(_learner().fit(_loader(), epochs=1)) == 1  # and the same set-up, well formed, trains
