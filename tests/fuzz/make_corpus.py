#!/usr/bin/env python3
"""Writes the generated seeds of tests/fuzz/corpus/: frames (core/net/protocol.md) and model
files (core/train/model_format.md), built here from the format specs, and the control requests
of daemon/control_protocol.md, and NumPy headers and .npz archives. Job-file seeds are copies of examples/ and tests/data/jobs/ plus
hand-written broken ones; sweep-file seeds are written here (every method and kind of parameter,
and broken ones). Rerun after a format change:  tests/fuzz/make_corpus.py
Seeds that libFuzzer found (scripts/fuzz --merge) or regressions live beside these under other
names and are left alone."""
import gzip
import io
import json
import pathlib
import shutil
import struct
import zipfile
import zlib

ROOT = pathlib.Path(__file__).resolve().parent
CORPUS = ROOT / "corpus"
PROJECT = ROOT.parent.parent


def write(target, name, data):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    (d / name).write_bytes(data)


# ---- frames: magic "DTRN", u16 version, u16 type, u64 job, u32 sender, u32 tag, u32 length, u32 crc
def header(mtype, payload_len, crc, job=0, sender=0xFFFFFFFF, tag=0, version=1, magic=b"DTRN"):
    return magic + struct.pack("<HHQIIII", version, mtype, job, sender, tag, payload_len, crc)


def frame(mtype, payload, **kw):
    return header(mtype, len(payload), zlib.crc32(payload), **kw) + payload


CONTROL, LOG, METRICS, CHECKPOINT, HEARTBEAT, FLOATS, MISMATCH = 1, 2, 3, 4, 5, 16, 255


def frames():
    ctl = json.dumps({"v": 1, "type": "status", "id": 42}).encode()
    floats = struct.pack("<6f", 1.0, -0.0, 3.5, float("inf"), 1e-40, -2.0)
    write("frame", "control", frame(CONTROL, ctl, job=7, tag=1))
    write("frame", "log_line", frame(LOG, b"epoch 1 loss 0.5\n", job=7, sender=0))
    write("frame", "metrics", frame(METRICS, b'{"points":[{"step":1,"epoch":0.1,"name":"train_loss","value":0.7}]}', job=7, sender=1))
    write("frame", "checkpoint", frame(CHECKPOINT, b"DTRCKPT\x01" + bytes(24), job=7, sender=0))
    write("frame", "heartbeat_empty", frame(HEARTBEAT, b"", sender=3))
    write("frame", "heartbeat_token", frame(HEARTBEAT, b"9f86d081884c7d659a2feaa0c55ad015", sender=2))
    write("frame", "floats", frame(FLOATS, floats, job=7, sender=1, tag=9))
    write("frame", "version_mismatch_reply", frame(MISMATCH, b'{"v":1,"error":"version mismatch","supported":[1]}'))
    write("frame", "unknown_type", frame(77, b"xyz"))
    write("frame", "two_frames", frame(CONTROL, b'{"v":1,"type":"version"}') + frame(FLOATS, floats))
    write("frame", "float_then_control", frame(FLOATS, floats[:8]) + frame(CONTROL, ctl))
    write("frame", "other_version", header(CONTROL, 2, zlib.crc32(b"{}"), version=2) + b"{}")
    write("frame", "version_zero", header(CONTROL, 0, 0, version=0))
    write("frame", "huge_length", header(CONTROL, 0xFFFFFFFF, 0) + b"{}")
    write("frame", "over_default_limit", header(FLOATS, (64 << 20) + 1, 0) + bytes(16))
    write("frame", "at_default_limit", header(FLOATS, 64 << 20, 0) + bytes(64))
    write("frame", "bad_magic", header(CONTROL, 2, zlib.crc32(b"{}"), magic=b"HTTP") + b"{}")
    write("frame", "bad_crc", header(CONTROL, 2, 0xDEADBEEF) + b"{}")
    write("frame", "truncated_header", frame(CONTROL, b"{}")[:20])
    write("frame", "truncated_payload", frame(CONTROL, ctl)[:-5])


# ---- model files
def model_file(spec, params, job="fuzz", step=100, kind=0, divisor=255.0, mean=(), inv_std=()):
    def string(s):
        s = s.encode()
        return struct.pack("<Q", len(s)) + s

    def floats(v):
        return struct.pack("<Q", len(v)) + struct.pack("<%df" % len(v), *v)

    body = b"DTRMODEL" + struct.pack("<I", 1) + string(spec) + struct.pack("<Q", step) + string(job)
    body += struct.pack("<I", kind) + struct.pack("<f", divisor) + floats(mean) + floats(inv_std)
    body += floats(params)
    return body + struct.pack("<I", zlib.crc32(body))


