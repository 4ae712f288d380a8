#include "nn/network.h"

#include <algorithm>

#include "core/error.h"
#include "config/graph.h"
#include "nn/loss.h"
#include "nn/weight_init.h"

namespace thresher::nn {

Network::Network(config::ModelConfig config, backend::Backend& backend)
    : config_(std::move(config)), backend_(backend) {
    if (config_.layers.empty()) throw ConfigError(config_.name + ": the model has no layers");
    config_.infer_shapes(config_.name);  // configs built in code arrive without shapes
    const std::size_t p = config_.param_count();
    std::size_t state = 0;
    for (std::size_t i = 0; i < config_.layers.size(); ++i) {
        const auto& l = config_.layers[i];
        if (l.shares_index >= 0) continue;  // its parameters are its owner's segments
        const auto spec = config_.effective_updater(i);
        for (const auto& b : l.blocks) {
            UpdateSegment s;
            s.offset = l.param_offset + b.offset;
            s.size = b.size;
            s.spec = spec;
            s.trainable = b.trainable();
            // Regularisation applies to weights only (DL4J's default; biases have l1Bias/l2Bias).
            if (b.role != config::ParamRole::Weight && b.role != config::ParamRole::Depthwise) s.spec.l1 = s.spec.l2 = 0.f;
            s.state_offset = state;
            if (s.trainable) state += b.size * backend::updater_state_per_param(s.spec.kind);
            segments_.push_back(s);
        }
    }
    for (std::size_t k = 0; k < config_.input_count(); ++k)
        if (config_.input_shape(k).sequence()) any_sequence_input_ = any_sequence_ = true;
    for (const auto& l : config_.layers)
        if (l.out_shape.sequence()) any_sequence_ = true;
    params_ = backend::Buffer(backend_, p);
    grads_ = backend::Buffer(backend_, p);
    state_ = backend::Buffer(backend_, state);
    schedule_backward();
    param_grads_ = backend::Buffer(backend_, param_scratch_size_);
    schedule_inference();
    choose_layouts();
    choose_fusions();
    init_params(config_.seed);
}

void Network::schedule_backward() {
    const auto& layers = config_.layers;
    const std::size_t n = layers.size();
    delta_slot_.assign(n, -1);
    targets_.assign(n, {});
    std::vector<int> free;
    auto take = [&] {
        if (free.empty()) return slot_count_++;
        const int s = free.back();
        free.pop_back();
        return s;
    };
    for (auto o : config_.output_layers) delta_slot_[o] = take();  // the losses' gradients
    for (std::size_t i = n; i-- > 0;) {
        int scratch = 0;
        for (int src : layers[i].sources) {
            GradientTarget t;
            if (src >= 0) {
                auto& slot = delta_slot_[static_cast<std::size_t>(src)];
                if (slot < 0) slot = take();  // the first reader (from the back) writes it
                else t.scratch = scratch++;   // later readers add to it
            }
            targets_[i].push_back(t);
        }
        scratch_count_ = std::max(scratch_count_, scratch);
        free.push_back(delta_slot_[i]);  // layer i's gradient is used up by its own backward
    }
    // Shared layers: every call's parameter gradient is summed into the owner's slice. Backward
    // runs from the last layer to the first, so the last call of a group (in list order) writes
    // the slice and the calls before it (the owner last) add theirs through a scratch buffer.
    param_scratch_.assign(n, false);
    std::vector<bool> written(n, false);
    for (std::size_t i = n; i-- > 0;) {
        const auto& l = layers[i];
        const auto owner = static_cast<std::size_t>(l.shares_index >= 0 ? l.shares_index : static_cast<int>(i));
        const auto count = layers[owner].param_count;
        if (count == 0) continue;
        if (written[owner]) {
            param_scratch_[i] = true;
            param_scratch_size_ = std::max(param_scratch_size_, count);
        }
        written[owner] = true;
    }
}

void Network::schedule_inference() {
    // An output is needed until its last reader has run; then its buffer takes a later output.
    const auto& layers = config_.layers;
    const std::size_t n = layers.size();
    std::vector<std::size_t> last_reader(n, n);  // n: the model's output, kept to the end
    for (std::size_t i = 0; i < n; ++i)
        for (int s : layers[i].sources)
            if (s >= 0) last_reader[static_cast<std::size_t>(s)] = i;
    infer_slot_.assign(n, -1);
    std::vector<int> free;
    for (std::size_t i = 0; i < n; ++i) {
        if (free.empty()) {
            infer_slot_[i] = infer_slot_count_++;
        } else {
            infer_slot_[i] = free.back();
            free.pop_back();
        }
        // Inputs whose last reader was this layer are free from the next layer on (not during
        // this one: it reads them while writing its own output).
        for (int s : layers[i].sources)
            if (s >= 0 && last_reader[static_cast<std::size_t>(s)] == i &&
                std::find(free.begin(), free.end(), infer_slot_[static_cast<std::size_t>(s)]) == free.end())
                free.push_back(infer_slot_[static_cast<std::size_t>(s)]);
    }
}

void Network::choose_layouts() {
    // Convolutions, batch norm and pooling can read and write the backend's native layout; the
    // element-wise layers and vertices (and batch norm, per channel) keep their input's layout,
    // so a tensor and everything joined to it element-wise form one group that is native or not
    // as a whole. A group is native when every tensor in it comes from and goes only to such
    // layers, has a channel count the backend takes, and is neither the model's input nor its
    // output. A ResNet's conv/bn/relu/add chain goes native; the flattening into a dense layer,
    // concatenation, padding and the like keep NCHW, so their code never sees another layout.
    using config::LayerType;
    const auto& layers = config_.layers;
    const std::size_t n = layers.size();
    native_.assign(n, false);
    auto keeps_layout = [](const config::LayerConfig& l) {
        switch (l.type) {
            case LayerType::Activation: return l.activation.kind != backend::Activation::Softmax;  // softmax is per row
            case LayerType::BatchNorm:
            case LayerType::Add:
            case LayerType::Subtract:
            case LayerType::Multiply:
            case LayerType::Average:
            case LayerType::Maximum: return true;
            default: return false;
        }
    };
    auto handles_native = [&](const config::LayerConfig& l) {
        return keeps_layout(l) || l.type == LayerType::Convolution || l.type == LayerType::Subsampling;
    };
    std::vector<std::size_t> group(n);
    for (std::size_t i = 0; i < n; ++i) group[i] = i;
    auto find = [&](std::size_t i) {
        while (group[i] != i) i = group[i] = group[group[i]];
        return i;
    };
    std::vector<bool> ok(n, true);
    for (std::size_t i = 0; i < n; ++i) {
        const auto& l = layers[i];
        const auto& s = l.out_shape;
        if (!handles_native(l) || l.is_output || !backend_.native_image_layout(s.c) || s.sequence() || l.in_shape.sequence())
            ok[i] = false;
        for (int src : l.sources) {
            if (src < 0) {
                if (keeps_layout(l)) ok[i] = false;
                continue;
            }
            const auto k = static_cast<std::size_t>(src);
            if (!handles_native(l)) ok[k] = false;  // a reader that wants NCHW
            if (keeps_layout(l)) group[find(k)] = find(i);
        }
    }
    std::vector<bool> group_ok(n, true);
    for (std::size_t i = 0; i < n; ++i)
        if (!ok[i]) group_ok[find(i)] = false;
    for (std::size_t i = 0; i < n; ++i) native_[i] = group_ok[find(i)];
}

void Network::choose_fusions() {
    // A batch norm whose only reader is a ReLU layer applies the ReLU itself (one pass instead of
    // two, and a mask instead of the ReLU's backward pass); the ReLU layer then shares its
    // output in training (inference keeps separate buffers: a pooled slot may be reused). Only
    // in the native layout: on NCHW, oneDNN's fused batch norm is slower than the two passes
    // (bench/README.md).
    const auto& layers = config_.layers;
    const std::size_t n = layers.size();
    shares_output_.assign(n, -1);
    if (!backend_.has_batch_norm_relu()) return;
    std::vector<int> readers(n, 0);
    for (const auto& l : layers)
        for (int s : l.sources)
            if (s >= 0) ++readers[static_cast<std::size_t>(s)];
    for (std::size_t j = 0; j + 1 < n; ++j) {
        const auto& l = layers[j];
        if (l.is_output || l.type != config::LayerType::Activation || l.activation.kind != backend::Activation::Relu ||
            l.sources.size() != 1 || l.sources[0] < 0)
            continue;
        const auto i = static_cast<std::size_t>(l.sources[0]);
        if (layers[i].type == config::LayerType::BatchNorm && readers[i] == 1 && native_[i])
            shares_output_[j] = static_cast<int>(i);
    }
}

backend::ImageLayout Network::layout_of(int source) const {
    return source >= 0 && native_[static_cast<std::size_t>(source)] ? backend::ImageLayout::Native
                                                                     : backend::ImageLayout::Plain;
}

float* Network::output_of(std::size_t layer, backend::Mode mode) {
    if (mode == backend::Mode::Training)
        return acts_[shares_output_[layer] < 0 ? layer : static_cast<std::size_t>(shares_output_[layer])].data();
    return infer_[static_cast<std::size_t>(infer_slot_[layer])].data();
}

const float* Network::input_of(int source, backend::Mode mode) {
    return source < 0 ? input_[config::LayerConfig::input_index(source)] : output_of(static_cast<std::size_t>(source), mode);
}

void Network::init_params(std::uint64_t seed) {
    std::vector<float> host(params_.size());
    for (std::size_t i = 0; i < config_.layers.size(); ++i) {
        const auto& l = config_.layers[i];
        if (l.shares_index >= 0) continue;  // drawn once, by its owner
        init_layer(l, config_.effective_weight_init(i), seed, i, host.data() + l.param_offset);
    }
    set_params(host);
    if (state_.size()) backend_.fill(state_.data(), 0.f, state_.size());
}

std::vector<float> Network::get_params() const {
    std::vector<float> v(params_.size());
    backend_.download(v.data(), params_.data(), v.size());
    return v;
}

void Network::set_params(const std::vector<float>& v) {
    if (v.size() != params_.size())
        throw Error("parameter vector has " + std::to_string(v.size()) + " values, the model " +
                    std::to_string(params_.size()));
    backend_.upload(params_.data(), v.data(), v.size());
}

std::vector<float> Network::get_updater_state() const {
    std::vector<float> v(state_.size());
    backend_.download(v.data(), state_.data(), v.size());
    return v;
}

void Network::set_updater_state(const std::vector<float>& v) {
    if (v.size() != state_.size())
        throw Error("updater state has " + std::to_string(v.size()) + " values, the model's updaters need " +
                    std::to_string(state_.size()));
    backend_.upload(state_.data(), v.data(), v.size());
}

std::vector<float> Network::get_gradients() const {
    std::vector<float> v(grads_.size());
    backend_.download(v.data(), grads_.data(), v.size());
    return v;
}

Network::Plan& Network::plan(int batch, backend::Mode mode) {
    if (batch <= 0) throw Error("batch size must be positive, got " + std::to_string(batch));
    std::size_t widest = 0;
    for (const auto& l : config_.layers) widest = std::max(widest, l.out_shape.size());
    const std::size_t size = static_cast<std::size_t>(batch) * widest;
    // Training keeps every output for the backward pass (and gradient buffers); inference only
    // the outputs still to be read, so evaluating in large batches stays small.
    if (mode == backend::Mode::Training && batch > capacity_) {
        acts_.clear();
        for (std::size_t i = 0; i < config_.layers.size(); ++i)
            acts_.emplace_back(backend_, shares_output_[i] < 0
                                             ? static_cast<std::size_t>(batch) * config_.layers[i].out_shape.size()
                                             : 0);
        deltas_.clear();
        scratch_.clear();
        for (int s = 0; s < slot_count_; ++s) deltas_.emplace_back(backend_, size);
        for (int s = 0; s < scratch_count_; ++s) scratch_.emplace_back(backend_, size);
        capacity_ = batch;
    }
    if (mode == backend::Mode::Inference && batch > infer_capacity_) {
        infer_.clear();
        for (int s = 0; s < infer_slot_count_; ++s) infer_.emplace_back(backend_, size);
        infer_capacity_ = batch;
    }
    auto it = plans_.find(batch);
    if (it != plans_.end()) return it->second;
    Plan p;
    for (std::size_t i = 0; i < config_.layers.size(); ++i) {
        const auto& l = config_.layers[i];
        if (config::is_vertex(l.type)) {
            std::vector<config::Shape> in;
            for (int s : l.sources) in.push_back(config_.shape_of(s));
            p.layers.push_back(nullptr);
            p.vertices.push_back(plan_vertex(backend_, l, in, batch));
        } else {
            StepPlan sp{layout_of(l.sources[0]), layout_of(static_cast<int>(i))};
            sp.relu_done = shares_output_[i] >= 0;
            sp.fuse_relu = std::find(shares_output_.begin(), shares_output_.end(), static_cast<int>(i)) !=
                           shares_output_.end();
            p.layers.push_back(plan_layer(backend_, l, i, batch, sp));
            p.vertices.push_back(nullptr);
        }
    }
    return plans_.emplace(batch, std::move(p)).first->second;
}

void Network::forward(const float* features, int batch, const StepContext& ctx) {
    auto& p = plan(batch, ctx.mode);
    const std::size_t row = config_.input_size();
    const float* staged = backend_.stage_input(features, static_cast<std::size_t>(batch) * row);
    input_.assign(1, staged);
    if (any_sequence_) read_lengths(features, batch);
    if (!config_.extra_inputs.empty() || any_sequence_input_) {
        // Several inputs: each takes its columns of the feature row; a sequence input's first
        // column is its length (read above), not a value.
        if (batch > split_capacity_) {
            split_.clear();
            for (std::size_t k = 0; k < config_.input_count(); ++k)
                split_.emplace_back(backend_, static_cast<std::size_t>(batch) * config_.input_shape(k).size());
            split_capacity_ = batch;
        }
        input_.clear();
        std::size_t column = 0;
        for (std::size_t k = 0; k < config_.input_count(); ++k) {
            const std::size_t width = config_.input_shape(k).size();
            if (config_.input_shape(k).sequence()) ++column;
            backend_.copy_rows(split_[k].data(), width, staged + column, row, width, static_cast<std::size_t>(batch));
            // The data should hold zeros at padded steps; make sure (a same-mode convolution1d
            // would read them).
            if (config_.input_shape(k).sequence())
                zero_steps(config_.input_shape(k), input_lengths_[k], split_[k].data(), batch);
            input_.push_back(split_[k].data());
            column += width;
        }
    }
    std::vector<const float*> xs;
    for (std::size_t i = 0; i < config_.layers.size(); ++i) {
        const auto& l = config_.layers[i];
        float* y = output_of(i, ctx.mode);
        if (p.vertices[i]) {
            xs.clear();
            for (int s : l.sources) xs.push_back(input_of(s, ctx.mode));
            p.vertices[i]->forward(xs, y);
        } else {
            StepContext layer_ctx = ctx;
            const int first = l.sources[0];
            if (any_sequence_) {
                const auto& in_lengths = first < 0 ? input_lengths_[config::LayerConfig::input_index(first)]
                                                   : lengths_[static_cast<std::size_t>(first)];
                if (!in_lengths.empty()) layer_ctx.lengths = in_lengths.data();
            }
            p.layers[i]->forward(params_.data() + l.param_offset, input_of(first, ctx.mode), y, layer_ctx);
        }
        // A padded step changes nothing: whatever a layer computed there (sigmoid(0), a bias) is
        // zeroed before anyone reads it.
        zero_padded(i, y, batch);
    }
}

void Network::read_lengths(const float* features, int batch) {
    const std::size_t row = config_.input_size();
    const auto rows = static_cast<std::size_t>(batch);
    input_lengths_.assign(config_.input_count(), {});
    std::size_t column = 0;
    for (std::size_t k = 0; k < config_.input_count(); ++k) {
        const auto& shape = config_.input_shape(k);
        if (shape.sequence()) {
            auto& lengths = input_lengths_[k];
            lengths.resize(rows);
            for (std::size_t r = 0; r < rows; ++r) {
                const float v = features[r * row + column];
                if (!(v >= 1.f && v <= static_cast<float>(shape.t)) || v != static_cast<float>(static_cast<int>(v)))
                    throw DataError("input \"" + config_.input_name_of(k) + "\": sample " + std::to_string(r) +
                                    " of the batch has sequence length " + nlohmann::json(config::decimal(v)).dump() + ", not an integer from 1 to " +
                                    std::to_string(shape.t) + " (the first value of its part of the row)");
                lengths[r] = static_cast<int>(v);
            }
            ++column;
        }
        column += shape.size();
    }
    // A layer's output has the lengths of its first sequence input; repeat_vector makes full
    // sequences; convolution1d and pooling along time change the steps.
    const auto& layers = config_.layers;
    lengths_.assign(layers.size(), {});
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const auto& l = layers[i];
        if (!l.out_shape.sequence()) continue;
        if (l.type == config::LayerType::RepeatVector) {
            lengths_[i].assign(rows, l.out_shape.t);
            continue;
        }
        for (int s : l.sources) {
            const auto& from = s < 0 ? input_lengths_[config::LayerConfig::input_index(s)] : lengths_[static_cast<std::size_t>(s)];
            if (from.empty()) continue;
            lengths_[i] = from;
            break;
        }
        if (lengths_[i].empty()) lengths_[i].assign(rows, l.out_shape.t);
        if (l.type == config::LayerType::Subsampling) {
            // Windows along time: same gives ceil(L / stride), truncate floor((L - k) / stride) + 1.
            for (auto& len : lengths_[i]) {
                long long out = l.mode == config::ConvMode::Truncate ? (len - l.kernel[0]) / l.stride[0] + 1
                                                                     : (len + l.stride[0] - 1) / l.stride[0];
                len = static_cast<int>(std::clamp<long long>(out, 1, l.out_shape.t));
            }
        }
        if (l.type == config::LayerType::Convolution1d) {
            // The output steps whose window starts inside the sample: same and causal give
            // ceil(L / stride), truncate floor((L - span) / stride) + 1 (at least 1).
            const long long span = static_cast<long long>(l.kernel[0] - 1) * l.dilation[0] + 1;
            for (auto& len : lengths_[i]) {
                long long out = l.mode == config::ConvMode::Truncate ? (len - span) / l.stride[0] + 1
                                                                     : (len + l.stride[0] - 1) / l.stride[0];
                len = static_cast<int>(std::clamp<long long>(out, 1, l.out_shape.t));
            }
        }
    }
}

