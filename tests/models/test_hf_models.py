"""Hugging Face GPT-2 and BERT: ``transformers`` builds small models with random weights and saves them;
``ember.models.gpt2/bert.from_pretrained`` loads the folders and gives the same logits within 1e-5."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ember
from ember.models import WeightsMismatchError, bert, gpt2
from ember.models._hf import UnsupportedConfigError


@pytest.fixture(scope="module")
def hf():
    """transformers, with torch on one thread meanwhile (tiny matmuls on a busy machine spin otherwise)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield transformers, torch
    torch.set_num_threads(threads)


def _ids(vocab, shape=(2, 9), seed=0):
    return np.random.default_rng(seed).integers(0, vocab, shape)


@pytest.fixture(scope="module")
def gpt2_dir(hf, tmp_path_factory):
    transformers, torch = hf
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=61, n_positions=16, n_embd=16, n_layer=2, n_head=4, bos_token_id=0,
                                     eos_token_id=0)  # fmt: skip
    model = transformers.GPT2LMHeadModel(config).eval()
    path = tmp_path_factory.mktemp("gpt2")
    model.save_pretrained(path)
    return path, model


def test_gpt2_logits_equal_transformers(hf, gpt2_dir):
    _, torch = hf
    path, reference = gpt2_dir
    model = gpt2.from_pretrained(path)
    assert isinstance(model, gpt2.GPT2LMHeadModel) and not model.training
    ids = _ids(61)
    mask = np.ones_like(ids)
    mask[1, :3] = 0  # left padding
    with torch.no_grad():
        expected = reference(torch.tensor(ids)).logits.numpy()
        expected_masked = reference(torch.tensor(ids), attention_mask=torch.tensor(mask)).logits.numpy()
    np.testing.assert_allclose(model(ember.tensor(ids)).detach().numpy(), expected, atol=1e-5, rtol=0)
    got = model(ember.tensor(ids), attention_mask=ember.tensor(mask)).detach().numpy()
    np.testing.assert_allclose(got[0], expected_masked[0], atol=1e-5, rtol=0)
    np.testing.assert_allclose(got[1, 3:], expected_masked[1, 3:], atol=1e-5, rtol=0)  # the tokens, not the padding
    with pytest.raises(ValueError, match="exceeds n_positions 16"):
        model(ember.tensor(_ids(61, (1, 17))))


def test_gpt2_model_checkpoints_give_hidden_states(hf, tmp_path):
    transformers, torch = hf
    torch.manual_seed(1)
    reference = transformers.GPT2Model(transformers.GPT2Config(vocab_size=30, n_positions=8, n_embd=8, n_layer=1,
                                                               n_head=2)).eval()  # fmt: skip
    reference.save_pretrained(tmp_path)
    model = gpt2.from_pretrained(tmp_path)
    assert isinstance(model, gpt2.GPT2Model)
    ids = _ids(30, (2, 8))
    with torch.no_grad():
        expected = reference(torch.tensor(ids)).last_hidden_state.numpy()
    np.testing.assert_allclose(model(ember.tensor(ids)).detach().numpy(), expected, atol=1e-5, rtol=0)


@pytest.fixture(scope="module")
def bert_dirs(hf, tmp_path_factory):
    transformers, torch = hf
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=53, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=32, max_position_embeddings=20)  # fmt: skip
    mlm, base = transformers.BertForMaskedLM(config).eval(), transformers.BertModel(config).eval()
    mlm_dir, base_dir = tmp_path_factory.mktemp("bert_mlm"), tmp_path_factory.mktemp("bert")
    mlm.save_pretrained(mlm_dir)
    base.save_pretrained(base_dir)
    return (mlm_dir, mlm), (base_dir, base)


