# PyTorch tutorials' shapes, on small synthetic data: FGSM adversarial examples (the gradient of the loss with
# respect to the input, sign, clamp), the char-RNN name classifier written from nn.Linear cells and its name
# generator (sampling with topk/multinomial), Grad-CAM through forward and full backward hooks, and knowledge
# distillation with a temperature; run as a user writes it, with inplace ReLUs and an eval pass under
# inference_mode.
import string

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


# -- FGSM on a small convnet ----------------------------------------------------------------------------------
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
        )  # fmt: skip
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2, inplace=False),
                                  nn.Linear(16, 10))  # fmt: skip

    def forward(self, x):
        return self.head(self.features(x))


model = Net()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
images, labels = torch.rand(32, 1, 12, 12), torch.randint(0, 10, (32,))
for _ in range(5):
    opt.zero_grad()
    F.cross_entropy(model(images), labels).backward()
    opt.step()
model.eval()


def fgsm_attack(image, epsilon, data_grad):
    perturbed = image + epsilon * data_grad.sign()
    return torch.clamp(perturbed, 0, 1)


x = images.clone().requires_grad_(True)
loss = F.nll_loss(F.log_softmax(model(x), dim=1), labels)
model.zero_grad()
loss.backward()
adv = fgsm_attack(x, 0.1, x.grad.data)
with torch.inference_mode():
    clean_acc = (model(images).argmax(1) == labels).float().mean().item()
    adv_acc = (model(adv).argmax(1) == labels).float().mean().item()
assert adv.min() >= 0 and adv.max() <= 1 and adv.requires_grad
print(f"fgsm: clean {clean_acc:.2f}, adversarial {adv_acc:.2f}")

# -- Grad-CAM on the last conv block ----------------------------------------------------------------------------
acts, grads = {}, {}
layer = model.features[3]
h1 = layer.register_forward_hook(lambda m, i, o: acts.__setitem__("a", o.detach()))
h2 = layer.register_full_backward_hook(lambda m, gi, go: grads.__setitem__("g", go[0].detach()))
out = model(images[:2])
out[torch.arange(2), out.argmax(1)].sum().backward()
weights = grads["g"].mean(dim=(2, 3), keepdim=True)
cam = F.relu((weights * acts["a"]).sum(1, keepdim=True))
cam = F.interpolate(cam, size=(12, 12), mode="bilinear", align_corners=False)
cam = cam / (cam.amax(dim=(2, 3), keepdim=True) + 1e-8)
h1.remove()
h2.remove()
assert cam.shape == (2, 1, 12, 12) and float(cam.max()) <= 1.0 + 1e-6
print("grad-cam", tuple(cam.shape), round(float(cam.mean()), 4) >= 0)

# -- char-RNN classification and generation (the tutorial's hand-written RNN) ----------------------------------
all_letters = string.ascii_letters + " .,;'"
n_letters = len(all_letters)
names = {"A": ["anna", "alba", "ada"], "B": ["bob", "bill", "ben"]}
categories = list(names)


def line_to_tensor(line):
    t = torch.zeros(len(line), 1, n_letters)
    for li, letter in enumerate(line):
        t[li][0][all_letters.find(letter)] = 1
    return t


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(input_size + hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, input, hidden):
        combined = torch.cat((input, hidden), 1)
        return self.softmax(self.i2o(combined)), torch.tanh(self.i2h(combined))

    def init_hidden(self):
        return torch.zeros(1, self.hidden_size)


rnn = RNN(n_letters, 16, len(categories))
criterion = nn.NLLLoss()
for it in range(30):
    cat = categories[it % 2]
    line = names[cat][it % 3]
    category_tensor = torch.tensor([categories.index(cat)], dtype=torch.long)
    hidden = rnn.init_hidden()
    rnn.zero_grad()
    for i in range(line_to_tensor(line).size()[0]):
        output, hidden = rnn(line_to_tensor(line)[i], hidden)
    loss = criterion(output, category_tensor)
    loss.backward()
    for p in rnn.parameters():
        p.data.add_(p.grad.data, alpha=-0.05)
top_n, top_i = output.topk(1)
print("char-rnn", categories[top_i[0].item()], round(loss.item(), 4))

with torch.no_grad():
    hidden, letters = rnn.init_hidden(), "a"
    for _ in range(5):
        output, hidden = rnn(line_to_tensor(letters[-1])[0], hidden)
        idx = torch.multinomial(output.exp().squeeze(0), 1).item()
        letters += "ab"[idx]
print("generated", letters)

# -- knowledge distillation with a temperature ------------------------------------------------------------------
teacher, student = model, nn.Sequential(nn.Flatten(), nn.Linear(144, 10))
opt_s = torch.optim.SGD(student.parameters(), lr=0.1, momentum=0.9)
T = 2.0
for _ in range(5):
    with torch.no_grad():
        soft_targets = F.softmax(teacher(images) / T, dim=-1)
    logits = student(images)
    soft_loss = torch.sum(soft_targets * (soft_targets.log() - F.log_softmax(logits / T, dim=-1))) / logits.size(0)
    kd = nn.KLDivLoss(reduction="batchmean")(F.log_softmax(logits / T, dim=-1), soft_targets)
    assert torch.allclose(soft_loss, kd, atol=1e-6)
    loss = 0.25 * soft_loss * T**2 + 0.75 * F.cross_entropy(logits, labels)
    opt_s.zero_grad()
    loss.backward()
    opt_s.step()
print("distillation", round(loss.item(), 4))
