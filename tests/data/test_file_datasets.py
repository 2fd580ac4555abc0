"""Data sets from their real file formats, written by the tests in those formats: CIFAR binary batches, SVHN
``.mat``, image folders, text corpora; the downloaders fetch ``file://`` URLs of archives the tests build."""

from __future__ import annotations

import hashlib
import tarfile
import warnings
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.data import CIFAR10, CIFAR100, SVHN, DataLoader, DatasetFolder, ImageFolder, TextCorpus, Vocab
from ember.data import transforms as T

rng = np.random.default_rng(0)


def cifar_records(n, label_bytes, seed=0):
    r = np.random.default_rng(seed)
    labels = r.integers(0, 10, (n, label_bytes), dtype=np.uint8)
    pixels = r.integers(0, 256, (n, 3, 32, 32), dtype=np.uint8)
    return labels, pixels, np.concatenate([labels, pixels.reshape(n, -1)], axis=1).tobytes()


def write_cifar10(root, n=4):
    folder = root / "cifar-10-batches-bin"
    folder.mkdir(parents=True)
    parts = []
    for i, name in enumerate([*(f"data_batch_{k}.bin" for k in range(1, 6)), "test_batch.bin"]):
        labels, pixels, raw = cifar_records(n, 1, seed=i)
        (folder / name).write_bytes(raw)
        parts.append((labels[:, 0], pixels))
    return parts


def test_cifar10_reads_the_binary_batches_in_order(tmp_path):
    parts = write_cifar10(tmp_path)
    train, test = CIFAR10(tmp_path), CIFAR10(tmp_path, train=False)
    assert len(train) == 20 and len(test) == 4
    np.testing.assert_array_equal(train.data, np.concatenate([p[1] for p in parts[:5]]))
    assert train.targets == np.concatenate([p[0] for p in parts[:5]]).tolist()
    img, target = test[1]
    assert img.dtype == ember.uint8 and img.shape == (3, 32, 32) and target.item() == parts[5][0][1]
    np.testing.assert_array_equal(img.numpy(), parts[5][1][1])
    x, y = next(iter(DataLoader(train, batch_size=8)))
    assert x.shape == (8, 3, 32, 32) and y.dtype == ember.int64
    t = CIFAR10(tmp_path, transform=T.ConvertImageDtype(ember.float32), target_transform=lambda y: int(y) + 100)
    img, target = t[0]
    assert img.dtype == ember.float32 and float(img.numpy().max()) <= 1.0 and target >= 100
    assert train.classes[3] == "cat" and train.class_to_idx["truck"] == 9


def test_cifar100_fine_and_coarse_labels(tmp_path):
    folder = tmp_path / "cifar-100-binary"
    folder.mkdir()
    labels, pixels, raw = cifar_records(5, 2)
    (folder / "train.bin").write_bytes(raw)
    (folder / "test.bin").write_bytes(raw)
    (folder / "fine_label_names.txt").write_text("\n".join(f"name{i}" for i in range(100)))
    ds = CIFAR100(tmp_path)
    assert ds.targets == labels[:, 1].tolist() and ds.coarse_targets.tolist() == labels[:, 0].tolist()
    assert ds.classes[7] == "name7"
    np.testing.assert_array_equal(ds.data, pixels)


def test_a_cifar_file_of_the_wrong_size_is_refused_naming_it(tmp_path):
    write_cifar10(tmp_path)
    bad = tmp_path / "cifar-10-batches-bin" / "data_batch_3.bin"
    bad.write_bytes(bad.read_bytes()[:-100])
    with pytest.raises(ValueError, match=r"data_batch_3\.bin: 12192 bytes is not a whole number of 3073-byte"):
        CIFAR10(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"test_batch\.bin missing .* download=True"):
        CIFAR10(tmp_path / "elsewhere", train=False)


