#!/usr/bin/env python3
"""PyTorch's training step for an MLP on Fashion-MNIST-shaped input (bench-only).

784 inputs, ReLU hidden layers (default 512, 256), 10 classes, softmax cross-entropy, SGD with
momentum 0.9 (lr 0.01), random inputs in [0, 1) — the step bench/every-core times dtrain's on.
Prints one line: samples/s, the median over 3 rounds of `steps` steps after a warm-up.
Usage: pytorch_mlp.py THREADS [STEPS] [BATCH] [HIDDEN,HIDDEN,...]
  (THREADS: N, or N/B for B in OpenBLAS; see pytorch_timing.use_threads)
"""
import sys

import torch
import torch.nn as nn

from pytorch_timing import samples_per_second, use_threads


def main():
    threads = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    batch = int(sys.argv[3]) if len(sys.argv) > 3 else 128
    hidden = [int(h) for h in sys.argv[4].split(",")] if len(sys.argv) > 4 else [512, 256]
    use_threads(threads)
    torch.manual_seed(1)
    layers, width = [], 784
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    net = nn.Sequential(*layers, nn.Linear(width, 10))
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x = torch.rand(batch, 784)
    y = torch.randint(0, 10, (batch,))

    print(f"{samples_per_second(net, optimizer, x, y, steps, warmup=10):.1f}")


if __name__ == "__main__":
    main()
