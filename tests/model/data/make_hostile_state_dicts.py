"""Writes expanded_view.pt, a fixture of tests/serialize/hostile_files_test.cpp: a state_dict of
a few hundred bytes whose "7.weight" is a view of one float repeated 2^31 times (stride 0), as
torch.save keeps it: one storage element, size (2^31,), stride (0,). A reader that copies each
tensor out as it unpickles it asks for 8 GB.

Run with Debian 12's PyTorch 1.13: /usr/bin/python3 make_hostile_state_dicts.py
"""
import collections

import torch

state = collections.OrderedDict()
state["7.weight"] = torch.zeros(1).expand(2**31)
torch.save(state, "expanded_view.pt")
