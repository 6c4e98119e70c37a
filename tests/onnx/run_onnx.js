// Test only: runs an ONNX model with onnxruntime-node (a real ONNX runtime, not dtrain) on a file
// of raw float32 rows and prints its outputs as one JSON object.
//
//   NODE_PATH=build-test/node_modules node run_onnx.js MODEL.onnx ROWS.f32 D1[,D2,...]
//
// ROWS.f32 holds N rows of the sample dims D1 x D2 x ... little-endian float32, back to back; the
// model's input `input` gets [N, D1, D2, ...]. Prints {"<output>": {"dims": [...], "data":
// [...]}} for every output (int64 outputs as numbers). onnxruntime-node is found through
// NODE_PATH (scripts/install-test-npm installs it); without it this fails, never skips.
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

async function main() {
  const [modelPath, rowsPath, dimsText] = process.argv.slice(2);
  const dims = dimsText.split(',').map(Number);
  const perRow = dims.reduce((a, b) => a * b, 1);
  const bytes = fs.readFileSync(rowsPath);
  // A copy: a Float32Array needs its own 4-byte aligned buffer.
  const x = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  const session = await ort.InferenceSession.create(modelPath);
  const input = new ort.Tensor('float32', x, [x.length / perRow, ...dims]);
  const result = await session.run({input});
  const out = {};
  for (const name of session.outputNames) {
    const t = result[name];
    out[name] = {dims: t.dims, data: Array.from(t.data, (v) => Number(v))};
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e.message);
  process.exit(1);
});
