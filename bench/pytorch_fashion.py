#!/usr/bin/env python3
"""PyTorch training the MLP of examples/fashion-mnist-mlp.toml to a test accuracy (bench-only).

784-256-128-10 (ReLU), softmax cross-entropy, Adam with dtrain's cosine schedule (the rate at
step k of K = EPOCHS x full batches an epoch is LR x (1 + cos(pi k / K)) / 2), pixels / 255, a
new shuffle each epoch; evaluates the 10,000 test images every `eval_every` steps and stops at
the first evaluation that reaches `target`, or after EPOCHS. Reads Debian's
dataset-fashion-mnist IDX files.
Prints one line: "samples N accuracy A reached 0|1" (N: rows trained on until the last evaluation).
Usage: pytorch_fashion.py THREADS LR BATCH EVAL_EVERY TARGET EPOCHS
  (THREADS: N, or N/B for B in OpenBLAS; see pytorch_timing.use_threads)
"""
import gzip
import math
import sys

import numpy as np
import torch
import torch.nn as nn

from pytorch_timing import use_threads

DATA = "/usr/share/datasets/fashion-mnist"


def idx(name):
    with gzip.open(f"{DATA}/{name}", "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def main():
    threads, lr, batch, eval_every, target, epochs = (
        sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]),
        float(sys.argv[5]), int(sys.argv[6]))
    use_threads(threads)
    torch.manual_seed(1)
    x = torch.from_numpy(idx("train-images-idx3-ubyte.gz").reshape(-1, 784).astype(np.float32) / 255)
    y = torch.from_numpy(idx("train-labels-idx1-ubyte.gz").astype(np.int64))
    tx = torch.from_numpy(idx("t10k-images-idx3-ubyte.gz").reshape(-1, 784).astype(np.float32) / 255)
    ty = torch.from_numpy(idx("t10k-labels-idx1-ubyte.gz").astype(np.int64))
    net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                        nn.Linear(128, 10))
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    total = epochs * (x.shape[0] // batch)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda k: 0.5 * (1 + math.cos(math.pi * min(k / total, 1.0))))
    loss_fn = nn.CrossEntropyLoss()
    step, accuracy = 0, 0.0
    for _ in range(epochs):
        order = torch.randperm(x.shape[0])
        for first in range(0, x.shape[0] - batch + 1, batch):
            rows = order[first:first + batch]
            optimizer.zero_grad()
            loss_fn(net(x[rows]), y[rows]).backward()
            optimizer.step()
            schedule.step()
            step += 1
            if step % eval_every == 0:
                with torch.no_grad():
                    accuracy = (net(tx).argmax(1) == ty).float().mean().item()
                if accuracy >= target:
                    print(f"samples {step * batch} accuracy {accuracy:.4f} reached 1")
                    return
    print(f"samples {step * batch} accuracy {accuracy:.4f} reached 0")


if __name__ == "__main__":
    main()
