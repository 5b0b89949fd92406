#!/usr/bin/env python3
"""Writes small versions of the hostile model files that tests/serialize/amplification_test.cpp
builds, as seeds for the model_file and checkpoint fuzz targets (fuzz/corpus/*/): a memoised key
named by many dicts, a memoised object appended again and again, views through one memoised size
of 64 dimensions, a size of 1000 dimensions, and a storage that claims far more than its record.
Plain Python (zipfile, stored records, as torch.save lays them out): no PyTorch needed.

    fuzz/make_hostile_seeds.py        # rewrites the seeds in place
"""
import os
import struct
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def unicode(text):
    data = text.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def binint(v):
    return b"J" + struct.pack("<i", v)


def storage(key, numel):
    return (b"(" + unicode("storage") + b"ctorch\nFloatStorage\n" + unicode(key) +
            unicode("cpu") + binint(numel) + b"tQ")


def rebuild(storage_ops, size_ops, stride_ops):
    return (b"ctorch._utils\n_rebuild_tensor_v2\n(" + storage_ops + binint(0) + b"(" + size_ops +
            b"t(" + stride_ops + b"ttR")


def stream(body):
    return b"\x80\x02" + body + b"."


def archive(path, pickle, records=()):
    # A fixed time stamp: the same seeds each time the script runs.
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        for name, data in [("data.pkl", pickle)] + list(records):
            z.writestr(zipfile.ZipInfo("archive/" + name, date_time=(1980, 1, 1, 0, 0, 0)), data)


def seeds():
    many_dicts = b"]" + unicode("k" * 1024) + b"q\x00a" + b"}h\x00Nsa" * 2000
    repushed = b"]Nq\x00a" + b"h\x00a" * 5000
    ones64 = b"K\x01" * 64
    views = (b"]" + storage("0", 4) + b"q\x01a(" + ones64 + b"tq\x02a" +
             (b"ctorch._utils\n_rebuild_tensor_v2\n(h\x01" + binint(0) + b"h\x02h\x02tRa") * 200)
    ones1000 = b"K\x01" * 1000
    wide = b"}(" + unicode("0.weight") + rebuild(storage("0", 4), ones1000, ones1000) + b"u"
    claims = b"}(" + unicode("0.weight") + rebuild(storage("0", 1 << 28), binint(1 << 28),
                                                   b"K\x01") + b"u"
    floats = struct.pack("<4f", 1, 2, 3, 4)
    return {
        "memo-key-many-dicts.pt": (stream(many_dicts), []),
        "memo-repushed.pt": (stream(repushed), []),
        "memo-size-many-views.pt": (stream(views), [("data/0", floats)]),
        "size-1000-dims.pt": (stream(wide), [("data/0", floats)]),
        "storage-claims-1gb.pt": (stream(claims), [("data/0", floats)]),
    }


def main():
    for target in ("model_file", "checkpoint"):
        folder = os.path.join(HERE, "corpus", target)
        for name, (pickle, records) in seeds().items():
            archive(os.path.join(folder, name), pickle, records)


if __name__ == "__main__":
    main()
