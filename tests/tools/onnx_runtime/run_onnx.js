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
// A model with several inputs: DIMS lists each input's shape, separated by ";" ("1,14,28;1,14,28"),
// in the model's input order; each sample row holds the inputs' features side by side (as
// Thresher's data does) and is split among them. Several outputs are written side by side per
// sample, in the model's output order (Thresher's predictions), output_dims [batch, total]; "input"
// and "output" then list the names joined by ",".
// Any failure: a message on stderr and exit status 1.
'use strict';

const fs = require('node:fs');
const ort = require('onnxruntime-node');

async function main(argv) {
  if (argv.length !== 4) throw new Error('usage: run_onnx.js MODEL.onnx INPUT.f32 DIMS OUTPUT.f32');
  const [modelPath, inputPath, dimsText, outputPath] = argv;
  const shapes = dimsText.split(';').map((part) => part.split(',').map((d) => {
    const n = Number(d);
    if (!Number.isInteger(n) || n < 1) throw new Error(`DIMS: "${dimsText}" is not a list of positive integers`);
    return n;
  }));
  const sizes = shapes.map((dims) => dims.reduce((a, b) => a * b, 1));
  const bytes = fs.readFileSync(inputPath);
  const perSample = sizes.reduce((a, b) => a + b, 0);
  if (bytes.length % (4 * perSample) !== 0)
    throw new Error(`${inputPath}: ${bytes.length} bytes is not a whole number of ${perSample}-float samples`);
  const batch = bytes.length / (4 * perSample);
  // A copy: the Buffer's memory may be a slice of a larger pool at any offset.
  const data = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));

  const session = await ort.InferenceSession.create(modelPath, { executionProviders: ['cpu'] });
  if (session.inputNames.length !== shapes.length)
    throw new Error(`the model has ${session.inputNames.length} inputs, DIMS gives ${shapes.length} shapes`);
  // Each input's slice of every sample row.
  const feeds = {};
  let offset = 0;
  shapes.forEach((dims, k) => {
    const part = new Float32Array(batch * sizes[k]);
    for (let b = 0; b < batch; ++b)
      part.set(data.subarray(b * perSample + offset, b * perSample + offset + sizes[k]), b * sizes[k]);
    feeds[session.inputNames[k]] = new ort.Tensor('float32', part, [batch, ...dims]);
    offset += sizes[k];
  });
  const results = await session.run(feeds);
  const outs = session.outputNames.map((name) => {
    const out = results[name];
    if (out.type !== 'float32') throw new Error(`output ${name} is ${out.type}, not float32`);
    return out;
  });
  let out = outs[0];
  let outputDims = out.dims;
  let joined = out.data;
  if (outs.length > 1) {  // side by side per sample
    const widths = outs.map((o) => o.data.length / batch);
    const total = widths.reduce((a, b) => a + b, 0);
    joined = new Float32Array(batch * total);
    for (let b = 0; b < batch; ++b) {
      let at = b * total;
      outs.forEach((o, k) => {
        joined.set(o.data.subarray(b * widths[k], (b + 1) * widths[k]), at);
        at += widths[k];
      });
    }
    outputDims = [batch, total];
  }
  fs.writeFileSync(outputPath, Buffer.from(joined.buffer, joined.byteOffset, joined.byteLength));
  process.stdout.write(JSON.stringify({
    runtime: `onnxruntime-node ${ort.env.versions.node}`,
    input: session.inputNames.join(','),
    output: session.outputNames.join(','),
    output_dims: outputDims,
  }) + '\n');
}

main(process.argv.slice(2)).catch((e) => {
  process.stderr.write(`run_onnx.js: ${e && e.message ? e.message : e}\n`);
  process.exit(1);
});