void Network::zero_padded(std::size_t layer, float* values, int batch) {
    if (layer >= lengths_.size() || lengths_[layer].empty()) return;
    zero_steps(config_.layers[layer].out_shape, lengths_[layer], values, batch);
}

void Network::zero_steps(const config::Shape& shape, const std::vector<int>& lengths, float* values, int batch) {
    const auto c = static_cast<std::size_t>(shape.c), t = static_cast<std::size_t>(shape.t);
    for (int n = 0; n < batch; ++n) {
        const auto len = static_cast<std::size_t>(lengths[static_cast<std::size_t>(n)]);
        if (len < t) backend_.fill(values + (static_cast<std::size_t>(n) * t + len) * c, 0.f, (t - len) * c);
    }
}

double Network::output_loss(const float* targets, int batch, bool keep_delta, backend::Mode mode) {
    const auto rows = static_cast<std::size_t>(batch);
    const auto width = config_.target_size();
    host_out_.resize(rows * width);
    double loss = 0.0;
    std::size_t column = 0;
    for (auto o : config_.output_layers) {
        const auto& out_layer = config_.layers[o];
        // A per-step output (seq_spec.md): T steps of K values per sample, the loss the mean
        // over the batch's valid steps only, zero gradient at padded steps. Otherwise one sample's
        // values: K features, or an image's C x H x W.
        const bool per_step = out_layer.out_shape.sequence();
        const auto steps = static_cast<std::size_t>(per_step ? out_layer.out_shape.t : 1);
        const auto k = static_cast<std::size_t>(per_step ? out_layer.units : out_layer.output_width());
        const auto one = k * steps;  // this output's values per sample
        const float* output = output_of(o, mode);
        const bool alone = one == width;
        host_one_.resize(rows * one);
        host_delta_.resize(rows * one);
        float* values = alone ? host_out_.data() : host_one_.data();
        backend_.download(values, output, rows * one);
        const float* t = targets;
        if (!alone) {
            // This output's columns of the sample rows (outputs and targets side by side).
            host_targets_.resize(rows * one);
            for (std::size_t r = 0; r < rows; ++r) {
                std::copy_n(values + r * one, one, host_out_.data() + r * width + column);
                std::copy_n(targets + r * width + column, one, host_targets_.data() + r * one);
            }
            t = host_targets_.data();
        }
        const bool softmax = out_layer.activation.kind == config::Activation::Softmax;
        LossResult r;
        if (!per_step) {
            // An image output: every pixel is an example of C values (the loss averages over
            // pixels and samples, loss.h). The losses are element-wise given their normaliser (a
            // channel softmax's p - t included), so the NCHW order of the values needs no
            // transposing. Flat features: one pixel of K values.
            const int pixels = out_layer.out_shape.h * out_layer.out_shape.w;
            r = compute_loss(out_layer.loss, values, t, host_delta_.data(), batch * pixels, out_layer.out_shape.c, softmax);
        } else {
            const auto& lengths = lengths_.at(o);
            host_valid_.clear();
            host_valid_targets_.clear();
            for (std::size_t n = 0; n < rows; ++n) {
                const auto len = static_cast<std::size_t>(lengths[n]);
                host_valid_.insert(host_valid_.end(), values + n * one, values + n * one + len * k);
                host_valid_targets_.insert(host_valid_targets_.end(), t + n * one, t + n * one + len * k);
            }
            const auto valid = host_valid_.size() / k;
            host_valid_delta_.resize(valid * k);
            r = compute_loss(out_layer.loss, host_valid_.data(), host_valid_targets_.data(), host_valid_delta_.data(),
                             static_cast<int>(valid), static_cast<int>(k), softmax);
            std::fill(host_delta_.begin(), host_delta_.end(), 0.f);
            std::size_t at = 0;
            for (std::size_t n = 0; n < rows; ++n) {
                const auto len = static_cast<std::size_t>(lengths[n]) * k;
                std::copy_n(host_valid_delta_.data() + at, len, host_delta_.data() + n * one);
                at += len;
            }
        }
        loss += r.loss;
        if (keep_delta) {
            float* delta = deltas_[static_cast<std::size_t>(delta_slot_[o])].data();
            backend_.upload(delta, host_delta_.data(), rows * one);
            if (!r.wrt_preactivation)
                backend_.activation_backward(out_layer.activation, output, delta, delta, static_cast<int>(rows * steps),
                                             static_cast<int>(k));
            // Padded steps' outputs were zeroed, but an activation's derivative there is not 0
            // by itself: compute_gradients drops it, as it does for every layer's dL/dy.
        }
        column += one;
    }
    return loss;
}

