// ONNX tools for the export suites, each independent of the exporter under test:
// - ONNX Runtime: tests/tools/onnx_runtime/run_onnx.js run with node, from the onnxruntime-node
//   package that scripts/install-deps.sh installs there (npm ci);
// - Debian's python3-onnx: onnx.checker.check_model(full_check=True), the checker the ONNX project
//   ships for Python (strict shape inference included), run by Debian's /usr/bin/python3.
// The suites FAIL when one is missing, naming what installs it: a skipped comparison would let an
// export bug through unseen.
#pragma once

#include <QString>
#include <QStringList>
#include <vector>

namespace test_support {

// Empty when node and the installed package are there; else what is missing and how to install it.
QString onnx_runtime_missing();

struct OnnxRuntimeRun {
    bool ok = false;
    QString error;               // when !ok: node's exit status and stderr
    std::vector<float> outputs;  // the model's first output, [batch x ...] row-major
    QString runtime;             // "onnxruntime-node 1.30.0"
    QString input_name, output_name;
    QList<qint64> output_dims;
};

// Runs `model` on `inputs` (a batch of samples of shape `sample_dims`), files in `work_dir`.
OnnxRuntimeRun run_onnx_runtime(const QString& model, const std::vector<float>& inputs, const QList<int>& sample_dims,
                                const QString& work_dir);
// A model with several inputs: each sample row holds the inputs' features side by side, of the
// shapes `input_dims` in the model's input order; several outputs come back side by side per sample.
OnnxRuntimeRun run_onnx_runtime(const QString& model, const std::vector<float>& inputs, const QList<QList<int>>& input_dims,
                                const QString& work_dir);

// Empty when Debian's python3 can import onnx; else what is missing and how to install it.
QString onnx_checker_missing();
// Empty when the Python ONNX checker accepts `model`; else its message.
QString onnx_checker_errors(const QString& model);

}  // namespace test_support