def test_cifar_download_fetches_checks_and_unpacks_the_archive(tmp_path, monkeypatch):
    source = tmp_path / "source"
    write_cifar10(source)
    archive = tmp_path / "cifar-10-binary.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(source / "cifar-10-batches-bin", arcname="cifar-10-batches-bin")
    monkeypatch.setattr(CIFAR10, "url", archive.as_uri())
    monkeypatch.setattr(CIFAR10, "md5", hashlib.md5(archive.read_bytes()).hexdigest())
    ds = CIFAR10(tmp_path / "root", train=False, download=True)
    assert len(ds) == 4 and (tmp_path / "root" / "cifar-10-binary.tar.gz").exists()
    monkeypatch.setattr(CIFAR10, "md5", "0" * 32)
    with pytest.raises(ValueError, match="md5 mismatch"):
        CIFAR10(tmp_path / "other", download=True)
    assert not (tmp_path / "other" / "cifar-10-binary.tar.gz").exists()  # nothing half-written


def test_svhn_reads_mat_files(tmp_path):
    sio = pytest.importorskip("scipy.io")
    x = rng.integers(0, 256, (32, 32, 3, 6), dtype=np.uint8)
    y = np.array([[10], [1], [2], [10], [9], [5]], dtype=np.uint8)
    sio.savemat(tmp_path / "test_32x32.mat", {"X": x, "y": y})
    ds = SVHN(tmp_path, split="test")
    assert ds.targets == [0, 1, 2, 0, 9, 5]
    img, _ = ds[4]
    np.testing.assert_array_equal(img.numpy(), x[:, :, :, 4].transpose(2, 0, 1))
    (tmp_path / "train_32x32.mat").write_bytes(b"MATLAB 5.0 MAT-file, but then nothing")
    with pytest.raises(ValueError, match=r"train_32x32\.mat: not a readable MATLAB \.mat file"):
        SVHN(tmp_path)
    sio.savemat(tmp_path / "extra_32x32.mat", {"images": x})
    with pytest.raises(ValueError, match="expected arrays 'X' and 'y', found \\['images'\\]"):
        SVHN(tmp_path, split="extra")
    with pytest.raises(ValueError, match="split must be one of"):
        SVHN(tmp_path, split="valid")


def write_folder(root, classes=("cat", "dog"), per_class=3, size=(6, 5)):
    from PIL import Image

    expected = []
    for c, name in enumerate(classes):
        (root / name / "sub").mkdir(parents=True)
        for i in range(per_class):
            a = rng.integers(0, 256, (*size, 3), dtype=np.uint8)
            path = root / name / ("sub" if i == 0 else "") / f"{i}.png"
            Image.fromarray(a).save(path)
            expected.append((str(path), c, a))
        (root / name / "notes.txt").write_text("not an image")
    return sorted(expected, key=lambda e: (e[1], e[0]))


