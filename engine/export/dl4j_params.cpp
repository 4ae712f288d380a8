// The parameters and updater state of a DL4J export in DL4J's flattened order: the inverse of
// config/weight_import.cpp's map_dl4j_layer and map_dl4j_updater_state (read those with this).
//
// Parameters, layer after layer (DefaultParamInitializer, ConvolutionParamInitializer,
// BatchNormalizationParamInitializer, PReLUParamInitializer):
//   dense / output  W [nIn, nOut] in 'f' order (W[r, o] at r + o·nIn; Thresher keeps r·nOut + o), b
//   convolution     b, then W [nOut, nIn, kh, kw] 'c' (Thresher's layout already)
//   batch norm      gamma, beta, running mean, running variance (useLogStd false)
//   prelu           alpha [c', h', w'] in 'f' order (a shared axis has extent 1)
// Updater state: UpdaterBlocks, runs of consecutive parameter chunks (in the order above, across
// layers) whose updater configuration is equal; batch-norm mean and variance have DL4J's NoOp
// updater and end a block. A block holds its state components one after the other over the
// whole block: Nesterovs' v; AdaGrad's and RmsProp's running squares; Adam's m, then v. Worked
// example, an MLP 6 -> 4 -> 3 all on one Adam: [m(W1 'f'), m(b1), m(W2 'f'), m(b2), v(W1 'f'), ...].
#include <map>

#include "config/model_config.h"
#include "export/dl4j_export.h"
#include "vocab/updater.h"

namespace thresher::model_export {

namespace {

using config::LayerConfig;
using config::LayerType;
using config::ParamRole;

// One parameter block of a layer as DL4J orders them.
struct Chunk {
    std::size_t layer;
    ParamRole role;
    std::size_t n;
    bool stateful;  // false: DL4J's NoOp updater (batch-norm mean and variance)
};

std::vector<Chunk> dl4j_chunks(const config::ModelConfig& m) {
    std::vector<Chunk> chunks;
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
        const auto& l = m.layers[i];
        const auto block = [&](ParamRole r) {
            for (const auto& b : l.blocks)
                if (b.role == r) return b.size;
            return std::size_t{0};
        };
        switch (l.type) {
            case LayerType::Dense:
            case LayerType::Output:
                chunks.push_back({i, ParamRole::Weight, block(ParamRole::Weight), true});
                chunks.push_back({i, ParamRole::Bias, block(ParamRole::Bias), true});
                break;
            case LayerType::Convolution:
                chunks.push_back({i, ParamRole::Bias, block(ParamRole::Bias), true});
                chunks.push_back({i, ParamRole::Weight, block(ParamRole::Weight), true});
                break;
            case LayerType::BatchNorm:
                chunks.push_back({i, ParamRole::Gamma, block(ParamRole::Gamma), true});
                chunks.push_back({i, ParamRole::Beta, block(ParamRole::Beta), true});
                chunks.push_back({i, ParamRole::RunningMean, block(ParamRole::RunningMean), false});
                chunks.push_back({i, ParamRole::RunningVar, block(ParamRole::RunningVar), false});
                break;
            case LayerType::PRelu: chunks.push_back({i, ParamRole::Alpha, block(ParamRole::Alpha), true}); break;
            default: break;  // no parameters (dl4j_refusal has ruled out the layers it cannot write)
        }
    }
    return chunks;
}

// Appends n values of one chunk, from Thresher's layout at `src` to DL4J's.
void put(const LayerConfig& l, ParamRole role, const float* src, std::size_t n, std::vector<float>& out) {
    if (role == ParamRole::Weight && (l.type == LayerType::Dense || l.type == LayerType::Output)) {
        const std::size_t in = l.in_shape.size(), units = static_cast<std::size_t>(l.units);
        const std::size_t at = out.size();
        out.resize(at + in * units);
        for (std::size_t r = 0; r < in; ++r)
            for (std::size_t o = 0; o < units; ++o) out[at + r + o * in] = src[r * units + o];
    } else if (role == ParamRole::Alpha) {
        const auto& s = l.in_shape;
        const int ac = l.prelu_shared[0] ? 1 : s.c, ah = l.prelu_shared[1] ? 1 : s.h, aw = l.prelu_shared[2] ? 1 : s.w;
        const std::size_t at = out.size();
        out.resize(at + n);
        for (int c = 0; c < ac; ++c)
            for (int y = 0; y < ah; ++y)
                for (int x = 0; x < aw; ++x)
                    out[at + c + static_cast<std::size_t>(ac) * (y + static_cast<std::size_t>(ah) * x)] =
                        src[(static_cast<std::size_t>(c) * ah + y) * aw + x];
    } else {
        out.insert(out.end(), src, src + n);
    }
}

std::size_t offset_of(const LayerConfig& l, ParamRole role) {
    for (const auto& b : l.blocks)
        if (b.role == role) return b.offset;
    return 0;
}

}  // namespace

