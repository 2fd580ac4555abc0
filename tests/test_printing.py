import ember


def test_spec_example_4d_slices_in_memory_order():
    expected = "\n".join(
        [
            "(0,0,.,.) = ",
            "     0       1       2",
            "     3       4       5",
            "(0,1,.,.) = ",
            "     6       7       8",
            "     9      10      11",
            "(0,2,.,.) = ",
            "    12      13      14",
            "    15      16      17",
            "(1,0,.,.) = ",
            "    18      19      20",
            "    21      22      23",
            "(1,1,.,.) = ",
            "    24      25      26",
            "    27      28      29",
            "(1,2,.,.) = ",
            "    30      31      32",
            "    33      34      35",
            "",
            " Tensor(shape=[2, 3, 2, 3], dtype=float32, device=cpu)",
        ]
    )
    assert str(ember.arange(36, dtype=ember.float32, device="cpu").reshape(2, 3, 2, 3)) == expected


def test_scalar_vector_matrix():
    assert str(ember.tensor(1.0)) == "(1.0)"
    assert str(ember.tensor([1.0, 2.0, 3.0])) == "[1.0, 2.0, 3.0]"
    assert str(ember.tensor([[1, 2, 3], [4, 5, 6]])) == "[[1, 2, 3],\n [4, 5, 6]]"


def test_grad_state_shown():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x) == "[1.0, 2.0], requires_grad=True"
    assert repr(x * 2).endswith("grad_fn=<MulBackward0>")


def test_large_tensor_summarised():
    s = str(ember.arange(5000))
    assert "..." in s and s.startswith("[0, 1, 2, ...") and s.endswith("4999]")


def test_set_printoptions_precision_summary_and_notation():
    x = ember.tensor([3.14159265, 2.0, 1e-5], dtype=ember.float64)
    big = ember.arange(20, dtype=ember.float32)
    try:
        assert str(x).startswith("[3.142, 2.0, 1e-05]")
        ember.set_printoptions(precision=6)
        assert str(x).startswith("[3.14159, 2.0, 1e-05]")
        ember.set_printoptions(sci_mode=False, precision=3)
        assert str(x).startswith("[3.142, 2.000, 0.000]")
        ember.set_printoptions(sci_mode=True, precision=2)
        assert str(x).startswith("[3.14e+00, 2.00e+00, 1.00e-05]")
        ember.set_printoptions(profile="default", threshold=10, edgeitems=2)
        assert str(big) == "[0.0, 1.0, ..., 18.0, 19.0]"
        ember.set_printoptions(profile="full")
        assert "..." not in str(ember.arange(2000))
    finally:
        ember.set_printoptions(profile="default")
    assert str(x).startswith("[3.142, 2.0, 1e-05]") and "..." in str(ember.arange(2000))
