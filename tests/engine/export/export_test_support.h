// What the export suites share: reading a written file back, and a model with every parameter
// drawn (biases and statistics too, running variances kept positive) so a block read from the
// wrong place shows.
#pragma once

#include <QString>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "config/model_config.h"
#include "export/exportable_model.h"

namespace thresher::test_export {

inline std::string read_text(const QString& path) {
    std::ifstream in(path.toStdString(), std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

inline std::vector<std::uint8_t> read_bytes(const QString& path) {
    const auto text = read_text(path);
    return {text.begin(), text.end()};
}

inline model_export::ExportableModel with_random_params(config::ModelConfig cfg, const std::string& source, unsigned seed) {
    model_export::ExportableModel m;
    m.source = source;
    m.config = std::move(cfg);
    m.params.resize(m.config.param_count());
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (auto& v : m.params) v = u(rng);
    for (const auto& l : m.config.layers)
        for (const auto& b : l.blocks)
            if (b.role == config::ParamRole::RunningVar)
                for (std::size_t i = 0; i < b.size; ++i) {
                    auto& v = m.params[l.param_offset + b.offset + i];
                    v = 0.5f + std::fabs(v);
                }
    return m;
}

}  // namespace thresher::test_export
