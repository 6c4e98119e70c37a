#!/usr/bin/env python3
"""A small model of dtrain's step time per mode, calibrated by bench_cluster_scaling's runs on
network-namespace hosts, checked against them, then used to predict step time and time to
accuracy for 16-256 workers, each on a machine of its own, at 10 Gbit/s, 1 Gbit/s, 100 Mbit/s.

Per mode, with n processes, S the gradient's bytes, B a link's bytes/s and eta = 0.95 (the share
of a tbf link TCP reaches, bench_cluster_allreduce):
  W(n)  bytes the busiest host sends per step, by the algorithm (the formulas of
        bench/cluster_scaling.cc: ring 2 (n-1)/n S, a ps shard's host (n-1) S/k + ...);
  wire  W(n) / (eta B), the step's bytes crossing that link once;
  c     one process's CPU time per step;
  phi   how many wire times a step takes at a given rate: 1 when the bytes stream at the link's
        rate; about 2 when a sync ps step's push and pull do not overlap; more when many
        senders into one link lose packets (incast under tbf at 100 Mbit/s).
On the test bed all n processes share `cores` CPUs, so one process's compute overlaps the
others' transfers: T = max(c n / cores, phi wire). On a cluster each process has its own
machine: T = c + phi wire for the synchronous modes (compute, then exchange), max(c, phi wire)
for async (replicas overlap).
Calibration uses the 8-host runs only: c from the fastest (the highest rate's, CPU-bound there,
unless load on the shared machine slowed it more than a slower link did another), phi per rate
from the others; the 16-host runs are predicted from them (held out), which checks that the
model scales in n as the formulas say.

Compressed sync ring modes (exchange.py): W(n) is what a replica sends by the compression plan
(PowerSGD's two means, which the ring sends whole round the ring, (n-1) times, while each is at
most 32 KiB; topk's and bf16's gather, (n-1) messages). k, one process's compression CPU time
per step, is its compression_seconds metric on the test bed times cores / n, and grows with n as
the work of decoding the gathered messages does (bf16 in proportion to n; topk and powersgd
hardly): on the test bed c is the mode's own c with k grown so, on a cluster the plain ring's c
plus k(n). Their more, smaller messages cost no time of their own (no latency term, as for every
mode). Overlap (bucket_bytes): the share of the exchange the backward pass hid on the test bed,
h = 1 - exposed_comm_seconds / comm_seconds, is fitted per mode; on a cluster it hides h of the
exchange, at most the bytes of all but the last bucket and at most the backward of the layers
below the first bucket (their share of the ring's c), and the mode's compute is the ring's c (on
shared cores a ring that sleeps rather than polls costs the pass less, which a machine of its own
does not show).

Time to accuracy = samples needed / (replicas * b / T). Sync needs what one worker with the
global batch needs: measure-samples.sh's runs fitted as E(B) = E_min (1 + B / B_noise)
(McCandlish et al. 2018). Async needs E_async(1) ((n - 1) s + 1), s fitted to its runs with 1, 2
and 4 replicas (its own optimizer, Adagrad, as examples/fashion-mnist-async.toml has it). Local
SGD is given the samples of sync at the same global batch (not measured: optimistic).

Usage: simulate.py MEASURED.csv [SAMPLES.csv] [--also MEASURED2.csv ...] [--fit-hosts 8]
  [--cores 2] [--batch 32]   (a mode measured in several files counts from the last)
Prints the calibration, the check (predicted vs measured ms per step, relative error) and the
predictions.
"""
import argparse
import csv
import math
import sys

sys.dont_write_bytecode = True  # importing exchange.py leaves no __pycache__ in the tree
import exchange  # noqa: E402 (after the line above)

GRADIENT_BYTES = 4.0 * 235146  # MLP 784-256-128-10
FIRST_LAYER_BYTES = 4.0 * (784 * 256 + 256)  # the larger partition of model_parallel = 2
CUT_BYTES_PER_ROW = 4.0 * 256  # activations (or their gradients) across the cut
ETA = 0.95
BATCH = 32  # rows per replica and step in bench_cluster_scaling
RATES = {"10gbit": 10e9 / 8, "1gbit": 1e9 / 8, "100mbit": 100e6 / 8}
RING = "sync ring"  # the plain ring, whose c the ring's compressed and bucket variants build on


