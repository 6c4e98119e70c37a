#!/usr/bin/env python3
"""PyTorch's training step for examples/fashion-mnist-cnn.toml's network (bench-only).

Same layers (NCHW here; dtrain keeps channels last), Adam, batch 64, random inputs in [0, 1).
Prints one line: samples/s, the median over rounds of `steps` steps after a warm-up.
Usage: pytorch_cnn.py THREADS [STEPS] [BATCH]
"""
import statistics
import sys
import time

import torch
import torch.nn as nn


def main():
    threads = int(sys.argv[1])
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    batch = int(sys.argv[3]) if len(sys.argv) > 3 else 64
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    net = nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.3), nn.Linear(128, 10))
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.rand(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,))

    def step():
        optimizer.zero_grad()
        loss_fn(net(x), y).backward()
        optimizer.step()

    for _ in range(5):
        step()
    rates = []
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(steps):
            step()
        rates.append(batch * steps / (time.perf_counter() - start))
    print(f"{statistics.median(rates):.1f}")


if __name__ == "__main__":
    main()
