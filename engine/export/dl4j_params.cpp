// The parameters and updater state of a DL4J export in DL4J's flattened order: the inverse of
// config/weight_import.cpp, through the same chunk list, permutations and UpdaterBlock walk
// (config/dl4j_layout.h, which has the layouts and a worked example). The layers come in DL4J's
// order: a MultiLayerNetwork's confs are Thresher's layers as they are; a ComputationGraph
// flattens in its topological order (dl4j_layer_order, from the vertices the configuration
// writes).
#include <map>

#include "config/dl4j_layout.h"
#include "config/model_config.h"
#include "export/dl4j_export.h"

namespace thresher::model_export {

namespace {

using config::Dl4jChunk;
using config::ParamRole;

std::vector<Dl4jChunk> chunks_of(const ExportableModel& em) {
    // hasBias true, as the configuration says; an embedding has none (EmbeddingSequenceLayer hasBias false).
    return config::dl4j_chunks(em.config, dl4j_layer_order(em),
                               [&](std::size_t i) { return em.config.layers[i].type != config::LayerType::Embedding; });
}

std::size_t offset_of(const config::LayerConfig& l, ParamRole role) {
    for (const auto& b : l.blocks)
        if (b.role == role) return b.offset;
    return 0;
}

}  // namespace

std::vector<float> dl4j_coefficients(const ExportableModel& em) {
    const auto& m = em.config;
    std::vector<float> out;
    out.reserve(em.params.size());
    for (const auto& c : chunks_of(em)) {
        const auto& l = m.layers[c.layer];
        const std::size_t at = out.size();
        out.resize(at + c.n);
        config::thresher_chunk_to_dl4j(l, c, em.params.data() + l.param_offset + offset_of(l, c.role), out.data() + at);
    }
    return out;
}

std::vector<float> dl4j_updater_state(const ExportableModel& em, std::string& why) {
    const auto& m = em.config;
    why.clear();
    if (em.updater_state.empty()) return {};
    const auto layout = config::thresher_state_layout(m);
    const std::size_t total = layout.total;
    if (em.updater_state.size() != total) {
        why = "updaterState.bin: not written (the model holds " + std::to_string(em.updater_state.size()) +
              " values of updater state, its updaters keep " + std::to_string(total) + ")";
        return {};
    }
    std::vector<float> out;
    out.reserve(total);
    config::dl4j_walk_updater_state(m, chunks_of(em), [&](const Dl4jChunk& c, std::size_t component) {
        const std::size_t at = out.size();
        out.resize(at + c.n);
        for (std::size_t j = 0; j < c.n; ++j) out[at + j] = em.updater_state[config::dl4j_state_index(m, layout, c, component, j)];
    });
    return out;
}

}  // namespace thresher::model_export
