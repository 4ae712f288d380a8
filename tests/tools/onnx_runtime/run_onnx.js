#!/usr/bin/env node
// Runs an ONNX model in ONNX Runtime (onnxruntime-node from npm: an implementation independent of
// Thresher and of the ONNX library that wrote the file), for the export suites.
//
//   node run_onnx.js MODEL.onnx INPUT.f32 DIMS OUTPUT.f32
//
// INPUT.f32 holds a batch of float32 samples (little-endian, no header); DIMS is one sample's shape,
// e.g. "1,28,28" or "784", so the batch is the file's float count divided by their product. The
// model's first input gets [batch, ...DIMS]; its first output is written to OUTPUT.f32 the same
// way. One JSON line on stdout describes the run: {"runtime", "input", "output", "output_dims"}.
// Any failure: a message on stderr and exit status 1.
'use strict';

const fs = require('node:fs');
const ort = require('onnxruntime-node');

async function main(argv) {
  if (argv.length !== 4) throw new Error('usage: run_onnx.js MODEL.onnx INPUT.f32 DIMS OUTPUT.f32');
  const [modelPath, inputPath, dimsText, outputPath] = argv;
  const dims = dimsText.split(',').map((d) => {
    const n = Number(d);
    if (!Number.isInteger(n) || n < 1) throw new Error(`DIMS: "${dimsText}" is not a list of positive integers`);
    return n;
  });
  const bytes = fs.readFileSync(inputPath);
  const perSample = dims.reduce((a, b) => a * b, 1);
  if (bytes.length % (4 * perSample) !== 0)
    throw new Error(`${inputPath}: ${bytes.length} bytes is not a whole number of ${perSample}-float samples`);
  const batch = bytes.length / (4 * perSample);
  // A copy: the Buffer's memory may be a slice of a larger pool at any offset.
  const data = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));

  const session = await ort.InferenceSession.create(modelPath, { executionProviders: ['cpu'] });
  const inputName = session.inputNames[0];
  const outputName = session.outputNames[0];
  const results = await session.run({ [inputName]: new ort.Tensor('float32', data, [batch, ...dims]) });
  const out = results[outputName];
  if (out.type !== 'float32') throw new Error(`output ${outputName} is ${out.type}, not float32`);
  fs.writeFileSync(outputPath, Buffer.from(out.data.buffer, out.data.byteOffset, out.data.byteLength));
  process.stdout.write(JSON.stringify({
    runtime: `onnxruntime-node ${ort.env.versions.node}`,
    input: inputName,
    output: outputName,
    output_dims: out.dims,
  }) + '\n');
}

main(process.argv.slice(2)).catch((e) => {
  process.stderr.write(`run_onnx.js: ${e && e.message ? e.message : e}\n`);
  process.exit(1);
});
