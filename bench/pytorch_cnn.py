#!/usr/bin/env python3
"""PyTorch's training step for examples/fashion-mnist-cnn.toml's network (bench-only).

Same layers (NCHW here; dtrain keeps channels last), Adam, batch 64, random inputs in [0, 1).
Prints one line: samples/s, the median over rounds of `steps` steps after a warm-up.
Usage: pytorch_cnn.py THREADS [STEPS] [BATCH]
  (THREADS: N, or N/B for B in OpenBLAS; see pytorch_timing.use_threads)
"""
import sys

import torch
import torch.nn as nn

from pytorch_timing import samples_per_second, use_threads


def main():
    threads = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    batch = int(sys.argv[3]) if len(sys.argv) > 3 else 64
    use_threads(threads)
    torch.manual_seed(1)
    net = nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.3), nn.Linear(128, 10))
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    x = torch.rand(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,))

    print(f"{samples_per_second(net, optimizer, x, y, steps):.1f}")


if __name__ == "__main__":
    main()
