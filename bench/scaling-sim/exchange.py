"""What one sync ring replica of bench_cluster_scaling's MLP 784-256-128-10 sends a step when its
gradient is compressed, how much work compressing it is, and how much of its exchange the
backward pass could hide: dtrain's rules (core/compress/compression_plan.h,
core/dist/ring_allreduce.h, [cluster] bucket_bytes) restated for bench/scaling-sim/simulate.py.

Invariants: the plan is a pure function of the layer shapes and the method, as
compression_plan.h's; the bytes are those of bench/cluster_scaling.cc's formula (its wire_bytes
metric matches them on the test bed); shares are in [0, 1].
"""
import math

LAYERS = [(784, 256), (256, 128), (128, 10)]  # (fan-in, width): each weight is fan-in x width
POWERSGD_RANK = 4  # bench_cluster_scaling's settings
TOPK_FRACTION = 0.001
MIN_SAVING = 4  # a tensor is compressed only where that sends at most a quarter of its floats
GATHER_SUM_BYTES = 96 << 10  # RingOptions::gather_sum_bytes (RingAllReduce::GathersToSum)
SCATTER_SUM_BYTES = 112 << 10  # RingOptions::scatter_sum_bytes (RingAllReduce::ScattersToSum)
SCATTER_MOST_RANKS = 4  # RingOptions::scatter_most_ranks
DEFAULT_BUCKET_BYTES = 4 << 20


def tensors():
    """(rows, cols) of every parameter tensor in order: each layer's weights, then its biases."""
    out = []
    for fan_in, width in LAYERS:
        out += [(fan_in, width), (1, width)]
    return out


def plan(method):
    """Per tensor (encoding, rows, cols, floats one replica contributes a step)."""
    out = []
    for rows, cols in tensors():
        count = rows * cols
        factors = POWERSGD_RANK * (rows + cols)
        k = max(1, math.ceil(TOPK_FRACTION * count))
        if method == "bf16":
            out.append(("bf16", rows, cols, (count + 1) // 2))
        elif (method == "powersgd" and rows > POWERSGD_RANK and cols > POWERSGD_RANK
              and MIN_SAVING * factors <= count):
            out.append(("low rank", rows, cols, factors))
        elif method == "topk" and MIN_SAVING * 2 * k <= count:
            out.append(("sparse", rows, cols, 2 * k))
        else:
            out.append(("raw", rows, cols, count))
    return out


def ring_mean_bytes(nbytes, n):
    """What a rank sends for a mean of nbytes over n ranks: among more than two, a range that
    sends at most GATHER_SUM_BYTES that way goes round whole (n - 1 times), one that sends at most
    SCATTER_SUM_BYTES by chunks both ways does so among at most SCATTER_MOST_RANKS (R(R+3)/2 + L(L+3)/2 chunks of nbytes / n, R and
    L the hops each way), a larger one 2 (n - 1) / n of it."""
    if n > 2 and (n - 1) * nbytes <= GATHER_SUM_BYTES:
        return (n - 1) * nbytes
    left = (n - 1) // 2
    right = n - 1 - left
    chunks = right * (right + 3) // 2 + left * (left + 3) // 2
    if 2 < n <= SCATTER_MOST_RANKS and chunks * math.ceil(nbytes / 4 / n) * 4 <= SCATTER_SUM_BYTES:
        return chunks * nbytes / n
    return 2.0 * (n - 1) / n * nbytes


def replica_bytes(method, n):
    """Bytes one of n replicas sends a step: powersgd's two means (P and the raw tensors, then
    Q), topk's and bf16's gather of every replica's message."""
    if n <= 1:
        return 0.0
    p = plan(method)
    if method != "powersgd":
        return (n - 1) * 4.0 * sum(t[3] for t in p)
    first = sum(rows * POWERSGD_RANK if enc == "low rank" else floats
                for enc, rows, cols, floats in p)
    second = sum(cols * POWERSGD_RANK for enc, rows, cols, floats in p if enc == "low rank")
    return ring_mean_bytes(4.0 * first, n) + ring_mean_bytes(4.0 * second, n)


def compression_work(method, n):
    """Floats that encoding and decoding touch a step: the gradient once, and for the gathered
    methods every other replica's message again (bf16: its values; topk: its pairs); powersgd's
    work does not grow with n."""
    count = sum(rows * cols for rows, cols in tensors())
    if method == "bf16":
        return count * n
    if method == "topk":
        return count + (n - 1) * sum(t[3] for t in plan(method))
    return count


def buckets(bucket_bytes):
    """Bytes of each bucket in the order the backward pass finishes them (last layer first):
    whole layers until a bucket holds at least bucket_bytes; 0: one bucket, after the pass."""
    out, current = [], 0
    for fan_in, width in reversed(LAYERS):
        current += 4 * (fan_in + 1) * width
        if bucket_bytes > 0 and current >= bucket_bytes:
            out.append(current)
            current = 0
    if current:
        out.append(current)
    return out


def layer_flops():
    """Per layer (forward, backward) multiply-adds a row: the backward computes the weights'
    gradient, and the inputs' gradient for every layer but the first."""
    return [(fan_in * width, fan_in * width * (1 if i == 0 else 2))
            for i, (fan_in, width) in enumerate(LAYERS)]


def overlap_bounds(bucket_bytes):
    """(share of the exchange's bytes that could travel during the pass, share of the step's
    compute still to run once the first bucket is ready): all but the last bucket can hide, and
    only under the backward of the layers below the first bucket."""
    sizes = buckets(bucket_bytes)
    if len(sizes) < 2:
        return 0.0, 0.0
    bytes_share = 1.0 - sizes[-1] / sum(sizes)
    flops = layer_flops()
    total = sum(f + b for f, b in flops)
    first_bucket_layers, filled = 0, 0
    for fan_in, width in reversed(LAYERS):
        filled += 4 * (fan_in + 1) * width
        first_bucket_layers += 1
        if filled >= sizes[0]:
            break
    below = sum(b for f, b in flops[:len(LAYERS) - first_bucket_layers])
    return bytes_share, below / total
