#!/usr/bin/python3
"""Writes one labelled data set in the forms dtrain reads, for the NumPy round-trip test
(tests/cmd/npy_run_test.cc): x.npy (float32), x64.npy (float64 holding the same float32
values), y.npy (int64, NumPy's default), train.npz (numpy.savez: arrays x and y), packed.npz
(numpy.savez_compressed) and train.csv (the same numbers as text that reads back to the same
floats, the label last). Usage: write_blobs.py DIR"""
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(5)
rows, features, classes = 300, 5, 3
y = rng.integers(0, classes, size=rows)  # int64
centres = rng.uniform(-3, 3, size=(classes, features))
x = (centres[y] + rng.normal(0, 1.2, size=(rows, features))).astype(np.float32)
np.save(f"{out}/x.npy", x)
np.save(f"{out}/x64.npy", x.astype(np.float64))
np.save(f"{out}/y.npy", y)
np.savez(f"{out}/train.npz", x=x, y=y)
np.savez_compressed(f"{out}/packed.npz", x=x, y=y)
with open(f"{out}/train.csv", "w") as f:
    f.write(",".join(f"f{j}" for j in range(features)) + ",label\n")
    for row, label in zip(x, y):
        f.write(",".join(f"{float(v):.9g}" for v in row) + f",{label}\n")
