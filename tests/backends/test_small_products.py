"""Small products on one OpenBLAS thread (``backends/_blas_threads.matmul``, the NumPy backend's ``gemm``): which
products run on one thread, the same bits as OpenBLAS's split product in float32 (float64 and complex: close; OpenBLAS's
own results on one and two threads differ there), the thread count put back (after an error,
and with products from several Python threads at once), and the convolution and ``linear`` kernels going through
it. Each case runs in a fresh process with two OpenBLAS threads."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

_SPY = """
import json, threading
import numpy as np
import ember
from ember.backends import _blas_threads as bt
fns = bt._find()
get = fns[0] if fns else (lambda: 0)
real = np.matmul
seen = []
big = []  # the same, for products that OpenBLAS would split (over bt._SPLIT_MIN multiply-adds a matrix)
small = []  # per product: one OpenBLAS would split but for its unthreaded small-matrix kernels (made as is)

class Spy:  # the module's NumPy, with a matmul that notes OpenBLAS's thread count at each product
    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def matmul(a, b, out=None):
        seen.append(int(get()))
        mkn = a.shape[-2] * a.shape[-1] * b.shape[-1] if a.ndim >= 2 and b.ndim >= 2 else 0
        small.append(bool(mkn > bt._SPLIT_MIN and bt._small_kernel(a, b, mkn)))
        if mkn > bt._SPLIT_MIN and not small[-1]:
            big.append(int(get()))
        return real(a, b) if out is None else real(a, b, out=out)

