#include "config/dl4j_layout.h"

#include "config/dl4j_recurrent.h"

#include "vocab/updater.h"

namespace thresher::config {

namespace {

std::size_t block_size(const LayerConfig& l, ParamRole r) {
    for (const auto& b : l.blocks)
        if (b.role == r) return b.size;
    return 0;
}

}  // namespace

std::vector<Dl4jChunk> dl4j_chunks(const ModelConfig& m, const std::vector<std::size_t>& order,
                                   const std::function<bool(std::size_t)>& has_bias) {
    std::vector<Dl4jChunk> chunks;
    for (const std::size_t i : order) {
        const auto& l = m.layers[i];
        const auto add = [&](ParamRole r, bool stateful = true) { chunks.push_back({i, r, block_size(l, r), stateful}); };
        const bool bias = has_bias(i);
        switch (l.type) {
            case LayerType::Dense:
            case LayerType::Output:
                add(ParamRole::Weight);
                if (bias) add(ParamRole::Bias);
                break;
            case LayerType::Convolution:
            case LayerType::DepthwiseConvolution:
            case LayerType::TransposedConvolution:
                if (bias) add(ParamRole::Bias);
                add(ParamRole::Weight);
                break;
            case LayerType::SeparableConvolution:
                if (bias) add(ParamRole::Bias);
                add(ParamRole::Depthwise);
                add(ParamRole::Weight);  // pW
                break;
            case LayerType::BatchNorm:
                add(ParamRole::Gamma);
                add(ParamRole::Beta);
                add(ParamRole::RunningMean, false);
                add(ParamRole::RunningVar, false);
                break;
            case LayerType::PRelu: add(ParamRole::Alpha); break;
            case LayerType::Lstm:
            case LayerType::SimpleRnn:
                // W, RW, b per direction hold exactly Thresher's W, R, b (and P): one run over the
                // layer's whole slice, permuted by dl4j_recurrent_index.
                chunks.push_back({i, ParamRole::Weight, l.param_count, true});
                break;
            case LayerType::Embedding:
                add(ParamRole::Weight);
                // DL4J's bias [1, nOut]; Thresher's embedding has none (weight_import refuses a non-zero one).
                if (bias) chunks.push_back({i, ParamRole::Bias, static_cast<std::size_t>(l.units), true});
                break;
            case LayerType::Convolution1d:  // b, W [nOut, nIn, k, 1] 'c': Thresher's [filters x in x k]
                if (bias) add(ParamRole::Bias);
                add(ParamRole::Weight);
                break;
            default: break;  // no parameters
        }
    }
    return chunks;
}

std::vector<Dl4jChunk> dl4j_chunks(const ModelConfig& m) {
    std::vector<std::size_t> order(m.layers.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    return dl4j_chunks(m, order, [](std::size_t) { return true; });
}

std::size_t dl4j_to_thresher_index(const LayerConfig& l, ParamRole role, std::size_t j) {
    const bool depthwise = (role == ParamRole::Weight && l.type == LayerType::DepthwiseConvolution) ||
                           (role == ParamRole::Depthwise && l.type == LayerType::SeparableConvolution);
    if (role == ParamRole::Weight && is_recurrent(l.type)) return dl4j_recurrent_index(l, j);
    if (role == ParamRole::Weight && l.type == LayerType::Embedding) {
        const std::size_t v = static_cast<std::size_t>(l.vocabulary), units = static_cast<std::size_t>(l.units);
        return (j % v) * units + j / v;  // DL4J W[id, e] at id + e·nIn ('f'); Thresher's row = id
    }
    if (role == ParamRole::Weight && (l.type == LayerType::Dense || l.type == LayerType::Output)) {
        // On a sequence the same W serves every step: nIn is one step's features.
        const std::size_t in = l.in_shape.sequence() ? static_cast<std::size_t>(l.in_shape.c) : l.in_shape.size();
        const std::size_t units = static_cast<std::size_t>(l.units);
        return (j % in) * units + j / in;  // DL4J W[r, o] at r + o·nIn
    }
    if (depthwise) {
        const auto kh = static_cast<std::size_t>(l.kernel[0]), kw = static_cast<std::size_t>(l.kernel[1]);
        const auto in = static_cast<std::size_t>(l.in_shape.c), mult = static_cast<std::size_t>(l.depth_multiplier);
        const std::size_t x = j % kw, y = (j / kw) % kh, c = (j / (kw * kh)) % in, k = j / (kw * kh * in);
        return ((c * mult + k) * kh + y) * kw + x;  // DL4J [m, nIn, kh, kw] 'c'
    }
    if (role == ParamRole::Alpha) {
        const auto& s = l.in_shape;
        const std::size_t ac = l.prelu_shared[0] ? 1 : static_cast<std::size_t>(s.c), ah = l.prelu_shared[1] ? 1 : static_cast<std::size_t>(s.h),
                          aw = l.prelu_shared[2] ? 1 : static_cast<std::size_t>(s.w);
        const std::size_t c = j % ac, y = (j / ac) % ah, x = j / (ac * ah);
        return (c * ah + y) * aw + x;  // DL4J alpha [c', h', w'] 'f'
    }
    return j;
}

void dl4j_chunk_to_thresher(const LayerConfig& l, const Dl4jChunk& c, const float* dl4j, float* ours) {
    for (std::size_t j = 0; j < c.n; ++j) ours[dl4j_to_thresher_index(l, c.role, j)] = dl4j[j];
}

void thresher_chunk_to_dl4j(const LayerConfig& l, const Dl4jChunk& c, const float* ours, float* dl4j) {
    for (std::size_t j = 0; j < c.n; ++j) dl4j[j] = ours[dl4j_to_thresher_index(l, c.role, j)];
}

std::size_t dl4j_state_index(const ModelConfig& m, const ThresherStateLayout& layout, const Dl4jChunk& c,
                             std::size_t component, std::size_t j) {
    const auto& l = m.layers[c.layer];
    const std::size_t t = dl4j_to_thresher_index(l, c.role, j);
    if (!is_recurrent(l.type)) return layout.offset.at({c.layer, c.role}) + component * c.n + t;
    // t indexes the layer's whole slice; its state: block after block, components within each.
    const std::size_t k = dl4j_state_per_param(m, c);
    for (const auto& b : l.blocks)
        if (t >= b.offset && t < b.offset + b.size)
            return layout.offset.at({c.layer, l.blocks.front().role}) + b.offset * k + component * b.size + (t - b.offset);
    return layout.total;  // not reached: the blocks cover the slice
}

bool dl4j_same_updater(const ModelConfig& m, std::size_t a, std::size_t b) {
    const auto u = m.effective_updater(a), v = m.effective_updater(b);
    return u.kind == v.kind && u.learning_rate == v.learning_rate && u.momentum == v.momentum && u.beta1 == v.beta1 &&
           u.beta2 == v.beta2 && u.epsilon == v.epsilon && u.rms_decay == v.rms_decay;
}

std::size_t dl4j_state_per_param(const ModelConfig& m, const Dl4jChunk& c) {
    return c.stateful ? static_cast<std::size_t>(vocab::updater_state_per_param(m.effective_updater(c.layer).kind)) : 0;
}

void dl4j_walk_updater_state(const ModelConfig& m, const std::vector<Dl4jChunk>& chunks,
                             const std::function<void(const Dl4jChunk&, std::size_t component)>& visit) {
    for (std::size_t g = 0; g < chunks.size();) {
        const std::size_t k = dl4j_state_per_param(m, chunks[g]);
        if (k == 0) {
            ++g;
            continue;
        }
        std::size_t h = g + 1;
        while (h < chunks.size() && dl4j_state_per_param(m, chunks[h]) == k && dl4j_same_updater(m, chunks[g].layer, chunks[h].layer))
            ++h;
        for (std::size_t component = 0; component < k; ++component)
            for (std::size_t c = g; c < h; ++c) visit(chunks[c], component);
        g = h;
    }
}

ThresherStateLayout thresher_state_layout(const ModelConfig& m) {
    ThresherStateLayout out;
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
        const int k = vocab::updater_state_per_param(m.effective_updater(i).kind);
        for (const auto& b : m.layers[i].blocks) {
            out.offset.emplace(std::make_pair(i, b.role), out.total);  // a bidirectional layer's first W, R, b
            if (b.trainable()) out.total += b.size * static_cast<std::size_t>(k);
        }
    }
    return out;
}

}  // namespace thresher::config