def model_files():
    mlp = "mlp inputs=4 hidden=3 activation=relu outputs=2 loss=softmax_xent init=auto"
    n = 4 * 3 + 3 + 3 * 2 + 2
    write("model_file", "mlp_constant", model_file(mlp, [0.01 * i for i in range(n)]))
    write("model_file", "mlp_standardize", model_file(mlp, [0.5] * n, kind=1, divisor=1.0,
                                                      mean=(0.1, 0.2, 0.3, 0.4), inv_std=(1, 2, 3, 4)))
    lin = "linear inputs=3 hidden= activation=identity outputs=1 loss=mse init=auto"
    write("model_file", "linear", model_file(lin, [1.0, 2.0, 3.0, 0.5], job="reg"))
    soft = "softmax inputs=2 hidden= activation=identity outputs=3 loss=softmax_xent init=auto"
    write("model_file", "softmax", model_file(soft, [0.0] * 9))
    write("model_file", "wrong_param_count", model_file(mlp, [0.0] * (n - 1)))
    write("model_file", "bad_spec", model_file("mlp inputs=-4 outputs=2", []))
    write("model_file", "huge_spec", model_file("mlp inputs=16777216 hidden=16777216 outputs=2", []))
    good = model_file(mlp, [0.0] * n)
    write("model_file", "bad_crc", good[:-4] + b"\0\0\0\0")
    write("model_file", "truncated", good[:40])
    write("model_file", "version_2", model_file(mlp, [0.0] * n).replace(b"\x01\x00\x00\x00", b"\x02\x00\x00\x00", 1))


def sparse_model_file(spec, keys, slots, globals_, hash_bits=0, features=0, job="fuzz", step=7):
    def string(s):
        s = s.encode()
        return struct.pack("<Q", len(s)) + s

    def floats(v):
        return struct.pack("<Q", len(v)) + struct.pack("<%df" % len(v), *v)

    body = b"DTRSPARS" + struct.pack("<I", 1) + string(spec) + struct.pack("<I", hash_bits)
    body += struct.pack("<QQ", features, step) + string(job)
    body += struct.pack("<Q", len(keys)) + struct.pack("<%dI" % len(keys), *keys)
    body += floats(slots) + floats(globals_)
    return body + struct.pack("<I", zlib.crc32(body))


def sparse_model_files():
    write("sparse_model_file", "logistic", sparse_model_file("sparse_logistic classes=2", [3, 9, 4000000000],
                                                             [0.5, -0.25, 1.0], [0.1], features=4000000001))
    write("sparse_model_file", "fm_hashed", sparse_model_file(
        "sparse_fm classes=2 factors=2 init_scale=0.01", [1, 2], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [0.0],
        hash_bits=18))
    write("sparse_model_file", "softmax", sparse_model_file("sparse_softmax classes=3", [5], [1, 2, 3], [0, 0, 0]))
    write("sparse_model_file", "repeated_key", sparse_model_file("sparse_logistic classes=2", [3, 3], [1, 2], [0]))
    write("sparse_model_file", "huge_key_count",
          sparse_model_file("sparse_logistic classes=2", [], [], [0]).replace(
              struct.pack("<Q", 0) + struct.pack("<Q", 0), struct.pack("<Q", 1 << 40) + struct.pack("<Q", 0), 1))
    write("sparse_model_file", "wrong_width", sparse_model_file("sparse_logistic classes=2", [1], [1, 2], [0]))


