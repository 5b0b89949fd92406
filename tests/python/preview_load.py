"""Opens what `dptrain preview` wrote as a PyTorch user would: torch.load(weights_only=True) on
SPLIT.pt and PIL on SPLIT.png. Prints JSON: the dict's keys in order, each tensor's dtype, shape
and values (float32 values printed exactly, as Python's repr of a double), and the sheet's size
and mode."""
import json
import sys

from PIL import Image

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from torch_load import load  # noqa: E402

tensors = load(sys.argv[1])
answer = {"keys": list(tensors)}
for name, t in tensors.items():
    answer[name] = {"dtype": str(t.dtype), "shape": list(t.shape),
                    "values": t.reshape(-1).tolist()}
with Image.open(sys.argv[2]) as sheet:
    answer["sheet"] = {"size": list(sheet.size), "mode": sheet.mode}
print(json.dumps(answer))
