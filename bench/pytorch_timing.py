"""Times a PyTorch training step the way the bench scripts compare it with dtrain's (bench-only).

Labelled batch of random inputs, `warmup` steps first, then the median over `rounds` rounds of
`steps` steps of the samples per second.
"""
import statistics
import time

import torch


def samples_per_second(net, optimizer, x, y, steps, warmup=5, rounds=3):
    loss_fn = torch.nn.CrossEntropyLoss()
    batch = x.shape[0]

    def step():
        optimizer.zero_grad()
        loss_fn(net(x), y).backward()
        optimizer.step()

    for _ in range(warmup):
        step()
    rates = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(steps):
            step()
        rates.append(batch * steps / (time.perf_counter() - start))
    return statistics.median(rates)
