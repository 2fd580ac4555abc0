"""Linear regression with raw tensors and autograd (spec ch. 11): fit y = X w + b by gradient descent."""

import ember

ember.manual_seed(0)
true_w, true_b = ember.tensor([[2.0], [-3.4]]), 4.2
x = ember.randn(1000, 2)
y = x @ true_w + true_b + 0.01 * ember.randn(1000, 1)

w = ember.zeros(2, 1, requires_grad=True)
b = ember.zeros(1, requires_grad=True)
lr = 0.1
for step in range(100):
    loss = ((x @ w + b - y) ** 2).mean()
    w.grad = b.grad = None
    loss.backward()
    with ember.no_grad():
        w -= lr * w.grad
        b -= lr * b.grad
    if step % 20 == 0:
        print(f"step {step:3d}  loss {loss.item():.6f}")

print(f"w = {w.detach().numpy().ravel().round(3)} (true [2.0, -3.4]), b = {b.item():.3f} (true 4.2)")