def busiest_bytes(mode, n):
    """Bytes the busiest host sends per step: the formulas of bench/cluster_scaling.cc."""
    s = GRADIENT_BYTES
    if mode["shards"] > 0:
        k = mode["shards"]
        return (n - 1) * s / k + s * (k - 1) / k
    replicas = n / mode["partitions"]
    if mode["partitions"] > 1:
        return 2.0 * (replicas - 1) / replicas * FIRST_LAYER_BYTES + CUT_BYTES_PER_ROW * BATCH
    if replicas <= 1:
        return 0.0
    if mode["compression"] != "none":
        return exchange.replica_bytes(mode["compression"], replicas)
    return 2.0 * (replicas - 1) / replicas * s / mode["average_every"]


def wire_seconds(mode, n, rate):
    """The busiest host's bytes of a step crossing its link once."""
    return busiest_bytes(mode, n) / (ETA * RATES[rate])


def compression_seconds(mode, n, fit):
    """k at n processes: the fitted k, grown as the compression's work grows from fit-hosts."""
    if mode["compression"] == "none":
        return 0.0
    method = mode["compression"]
    return fit["k"] * exchange.compression_work(method, n) / exchange.compression_work(
        method, fit["hosts"])


def testbed_seconds(mode, n, rate, fit, cores):
    c = fit["c"] - fit["k"] + compression_seconds(mode, n, fit)
    return max(c * n / cores, fit["phi"][rate] * wire_seconds(mode, n, rate))


def hidden_seconds(mode, net, fit):
    """What the backward pass hides of an exchange of `net` seconds on a machine of its own."""
    bytes_share, below_share = exchange.overlap_bounds(mode["bucket_bytes"])
    return min(min(fit["hidden"], bytes_share) * net, below_share * fit["ring_c"])


def cluster_seconds(mode, n, rate, fit):
    net = fit["phi"][rate] * wire_seconds(mode, n, rate)
    if mode["name"].startswith("async"):
        return max(fit["c"], net)
    if mode["name"].startswith(RING):
        c = fit["ring_c"] + compression_seconds(mode, n, fit)
        return c + net - hidden_seconds(mode, net, fit)
    return fit["c"] + net


def number(r, column, default):
    """A column that older runs' files lack, or leave empty."""
    value = r.get(column)
    return type(default)(value) if value not in (None, "") else default