# ---- control requests (daemon/control_protocol.md)
def requests():
    toml = (PROJECT / "examples" / "blobs.toml").read_text()
    reqs = {
        "version": {"v": 1, "type": "version"},
        "submit": {"v": 1, "type": "submit", "job_toml": toml, "source": "blobs.toml", "name": "b", "priority": 5},
        "status": {"v": 1, "type": "status", "id": 1},
        "list": {"v": 1, "type": "list", "state": "running", "limit": 5},
        "cancel": {"v": 1, "type": "cancel", "id": 3},
        "wait": {"v": 1, "type": "wait", "id": 3},
        "logs": {"v": 1, "type": "logs", "id": 1, "after": 2, "tail": 3, "worker": 1, "since": 5.0, "follow": True},
        "logs_tail_0": {"v": 1, "type": "logs", "id": 1, "tail": 0},
        "metrics": {"v": 1, "type": "metrics", "id": 1, "name": "loss"},
        "checkpoints": {"v": 1, "type": "checkpoints", "id": 1},
        "checkpoint": {"v": 1, "type": "checkpoint", "id": 1, "step": 200},
        "settings": {"v": 1, "type": "settings", "id": 1},
        "nodes": {"v": 1, "type": "nodes"},
        "node_heartbeat": {"v": 1, "type": "node_heartbeat", "name": "node2"},
        "spawn_worker": {"v": 1, "type": "spawn_worker", "job": 4, "rank": 1, "token": "ab12", "coordinator": "10.0.0.1:7070"},
        "stop": {"v": 1, "type": "stop"},
        "worker_hello": {"v": 1, "type": "worker_hello", "job": 4, "rank": 0, "token": "ab12", "data_host": "127.0.0.1", "data_port": 40000},
        "worker_done": {"v": 1, "type": "worker_done", "steps": 100, "reason": "done", "stop": "completed"},
        "worker_done_no_data": {"v": 1, "type": "worker_done", "stop": "no_data", "steps": 0, "error": "no such file"},
        "auth_hello": {"v": 1, "type": "auth_hello", "nonce": "00" * 16},
        "metric_points": {"points": [{"step": 10, "epoch": 0.5, "name": "train_loss", "value": 0.25}]},
        "status_no_id": {"v": 1, "type": "status"},
        "status_string_id": {"v": 1, "type": "status", "id": "1"},
        "no_type": {"v": 1},
        "unknown_type": {"v": 1, "type": "reboot"},
        "version_2": {"v": 2, "type": "version"},
        "unicode": {"v": 1, "type": "list", "state": "r\u00e9\u2603"},
        "huge_numbers": {"v": 1, "type": "logs", "id": 18446744073709551615, "tail": 9223372036854775807, "since": 1e308},
    }
    for name, body in reqs.items():
        write("control_request", name, json.dumps(body))
    write("control_request", "not_json", "GET / HTTP/1.1\r\n\r\n")
    write("control_request", "array", "[1,2,3]")
    write("control_request", "truncated", '{"v":1,"type":"sta')
    write("control_request", "deep", "[" * 200 + "]" * 200)


# ---- job files
def http_heads():
    write("http_head", "metrics", "GET /metrics HTTP/1.1\r\nHost: localhost:8470\r\nAccept: */*\r\n\r\n")
    write("http_head", "bearer", "GET /metrics?x=1 HTTP/1.1\r\nAuthorization: Bearer 0123abcd\r\n\r\n")
    write("http_head", "head_1_0", "HEAD / HTTP/1.0\r\n\r\n")
    write("http_head", "post", "POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\n")
    write("http_head", "folded", "GET / HTTP/1.1\r\nX: a\r\n  b\r\n\r\n")
    write("http_head", "no_blank_line", "GET / HTTP/1.1\r\nHost: a\r\n")
    write("http_head", "control_chars", "GET /\x01 HTTP/1.1\r\nX: \x7f\r\n\r\n")


def job_files():
    for src in sorted((PROJECT / "examples").glob("*.toml")):
        write("job_file", "example_" + src.name, src.read_bytes())
    for src in sorted((PROJECT / "tests" / "data" / "jobs").rglob("*.toml")):
        rel = src.relative_to(PROJECT / "tests" / "data" / "jobs")
        write("job_file", "testdata_" + "_".join(rel.parts), src.read_bytes())
    blobs = (PROJECT / "examples" / "blobs.toml").read_bytes()
    write("job_file", "overrides", blobs + b"\0train.epochs=1\0model.hidden=[8,4]\0optimizer.type=adam")
    write("job_file", "bad_override", blobs + b"\0train.epochs\0nosuch.key=3\0=")
    write("job_file", "empty", b"")
    write("job_file", "broken_syntax", b"[data\nformat = \"synthetic\"\nrows = \n")
    write("job_file", "wrong_types", b"name = 3\n[data]\nformat = 1\n[model]\nhidden = \"big\"\n[train]\nepochs = -1\nbatch_size = 1e400\n")
    write("job_file", "unicode_and_escapes", "name = \"\\u00e9t\u00e9\\t\\\\\"\n[data]\nformat = \"csv\"\ntrain = \"\u2603.csv\"\n".encode())
    write("job_file", "cluster", b"[data]\nformat=\"synthetic\"\nsynthetic=\"blobs\"\n[cluster]\nworkers = 3\nmode = \"sync\"\nhosts = [\"a\", \"b\", \"a\"]\nplacement = \"spread\"\n")
    write("job_file", "compression", b"[data]\nformat=\"synthetic\"\n[model]\ntype=\"mlp\"\nhidden=[16]\n[cluster]\nworkers = 2\nmode = \"sync\"\ncompression = \"powersgd\"\ncompression_rank = 2\ncompression_warmup_steps = 5\n")


