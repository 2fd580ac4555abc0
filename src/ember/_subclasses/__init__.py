"""``ember._subclasses`` (PyTorch's ``torch._subclasses``): the tensor subclasses PyTorch's compiler traces with.
Ember makes none: ``ember.compile`` captures a step by running it on real tensors. See ``fake_tensor``."""
