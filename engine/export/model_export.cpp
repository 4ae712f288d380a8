// The format-independent half of an export: the request checked against the model, the
// format's refusal asked for before any byte is written, and the durable write.
#include "export/model_export.h"

#include "core/durable_file.h"
#include "export/dl4j_export.h"
#include "export/keras_export.h"
#include "export/onnx_export.h"

namespace thresher::model_export {

namespace {

// What every format relies on: parameters and normalisation that fit the config, and class
// names only where there are classes.
void check_request(const ExportableModel& m) {
    const auto& cfg = m.config;
    if (m.params.size() != cfg.param_count())
        throw ExportError(m.source + ": holds " + std::to_string(m.params.size()) + " parameters, its config needs " +
                          std::to_string(cfg.param_count()));
    if (m.normalization.active() &&
        (m.normalization.shift.size() != cfg.input.size() || m.normalization.scale.size() != cfg.input.size()))
        throw ExportError(m.source + ": its " + m.normalization.kind + " normalisation has " +
                          std::to_string(m.normalization.shift.size()) + " features, the model's input " +
                          std::to_string(cfg.input.size()));
    if (!m.class_names.empty()) {
        if (!cfg.is_classifier())
            throw ExportError(m.source + ": class names were given, but the model is not a classifier (its output layer's loss is " +
                              std::string(config::to_string(cfg.layers.back().loss)) + ")");
        // One sigmoid output names its two classes (0 and 1); K softmax outputs name K.
        const std::size_t classes = cfg.output_size() == 1 ? 2 : static_cast<std::size_t>(cfg.output_size());
        if (m.class_names.size() != classes)
            throw ExportError(m.source + ": " + std::to_string(m.class_names.size()) + " class names were given, the model has " +
                              std::to_string(classes) + " classes");
    }
}

}  // namespace

ExportFormat parse_export_format(std::string_view name) {
    if (name == "onnx") return ExportFormat::Onnx;
    if (name == "keras-h5") return ExportFormat::KerasH5;
    if (name == "keras") return ExportFormat::Keras;
    if (name == "dl4j") return ExportFormat::Dl4j;
    std::string known;
    for (const auto& f : built_export_formats()) known += (known.empty() ? "" : ", ") + f;
    throw ExportError("unknown export format \"" + std::string(name) + "\" (this build exports: " +
                      (known.empty() ? "none" : known) + ")");
}

std::string_view to_string(ExportFormat f) {
    switch (f) {
        case ExportFormat::Onnx: return "onnx";
        case ExportFormat::KerasH5: return "keras-h5";
        case ExportFormat::Keras: return "keras";
        case ExportFormat::Dl4j: return "dl4j";
    }
    return "?";
}

std::vector<std::string> built_export_formats() {
    std::vector<std::string> formats;
    if (onnx_export_built()) formats.emplace_back("onnx");
    // libhdf5 and libzip are required to build Thresher at all.
    formats.emplace_back("keras-h5");
    formats.emplace_back("keras");
    formats.emplace_back("dl4j");  // libzip alone
    return formats;
}

ExportSummary export_model(const ExportableModel& m, ExportFormat format, const std::string& out_path) {
    check_request(m);
    switch (format) {
        case ExportFormat::Onnx: {
            if (auto why = onnx_refusal(m.config)) throw ExportError(m.source + ": " + *why + "; nothing was written");
            const auto onnx = onnx_model_bytes(m);  // in a build without libonnx: an error saying so
            write_file_durably(out_path, onnx.bytes);
            return {onnx.bytes.size(), onnx.nodes, {}};
        }
        case ExportFormat::KerasH5:
        case ExportFormat::Keras: {
            const auto dialect = format == ExportFormat::Keras ? KerasDialect::Keras3 : KerasDialect::Keras2;
            if (auto why = keras_refusal(m, dialect)) throw ExportError(m.source + ": " + *why + "; nothing was written");
            const auto keras = dialect == KerasDialect::Keras3 ? keras_archive_bytes(m) : keras_h5_bytes(m);
            write_file_durably(out_path, keras.bytes);
            return {keras.bytes.size(), keras.layers, {}};
        }
        case ExportFormat::Dl4j: {
            if (auto why = dl4j_refusal(m)) throw ExportError(m.source + ": " + *why + "; nothing was written");
            auto dl4j = dl4j_zip_bytes(m);
            write_file_durably(out_path, dl4j.bytes);
            return {dl4j.bytes.size(), dl4j.layers, std::move(dl4j.notes)};
        }
    }
    throw ExportError("export format " + std::to_string(static_cast<int>(format)) + " has no writer");
}

}  // namespace thresher::model_export