# ---- sweep files (man/dtrain-sweep.toml.5): a base job inline or by path, then [sweep]
SWEEP_BASE = b"""[data]
format = "synthetic"
synthetic = "blobs"
rows = 64
test_rows = 16
[model]
type = "mlp"
hidden = [8]
[train]
epochs = 1
"""


def sweep_files():
    write("sweep_file", "grid", SWEEP_BASE + b"""[sweep]
method = "grid"
metric = "eval_accuracy"
[sweep.parameters]
"optimizer.lr" = { values = [0.01, 0.1] }
"train.batch_size" = { values = [16, 32] }
"model.hidden" = { values = [[8], [16, 8]] }
""")
    write("sweep_file", "grid_dotted_int", SWEEP_BASE + b"""[sweep]
method = "grid"
metric = "train_loss"
goal = "min"
[sweep.parameters]
train.seed = { int = [1, 4] }
""")
    write("sweep_file", "random", SWEEP_BASE + b"""[sweep]
method = "random"
metric = "eval_loss"
max_trials = 6
max_concurrent = 2
seed = 7
[sweep.parameters]
"optimizer.lr" = { log_uniform = [1e-4, 1e-1] }
"optimizer.momentum" = { uniform = [0.5, 0.99] }
"train.batch_size" = { int = [8, 64] }
""")
    write("sweep_file", "asha", SWEEP_BASE + b"""[sweep]
method = "asha"
metric = "eval_accuracy"
max_trials = 9
min_steps = 2
max_steps = 18
reduction_factor = 3
[sweep.parameters]
"optimizer.lr" = { log_uniform = [1e-3, 1.0] }
""")
    write("sweep_file", "job_by_path", b"""job = "blobs.toml"
[sweep]
method = "grid"
metric = "eval_accuracy"
[sweep.parameters]
"optimizer.lr" = { values = [0.1] }
""")
    write("sweep_file", "empty", b"")
    write("sweep_file", "no_sweep", SWEEP_BASE)
    write("sweep_file", "broken", SWEEP_BASE + b"""[sweep]
method = "gird"
metric = "accuracy"
max_trials = 0
[sweep.parameters]
"optimizer.lrr" = { valus = [] }
"train.batch_size" = { values = [0, -3] }
"model.hidden" = { uniform = [2, 1] }
""")


# ---- IDX image files (unlabelled), plain and gzipped: u32 magic 0x00000803, u32 count, rows, cols
def idx_files():
    def images(count, rows, cols, pixels=None):
        body = bytes(range(count * rows * cols)) if pixels is None else pixels
        return struct.pack(">IIII", 0x803, count, rows, cols) + body[: count * rows * cols]

    def gz(data):
        return gzip.compress(data, mtime=0)

    small = images(3, 2, 3)
    write("idx_file", "plain", small)
    write("idx_file", "gzip", gz(small))
    write("idx_file", "two_members", gz(small[:10]) + gz(small[10:]))
    write("idx_file", "gzip_bad_crc", gz(small)[:-8] + b"\0\0\0\0" + gz(small)[-4:])
    write("idx_file", "gzip_cut", gz(small)[:-3])
    write("idx_file", "gzip_then_junk", gz(small) + b"junk")
    write("idx_file", "truncated_pixels", small[:-4])
    write("idx_file", "huge_count", struct.pack(">IIII", 0x803, 0xFFFFFFFF, 28, 28) + bytes(64))
    write("idx_file", "labels_magic", struct.pack(">II", 0x801, 3) + bytes(3))
    write("idx_file", "short", b"\x1f")