double Network::compute_gradients(const float* features, const float* targets, int batch,
                                  std::uint64_t seed) {
    const StepContext ctx{backend::Mode::Training, seed};
    forward(features, batch, ctx);
    const double loss = output_loss(targets, batch, true, ctx.mode);
    auto& p = plans_.at(batch);
    std::vector<const float*> xs;
    std::vector<float*> dxs;
    for (std::size_t i = config_.layers.size(); i-- > 0;) {
        const auto& l = config_.layers[i];
        float* dy = deltas_[static_cast<std::size_t>(delta_slot_[i])].data();
        zero_padded(i, dy, batch);  // padded steps pass no gradient back
        xs.clear();
        dxs.clear();
        for (std::size_t k = 0; k < l.sources.size(); ++k) {
            const int s = l.sources[k];
            xs.push_back(input_of(s, backend::Mode::Training));
            const auto& t = targets_[i][k];
            if (s < 0) dxs.push_back(nullptr);
            else if (t.scratch >= 0) dxs.push_back(scratch_[static_cast<std::size_t>(t.scratch)].data());
            else dxs.push_back(deltas_[static_cast<std::size_t>(delta_slot_[static_cast<std::size_t>(s)])].data());
        }
        float* y = output_of(i, backend::Mode::Training);
        if (p.vertices[i]) p.vertices[i]->backward(xs, y, dy, dxs);
        else if (!param_scratch_[i]) p.layers[i]->backward(params_.data() + l.param_offset, xs[0], y, dy, dxs[0],
                                                           grads_.data() + l.param_offset);
        else {
            // A call of a shared layer whose slice a later call already wrote: add to it.
            const auto count = config_.layers[static_cast<std::size_t>(l.shares_index >= 0 ? l.shares_index : static_cast<int>(i))].param_count;
            p.layers[i]->backward(params_.data() + l.param_offset, xs[0], y, dy, dxs[0], param_grads_.data());
            backend_.axpy(1.f, param_grads_.data(), grads_.data() + l.param_offset, count);
        }
        // A tensor read by several layers: its gradient is the sum of what each reader sends.
        for (std::size_t k = 0; k < l.sources.size(); ++k) {
            const auto& t = targets_[i][k];
            if (t.scratch < 0 || l.sources[k] < 0) continue;
            const auto src = static_cast<std::size_t>(l.sources[k]);
            backend_.axpy(1.f, scratch_[static_cast<std::size_t>(t.scratch)].data(),
                          deltas_[static_cast<std::size_t>(delta_slot_[src])].data(),
                          static_cast<std::size_t>(batch) * config_.layers[src].out_shape.size());
        }
    }
    return loss;
}

