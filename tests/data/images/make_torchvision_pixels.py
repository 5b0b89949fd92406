"""Writes the fixtures of tests/data/image_file_test.cpp: three PNGs (colour 61x45, grey 90x90,
grey 20x14) and torchvision.json, the 28x28 pixels (times 255, rounded) that torchvision 0.14 makes
of each with Grayscale(), Resize((28, 28)) and ToTensor(), which dptrain predict must match.

    /usr/bin/python3 make_torchvision_pixels.py    (Debian: python3-torchvision)
"""
import json

import numpy as np
import torch
import torchvision.transforms as T
from PIL import Image

rng = np.random.default_rng(0)
images = {
    "colour.png": Image.fromarray(rng.integers(0, 256, (45, 61, 3), dtype=np.uint8), "RGB"),
    "grey.png": Image.fromarray(rng.integers(0, 256, (90, 90), dtype=np.uint8), "L"),
    "small.png": Image.fromarray(rng.integers(0, 256, (14, 20), dtype=np.uint8), "L"),
}
transform = T.Compose([T.Grayscale(), T.Resize((28, 28)), T.ToTensor()])
pixels = {}
for name, image in images.items():
    image.save(name)
    pixels[name] = (transform(Image.open(name)) * 255).round().to(torch.uint8).flatten().tolist()
json.dump(pixels, open("torchvision.json", "w"))
