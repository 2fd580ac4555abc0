"""``ember.data.transforms`` against references: PIL's own operations, and torchvision's tensor semantics written
out in plain torch (torchvision itself does not install with the pinned torch)."""

from __future__ import annotations

import colorsys
import math

import numpy as np
import pytest

import ember
from ember.data import _image
from ember.data import transforms as T

rng = np.random.default_rng(0)
PIL = pytest.importorskip("PIL.Image")


def image(c=3, h=9, w=11, dtype=np.float32):
    if dtype == np.uint8:
        return rng.integers(0, 256, (c, h, w), dtype=np.uint8)
    return rng.random((c, h, w)).astype(dtype)


def pil(a):
    return PIL.fromarray(a.transpose(1, 2, 0) if a.shape[0] == 3 else a[0])


@pytest.mark.parametrize("size", [(5, 7), (4, 3), (18, 25), (9, 30)])
@pytest.mark.parametrize("antialias", [True, False])
def test_resize_bilinear_matches_torch_interpolate(torch, size, antialias):
    x = image()
    out = T.Resize(size, antialias=antialias)(ember.tensor(x))
    ref = torch.nn.functional.interpolate(torch.tensor(x)[None], size=size, mode="bilinear", align_corners=False,
                                          antialias=antialias)[0]  # fmt: skip
    assert isinstance(out, ember.Tensor) and out.shape == (3, *size)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), atol=2e-6)
    near = T.Resize(size, interpolation=T.InterpolationMode.NEAREST)(x)
    ref = torch.nn.functional.interpolate(torch.tensor(x)[None], size=size, mode="nearest")[0]
    np.testing.assert_array_equal(near, ref.numpy())


def test_resize_pil_images_like_pil_and_the_shorter_side_rule():
    a = image(dtype=np.uint8, h=20, w=30)
    out = T.Resize((8, 13))(pil(a))
    assert out.size == (13, 8)
    ref = np.asarray(pil(a).resize((13, 8), PIL.Resampling.BILINEAR)).astype(int)
    assert np.abs(np.asarray(out).astype(int) - ref).max() <= 1  # PIL's filter, rounding aside
    assert T.Resize(10)(ember.tensor(image(h=20, w=30))).shape == (3, 10, 15)  # shorter side -> 10
    assert T.Resize(10)(ember.tensor(image(h=30, w=20))).shape == (3, 15, 10)
    assert T.Resize(10, max_size=12)(ember.tensor(image(h=20, w=30))).shape == (3, 8, 12)


