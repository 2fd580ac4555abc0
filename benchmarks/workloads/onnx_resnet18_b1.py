"""ResNet-18 (224x224, batch 1): ember.onnx (torch.onnx.export's file) vs PyTorch eager (or onnxruntime), ms/batch."""

from _onnx_bench import main

if __name__ == "__main__":
    main("onnx_resnet18_b1", batch=1)