def read_measured(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            for r in csv.DictReader(f):
                if r["hosts"] == "hosts":
                    continue  # a header repeated by a later run appended to the file
                rows.append({
                    "hosts": int(r["hosts"]), "rate": r["rate"], "name": r["mode"],
                    "shards": int(r["shards"]), "average_every": int(r["average_every"]),
                    "partitions": int(r["partitions"]), "ms": float(r["ms_per_step"]),
                    "compression": r.get("compression") or "none",
                    "bucket_bytes": number(r, "bucket_bytes", exchange.DEFAULT_BUCKET_BYTES),
                    "compression_seconds": number(r, "compression_seconds", 0.0),
                    "comm_seconds": number(r, "comm_seconds", 0.0),
                    "exposed_seconds": number(r, "exposed_comm_seconds", 0.0)})
    latest = {}  # a mode measured again (a later run appended to the file) counts once, anew
    for r in rows:
        latest[(r["hosts"], r["rate"], r["name"])] = r
    return [r for r in latest.values() if r["ms"] > 0]


def fit_modes(rows, fit_hosts, cores):
    """c and phi (per rate) of each mode from its fit-hosts rows."""
    fits = {}
    for name in sorted({r["name"] for r in rows}):
        runs = {r["rate"]: r for r in rows if r["name"] == name and r["hosts"] == fit_hosts}
        if not runs:
            continue
        # The fastest run: the highest rate's, unless other work on the shared machine slowed
        # it more than a slower link slowed another (CPU-bound either way).
        top_rate = min(runs, key=lambda rate: (runs[rate]["ms"], -RATES[rate]))
        c = runs[top_rate]["ms"] / 1e3 * cores / fit_hosts
        phi = {rate: 1.0 for rate in RATES}
        for rate, r in runs.items():
            wire = wire_seconds(r, fit_hosts, rate)
            # Only where the network, not the shared CPUs, held the step, and its bytes could
            # take half of it (a few KB a step slowed by load or latency say nothing of phi).
            cpu = c * fit_hosts / cores
            if rate != top_rate and wire > 0.5 * cpu and r["ms"] / 1e3 > 1.3 * cpu:
                phi[rate] = max(0.05, r["ms"] / 1e3 / wire)
        recorded = [r["compression_seconds"] for r in runs.values()]
        fits[name] = {"c": c, "phi": phi, "rows": list(runs.values()), "hosts": fit_hosts,
                      # one process's compression CPU time, from its wall time on shared cores
                      "k": sum(recorded) / len(recorded) * cores / fit_hosts}
    ring_c = fits[RING]["c"] if RING in fits else None
    for fit in fits.values():
        fit["ring_c"] = ring_c if ring_c is not None else fit["c"]
        shares = [1.0 - r["exposed_seconds"] / r["comm_seconds"] for r in fit["rows"]
                  if r["comm_seconds"] > 0]
        fit["hidden"] = max(0.0, sum(shares) / len(shares)) if shares else 0.0
    return fits


def line_fit(points):
    """a and b of y = a + b x, least squares."""
    mx = sum(p[0] for p in points) / len(points)
    my = sum(p[1] for p in points) / len(points)
    sxx = sum((p[0] - mx) ** 2 for p in points)
    b = sum((p[0] - mx) * (p[1] - my) for p in points) / sxx if sxx > 0 else 0.0
    return my - b * mx, b


def fit_samples(path):
    """Sync: E_min and B_noise of E(B) = E_min (1 + B / B_noise); async: E(1) and s."""
    sync, async_ = [], []
    with open(path) as f:
        for r in csv.DictReader(f):
            if int(r["samples"]) <= 0:
                continue
            if r["mode"] == "sync":
                sync.append((float(r["batch"]), float(r["samples"])))
            else:
                async_.append((float(r["replicas"]), float(r["samples"])))
    if len(sync) < 2:
        return None
    a, b = line_fit(sync)
    if a <= 0 or b <= 0:
        return None
    fit = {"e_min": a, "b_noise": a / b, "points": sync, "async": None}
    if len(async_) >= 2:
        a1, slope = line_fit(async_)  # E = E1 + E1 s (n - 1) = (E1 - E1 s) + E1 s n
        e1 = a1 + slope
        if e1 > 0:
            fit["async"] = {"e1": e1, "stale": max(0.0, slope / e1)}
    return fit


def samples_needed(fit, batch):
    return fit["e_min"] * (1.0 + batch / fit["b_noise"])


def print_exchange_fits(fits):
    """The ring variants' k (beside how much more CPU time their step took than the ring's)
    and h (beside what the buckets and the backward allow)."""
    for name, fit in fits.items():
        mode = fit["rows"][0]
        if mode["compression"] != "none":
            print(f"  {name:26s} k = {fit['k'] * 1e3:.3f} ms (compression_seconds x cores / n; "
                  f"c less the ring's c: {(fit['c'] - fit['ring_c']) * 1e3:.3f} ms)")
        elif mode["bucket_bytes"] != exchange.DEFAULT_BUCKET_BYTES:
            bytes_share, below_share = exchange.overlap_bounds(mode["bucket_bytes"])
            print(f"  {name:26s} h = {fit['hidden']:.2f} hidden (at most {bytes_share:.2f} of "
                  f"the bytes, under {below_share:.2f} of the ring's c)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("measured")
    p.add_argument("samples", nargs="?")
    p.add_argument("--also", action="append", default=[], metavar="MEASURED.csv",
                   help="more runs, read after MEASURED.csv")
    p.add_argument("--fit-hosts", type=int, default=8)
    p.add_argument("--cores", type=float, default=2.0)
    p.add_argument("--batch", type=int, default=BATCH, help="rows per replica and step")
    args = p.parse_args()
    rows = read_measured([args.measured] + args.also)
    if not rows:
        sys.exit("no measured rows in " + args.measured)
    c = fit_modes(rows, args.fit_hosts, args.cores)
    print(f"calibration from the {args.fit_hosts}-host runs: c (one process's CPU time per step, "
          f"{args.cores:g} cores shared) from the fastest run, phi per rate")
    for name, value in c.items():
        phis = "  ".join(f"phi {rate} = {value['phi'][rate]:.2f}" for rate in RATES)
        print(f"  {name:26s} c = {value['c'] * 1e3:.3f} ms  {phis}")
    print_exchange_fits(c)
    print("\ncheck on the test bed: predicted against measured ms per step "
          "(error = predicted / measured - 1)")
    print(f"{'hosts':>5} {'rate':>8} {'mode':26s} {'measured':>9} {'predicted':>9} {'error':>7}")
    errors = {"fit": [], "held out": []}
    for r in sorted(rows, key=lambda r: (r["hosts"], r["name"], -RATES[r["rate"]])):
        if r["name"] not in c:
            continue
        predicted = testbed_seconds(r, r["hosts"], r["rate"], c[r["name"]], args.cores) * 1e3
        error = predicted / r["ms"] - 1.0
        calibration = any(r is q for q in c[r["name"]]["rows"])
        if not calibration:
            errors["held out" if r["hosts"] != args.fit_hosts else "fit"].append(abs(error))
        mark = " (calibration)" if calibration else ""
        print(f"{r['hosts']:5d} {r['rate']:>8} {r['name']:26s} {r['ms']:9.2f} {predicted:9.2f} "
              f"{error:+7.1%}{mark}")
    for label, values in errors.items():
        if values:
            values.sort()
            print(f"  |error| over the {label} rows ({len(values)}): median "
                  f"{values[len(values) // 2]:.1%}, max {values[-1]:.1%}")

    fit = fit_samples(args.samples) if args.samples else None
    if fit:
        print(f"\nsamples to 88 %: sync E(B) = {fit['e_min']:.0f} (1 + B / {fit['b_noise']:.0f}) "
              f"from {len(fit['points'])} batches")
        for batch, samples in fit["points"]:
            print(f"  B = {batch:6.0f}: measured {samples:9.0f}, fitted {samples_needed(fit, batch):9.0f}")
        if fit["async"]:
            print(f"  async: E(n) = {fit['async']['e1']:.0f} ((n - 1) {fit['async']['stale']:.3f} + 1)")
    modes = {}
    for r in rows:
        modes.setdefault(r["name"], r)
    print("\nprediction: each worker on a machine of its own (compute c, no sharing); "
          f"{args.batch} rows per replica; step ms" +
          (", minutes to 88 % (compressed modes: sync's samples, a floor)" if fit else ""))
    header = f"{'workers':>7} {'mode':26s}" + "".join(f" {rate:>16}" for rate in RATES)
    print(header)
    for n in (16, 32, 64, 128, 256):
        for name, mode in modes.items():
            if name not in c:
                continue
            cells = []
            for rate in RATES:
                t = cluster_seconds(mode, n, rate, c[name])
                cell = f"{t * 1e3:8.2f}"
                if fit:
                    replicas = n / mode["partitions"]
                    if name.startswith("async"):
                        if not fit["async"]:
                            cells.append(f" {cell:>16}")
                            continue
                        a = fit["async"]
                        need = a["e1"] * ((replicas - 1) * a["stale"] + 1)
                    else:
                        need = samples_needed(fit, replicas * args.batch)
                    minutes = need / (replicas * args.batch / t) / 60
                    cell += f" {minutes:7.2f}"
                cells.append(f" {cell:>16}")
            print(f"{n:7d} {name:26s}" + "".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