double Network::loss(const float* features, const float* targets, int batch, std::uint64_t seed,
                     backend::Mode mode, float* out) {
    forward(features, batch, {mode, seed});
    const double l = output_loss(targets, batch, false, mode);
    if (out) std::copy(host_out_.begin(), host_out_.end(), out);
    return l;
}

double Network::learning_rate(long iteration) const {
    if (config_.lr_schedule) return config_.lr_schedule->value_at(iteration, epoch_);
    return config::decimal(config_.updater.learning_rate);
}

void Network::compute_update(long iteration) {
    // One schedule drives every layer's learning rate (ModelConfig::lr_schedule).
    const bool scheduled = config_.lr_schedule.has_value();
    const float lr = scheduled ? static_cast<float>(config_.lr_schedule->value_at(iteration, epoch_)) : 0.f;
    for (const auto& s : segments_) {
        // Batch norm's running statistics: their "gradient" is already the update (a NoOp
        // updater, as DL4J has for them), so that it travels with the others.
        if (!s.trainable) continue;
        if (scheduled) {
            backend::UpdaterSpec spec = s.spec;
            spec.learning_rate = lr;
            backend_.updater_step(spec, grads_.data() + s.offset, state_.data() + s.state_offset,
                                  params_.data() + s.offset, s.size, iteration);
        } else {
            backend_.updater_step(s.spec, grads_.data() + s.offset, state_.data() + s.state_offset,
                                  params_.data() + s.offset, s.size, iteration);
        }
    }
}

void Network::apply_update() { backend_.axpy(-1.f, grads_.data(), params_.data(), params_.size()); }

void Network::predict(const float* features, int batch, float* out) {
    forward(features, batch, {backend::Mode::Inference, 0});
    const auto rows = static_cast<std::size_t>(batch);
    const auto width = config_.target_size();
    std::size_t column = 0;
    for (auto o : config_.output_layers) {
        const auto k = static_cast<std::size_t>(config_.layers[o].output_width());
        if (k == width) {
            backend_.download(out, output_of(o, backend::Mode::Inference), rows * k);
        } else {
            host_one_.resize(rows * k);
            backend_.download(host_one_.data(), output_of(o, backend::Mode::Inference), rows * k);
            for (std::size_t r = 0; r < rows; ++r) std::copy_n(host_one_.data() + r * k, k, out + r * width + column);
        }
        column += k;
    }
}

}  // namespace thresher::nn
