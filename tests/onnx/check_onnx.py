#!/usr/bin/python3
"""Test only: checks an ONNX file with onnx's own checker, as a runtime's user would.

    check_onnx.py MODEL.onnx

Runs onnx.checker.check_model with full_check=True and strict, type-checking shape inference,
then prints one JSON object: the IR version, the opset, and each graph input's and output's
name, element type and dims (a symbolic dim as its name). Exit status 1 and the reason on
stderr when a check fails.
"""
import json
import sys

import onnx


def describe(values):
    out = []
    for v in values:
        t = v.type.tensor_type
        dims = [d.dim_param if d.dim_param else d.dim_value for d in t.shape.dim]
        out.append({"name": v.name,
                    "type": onnx.TensorProto.DataType.Name(t.elem_type),
                    "dims": dims})
    return out


def main():
    model = onnx.load(sys.argv[1])
    try:
        onnx.checker.check_model(model, full_check=True)
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except Exception as e:  # the checker's errors have several types
        print(f"{sys.argv[1]}: {e}", file=sys.stderr)
        return 1
    print(json.dumps({
        "ir_version": model.ir_version,
        "opset": [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")],
        "inputs": describe(model.graph.input),
        "outputs": describe(model.graph.output),
        "ops": sorted({n.op_type for n in model.graph.node}),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
