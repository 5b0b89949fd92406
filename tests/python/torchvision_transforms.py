"""The peer of tests/data/transforms_test.cpp: torchvision's transforms on the pictures a test
wrote (real Fashion-MNIST images, grey, and three of them as the channels of a colour one), each
with the parameters the test names, saved with torch.save as {case name: tensor} for the test to
compare with dptrain's. Random transforms draw after torch.manual_seed(s) for each seed s given,
as dptrain seeds a sample's generator; their boxes are saved too.

    python3 torchvision_transforms.py DIR OUT.pt SEED...
"""
import os
import sys

import numpy as np
import torch
from PIL import Image
import torchvision.transforms as T
import torchvision.transforms.functional as F

MEAN = {1: [0.2860], 3: [0.2860, 0.3530, 0.5]}
STD = {1: [0.3530], 3: [0.3530, 0.2860, 0.25]}


def pictures(folder):
    out = {}
    for name in sorted(os.listdir(folder)):
        pixels = np.array(Image.open(os.path.join(folder, name)))
        tensor = torch.from_numpy(pixels)
        out[os.path.splitext(name)[0]] = (tensor.unsqueeze(0) if tensor.dim() == 2
                                          else tensor.permute(2, 0, 1).contiguous())
    return out


def fixed_cases(img):
    c = img.shape[0]
    cases = {
        "resize_17x23": F.resize(img, [17, 23], antialias=True),
        "resize_40x36": F.resize(img, [40, 36], antialias=True),
        "resize_short_20": F.resize(img, [20], antialias=True),
        "resize_plain_13x13": F.resize(img, [13, 13], antialias=False),
        "center_crop_20x18": F.center_crop(img, [20, 18]),
        "center_crop_33x31": F.center_crop(img, [33, 31]),
        "crop_outside": F.crop(img, -3, 5, 30, 12),
        "hflip": F.hflip(img),
        "normalize": F.normalize(F.convert_image_dtype(img, torch.float32), MEAN[c], STD[c]),
    }
    for mode in ("constant", "edge", "reflect", "symmetric"):
        cases["pad_" + mode] = F.pad(img, [3, 1, 2, 4], fill=7, padding_mode=mode)
    return cases


def random_cases(img, seed):
    c = img.shape[0]
    cases = {}
    torch.manual_seed(seed)
    cases["box_resized"] = torch.tensor(
        T.RandomResizedCrop.get_params(img, scale=[0.08, 1.0], ratio=[3 / 4, 4 / 3]))
    torch.manual_seed(seed)
    cases["box_crop"] = torch.tensor(T.RandomCrop.get_params(F.pad(img, 2), (28, 28)))
    torch.manual_seed(seed)
    cases["lenet"] = T.Compose([
        T.RandomCrop(28, padding=2), T.RandomHorizontalFlip(),
        T.ConvertImageDtype(torch.float32)])(img)
    torch.manual_seed(seed)
    cases["resnet"] = T.Compose([
        T.RandomResizedCrop(24, antialias=True), T.RandomHorizontalFlip(),
        T.ConvertImageDtype(torch.float32), T.Normalize(MEAN[c], STD[c])])(img)
    return cases


def main():
    folder, out, seeds = sys.argv[1], sys.argv[2], [int(s) for s in sys.argv[3:]]
    saved = {}
    for name, img in pictures(folder).items():
        for case, tensor in fixed_cases(img).items():
            saved[f"{name}/{case}"] = tensor.contiguous()
        for seed in seeds:
            for case, tensor in random_cases(img, seed).items():
                saved[f"{name}/{seed}/{case}"] = tensor.contiguous()
    torch.save(saved, out)


if __name__ == "__main__":
    main()
