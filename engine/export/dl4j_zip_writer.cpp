// The DL4J model zip of a MultiLayerNetwork or ComputationGraph (ModelSerializer.writeModel's entries, in its order): configuration.json,
// coefficients.bin, updaterState.bin when there is state DL4J keeps, normalizer.bin when the model
// was trained with input normalisation (ModelSerializer.addNormalizerToModel's entry). Built in memory
// (zip_image.h) and written durably by export_model.
#include "export/dl4j_export.h"
#include "export/nd4j_writer.h"
#include "export/zip_image.h"
#include "vocab/updater.h"

namespace thresher::model_export {

namespace {

// Whether some layer's updater keeps state (Sgd keeps none, in DL4J as in Thresher).
bool keeps_state(const config::ModelConfig& c) {
    for (std::size_t i = 0; i < c.layers.size(); ++i)
        if (c.layers[i].param_count && vocab::updater_state_per_param(c.effective_updater(i).kind) > 0) return true;
    return false;
}

}  // namespace

Dl4jBytes dl4j_zip_bytes(const ExportableModel& m) {
    Dl4jBytes out;
    const auto configuration = dl4j_configuration_text(m);  // an ExportError when DL4J cannot express m
    out.layers = dl4j_layer_order(m).size();
    std::vector<std::pair<std::string, std::string>> entries{
        {"configuration.json", configuration},
        {"coefficients.bin", nd4j_row_bytes(dl4j_coefficients(m))},
    };
    std::string why;
    const auto state = dl4j_updater_state(m, why);
    if (!state.empty()) entries.emplace_back("updaterState.bin", nd4j_row_bytes(state));
    else if (!why.empty()) out.notes.push_back(why);
    else if (m.updater_state.empty() && keeps_state(m.config))
        out.notes.push_back("updaterState.bin: not written (the model file holds no updater state: DL4J starts the updater afresh)");
    if (m.normalization.active()) entries.emplace_back("normalizer.bin", dl4j_normalizer_bytes(m.normalization));
    if (!m.class_names.empty()) out.notes.push_back("class names: not written (a DL4J model zip has no place for them)");
    for (std::size_t i = 0; i < m.config.layers.size(); ++i)
        if (const auto& l = m.config.layers[i]; l.input_retain < 1.f || l.recurrent_retain < 1.f)
            out.notes.push_back(l.label(i) + ": its dropout inside the cell is not written (DL4J's recurrent layers have none; "
                                "inference is the same, training in DL4J runs without it)");
    out.bytes = zip_bytes(entries, m.source + " as a DL4J zip");
    return out;
}

}  // namespace thresher::model_export
