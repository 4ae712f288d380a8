#include "dist/masters/gradient_sharing.h"

#include <chrono>

#include "core/error.h"

namespace thresher::dist {

struct GradientSharing::Worker {
    nn::Network* net = nullptr;
    std::vector<float> residual;
    std::unique_ptr<ThresholdEncoder> encoder;
    std::unique_ptr<ThresholdAlgorithm> threshold;
    std::unique_ptr<ResidualPostProcessor> post;
    double last_density = -1.0;
    long messages = 0;
    std::vector<double> sum_updates, sum_sent;
    mutable std::mutex inbox_mutex;
    std::vector<Message> inbox;
};

GradientSharing::GradientSharing(const train::ClusterShape& cluster, std::size_t param_count,
                                 GradientSharingOptions options, Outbox outbox)
    : cluster_(cluster), n_(param_count), options_(std::move(options)), outbox_(std::move(outbox)),
      done_(cluster.workers_per_node, AllDone{this}), drained_(cluster.workers_per_node, AllDrained{this}) {
    // Parse once here so a bad spec fails before any thread starts.
    auto algorithm = parse_threshold_algorithm(options_.threshold_algorithm, "--threshold-algorithm");
    auto post = parse_residual_processor(options_.residual, "--residual");
    for (int i = 0; i < cluster.workers_per_node; ++i) {
        auto w = std::make_unique<Worker>();
        w->residual.assign(n_, 0.f);
        w->encoder = std::make_unique<ThresholdEncoder>(n_);
        w->threshold = algorithm->clone();
        w->post = post->clone();
        if (options_.track_sums) {
            w->sum_updates.assign(n_, 0.0);
            w->sum_sent.assign(n_, 0.0);
        }
        workers_.push_back(std::move(w));
    }
}

GradientSharing::~GradientSharing() = default;

void GradientSharing::attach(int local, nn::Network& net) {
    if (!net.backend().host_memory())
        throw Error("gradient sharing on backend " + net.backend().info().name +
                    " needs device-side encoding, which this build does not have yet");
    if (net.param_count() != n_) throw Error("gradient sharing: replica size differs from the model's");
    workers_.at(static_cast<std::size_t>(local))->net = &net;
}

GradientSharing::DrainStats GradientSharing::drain(Worker& w) {
    std::vector<Message> pending;
    {
        std::lock_guard lock(w.inbox_mutex);
        pending.swap(w.inbox);
    }
    const auto t0 = std::chrono::steady_clock::now();
    float* params = w.net->params();
    for (const auto& m : pending) apply(*m, params, -1.f);
    return {std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(),
            static_cast<long>(pending.size())};
}

void GradientSharing::publish(int local, const Message& m) {
    for (int i = 0; i < cluster_.workers_per_node; ++i) {
        if (i == local) continue;
        auto& other = *workers_[static_cast<std::size_t>(i)];
        std::lock_guard lock(other.inbox_mutex);
        other.inbox.push_back(m);
    }
    if (outbox_ && cluster_.nodes > 1) outbox_(cluster_.global_worker(local), serialize(*m));
}

void GradientSharing::deliver_remote(Message m) {
    for (auto& w : workers_) {
        std::lock_guard lock(w->inbox_mutex);
        w->inbox.push_back(m);
    }
}

nlohmann::json GradientSharing::step(int local, long iteration, bool had_batch) {
    Worker& w = *workers_.at(static_cast<std::size_t>(local));
    const DrainStats decoded = drain(w);
    if (!had_batch) return nlohmann::json::object();
    nn::Network& net = *w.net;
    net.compute_update(iteration);  // gradients() now holds the update u
    const float* u = net.gradients();
    const auto t0 = std::chrono::steady_clock::now();
    float* r = w.residual.data();
    const float share = options_.average ? 1.f / static_cast<float>(cluster_.total_workers()) : 1.f;
    for (std::size_t i = 0; i < n_; ++i) r[i] += share * u[i];
    if (options_.track_sums)
        for (std::size_t i = 0; i < n_; ++i) w.sum_updates[i] += share * u[i];
    const float tau = w.threshold->next(static_cast<int>(iteration), n_, w.last_density);
    auto message = std::make_shared<EncodedUpdate>();
    w.encoder->encode(r, tau, *message);
    w.post->process(static_cast<int>(iteration), tau, r, n_);
    const double encode_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    w.last_density = static_cast<double>(message->count) / static_cast<double>(n_);
    apply(*message, net.params(), -1.f);
    if (options_.track_sums) {
        std::vector<float> decoded(n_, 0.f);
        apply(*message, decoded.data(), 1.f);
        for (std::size_t i = 0; i < n_; ++i) w.sum_sent[i] += decoded[i];
    }
    ++w.messages;
    // decode_ms and messages_applied give the per-message decode cost in DL4J's scalability
    // estimate iter / (iter + encode + decode × workers + overhead), which the app plots.
    nlohmann::json fields{{"encode_ms", encode_ms},
                          {"decode_ms", decoded.ms},
                          {"messages_applied", decoded.messages},
                          {"threshold", tau},
                          {"density", w.last_density},
                          {"message_bytes", encoded_bytes(*message)},
                          {"encoding", message->format == EncodedUpdate::Format::Sparse ? "sparse" : "bitmap"}};
    if (options_.debug_stats) {
        const auto s = residual_stats(r, n_, tau);
        fields["residual"] = {{"mean_abs", s.mean_abs}, {"max_abs", s.max_abs}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}};
    }
    publish(local, message);
    return fields;
}

void GradientSharing::AllDone::operator()() noexcept {
    try {
        if (self->remote_drain_) self->remote_drain_();
    } catch (...) {
        self->drain_error_ = std::current_exception();
    }
}

void GradientSharing::AllDrained::operator()() noexcept {
    try {
        if (self->reconcile_) {
            std::vector<nn::Network*> nets;
            for (auto& w : self->workers_) nets.push_back(w->net);
            self->reconcile_(nets);
        }
    } catch (...) {
        self->drain_error_ = std::current_exception();
    }
}

void GradientSharing::finish(int local) {
    // Once every local worker has stopped producing, every local message is in every inbox;
    // the completion step has also waited for the other nodes' messages.
    done_.arrive_and_wait();
    if (drain_error_) std::rethrow_exception(drain_error_);
    drain(*workers_.at(static_cast<std::size_t>(local)));
    drained_.arrive_and_wait();
    if (drain_error_) std::rethrow_exception(drain_error_);
}

void GradientSharing::abort(int) {
    done_.arrive_and_drop();
    drained_.arrive_and_drop();
}

GradientSharing::Accounting GradientSharing::accounting(int local) const {
    const Worker& w = *workers_.at(static_cast<std::size_t>(local));
    return {w.sum_updates, w.sum_sent, w.residual, w.messages};
}

}  // namespace thresher::dist
