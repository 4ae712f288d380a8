#include "nn/network.h"

#include <algorithm>

#include "core/error.h"
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
        const auto spec = config_.effective_updater(i);
        for (const auto& b : l.blocks) {
            UpdateSegment s;
            s.offset = l.param_offset + b.offset;
            s.size = b.size;
            s.spec = spec;
            s.trainable = b.trainable();
            // Regularisation applies to weights only (DL4J's default; biases have l1Bias/l2Bias).
            if (b.role != config::ParamRole::Weight) s.spec.l1 = s.spec.l2 = 0.f;
            s.state_offset = state;
            if (s.trainable) state += b.size * backend::updater_state_per_param(s.spec.kind);
            segments_.push_back(s);
        }
    }
    params_ = backend::Buffer(backend_, p);
    grads_ = backend::Buffer(backend_, p);
    state_ = backend::Buffer(backend_, state);
    init_params(config_.seed);
}

void Network::init_params(std::uint64_t seed) {
    std::vector<float> host(params_.size());
    for (std::size_t i = 0; i < config_.layers.size(); ++i) {
        const auto& l = config_.layers[i];
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

std::vector<std::unique_ptr<LayerStep>>& Network::plan(int batch) {
    if (batch <= 0) throw Error("batch size must be positive, got " + std::to_string(batch));
    if (batch > capacity_) {
        std::size_t widest = config_.input.size();
        acts_.clear();
        for (const auto& l : config_.layers) {
            acts_.emplace_back(backend_, static_cast<std::size_t>(batch) * l.out_shape.size());
            widest = std::max(widest, l.out_shape.size());
        }
        delta_a_ = backend::Buffer(backend_, static_cast<std::size_t>(batch) * widest);
        delta_b_ = backend::Buffer(backend_, static_cast<std::size_t>(batch) * widest);
        capacity_ = batch;
    }
    auto it = plans_.find(batch);
    if (it != plans_.end()) return it->second;
    std::vector<std::unique_ptr<LayerStep>> steps;
    for (std::size_t i = 0; i < config_.layers.size(); ++i)
        steps.push_back(plan_layer(backend_, config_.layers[i], i, batch));
    return plans_.emplace(batch, std::move(steps)).first->second;
}

const float* Network::forward(const float* features, int batch, const StepContext& ctx) {
    auto& steps = plan(batch);
    input_ = backend_.stage_input(features, static_cast<std::size_t>(batch) * config_.input.size());
    const float* x = input_;
    for (std::size_t i = 0; i < steps.size(); ++i) {
        float* y = acts_[i].data();
        steps[i]->forward(params_.data() + config_.layers[i].param_offset, x, y, ctx);
        x = y;
    }
    return x;
}

double Network::output_loss(const float* targets, int batch, bool keep_delta) {
    const auto& out_layer = config_.layers.back();
    const int k = out_layer.units;
    const std::size_t n = static_cast<std::size_t>(batch) * k;
    host_out_.resize(n);
    host_delta_.resize(n);
    backend_.download(host_out_.data(), acts_.back().data(), n);
    const auto r = compute_loss(out_layer.loss, host_out_.data(), targets, host_delta_.data(), batch, k);
    if (keep_delta) {
        backend_.upload(delta_a_.data(), host_delta_.data(), n);
        if (!r.wrt_preactivation)
            backend_.activation_backward(out_layer.activation, acts_.back().data(), delta_a_.data(),
                                         delta_a_.data(), batch, k);
    }
    return r.loss;
}

double Network::compute_gradients(const float* features, const float* targets, int batch,
                                  std::uint64_t seed) {
    const StepContext ctx{backend::Mode::Training, seed};
    forward(features, batch, ctx);
    const double loss = output_loss(targets, batch, true);
    auto& steps = plans_.at(batch);
    float* dy = delta_a_.data();
    float* spare = delta_b_.data();
    for (std::size_t i = steps.size(); i-- > 0;) {
        const auto& l = config_.layers[i];
        const float* x = i == 0 ? input_ : acts_[i - 1].data();
        float* dx = i == 0 ? nullptr : spare;
        steps[i]->backward(params_.data() + l.param_offset, x, acts_[i].data(), dy, dx,
                           grads_.data() + l.param_offset);
        std::swap(dy, spare);
    }
    return loss;
}

double Network::loss(const float* features, const float* targets, int batch, std::uint64_t seed,
                     backend::Mode mode, float* out) {
    forward(features, batch, {mode, seed});
    const double l = output_loss(targets, batch, false);
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
        if (!s.trainable) {
            backend_.fill(grads_.data() + s.offset, 0.f, s.size);
            continue;
        }
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
    const float* y = forward(features, batch, {backend::Mode::Inference, 0});
    backend_.download(out, y, static_cast<std::size_t>(batch) * config_.output_size());
}

}  // namespace thresher::nn
