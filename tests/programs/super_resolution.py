import torch, torch.nn as nn, torch.nn.init as init, torch.optim as optim
from math import log10


class Net(nn.Module):
    def __init__(self, upscale_factor):
        super(Net, self).__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 64, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(64, 64, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(64, 32, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(32, upscale_factor**2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)
        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        return self.pixel_shuffle(self.conv4(x))

    def _initialize_weights(self):
        init.orthogonal_(self.conv1.weight, init.calculate_gain("relu"))
        init.orthogonal_(self.conv2.weight, init.calculate_gain("relu"))
        init.orthogonal_(self.conv3.weight, init.calculate_gain("relu"))
        init.orthogonal_(self.conv4.weight)


torch.manual_seed(123)
model = Net(upscale_factor=3)
criterion = nn.MSELoss()
optimizer = optim.Adam(model.parameters(), lr=0.01)
inp = torch.rand(4, 1, 12, 12)
tgt = torch.rand(4, 1, 36, 36)
for epoch in range(5):
    optimizer.zero_grad()
    loss = criterion(model(inp), tgt)
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        mse = criterion(model(inp), tgt)
        psnr = 10 * log10(1 / mse.item())
print("PSNR {:.4f} dB".format(psnr))
torch.save(model, "sr.pth")
m2 = torch.load("sr.pth", weights_only=False)
from PIL import Image
import numpy as np

img = Image.fromarray((np.random.rand(12, 12) * 255).astype("uint8"))
y = torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).view(1, -1, img.size[1], img.size[0])
out = m2(y)
out_img_y = out[0].detach().numpy()
out_img_y *= 255.0
out_img_y = out_img_y.clip(0, 255)
print(Image.fromarray(np.uint8(out_img_y[0]), mode="L").size)