@pytest.mark.parametrize("size", [(5, 7), (9, 11), (12, 4), (3, 15)])
def test_center_crop_pads_and_centres_as_torchvision(size):
    x = image()
    out = T.CenterCrop(size)(x)
    h, w, (th, tw) = 9, 11, size
    padded = np.pad(x, [(0, 0), ((max(th - h, 0)) // 2, (max(th - h, 0) + 1) // 2),
                        (max(tw - w, 0) // 2, (max(tw - w, 0) + 1) // 2)])  # fmt: skip
    ph, pw = padded.shape[1:]
    top, left = round((ph - th) / 2.0), round((pw - tw) / 2.0)
    np.testing.assert_array_equal(out, padded[:, top : top + th, left : left + tw])
    assert T.CenterCrop(5)(pil(image(dtype=np.uint8))).size == (5, 5)


@pytest.mark.parametrize(("mode", "torch_mode"), [("constant", "constant"), ("edge", "replicate"),
                                                  ("reflect", "reflect")])  # fmt: skip
def test_pad_modes_match_torch(torch, mode, torch_mode):
    x = image()
    # torchvision's (left/right, top/bottom) and (left, top, right, bottom) as torch's (left, right, top, bottom)
    for padding, lrtb in ((2, (2, 2, 2, 2)), ((1, 3), (1, 1, 3, 3)), ((1, 2, 3, 4), (1, 3, 2, 4))):
        out = T.Pad(padding, padding_mode=mode)(ember.tensor(x))
        ref = torch.nn.functional.pad(torch.tensor(x)[None], lrtb, mode=torch_mode)[0]
        np.testing.assert_array_equal(out.numpy(), ref.numpy())
    filled = T.Pad(1, fill=(0.1, 0.2, 0.3))(x)
    np.testing.assert_allclose(filled[:, 0, 0], [0.1, 0.2, 0.3], rtol=1e-6)
    sym = T.Pad(2, padding_mode="symmetric")(x)
    np.testing.assert_array_equal(sym, np.pad(x, [(0, 0), (2, 2), (2, 2)], mode="symmetric"))
    with pytest.raises(ValueError, match="padding_mode must be"):
        T.Pad(1, padding_mode="wrap")


def _torch_blur(torch, x, k, sigma):
    t = torch.linspace(-(k - 1) / 2, (k - 1) / 2, k, dtype=torch.float64)
    kernel = torch.exp(-0.5 * (t / sigma) ** 2)
    kernel = (kernel / kernel.sum()).float()
    weight = (kernel[:, None] * kernel[None, :]).expand(x.shape[0], 1, k, k)
    padded = torch.nn.functional.pad(x[None].float(), (k // 2,) * 4, mode="reflect")
    return torch.nn.functional.conv2d(padded, weight, groups=x.shape[0])[0]


@pytest.mark.parametrize(("k", "sigma"), [(3, 0.8), (5, 1.5), (7, 3.0)])
def test_gaussian_blur_matches_a_torch_convolution(torch, k, sigma):
    x = image()
    out = T.GaussianBlur(k, sigma=sigma)(ember.tensor(x))
    np.testing.assert_allclose(out.numpy(), _torch_blur(torch, torch.tensor(x), k, sigma).numpy(), atol=1e-6)
    u = image(dtype=np.uint8)
    out_u = T.GaussianBlur(k, sigma=sigma)(u)
    ref_u = torch.round(_torch_blur(torch, torch.tensor(u), k, sigma)).clamp(0, 255).to(torch.uint8)
    assert out_u.dtype == np.uint8 and np.abs(out_u.astype(int) - ref_u.numpy().astype(int)).max() <= 1
    drawn = T.GaussianBlur(3, sigma=(0.1, 2.0), generator=np.random.default_rng(1))
    assert drawn(x).shape == x.shape
    with pytest.raises(ValueError, match="odd"):
        T.GaussianBlur(4)


def test_color_adjustments_match_pil_image_enhance():
    from PIL import ImageEnhance

    a = image(dtype=np.uint8, h=16, w=16)
    for kind, enhancer in (("brightness", ImageEnhance.Brightness), ("contrast", ImageEnhance.Contrast),
                           ("saturation", ImageEnhance.Color)):  # fmt: skip
        for factor in (0.3, 1.0, 1.7):
            out = _image.adjust(a, kind, factor).astype(int)
            ref = np.asarray(enhancer(pil(a)).enhance(factor)).transpose(2, 0, 1).astype(int)
            assert np.abs(out - ref).max() <= 2, (kind, factor, np.abs(out - ref).max())


def test_hue_shift_matches_colorsys():
    x = image(h=4, w=5).astype(np.float64)
    for factor in (-0.4, 0.1, 0.5):
        out = _image.adjust(x, "hue", factor)
        ref = np.empty_like(x)
        for i in range(4):
            for j in range(5):
                hh, s, v = colorsys.rgb_to_hsv(*x[:, i, j])
                ref[:, i, j] = colorsys.hsv_to_rgb((hh + factor) % 1.0, s, v)
        np.testing.assert_allclose(out, ref, atol=1e-9)
    gray = image(c=1)
    assert np.array_equal(_image.adjust(gray, "hue", 0.3), gray)


def test_color_jitter_draws_factors_in_range_and_keeps_the_kind():
    jitter = T.ColorJitter(
        brightness=0.4, contrast=(0.5, 0.6), saturation=0.2, hue=0.1, generator=np.random.default_rng(0)
    )
    for _ in range(20):
        order, (b, c, s, h) = jitter.get_params()
        assert sorted(order) == [0, 1, 2, 3]
        assert 0.6 <= b <= 1.4 and 0.5 <= c <= 0.6 and 0.8 <= s <= 1.2 and -0.1 <= h <= 0.1
    assert isinstance(jitter(pil(image(dtype=np.uint8))), PIL.Image)
    out = jitter(ember.tensor(image()))
    assert isinstance(out, ember.Tensor) and out.numpy().min() >= 0 and out.numpy().max() <= 1
    assert T.ColorJitter(brightness=0).get_params()[1] == [None, None, None, None]
    with pytest.raises(ValueError, match="hue must lie in"):
        T.ColorJitter(hue=0.7)


@pytest.mark.parametrize("expand", [False, True])
@pytest.mark.parametrize("center", [None, (2, 3)])
def test_rotation_nearest_matches_pil_rotate(expand, center):
    a = image(dtype=np.uint8, h=10, w=7)
    for angle in (17.0, -63.5, 90.0, 200.0):
        ref = np.asarray(pil(a).rotate(angle, resample=PIL.Resampling.NEAREST, expand=expand, center=center,
                                       fillcolor=(0, 0, 0))).transpose(2, 0, 1)  # fmt: skip
        out = _image.rotate(a, angle, "nearest", expand, center, 0)
        assert out.shape == ref.shape
        assert (out != ref).any(axis=0).mean() < 0.03  # ties at exact pixel boundaries may round either way


def test_rotation_bilinear_matches_torch_grid_sample(torch):
    x = image(h=7, w=9)
    for angle in (10.0, -47.0, 123.0):
        m, w, h = _image._rotation_matrix(angle, 9, 7, None, False)
        yy, xx = torch.meshgrid(torch.arange(h) + 0.5, torch.arange(w) + 0.5, indexing="ij")
        sx, sy = m[0] * xx + m[1] * yy + m[2], m[3] * xx + m[4] * yy + m[5]
        grid = torch.stack([sx / w * 2 - 1, sy / h * 2 - 1], -1)[None].float()
        ref = torch.nn.functional.grid_sample(torch.tensor(x)[None], grid, mode="bilinear", padding_mode="zeros",
                                              align_corners=False)[0]  # fmt: skip
        np.testing.assert_allclose(_image.rotate(x, angle, "bilinear"), ref.numpy(), atol=2e-6)
    rot = T.RandomRotation((30, 30), interpolation=T.InterpolationMode.BILINEAR, fill=0.5)
    corner = rot(ember.tensor(x)).numpy()[:, 0, 0]
    np.testing.assert_allclose(corner, 0.5, atol=1e-6)  # the corner comes from outside: fill


def test_random_resized_crop_draws_boxes_as_specified():
    crop = T.RandomResizedCrop(8, scale=(0.2, 0.5), ratio=(0.5, 2.0), generator=np.random.default_rng(0))
    for _ in range(50):
        top, left, h, w = crop.get_params(40, 60)
        assert 0 <= top <= 40 - h and 0 <= left <= 60 - w
        assert 0.2 * 2400 * 0.85 <= h * w <= 0.5 * 2400 * 1.15 and 0.4 <= w / h <= 2.5
    impossible = T.RandomResizedCrop(8, scale=(2.0, 3.0), ratio=(1.0, 1.0), generator=np.random.default_rng(0))
    assert impossible.get_params(10, 20) == (0, 5, 10, 10)  # the fallback: central crop at the clamped ratio
    x = image(h=40, w=60)
    g1, g2 = np.random.default_rng(5), np.random.default_rng(5)
    out = T.RandomResizedCrop(8, generator=g1)(ember.tensor(x))
    top, left, h, w = T.RandomResizedCrop(8, generator=g2).get_params(40, 60)
    expected = T.Resize((8, 8))(x[:, top : top + h, left : left + w])
    np.testing.assert_allclose(out.numpy(), expected, atol=1e-6)
    assert T.RandomResizedCrop((6, 9))(pil(image(dtype=np.uint8, h=30, w=30))).size == (9, 6)


def test_random_erasing_erases_one_box_of_the_right_size():
    x = ember.tensor(image(h=32, w=32))
    out = T.RandomErasing(p=1.0, value=0, generator=np.random.default_rng(3))(x).numpy()
    erased = (out == 0).all(axis=0)
    rows, cols = np.nonzero(erased)
    h, w = rows.max() - rows.min() + 1, cols.max() - cols.min() + 1
    assert erased.sum() == h * w and 0.02 * 1024 * 0.8 <= h * w <= 0.33 * 1024 * 1.2
    assert 0.3 * 0.7 <= h / w <= 3.3 * 1.3
    np.testing.assert_array_equal(out[:, ~erased], x.numpy()[:, ~erased])
    assert T.RandomErasing(p=0.0)(x) is x
    noisy = T.RandomErasing(p=1.0, value="random", generator=np.random.default_rng(3))(x).numpy()
    assert (noisy != x.numpy()).any() and np.isfinite(noisy).all()
    y = ember.tensor(image(h=32, w=32))
    same = T.RandomErasing(p=1.0, value=(1.0, 2.0, 3.0), inplace=True, generator=np.random.default_rng(3))(y)
    assert same is y and (y.numpy() == 3.0).any()
    with pytest.raises(TypeError, match="Tensor image"):
        T.RandomErasing(p=1.0)(pil(image(dtype=np.uint8)))


def test_pil_to_tensor_convert_image_dtype_and_to_tensor():
    a = image(dtype=np.uint8)
    t = T.PILToTensor()(pil(a))
    assert t.dtype == ember.uint8 and np.array_equal(t.numpy(), a)
    f = T.ConvertImageDtype(ember.float32)(t)
    np.testing.assert_allclose(f.numpy(), a / 255.0, rtol=1e-6)
    back = T.ConvertImageDtype(ember.uint8)(f)
    np.testing.assert_array_equal(back.numpy(), (a / 255.0 * (256 - 1e-3)).astype(np.uint8))
    np.testing.assert_array_equal(back.numpy(), a)  # the round trip is exact
    np.testing.assert_allclose(T.ToTensor()(pil(a)).numpy(), a / 255.0, rtol=1e-6)
    np.testing.assert_allclose(T.ToTensor()(t).numpy(), a / 255.0, rtol=1e-6)  # a (C, H, W) uint8 Tensor
    with pytest.raises(RuntimeError, match="cannot be done safely"):
        T.ConvertImageDtype(ember.int32)(f)
    with pytest.raises(TypeError, match="expected a PIL Image"):
        T.PILToTensor()(a)


def test_a_torchvision_style_pipeline_on_pil_images_and_tensors():
    pipeline = T.Compose([T.RandomResizedCrop(16, generator=np.random.default_rng(0)),
                          T.RandomHorizontalFlip(generator=np.random.default_rng(0)), T.ToTensor(),
                          T.Normalize([0.5] * 3, [0.25] * 3)])  # fmt: skip
    out = pipeline(pil(image(dtype=np.uint8, h=40, w=30)))
    assert isinstance(out, ember.Tensor) and out.shape == (3, 16, 16) and out.dtype == ember.float32
    cifar_style = T.Compose([T.RandomCrop(8, padding=2, generator=np.random.default_rng(0)),
                             T.ConvertImageDtype(ember.float32)])  # fmt: skip
    out = cifar_style(ember.tensor(image(dtype=np.uint8, h=8, w=8)))
    assert out.shape == (3, 8, 8) and out.dtype == ember.float32
    assert math.isclose(float(out.max().item()), float(out.numpy().max()))


@pytest.mark.parametrize("name", ["torch", "numpy"])
def test_tensor_transforms_keep_the_input_backend(name):
    if name == "torch":
        pytest.importorskip("torch")
    dev = ember.backends.get(name, "cpu")
    img = ember.rand(3, 8, 8, device=dev)
    for t in (T.Normalize([0.5] * 3, [0.2] * 3), T.Resize(4), T.ConvertImageDtype(ember.float64),
              T.RandomErasing(p=1.0), T.RandomErasing(p=1.0, inplace=True)):  # fmt: skip
        out = t(img.clone())
        assert out.device == img.device and out._backend is img._backend, type(t).__name__
