// libFuzzer target for the model-config readers: any bytes go through format detection (Thresher
// JSON, DL4J MultiLayerConfiguration and ComputationGraph, Keras Sequential and functional) and either import into a config whose
// inferred shapes are consistent, or throw thresher::Error (a ConfigError with a location).
// Seed the corpus with resources/models/*.json and tests/engine/config/data/*.json (a fixture
// per class of real DL4J 0.6-1.0 / Keras 1-3 / TensorFlow.js file) so the importers are reached
// from the first run, and give it room: -max_len=1048576.
// Each input is imported twice: as it is, and with time steps given (ImportOptions, --steps).
// Beyond "no crash": nothing non-finite or out of range gets through (a NaN learning rate, say,
// must be refused, never trained with).
#include <cmath>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "config/model_format.h"

namespace {

// Imports `text` (with `steps` for a sequence input it leaves open: ImportOptions) and checks
// what was accepted; a refusal (thresher::Error) is fine.
void check_import(std::string_view text, int steps) {
    try {
        const auto r = thresher::config::import_model_text(text, "fuzz.json", {.steps = steps});
        const auto& m = r.model;
        if (steps > 0 && (!m.input.sequence() || m.input.t != steps)) __builtin_trap();  // the steps given, or refused
        std::size_t offset = 0;
        for (std::size_t i = 0; i < m.layers.size(); ++i) {
            const auto& l = m.layers[i];
            if (l.out_shape.size() == 0) __builtin_trap();
            if (l.shares_index >= 0) {
                // A shared layer: no slice of its own, its owner's offset, an earlier owner that owns.
                const auto& owner = m.layers[static_cast<std::size_t>(l.shares_index)];
                if (l.shares_index >= static_cast<int>(i) || owner.shares_index >= 0 || l.param_count != 0 ||
                    l.param_offset != owner.param_offset || l.blocks.size() != owner.blocks.size())
                    __builtin_trap();
                continue;
            }
            if (l.param_offset != offset) __builtin_trap();
            offset += l.param_count;
        }
        if (offset != m.param_count()) __builtin_trap();
        // A graph: every layer reads one of the model's inputs or layers before it (an execution order).
        for (std::size_t i = 0; i < m.layers.size(); ++i) {
            if (m.layers[i].sources.empty()) __builtin_trap();
            for (int src : m.layers[i].sources)
                if (src < thresher::config::LayerConfig::model_input(m.input_count() - 1) || src >= static_cast<int>(i)) __builtin_trap();
        }
        auto finite_in = [](float v, float lo, float hi) { return std::isfinite(v) && v >= lo && v <= hi; };
        for (std::size_t i = 0; i < m.layers.size(); ++i) {
            const auto& l = m.layers[i];
            const auto u = m.effective_updater(i);
            if (!finite_in(u.learning_rate, 0.f, 1e6f) || !finite_in(u.momentum, 0.f, 1.f) || !finite_in(u.beta1, 0.f, 1.f) ||
                !finite_in(u.beta2, 0.f, 1.f) || !finite_in(u.epsilon, 0.f, 1.f) || !finite_in(u.rms_decay, 0.f, 1.f) ||
                !finite_in(u.l1, 0.f, 1e3f) || !finite_in(u.l2, 0.f, 1e3f))
                __builtin_trap();
            if (!finite_in(l.activation.alpha, 0.f, 100.f) || !finite_in(l.retain, 0.f, 1.f) ||
                !(l.input_retain > 0.f && l.input_retain <= 1.f) || !(l.recurrent_retain > 0.f && l.recurrent_retain <= 1.f) ||
                !finite_in(l.bn_eps, 0.f, 1.f) || !finite_in(l.bn_decay, 0.f, 1.f))
                __builtin_trap();
            if (l.label(i).empty()) __builtin_trap();
        }
        if (r.format == thresher::config::ModelFormat::Thresher && !r.notes.empty()) __builtin_trap();
        // What was accepted, in any format, must serialise to Thresher JSON and parse back the same.
        const auto again = thresher::config::ModelConfig::from_json(m.to_json(), "again");
        if (again.param_count() != m.param_count()) __builtin_trap();
    } catch (const thresher::Error&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    check_import(text, 0);
    // Again with steps given (--steps): files that leave them open import, every other file keeps
    // its own or is refused. The count comes from the input so the fuzzer can steer it.
    check_import(text, 1 + static_cast<int>(size % 97));
    return 0;
}
