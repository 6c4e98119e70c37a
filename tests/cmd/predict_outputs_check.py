#!/usr/bin/python3
# Test-only (tests/cmd/predict_outputs_test.cc): checks what `dtrain predict` and `dtrain eval
# --per-class --json` wrote in DIR against NumPy and scikit-learn (Debian's python3-numpy and
# python3-sklearn), for the labels in LABELS (an IDX labels file, gzipped):
#   classes.npy (int64 [N]), classes.csv, classes.json: the same classes;
#   proba.npy (float32 [N, C]), proba.csv, proba.json: the same probabilities, each row summing
#     to 1 within 1e-5, the predicted class's the largest;
#   eval.json: the confusion matrix equal to sklearn's confusion_matrix on the same predictions
#     and labels, the per-class, macro and micro precision, recall and F1 within 1e-9 of
#     precision_recall_fscore_support's (zero_division=0, every class of the model).
# Prints what disagrees and exits 1; exits 0 when everything agrees.
#   predict_outputs_check.py DIR LABELS
import gzip
import json
import sys

import numpy as np
from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


directory, labels_path = sys.argv[1], sys.argv[2]
with gzip.open(labels_path) as f:
    labels = np.frombuffer(f.read(), dtype=np.uint8, offset=8).astype(np.int64)


def path(name):
    return directory + "/" + name


def csv_rows(name):
    with open(path(name)) as f:
        lines = f.read().splitlines()
    return lines[0], [line.split(",") for line in lines[1:]]


# Classes: .npy, CSV and JSON agree.
classes = np.load(path("classes.npy"))
check(classes.dtype == np.int64 and classes.shape == labels.shape,
      f"classes.npy is {classes.dtype} {classes.shape}, not int64 {labels.shape}")
header, rows = csv_rows("classes.csv")
check(header == "class", f"classes.csv's header is {header!r}")
check(np.array_equal(np.array([int(r[0]) for r in rows]), classes), "classes.csv differs")
with open(path("classes.json")) as f:
    predictions = json.load(f)["predictions"]
check(all(isinstance(p, int) for p in predictions), "classes.json holds a non-integer class")
check(np.array_equal(np.array(predictions), classes), "classes.json differs")

# Probabilities: .npy, CSV and JSON agree (CSV's and JSON's digits give back the float32).
proba = np.load(path("proba.npy"))
n_classes = proba.shape[1] if proba.ndim == 2 else 0
check(proba.dtype == np.float32 and proba.ndim == 2 and proba.shape[0] == len(labels),
      f"proba.npy is {proba.dtype} {proba.shape}")
check(np.abs(proba.sum(axis=1, dtype=np.float64) - 1.0).max() <= 1e-5,
      "a row's probabilities do not sum to 1 within 1e-5")
check(np.all(proba[np.arange(len(classes)), classes] == proba.max(axis=1)),
      "a predicted class has not the largest probability")
header, rows = csv_rows("proba.csv")
check(header == ",".join(f"p{c}" for c in range(n_classes)), f"proba.csv's header is {header!r}")
check(np.array_equal(np.array(rows, dtype=np.float32), proba), "proba.csv differs")
with open(path("proba.json")) as f:
    given = json.load(f)
check(np.array_equal(np.array(given["probabilities"], dtype=np.float32), proba),
      "proba.json's probabilities differ")
check(np.array_equal(np.array(given["predictions"]), classes), "proba.json's predictions differ")

# The per-class report against scikit-learn's on the same predictions and labels.
with open(path("eval.json")) as f:
    report = json.load(f)
every = list(range(report["classes"]))
check(report["classes"] == n_classes, f"eval.json has {report['classes']} classes")
expected = confusion_matrix(labels, classes, labels=every)
check(np.array_equal(np.array(report["confusion"]), expected),
      f"confusion differs from sklearn's:\n{np.array(report['confusion'])}\n{expected}")
precision, recall, f1, support = precision_recall_fscore_support(
    labels, classes, labels=every, zero_division=0)
for c, row in enumerate(report["per_class"]):
    check(row["class"] == c, f"per_class[{c}] is class {row['class']}")
    for name, value in (("precision", precision[c]), ("recall", recall[c]), ("f1", f1[c])):
        check(abs(row[name] - value) <= 1e-9, f"class {c} {name} {row[name]}, sklearn's {value}")
    check(row["support"] == support[c], f"class {c} support {row['support']}, sklearn's {support[c]}")
for average in ("macro", "micro"):
    p, r, f, _ = precision_recall_fscore_support(
        labels, classes, labels=every, average=average, zero_division=0)
    for name, value in (("precision", p), ("recall", r), ("f1", f)):
        got = report[average][name]
        check(abs(got - value) <= 1e-9, f"{average} {name} {got}, sklearn's {value}")
    check(report[average]["support"] == len(labels), f"{average} support")
check(abs(report["accuracy"] - float(np.mean(classes == labels))) <= 1e-12, "accuracy")

for failure in failures:
    print(failure, file=sys.stderr)
sys.exit(1 if failures else 0)