def test_image_folder_finds_classes_and_loads_rgb_images(tmp_path):
    pytest.importorskip("PIL")
    expected = write_folder(tmp_path)
    ds = ImageFolder(tmp_path, transform=T.ToTensor())
    assert ds.classes == ["cat", "dog"] and ds.class_to_idx == {"cat": 0, "dog": 1}
    assert sorted(ds.samples) == sorted((p, c) for p, c, _ in expected) and len(ds) == 6
    assert ds.targets == [0, 0, 0, 1, 1, 1]
    for i, (path, target) in enumerate(ds.samples):
        img, t = ds[i]
        a = next(e[2] for e in expected if e[0] == path)
        assert t == target and img.shape == (3, 6, 5)
        np.testing.assert_allclose(img.numpy(), a.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    x, y = next(iter(DataLoader(ds, batch_size=4)))
    assert x.shape == (4, 3, 6, 5) and y.tolist() == [0, 0, 0, 1]
    texts = DatasetFolder(tmp_path, loader=lambda p: Path(p).read_text(), extensions=(".txt",))
    assert [texts[i][0] for i in range(len(texts))] == ["not an image"] * 2


def test_a_corrupt_image_is_named_with_its_index_or_skipped(tmp_path):
    pytest.importorskip("PIL")
    write_folder(tmp_path)
    ds = ImageFolder(tmp_path)
    bad_index, (bad_path, _) = 4, ds.samples[4]
    with open(bad_path, "r+b") as f:
        f.truncate(30)
    with pytest.raises(ValueError, match=rf"cannot read sample 4 \({bad_path}\).*skip_corrupt=True"):
        ds[bad_index]
    skipping = ImageFolder(tmp_path, skip_corrupt=True)
    with pytest.warns(RuntimeWarning, match=rf"skipping unreadable sample 4 \({bad_path}\)"):
        _img, target = skipping[4]
    assert target == skipping.samples[5][1] and skipping.corrupt == [bad_path]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once per file
        assert len([skipping[i] for i in range(len(skipping))]) == 6


def test_image_folder_bad_layouts(tmp_path):
    pytest.importorskip("PIL")
    with pytest.raises(FileNotFoundError, match="no class folders"):
        ImageFolder(tmp_path)
    (tmp_path / "empty_class").mkdir()
    write_folder(tmp_path, classes=("a",))
    with pytest.raises(FileNotFoundError, match="no valid file for the classes empty_class"):
        ImageFolder(tmp_path)
    assert len(ImageFolder(tmp_path, allow_empty=True)) == 3


def test_vocab_and_character_corpus(tmp_path):
    text = "hello world\nhello there\n"
    path = tmp_path / "corpus.txt"
    path.write_text(text)
    corpus = TextCorpus(path, level="char", seq_len=5)
    assert corpus.vocab.itos[:2] == ["l", "e"]  # most frequent first, ties by first appearance
    assert corpus.decode(corpus.ids) == text and len(corpus) == (len(text) - 1) // 5
    x, y = corpus[1]
    assert corpus.decode(x.numpy()) == text[5:10] and corpus.decode(y.numpy()) == text[6:11]
    batch_x, batch_y = next(iter(DataLoader(corpus, batch_size=3)))
    assert batch_x.shape == (3, 5) and batch_y.dtype == ember.int64


def test_word_corpus_with_a_shared_vocabulary_and_unknown_words(tmp_path):
    train = TextCorpus("the cat sat\nthe dog sat\n", level="word", seq_len=2, unk="<unk>", from_string=True)
    assert train.vocab.itos[:2] == ["<unk>", "<eos>"] and train.vocab["the"] == 2
    assert train.decode(train.ids) == "the cat sat <eos> the dog sat <eos>"
    valid = TextCorpus("the bird sat\n", level="word", vocab=train.vocab, from_string=True)
    assert valid.decode(valid.ids) == "the <unk> sat <eos>"
    with pytest.raises(KeyError, match="unknown token 'bird'"):
        TextCorpus("the bird sat\n", level="word", vocab=Vocab(["the", "sat", "<eos>"]), from_string=True)
    assert Vocab.build("aabbbc", min_freq=2).itos == ["b", "a"]


def test_text_that_is_not_utf8_is_refused_with_the_byte_offset(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("caf\xe9 au lait".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1\.txt: not valid utf-8 text at byte offset 3"):
        TextCorpus(path)
    assert TextCorpus(path, encoding="latin-1").decode(TextCorpus(path, encoding="latin-1").ids) == "café au lait"
    with pytest.raises(ValueError, match="at least 2"):
        TextCorpus("a", from_string=True)


def test_the_mnist_downloader_fetches_and_checks_files(tmp_path, monkeypatch):
    import gzip
    import struct

    from ember.data import MNIST

    source = tmp_path / "source"
    source.mkdir()
    files = {}
    for split, n in (("train", 3), ("t10k", 2)):
        images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, n, dtype=np.uint8)
        for kind, arr in (("images-idx3-ubyte", images), ("labels-idx1-ubyte", labels)):
            raw = bytes([0, 0, 8, arr.ndim]) + struct.pack(">" + "I" * arr.ndim, *arr.shape) + arr.tobytes()
            data = gzip.compress(raw)
            (source / f"{split}-{kind}.gz").write_bytes(data)
            files[f"{split}-{kind}"] = ("", hashlib.sha256(data).hexdigest())
    monkeypatch.setattr(MNIST, "base_url", source.as_uri() + "/")
    monkeypatch.setattr(MNIST, "files", files)
    ds = MNIST(tmp_path / "root", train=False, download=True)
    assert len(ds) == 2 and (tmp_path / "root" / "t10k-images-idx3-ubyte.gz").exists()
