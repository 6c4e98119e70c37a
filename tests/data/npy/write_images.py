#!/usr/bin/python3
"""Writes one labelled set of 3-channel 6x5 images in the two layouts dtrain reads, for the NumPy
round-trip test of images (tests/cmd/npy_run_test.cc): nchw.npy (float32, rows x channels x
height x width, as PyTorch keeps images), hwc.npy (the same values as rows of height, width,
channel values, 2-D) and y.npy (int64). Usage: write_images.py DIR"""
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(9)
rows, channels, height, width, classes = 120, 3, 6, 5, 3
y = rng.integers(0, classes, size=rows)  # int64
# Each class brightens its own channel, so the channels carry the label.
x = rng.normal(0, 1, size=(rows, channels, height, width))
x[np.arange(rows), y] += 1.5
x = x.astype(np.float32)
np.save(f"{out}/nchw.npy", x)
np.save(f"{out}/hwc.npy", x.transpose(0, 2, 3, 1).reshape(rows, -1))
np.save(f"{out}/y.npy", y)
