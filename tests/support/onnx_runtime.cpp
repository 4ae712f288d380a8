#include "onnx_runtime.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStandardPaths>
#include <cstring>

#include "source_dir.h"

namespace test_support {

namespace {

QString tool_dir() { return source_dir() + "/tests/tools/onnx_runtime"; }

// Debian's interpreter, where python3-onnx is installed, whatever python3 comes first on PATH.
QString debian_python() { return QFile::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }

// Runs `code` with the model path as argv[1]; returns stderr (and stdout) on failure, else empty.
QString run_python(const QString& code, const QStringList& args) {
    QProcess py;
    py.start(debian_python(), QStringList{"-c", code} + args);
    if (!py.waitForFinished(120000)) return debian_python() + " did not finish: " + py.errorString();
    if (py.exitStatus() != QProcess::NormalExit || py.exitCode() != 0)
        return QString::fromUtf8(py.readAllStandardError() + py.readAllStandardOutput()).trimmed();
    return {};
}

}  // namespace

QString onnx_runtime_missing() {
    if (QStandardPaths::findExecutable("node").isEmpty())
        return "node is not installed (Node.js runs ONNX Runtime for this suite; scripts/install-deps.sh installs it)";
    if (!QFile::exists(tool_dir() + "/node_modules/onnxruntime-node/package.json"))
        return "onnxruntime-node is not installed in " + tool_dir() +
               " (run scripts/install-deps.sh, or there: ONNXRUNTIME_NODE_INSTALL=skip npm ci)";
    return {};
}

OnnxRuntimeRun run_onnx_runtime(const QString& model, const std::vector<float>& inputs, const QList<int>& sample_dims,
                                const QString& work_dir) {
    return run_onnx_runtime(model, inputs, QList<QList<int>>{sample_dims}, work_dir);
}

OnnxRuntimeRun run_onnx_runtime(const QString& model, const std::vector<float>& inputs, const QList<QList<int>>& input_dims,
                                const QString& work_dir) {
    OnnxRuntimeRun r;
    const QString in_path = work_dir + "/ort_input.f32", out_path = work_dir + "/ort_output.f32";
    QFile in(in_path);
    if (!in.open(QIODevice::WriteOnly) ||
        in.write(reinterpret_cast<const char*>(inputs.data()), static_cast<qint64>(inputs.size() * sizeof(float))) !=
            static_cast<qint64>(inputs.size() * sizeof(float))) {
        r.error = "cannot write " + in_path;
        return r;
    }
    in.close();
    QStringList shapes;
    for (const auto& sample_dims : input_dims) {
        QStringList dims;
        for (int d : sample_dims) dims << QString::number(d);
        shapes << dims.join(',');
    }
    QFile::remove(out_path);

    QProcess node;
    node.start("node", {tool_dir() + "/run_onnx.js", model, in_path, shapes.join(';'), out_path});
    if (!node.waitForFinished(120000) || node.exitStatus() != QProcess::NormalExit || node.exitCode() != 0) {
        r.error = QString("node run_onnx.js exited %1: %2").arg(node.exitCode()).arg(QString::fromUtf8(node.readAllStandardError()));
        return r;
    }
    const auto info = QJsonDocument::fromJson(node.readAllStandardOutput()).object();
    r.runtime = info["runtime"].toString();
    r.input_name = info["input"].toString();
    r.output_name = info["output"].toString();
    for (const auto& d : info["output_dims"].toArray()) r.output_dims << d.toInteger();
    QFile out(out_path);
    if (!out.open(QIODevice::ReadOnly)) {
        r.error = "run_onnx.js wrote no " + out_path;
        return r;
    }
    const QByteArray bytes = out.readAll();
    r.outputs.resize(static_cast<std::size_t>(bytes.size()) / sizeof(float));
    std::memcpy(r.outputs.data(), bytes.constData(), r.outputs.size() * sizeof(float));
    r.ok = true;
    return r;
}

QString onnx_checker_missing() {
    const QString why = run_python("import onnx", {});
    if (why.isEmpty()) return {};
    return debian_python() + " cannot import onnx (Debian package python3-onnx; scripts/install-deps.sh installs it): " + why;
}

QString onnx_checker_errors(const QString& model) {
    return run_python("import sys, onnx; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)", {model});
}

}  // namespace test_support