# ---- NumPy .npy headers (magic, version, little-endian header length, a dict padded to 64) and
# .npz archives of them (zip, stored or deflated), without numpy
def npy(descr, shape, data=b"", major=1, fortran="False", dict_text=None):
    text = dict_text or "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)
    length_bytes = 2 if major == 1 else 4
    pad = -(8 + length_bytes + len(text) + 1) % 64
    header = (text + " " * pad + "\n").encode()
    length = struct.pack("<H" if major == 1 else "<I", len(header))
    return b"\x93NUMPY" + bytes([major, 0]) + length + header + data


def npz(members, method=zipfile.ZIP_STORED):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as z:
        for name, data in members:
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            z.writestr(info, data)
    return out.getvalue()


def npy_headers():
    x = npy("<f4", "(2, 3)", struct.pack("<6f", *range(6)))
    y = npy("<i8", "(2,)", struct.pack("<2q", 1, 0))
    write("npy_header", "f4", x)
    write("npy_header", "f8_v2", npy("<f8", "(1, 2)", bytes(16), major=2))
    write("npy_header", "u1_images_v3", npy("|u1", "(1, 1, 2, 2)", bytes(4), major=3))
    write("npy_header", "i8_labels", y)
    write("npy_header", "scalar", npy("<f4", "()", bytes(4)))
    write("npy_header", "fortran", npy("<f4", "(2, 2)", fortran="True"))
    write("npy_header", "big_endian", npy(">f4", "(2,)"))
    write("npy_header", "structured",
          npy("", "", dict_text="{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}"))
    write("npy_header", "huge_shape", npy("<f8", "(4294967296, 4294967296)"))
    write("npy_header", "cut", x[:40])
    write("npy_header", "npz", npz([("x", x), ("y", y)]))
    write("npy_header", "npz_deflated", npz([("x", x)], zipfile.ZIP_DEFLATED))
    write("npy_header", "npz_cut", npz([("x", x), ("y", y)])[:-30])


# ---- compressed pushes (core/dist/ps_protocol.md): u16 slice size, a hello header (25 u32
# slots: magic, ..., rows at 8, flags at 24), then the push's data floats
def ps_push(slice_size, flags, rows, data):
    slots = [0] * 25
    slots[0], slots[8], slots[24] = 0x31765350, rows, flags
    return struct.pack("<H", slice_size) + struct.pack("<25I", *slots) + data


def ps_residual(slice_size, rank, workers_slot, step, data):
    # A residual request of worker `rank` for the checkpoint before `step`; the target collects
    # the steps slot's step (7) from workers_slot % 4 + 1 workers.
    slots = [0] * 25
    slots[0], slots[1], slots[4], slots[16], slots[20] = 0x31765350, rank, step, 7, workers_slot
    return struct.pack("<H", slice_size) + struct.pack("<25I", *slots) + data


def ps_pushes():
    BF16, SPARSE = 2, 4
    write("ps_push", "bf16", ps_push(5, BF16, 0, struct.pack("<3I", 0x3F80BF80, 0x40004080, 0x4120)))
    pairs = struct.pack("<3I3f", 0, 4, 9, 1.5, -2.0, 0.25)
    write("ps_push", "sparse", ps_push(10, SPARSE, 3, pairs))
    write("ps_push", "sparse_repeated_index", ps_push(10, SPARSE, 2, struct.pack("<2I2f", 3, 3, 1.0, 2.0)))
    write("ps_push", "sparse_index_outside", ps_push(10, SPARSE, 3, struct.pack("<3I3f", 0, 10, 9, 1, 2, 3)))
    write("ps_push", "sparse_too_many_pairs", ps_push(2, SPARSE, 3, pairs))
    write("ps_push", "sparse_short", ps_push(10, SPARSE, 3, pairs[:12]))
    write("ps_push", "both_encodings", ps_push(10, BF16 | SPARSE, 3, pairs))
    write("ps_push", "raw_only", ps_push(10, 0, 0, pairs))
    write("ps_push", "bad_magic", struct.pack("<H", 4) + bytes(100) + pairs)
    write("ps_push", "residual", ps_residual(3, 1, 2, 7, struct.pack("<3f", 0.5, -1.0, 2.0)))
    write("ps_push", "residual_other_step", ps_residual(3, 0, 2, 6, struct.pack("<3f", 1, 2, 3)))


if __name__ == "__main__":
    frames()
    model_files()
    sparse_model_files()
    requests()
    http_heads()
    job_files()
    sweep_files()
    idx_files()
    npy_headers()
    ps_pushes()
