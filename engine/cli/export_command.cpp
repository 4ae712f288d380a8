#include "cli/export_command.h"

#include <filesystem>
#include <system_error>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "export/model_export.h"

namespace thresher::cli {

void export_model_command(const ExportModelOptions& o, std::ostream& out, std::ostream& log) {
    // Parsed before the model is read: a typo in --format costs nothing.
    const auto format = model_export::parse_export_format(o.format);
    std::error_code ec;
    if (std::filesystem::equivalent(o.model, o.out, ec))
        throw model_export::ExportError("export-model: --out " + o.out + " is the model file itself; choose another name");

    auto file = model_file_any(o.model, o.import);
    model_export::ExportableModel m;
    m.source = std::filesystem::path(o.model).filename().string();
    m.config = std::move(file.config);
    m.params = std::move(file.params);
    m.normalization = {file.normalization.kind, std::move(file.normalization.shift), std::move(file.normalization.scale)};
    m.class_names = o.class_names.empty() ? std::move(file.class_names) : o.class_names;  // the model's own names unless given
    // Where training stopped: a DL4J zip carries it on (updaterState.bin, iterationCount).
    m.updater_state = std::move(file.updater_state);
    m.iterations = file.position.iterations;
    m.epochs = file.position.epochs_done;

    const auto summary = model_export::export_model(m, format, o.out);
    nlohmann::json record{{"exported", o.out},
                          {"format", model_export::to_string(format)},
                          {"bytes", summary.bytes},
                          {"nodes", summary.nodes},
                          {"layers", m.config.layers.size()},
                          {"params", m.params.size()}};
    if (!summary.notes.empty()) record["notes"] = summary.notes;
    out << record.dump() << std::endl;
    for (const auto& n : summary.notes) log << "export-model: " << n << "\n";
    log << "export-model: wrote " << o.out << " (" << model_export::to_string(format) << ", " << m.config.layers.size()
        << " layers, " << m.params.size() << " parameters, " << summary.bytes << " bytes)\n";
}

}  // namespace thresher::cli
