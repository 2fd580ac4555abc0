"""torchmetrics, run by ``test_torchmetrics_on_ember.py`` under PyTorch and with ``torch`` aliased to Ember, on the
same data: classification metrics (accuracy, F1, precision, recall, AUROC, average precision, a confusion matrix)
from probabilities and from logits, regression metrics, a ``MetricCollection`` updated over several batches, the
per-batch values of ``forward``, ``reset``, and the functional API. Each run saves what it computed."""

import sys

import numpy as np
import torch
import torchmetrics
import torchmetrics.functional as tmf
from torchmetrics import MetricCollection
from torchmetrics.classification import BinaryAUROC, BinaryF1Score, MulticlassAUROC, MulticlassConfusionMatrix
from torchmetrics.regression import MeanAbsoluteError, MeanSquaredError, PearsonCorrCoef, R2Score

out, mode = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)
rng = np.random.default_rng(0)
res = {}
C = 4
batches = []
for _ in range(3):
    logits = rng.standard_normal((8, C)).astype(np.float32) * 2
    target = rng.integers(0, C, 8)
    target[:4] = logits[:4].argmax(1)  # better than chance
    batches.append((torch.tensor(logits), torch.tensor(target)))
coll = MetricCollection({
    "acc": torchmetrics.Accuracy(task="multiclass", num_classes=C),
    "acc_macro": torchmetrics.Accuracy(task="multiclass", num_classes=C, average="macro"),
    "acc_top2": torchmetrics.Accuracy(task="multiclass", num_classes=C, top_k=2),
    "f1": torchmetrics.F1Score(task="multiclass", num_classes=C, average="macro"),
    "f1_weighted": torchmetrics.F1Score(task="multiclass", num_classes=C, average="weighted"),
    "precision": torchmetrics.Precision(task="multiclass", num_classes=C, average="macro"),
    "recall": torchmetrics.Recall(task="multiclass", num_classes=C, average=None),
    "auroc": MulticlassAUROC(num_classes=C),
    "ap": torchmetrics.AveragePrecision(task="multiclass", num_classes=C),
    "confmat": MulticlassConfusionMatrix(num_classes=C),
})  # fmt: skip
for i, (logits, target) in enumerate(batches):
    step = coll(logits.softmax(-1) if i % 2 else logits, target)  # probabilities or logits: the same metrics
    for k, v in step.items():
        res[f"batch{i}.{k}"] = v.numpy()
for k, v in coll.compute().items():
    res[f"epoch.{k}"] = v.numpy()
coll.reset()
coll.update(*batches[0])
res["after_reset.acc"] = coll["acc"].compute().numpy()

scores = torch.tensor(rng.random(20).astype(np.float32))
labels = torch.tensor((rng.random(20) < scores.numpy()).astype(np.int64))
labels[0], scores[1] = 1, scores[2]  # a tie among the scores
res["binary_auroc"] = BinaryAUROC()(scores, labels).numpy()
res["binary_auroc_max_fpr"] = BinaryAUROC(max_fpr=0.5)(scores, labels).numpy()
res["binary_f1"] = BinaryF1Score(threshold=0.4)(scores, labels).numpy()
res["functional_acc"] = tmf.accuracy(batches[1][0], batches[1][1], task="multiclass", num_classes=C).numpy()
res["functional_auroc"] = tmf.auroc(scores, labels, task="binary").numpy()
roc = tmf.roc(scores, labels, task="binary")
res["roc"] = np.stack([t.numpy() for t in roc[:2]])

y = torch.tensor(rng.standard_normal((3, 10)).astype(np.float32))
yhat = y + torch.tensor(rng.standard_normal((3, 10)).astype(np.float32)) * 0.3
reg = MetricCollection([MeanSquaredError(), MeanAbsoluteError(), R2Score(), PearsonCorrCoef()])
for a, b in zip(yhat, y):
    reg.update(a, b)
for k, v in reg.compute().items():
    res[f"reg.{k}"] = v.numpy()
res["rmse"] = MeanSquaredError(squared=False)(yhat.flatten(), y.flatten()).numpy()
mean = torchmetrics.MeanMetric()
for a in yhat:
    mean.update(a)
res["mean"] = mean.compute().numpy()
np.savez(f"{out}/{mode}.npz", **res)
print("done")
