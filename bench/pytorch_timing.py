"""Sets PyTorch's threads and times its training step the way the bench scripts compare it with
dtrain's (bench-only).

Labelled batch of random inputs, `warmup` steps first, then the median over `rounds` rounds of
`steps` steps of the samples per second.
"""
import ctypes
import statistics
import time

import torch


def use_threads(spec):
    """Gives PyTorch the threads SPEC names: "N" for N threads in all, "N/B" for N of PyTorch's
    own and B in OpenBLAS's pool. torch.set_num_threads sizes only PyTorch's own pool; its GEMMs
    run in Debian's OpenBLAS, whose pool otherwise has one thread per core, so a plain
    set_num_threads(1) runs the matrix products on every core ("1/2" on 2 cores)."""
    threads, _, blas = spec.partition("/")
    torch.set_num_threads(int(threads))
    ctypes.CDLL("libopenblas.so.0").openblas_set_num_threads(int(blas or threads))


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
