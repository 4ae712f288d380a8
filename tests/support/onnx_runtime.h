// ONNX Runtime for the export suites: tests/tools/onnx_runtime/run_onnx.js run with node, from the
// onnxruntime-node package that scripts/install-deps.sh installs there (npm ci). The suites FAIL
// when it is missing, naming the command that installs it: a skipped comparison would let an
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

}  // namespace test_support