std::vector<float> dl4j_coefficients(const ExportableModel& em) {
    const auto& m = em.config;
    std::vector<float> out;
    out.reserve(em.params.size());
    for (const auto& c : dl4j_chunks(m)) {
        const auto& l = m.layers[c.layer];
        put(l, c.role, em.params.data() + l.param_offset + offset_of(l, c.role), c.n, out);
    }
    return out;
}

std::vector<float> dl4j_updater_state(const ExportableModel& em, std::string& why) {
    const auto& m = em.config;
    why.clear();
    if (em.updater_state.empty()) return {};
    // Thresher's layout (nn/network.cpp): layer after layer, block after block, each trainable
    // block with updater_state_per_param components of its size ([m..., v...] for Adam).
    std::map<std::pair<std::size_t, ParamRole>, std::size_t> ours;
    std::size_t total = 0;
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
        const int k = vocab::updater_state_per_param(m.effective_updater(i).kind);
        for (const auto& b : m.layers[i].blocks) {
            ours[{i, b.role}] = total;
            if (b.trainable()) total += b.size * static_cast<std::size_t>(k);
        }
    }
    if (em.updater_state.size() != total) {
        why = "updaterState.bin: not written (the model holds " + std::to_string(em.updater_state.size()) +
              " values of updater state, its updaters keep " + std::to_string(total) + ")";
        return {};
    }
    const auto chunks = dl4j_chunks(m);
    const auto per_param = [&](const Chunk& c) {
        return c.stateful ? static_cast<std::size_t>(vocab::updater_state_per_param(m.effective_updater(c.layer).kind)) : 0;
    };
    // DL4J 1.0's UpdaterUtils.updaterConfigurationsEquals, as the importer groups them.
    const auto same_updater = [&](const Chunk& a, const Chunk& b) {
        const auto u = m.effective_updater(a.layer), v = m.effective_updater(b.layer);
        return u.kind == v.kind && u.learning_rate == v.learning_rate && u.momentum == v.momentum && u.beta1 == v.beta1 &&
               u.beta2 == v.beta2 && u.epsilon == v.epsilon && u.rms_decay == v.rms_decay;
    };
    std::vector<float> out;
    out.reserve(total);
    for (std::size_t g = 0; g < chunks.size();) {
        const std::size_t k = per_param(chunks[g]);
        if (k == 0) {
            ++g;
            continue;
        }
        std::size_t h = g + 1;
        while (h < chunks.size() && per_param(chunks[h]) == k && same_updater(chunks[g], chunks[h])) ++h;
        for (std::size_t component = 0; component < k; ++component)
            for (std::size_t c = g; c < h; ++c) {
                const auto& ch = chunks[c];
                put(m.layers[ch.layer], ch.role, em.updater_state.data() + ours.at({ch.layer, ch.role}) + component * ch.n, ch.n, out);
            }
        g = h;
    }
    return out;
}

}  // namespace thresher::model_export