bt.np = Spy()
rng = np.random.default_rng(0)
res = {"openblas": bool(fns) and get() == 2}
"""


def _run(code: str) -> dict:
    # the NumPy backend on the CPU, whatever the suite's own default (make test-cuda: EMBER_DEVICE=cuda)
    drop = ("OMP_NUM_THREADS", "EMBER_KERNEL_THREADS", "EMBER_BACKEND", "EMBER_DEVICE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["OPENBLAS_NUM_THREADS"] = "2"
    out = subprocess.run([sys.executable, "-c", _SPY + textwrap.dedent(code) + "\nprint(json.dumps(res))"],
                         capture_output=True, text=True, env=env, timeout=180, check=False)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if not result["openblas"]:
        pytest.skip("NumPy's BLAS here is not an OpenBLAS whose thread count can be set")
    return result


def test_which_products_run_on_one_thread_and_their_bits():
    r = _run("""
    fns[1](1)
    b1 = {}  # references on one OpenBLAS thread, then on two
    cases = {
        "small": ((64, 400), (400, 120), "f"),  # 3.1e6 multiply-adds (LeNet-5's first linear): one thread
        "float64": ((64, 400), (400, 120), "d"),
        "complex": ((64, 100), (100, 120), "F"),
        "batched": ((4, 96, 96), (96, 96), "f"),  # 8.8e5 per matrix, 3.5e6 in all
        "winograd": ((16, 64, 64), (16, 64, 2176), "f"),  # a Winograd layer's 16 products (1.4e8): split, one each
        "winograd_2d": ((16, 64, 64), (64, 2176), "d"),
        "winograd_view": ((16, 64, 2176), (16, 2176, 64), "f"),  # dU = dM V^T (below: V^T a strided view)
        "tiny": ((8, 8), (8, 8), "f"),  # not split by OpenBLAS: nothing to do
        "unsplit": ((64, 64), (64, 120), "f"),  # 4.9e5 per matrix: under OpenBLAS's own threshold
        "conv2": ((16, 150), (150, 6400), "f"),  # LeNet-5's second convolution: 1.5e7, OpenBLAS's threads
        "large": ((512, 512), (512, 128), "f"),  # 3.4e7: keeps OpenBLAS's threads
        "broadcast": ((64, 64), (16, 64, 2176), "f"),  # a batch other than _split_ok's: OpenBLAS's threads
        "ints": ((64, 400), (400, 120), "l"),
        # 6.5e5: OpenBLAS's small-matrix kernels (unthreaded) take these on SkylakeX-type cores, but not a
        # transposed b when M*N > 1200 (small_bt: LeNet-5's x @ W^T), which OpenBLAS would split
        "small_nn": ((64, 84), (84, 120), "f"),
        "small_nn_d": ((64, 84), (84, 120), "d"),
        "small_at": ((84, 64), (64, 120), "f"),
        "small_bt": ((64, 120), (120, 84), "f"),
        "empty": ((0, 400), (400, 120), "f"),
        "vector": ((4000, 400), (400,), "f"),
    }
    ops = {}
    for name, (sa, sb, dt) in cases.items():
        a, b = (rng.standard_normal(s).astype(dt) for s in (sa, sb))
        if dt == "F":
            a, b = a + 1j * rng.standard_normal(sa).astype("f"), b - 2j * rng.standard_normal(sb).astype("f")
        if name == "winograd_view":
            b = np.ascontiguousarray(b.transpose(0, 2, 1)).transpose(0, 2, 1)
        if name == "small_bt":
            b = np.ascontiguousarray(b.T).T
        if name == "small_at":
            a = np.ascontiguousarray(a.T).T
        ops[name] = a, b
        b1[name] = real(a, b).tobytes()
    fns[1](2)
    res["small_mnk"] = bt.small_gemm_mnk() >= 1e6
    for name, (a, b) in ops.items():
        ref2 = real(a, b).tobytes()
        seen.clear()
        y = bt.matmul(a, b)
        out = np.empty_like(y)
        z = bt.matmul(a, b, out=out)
        bits = "one" if y.tobytes() == b1[name] else "two" if y.tobytes() == ref2 else "other"
        res[name] = [sorted(set(seen)), bits, z is out and out.tobytes() == y.tobytes(), get(), b1[name] == ref2]
    """)
    for name in ("small", "float64", "complex", "batched", "winograd", "winograd_2d", "winograd_view", "small_bt"):
        assert r[name][:4] == [[1], "one", True, 2], name  # one OpenBLAS thread: the bits of OpenBLAS on one
    for name in ("small_nn", "small_nn_d", "small_at"):
        if r["small_mnk"]:  # made as is: OpenBLAS's small-matrix kernel, the same bits on one thread and two
            assert r[name] == [[2], "one", True, 2, True], name
        else:
            assert r[name][:4] == [[1], "one", True, 2], name
    for name in ("tiny", "unsplit", "conv2", "large", "broadcast", "ints", "empty", "vector"):
        assert r[name][0] == [2] and r[name][2:4] == [True, 2], name
        assert r[name][1] == "two" or (r[name][1] == "one" and r[name][4]), name
    # (some shapes do differ between the two)
    assert not all(r[name][4] for name in r if name not in ("openblas", "small_mnk"))


def test_the_thread_count_is_put_back_after_errors_and_across_python_threads():
    r = _run("""
    a, b = rng.standard_normal((64, 400)).astype("f"), rng.standard_normal((400, 120)).astype("f")
    try:
        bt.matmul(a, b, out=np.empty((64, 121), "f"))  # a wrong out: NumPy raises inside the one-thread span
    except ValueError:
        res["raised"] = get()
    ref = real(a, b).tobytes()
    ok = []

    def worker():
        ok.append(all(bt.matmul(a, b).tobytes() == ref for _ in range(200)))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    res["threads"] = [ok, get(), bt._one_depth]
    bt._fns = ()  # another BLAS (no OpenBLAS thread control): every product as NumPy makes it, not split
    w = rng.standard_normal((16, 64, 64)).astype("f"), rng.standard_normal((16, 64, 2176)).astype("f")
    seen.clear()
    res["other_blas"] = [bt.matmul(a, b).tobytes() == ref, bt.matmul(*w).tobytes() == real(*w).tobytes(), seen[:]]
    bt._fns = None
    ember.set_num_threads(1)  # the user's setting: nothing to put back
    seen.clear()
    bt.matmul(a, b)
    res["user_one"] = [seen[:], get()]
    """)
    assert r["raised"] == 2
    assert r["other_blas"] == [True, True, [2, 2]]
    assert r["threads"] == [[True] * 4, 2, 0]
    assert r["user_one"] == [[1], 1]


def test_convolution_and_linear_products_go_through_it():
    r = _run("""
    import ember.nn.functional as F
    model = ember.models.LeNet5Config().init()
    x, y = ember.randn(64, 1, 28, 28), ember.randint(0, 10, (64,))
    F.cross_entropy(model(x), y).backward()
    res["lenet"] = [sorted(set(seen)), len(seen), get(), sum(small)]
    for shape in ((8, 64, 32, 32), (1, 128, 32, 32)):  # Winograd F(4x4, 3x3) and F(2x2, 3x3): batches of 36 or
        big.clear()  # 16 products, split; the transforms' small products run on one thread or on OpenBLAS's
        conv = ember.nn.Conv2d(shape[1], shape[1], 3, padding=1, bias=False)  # small-matrix kernels
        conv(ember.randn(*shape, requires_grad=True)).sum().backward()
        res[f"winograd {shape[0]}"] = [sorted(set(big)), len(big), get()]
    res["small_mnk"] = bt.small_gemm_mnk() >= 1e6
    """)
    # LeNet-5's (64, 84) x (84, 120) and (84, 64) x (64, 120): on OpenBLAS's small-matrix kernels where it has them
    assert r["lenet"][3] == (2 if r["small_mnk"] else 0)
    assert r["lenet"][0] == [1, 2] and r["lenet"][1] >= 9 and r["lenet"][2] == 2  # the linear layers' on one
    for n in (8, 1):  # (a part per range)
        assert r[f"winograd {n}"][0] == [1] and r[f"winograd {n}"][1] >= 3 and r[f"winograd {n}"][2] == 2


_MATMUL_NET = """
    class MatMulNet(ember.nn.Module):  # a product by ``@`` (ops/_blas.MatMul): (64, 120) x (120, 300), 2.3e6
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = ember.nn.Linear(400, 120), ember.nn.Linear(300, 10)
            self.q = ember.nn.Parameter(ember.randn(120, 300) * 0.1)

        def forward(self, x):
            return self.fc2(ember.relu(ember.relu(self.fc1(x)) @ self.q))
