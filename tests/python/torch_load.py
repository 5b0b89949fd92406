"""torch.load as the suite's PyTorch scripts call it: the way a user does (a plain torch.load,
whose default is weights_only=True from PyTorch 2.6 on, a full unpickler before) and with
weights_only=True explicitly. Both must give the same contents: the same types (an OrderedDict
is not a dict here: load_state_dict keeps its _metadata), the same keys in the same order, and
tensors of the same dtype and shape with the same bytes (so -0.0 is not 0.0, and a NaN of a
diverged run equals itself).
"""
import torch


def bytes_of(t):
    return t.detach().contiguous().reshape(-1).view(torch.uint8)


def same(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, torch.Tensor):
        return (a.dtype == b.dtype and a.shape == b.shape and
                bytes_of(a).equal(bytes_of(b)))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(map(same, a, b))
    return a == b


def load(path):
    plain = torch.load(path)
    explicit = torch.load(path, weights_only=True)
    assert same(plain, explicit), f"{path}: torch.load and torch.load(weights_only=True) differ"
    return explicit
