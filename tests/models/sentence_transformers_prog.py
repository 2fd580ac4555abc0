"""sentence-transformers on a tiny BERT made from a config (nothing downloaded), run by
``test_sentence_transformers_on_ember.py`` twice: under PyTorch (``save``: the model and a word-level tokenizer go to
a folder) and with ``torch`` aliased to Ember (``load``: the same folder). Each run builds a SentenceTransformer
(Transformer + mean Pooling + Normalize), encodes sentences, scores them with ``similarity``, takes 3 AdamW steps
on the library's MultipleNegativesRankingLoss and CosineSimilarityLoss, encodes again, then saves the model and
loads it back; the Ember run also loads the model PyTorch trained and saved."""

import os
import sys
import warnings

import numpy as np
import torch
import transformers
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize, Transformer
from sentence_transformers.sentence_transformer import losses
from sentence_transformers.sentence_transformer.modules import Pooling

warnings.filterwarnings("ignore")
out, mode = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)
transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()
res = {}
sentences = ["the cat sat on the mat", "a dog ran in the park", "the big red dog", "a small blue cat sat"]
anchors, positives = ["the cat sat", "a dog ran", "the red mat"], ["a cat sat on a mat", "the dog ran fast", "red mat"]
words = sorted({w for text in sentences + anchors + positives for w in text.split()})
folder = f"{out}/tiny-bert"
if mode == "save":
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
        mask_token="[MASK]",
    )  # fmt: skip
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )  # fmt: skip (no dropout: the RNGs differ)
    transformers.BertModel(config).save_pretrained(folder)
    fast.save_pretrained(folder)
assert os.path.isdir(folder)

word = Transformer(folder, max_seq_length=16)
model = SentenceTransformer(modules=[word, Pooling(word.get_embedding_dimension(), "mean"), Normalize()], device="cpu")
res["dim"] = np.array(model.get_sentence_embedding_dimension())
res["tokens"] = model.preprocess(sentences)["input_ids"].numpy()
emb = model.encode(sentences, convert_to_tensor=True)
res["embeddings"] = emb.numpy()
res["similarity"] = model.similarity(emb, emb).numpy()
res["encode_numpy"] = model.encode(sentences[:2], batch_size=1)  # a NumPy array, batch by batch

model.train()
mnrl = losses.MultipleNegativesRankingLoss(model)
cosine = losses.CosineSimilarityLoss(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
mnrl_losses, cos_losses = [], []
for _ in range(3):
    feats = [model.preprocess(anchors), model.preprocess(positives)]
    loss_a = mnrl(feats, None)
    loss_b = cosine(feats, torch.tensor([0.9, 0.8, 0.1]))
    opt.zero_grad()
    (loss_a + loss_b).backward()
    opt.step()
    mnrl_losses.append(loss_a.item())
    cos_losses.append(loss_b.item())
res["mnrl_losses"] = np.array(mnrl_losses)
res["cos_losses"] = np.array(cos_losses)
res["grad_word_embeddings"] = word.auto_model.embeddings.word_embeddings.weight.grad.numpy().copy()
model.eval()
res["trained_embeddings"] = model.encode(sentences, convert_to_tensor=True).numpy()
model.save(f"{out}/{mode}_trained")
again = SentenceTransformer(f"{out}/{mode}_trained", device="cpu")
res["reloaded_embeddings"] = again.encode(sentences, convert_to_tensor=True).numpy()
from_torch = SentenceTransformer(f"{out}/save_trained", device="cpu")  # PyTorch's (in the PyTorch run: its own)
res["from_torch_embeddings"] = from_torch.encode(sentences, convert_to_tensor=True).numpy()
np.savez(f"{out}/{mode}.npz", **res)
print("done")