def test_bert_logits_and_hidden_states_equal_transformers(hf, bert_dirs):
    _, torch = hf
    (mlm_dir, mlm), (base_dir, base) = bert_dirs
    ids, types = _ids(53), _ids(2, seed=1)
    mask = np.ones_like(ids)
    mask[1, 6:] = 0  # right padding
    with torch.no_grad():
        expected = mlm(torch.tensor(ids), attention_mask=torch.tensor(mask), token_type_ids=torch.tensor(types)).logits
        out = base(torch.tensor(ids), attention_mask=torch.tensor(mask))
    model = bert.from_pretrained(mlm_dir)
    assert isinstance(model, bert.BertForMaskedLM)
    got = model(ember.tensor(ids), ember.tensor(mask), ember.tensor(types)).detach().numpy()
    np.testing.assert_allclose(got[0], expected.numpy()[0], atol=1e-5, rtol=0)
    np.testing.assert_allclose(got[1, :6], expected.numpy()[1, :6], atol=1e-5, rtol=0)
    encoder = bert.from_pretrained(base_dir)
    assert isinstance(encoder, bert.BertModel) and "pooler" in encoder._modules
    hidden, pooled = encoder(ember.tensor(ids), ember.tensor(mask))
    np.testing.assert_allclose(hidden.detach().numpy()[0], out.last_hidden_state.numpy()[0], atol=1e-5, rtol=0)
    np.testing.assert_allclose(pooled.detach().numpy(), out.pooler_output.numpy(), atol=1e-5, rtol=0)


def test_an_unsupported_architecture_or_option_is_refused(hf, tmp_path, bert_dirs):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"]}))
    with pytest.raises(UnsupportedConfigError, match=r"model_type 'llama' \(architectures \['LlamaForCausalLM'\]\) "
                                                     "is not supported by ember.models.gpt2"):  # fmt: skip
        gpt2.from_pretrained(tmp_path)
    (mlm_dir, _), _ = bert_dirs
    config = json.loads((mlm_dir / "config.json").read_text())
    config["position_embedding_type"] = "relative_key"
    other = tmp_path / "relative"
    other.mkdir()
    (other / "config.json").write_text(json.dumps(config))
    with pytest.raises(UnsupportedConfigError, match="position_embedding_type='relative_key' is not supported"):
        bert.from_pretrained(other)
    with pytest.raises(FileNotFoundError, match=r"no config\.json"):
        bert.from_pretrained(tmp_path / "nowhere")
    assert issubclass(UnsupportedConfigError, RuntimeError)


def test_weights_that_do_not_match_the_config_are_listed(hf, tmp_path, gpt2_dir):
    path, _ = gpt2_dir
    config = json.loads((path / "config.json").read_text())
    config["n_layer"] = 3
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "model.safetensors").write_bytes((path / "model.safetensors").read_bytes())
    with pytest.raises(WeightsMismatchError, match=r"model\.safetensors: the weights do not fit GPT2LMHeadModel: "
                                                   r"12 missing keys: transformer\.h\.2\.ln_1\.weight"):  # fmt: skip
        gpt2.from_pretrained(tmp_path)
    config["n_layer"], config["n_embd"] = 2, 32
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(WeightsMismatchError, match=r"shape mismatches: transformer\.wte\.weight \(file \(61, 16\), "
                                                   r"model \(61, 32\)\)"):  # fmt: skip
        gpt2.from_pretrained(tmp_path)


def test_sharded_checkpoints_load(hf, tmp_path, gpt2_dir):
    from safetensors.numpy import load_file, save_file

    path, _reference = gpt2_dir
    state = load_file(str(path / "model.safetensors"))
    keys = sorted(state)
    halves = {"model-00001-of-00002.safetensors": keys[: len(keys) // 2],
              "model-00002-of-00002.safetensors": keys[len(keys) // 2 :]}  # fmt: skip
    for name, part in halves.items():
        save_file({k: state[k] for k in part}, str(tmp_path / name))
    index = {"weight_map": {k: name for name, part in halves.items() for k in part}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    (tmp_path / "config.json").write_text((path / "config.json").read_text())
    model = gpt2.from_pretrained(tmp_path)
    ids = _ids(61, (1, 5))
    np.testing.assert_allclose(
        model(ember.tensor(ids)).detach().numpy(), gpt2.from_pretrained(path)(ember.tensor(ids)).detach().numpy()
    )