"""


@pytest.mark.parametrize("model", ["linear", "matmul"])
def test_compiled_float64_replays_match_eager(model):
    # OpenBLAS's one- and two-thread products differ in float64: a replay must run the product on one thread too
    make_model = (
        "ember.nn.Sequential(ember.nn.Linear(400, 120), ember.nn.ReLU(), ember.nn.Linear(120, 10))"
        if model == "linear"
        else "MatMulNet()"
    )
    r = _run(
        _MATMUL_NET
        + f"""
    import copy
    import ember.nn.functional as F
    ember.manual_seed(0)
    m1 = {make_model}.double()
    m2 = copy.deepcopy(m1)
    o1, o2 = (ember.optim.SGD(m.parameters(), lr=0.1) for m in (m1, m2))

    def make(m, o):
        def step(x, y):
            o.zero_grad()
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            o.step()
            return loss
        return step

    eager, compiled = make(m1, o1), ember.compile(make(m2, o2))
    same = []
    for i in range(5):
        x = ember.tensor(rng.standard_normal((64, 400)))
        y = ember.tensor(rng.integers(0, 10, 64))
        same.append(eager(x, y).item() == compiled(x, y).item())
        pairs = zip(m1.parameters(), m2.parameters())
        same.append(all((p.detach().numpy() == q.detach().numpy()).all() for p, q in pairs))
    res["compiled"] = [same, compiled.stats["replays"], 1 in seen, get()]
    seen.clear()
    h = ember.tensor(rng.standard_normal((64, 120)), requires_grad=True)
    q = ember.tensor(rng.standard_normal((120, 300)), requires_grad=True)
    (h @ q).sum().backward()  # forward, h.grad (a transposed b) and q.grad (a transposed a): one thread each
    res["matmul"] = seen[:]
    """
    )
    assert r["matmul"] == [1, 1, 1]
    assert r["compiled"][0] == [True] * 10
    assert r["compiled"][1] >= 2 and r["compiled"][2] is True and r["compiled"][3] == 2


def test_a_batch_with_small_outputs_and_long_sums_is_split_by_its_work(monkeypatch):
    # Winograd's dU = dM V^T: (36, 64, 576) by (36, 576, 64), outputs of 147K elements but 8.5e7 multiply-adds;
    # parallel_blocks sees its work (K / _MACS_PER_ELEMENT elements per output), so it splits over the kernel
    # threads, every matrix still one single-threaded product: the bits of the whole batch on one thread
    import numpy as np

    import ember.backends._blas_threads as bt
    import ember.backends._kernels_threads as kt

    sizes = []
    real = kt.parallel_blocks
    monkeypatch.setattr(kt, "parallel_blocks", lambda xp, n, size, fn: sizes.append(size) or real(xp, n, size, fn))
    monkeypatch.setattr(kt, "kernel_threads", lambda: 2)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((36, 64, 576)).astype(np.float32)
    b = np.ascontiguousarray(rng.standard_normal((36, 64, 576)).astype(np.float32)).transpose(0, 2, 1)
    y = bt._one_thread_matmul(a, b)
    assert sizes == [36 * 64 * 64 * (576 // bt._MACS_PER_ELEMENT)] and sizes[0] >= 2 * kt._MIN_ROWS_PART
    bt._one_thread(True)
    try:
        ref = np.stack([np.matmul(a[i], b[i]) for i in range(36)])
    finally:
        bt._one_thread(False)
    np.testing.assert_array_equal(y, ref)
