#include "dist/masters/gradient_sharing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <sstream>
#include <utility>
#include <thread>

#include "core/error.h"
#include "dist/masters/staleness_gate.h"

namespace thresher::dist {

namespace {
double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}
}  // namespace

struct GradientSharing::Inbound {
    int from = -1;        // origin worker (global numbering)
    long iteration = -1;  // the origin's iteration
    Message message;
};

struct GradientSharing::Worker {
    nn::Network* net = nullptr;
    // The residual and encoder, in the replica's memory (host or GPU); made at attach().
    std::unique_ptr<WorkerEncoder> codec;
    bool host_memory = true;
    std::vector<float> host_copy;  // a device replica's parameters or update, read on the host
    std::unique_ptr<ThresholdAlgorithm> threshold;
    std::unique_ptr<ResidualPostProcessor> post;
    double last_density = -1.0;
    long messages = 0;
    std::vector<double> sum_updates, sum_sent;
    std::vector<float> released_residual;  // the residual as release() found it (accounting)
    // Guarded by `mutex`: what arrived, and the gate that says whether it is enough.
    mutable std::mutex mutex;
    std::condition_variable arrived;
    std::vector<Inbound> inbox;
    StalenessGate gate;
    std::vector<Inbound> held;  // own thread: messages from workers ahead, for later gradients
    // This worker's own thread only.
    std::chrono::steady_clock::time_point ready{};  // end of the last before_gradient
    long timeouts = 0;                               // steps that went on without a waited-for message
    std::chrono::steady_clock::time_point last_timeout_warning{};
    long out_of_band = 0;  // messages in a row with a density outside the algorithm's band
    double ceiling = 0.0;  // the current τ ceiling (0: not computed yet)

    // Overlap (GradientSharingOptions::overlap): one job at a time, handed over under comm_mutex.
    // The job owns `update` (a copy of u: the next gradient overwrites the network's buffer), the
    // residual, the encoder and the threshold state while it runs; the worker thread owns the
    // replica, and applies the job's message to it once the job is done.
    std::thread communicator;
    std::mutex comm_mutex;
    std::condition_variable comm_changed;
    std::vector<float> update;
    Message job_message;  // Send: the message to publish (null: Encode, from `update`)
    long job_iteration = -1;
    bool job_pending = false, job_done = false, comm_stop = false;
    Encoded result;
    std::exception_ptr comm_error;

    Worker(int workers, int self, std::optional<int> bound) : gate(workers, self, bound) {}
};

GradientSharing::GradientSharing(const train::ClusterShape& cluster, std::size_t param_count,
                                 GradientSharingOptions options, Outbox outbox)
    : cluster_(cluster), n_(param_count), options_(std::move(options)), outbox_(std::move(outbox)),
      done_(cluster.workers_per_node, AllDone{this}), drained_(cluster.workers_per_node, AllDrained{this}) {
    // Parse once here so a bad spec fails before any thread starts.
    auto algorithm = make_threshold_algorithm(options_.threshold_algorithm);
    auto post = parse_residual_processor(options_.residual, "--residual");
    if (options_.max_staleness && *options_.max_staleness < 0)
        throw ConfigError("--max-staleness must be 0 or more (or \"off\"), got " + std::to_string(*options_.max_staleness));
    if (options_.overlap == GradientSharingOptions::Overlap::Encode && options_.max_staleness == 0)
        throw ConfigError("--overlap-comm encode needs --max-staleness 1 or more (or off): with 0 every gradient must see "
                          "the previous step's updates, its own included, so encoding cannot run beside the next gradient "
                          "(--overlap-comm send can)");
    for (int i = 0; i < cluster.workers_per_node; ++i) {
        auto w = std::make_unique<Worker>(cluster.total_workers(), cluster.global_worker(i), options_.max_staleness);
        w->threshold = algorithm->clone();
        w->post = post->clone();
        if (options_.track_sums) {
            w->sum_updates.assign(n_, 0.0);
            w->sum_sent.assign(n_, 0.0);
        }
        workers_.push_back(std::move(w));
    }
}

GradientSharingOptions::Overlap parse_overlap(const std::string& text) {
    if (text == "off") return GradientSharingOptions::Overlap::Off;
    if (text == "send") return GradientSharingOptions::Overlap::Send;
    if (text == "encode") return GradientSharingOptions::Overlap::Encode;
    throw ConfigError("--overlap-comm " + text + ": expected off, send or encode");
}

GradientSharing::~GradientSharing() { stop_communicators(); }

void GradientSharing::stop_communicators() {
    for (auto& w : workers_) stop_communicator(*w);
}

void GradientSharing::stop_communicator(Worker& w) {
    {
        std::lock_guard lock(w.comm_mutex);
        w.comm_stop = true;
    }
    clock_->notify_all(w.comm_changed);
    clock_->join(w.communicator);
}

void GradientSharing::attach(int local, nn::Network& net) {
    if (net.param_count() != n_) throw Error("gradient sharing: replica size differs from the model's");
    backend::Backend& backend = net.backend();
    const bool host_memory = backend.host_memory();
    // In the replica's memory: a GPU replica keeps its residual on the GPU and encodes there
    // (backend/cuda/cuda_worker_encoder.h).
    auto codec = backend.make_worker_encoder(n_);
    // Encode overlap runs the encoder on a second thread beside the gradient; a device backend
    // serves one thread at a time (its stream and handles), and its encoding takes well under a
    // millisecond anyway.
    if (!host_memory && options_.overlap == GradientSharingOptions::Overlap::Encode)
        throw ConfigError("--overlap-comm encode is for the CPU backend: on " + backend.info().name +
                          " the encoder shares the worker's stream (use --overlap-comm send or off)");
    Worker& w = *workers_.at(static_cast<std::size_t>(local));
    w.codec = std::move(codec);
    w.host_memory = host_memory;
    w.net = &net;
    if (options_.overlap != GradientSharingOptions::Overlap::Off && !w.communicator.joinable()) {
        w.update.assign(n_, 0.f);
        w.communicator = clock_->spawn([this, &w, local] {
            std::unique_lock lock(w.comm_mutex);
            for (;;) {
                clock_->wait(w.comm_changed, lock, [&] { return w.job_pending || w.comm_stop; });
                if (w.comm_stop) return;
                const long iteration = w.job_iteration;
                Message ready = std::move(w.job_message);  // Send: encoded already
                lock.unlock();
                Encoded result;
                std::exception_ptr error;
                try {
                    if (ready) {
                        const auto ts = std::chrono::steady_clock::now();
                        publish(local, iteration, ready);
                        result.fields.send_ms = ms_between(ts, std::chrono::steady_clock::now());
                    } else {
                        result = encode_and_publish(w, local, iteration, w.update.data(), /*publish_now=*/true);
                    }
                } catch (...) {
                    error = std::current_exception();
                }
                lock.lock();
                w.result = std::move(result);
                w.comm_error = error;
                w.job_pending = false;
                w.job_done = true;
                clock_->notify_all(w.comm_changed);
            }
        });
    }
}

void GradientSharing::DrainStats::add(const DrainStats& o) {
    ms += o.ms;
    messages += o.messages;
    lag_max = std::max(lag_max, o.lag_max);
    lag_sum += o.lag_sum;
}

GradientSharing::DrainStats GradientSharing::drain(Worker& w, long next) {
    std::vector<Inbound> pending;
    {
        std::lock_guard lock(w.mutex);
        pending.swap(w.inbox);
    }
    // With a bound, a message from a worker that is ahead (made at iteration ≥ next) waits here
    // until this worker's own iterations reach it: gradient k then sees other workers' updates of
    // iterations k−1−S..k−1 and never later ones, so with S = 0 every schedule computes the same
    // gradients (what synchronous training computes). `next` < 0: the final drain takes all.
    if (options_.max_staleness && !w.held.empty()) {
        pending.insert(pending.end(), std::make_move_iterator(w.held.begin()), std::make_move_iterator(w.held.end()));
        w.held.clear();
    }
    if (options_.max_staleness && next >= 0) {
        auto ahead = std::stable_partition(pending.begin(), pending.end(), [next](const Inbound& m) { return m.iteration < next; });
        w.held.insert(w.held.end(), std::make_move_iterator(ahead), std::make_move_iterator(pending.end()));
        pending.erase(ahead, pending.end());
    }
    DrainStats stats;
    if (pending.empty()) return stats;
    const auto t0 = std::chrono::steady_clock::now();
    float* params = w.net->params();
    for (const auto& m : pending) w.codec->apply(*m.message, params, -1.f);
    stats.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    stats.messages = static_cast<long>(pending.size());
    std::lock_guard lock(w.mutex);
    for (const auto& m : pending) {
        const long lag = w.gate.applied(m.from, m.iteration, next);
        stats.lag_max = std::max(stats.lag_max, lag);
        stats.lag_sum += static_cast<double>(lag);
    }
    return stats;
}

void GradientSharing::publish(int local, long iteration, const Message& m) {
    const int from = cluster_.global_worker(local);
    for (int i = 0; i < cluster_.workers_per_node; ++i) {
        if (i == local) continue;
        auto& other = *workers_[static_cast<std::size_t>(i)];
        {
            std::lock_guard lock(other.mutex);
            other.inbox.push_back({from, iteration, m});
        }
        clock_->notify_all(other.arrived);
    }
    if (outbox_ && cluster_.nodes > 1) outbox_(from, iteration, serialize(*m));
}

void GradientSharing::deliver_remote(int worker, long iteration, Message m) {
    for (auto& w : workers_) {
        {
            std::lock_guard lock(w->mutex);
            w->inbox.push_back({worker, iteration, m});
        }
        clock_->notify_all(w->arrived);
    }
}

void GradientSharing::set_node_waited(int node, bool waited) {
    if (node < 0 || node >= cluster_.nodes || node == cluster_.node_rank) return;
    for (auto& w : workers_) {
        {
            std::lock_guard lock(w->mutex);
            for (int i = 0; i < cluster_.workers_per_node; ++i)
                w->gate.set_waited(node * cluster_.workers_per_node + i, waited);
        }
        clock_->notify_all(w->arrived);
    }
}

events::MasterPhases GradientSharing::before_gradient(int local, long iteration) {
    Worker& w = *workers_.at(static_cast<std::size_t>(local));
    DrainStats stats = drain(w, iteration);
    if (drain_observer_) drain_observer_(local, iteration);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<int> missing, silent;
    {
        std::unique_lock lock(w.mutex);
        const auto deadline = clock_->now() + w.gate.deadline();
        while (!w.gate.satisfied(iteration)) {
            if (!w.inbox.empty()) {
                lock.unlock();
                stats.add(drain(w, iteration));
                lock.lock();
                continue;
            }
            if (clock_->wait_until(w.arrived, lock, deadline) == std::cv_status::timeout && w.inbox.empty()) {
                missing = w.gate.missing(iteration);
                w.gate.timed_out(missing);
                // A later message of a missing worker is already here (held): what it sent in
                // between is lost (a relay died with it) or later still; stop waiting for it each step.
                for (const auto& m : w.held) w.gate.skip_to(m.from, m.iteration);
                break;
            }
        }
        if (!missing.empty()) silent = w.gate.silent(kWarnAfterTimeouts);
    }
    const double wait_ms = ms_between(t0, std::chrono::steady_clock::now());
    const auto now = clock_->now();
    if (!missing.empty()) ++w.timeouts;
    if (!silent.empty()) report_silent(w, local, iteration, silent, wait_ms);
    // The deadline follows the period from one gradient to the next, waits included: a peer that is
    // slow but alive sets the pace and is waited for. A step that gave up waiting would stretch
    // the deadline further each time (doubling towards kMaxWait for a dead peer): left out.
    if (missing.empty() && w.ready != std::chrono::steady_clock::time_point{})
        w.gate.record_step(now - w.ready);
    w.ready = now;
    // decode_ms and messages_applied give the per-message decode cost in DL4J's scalability
    // estimate iter / (iter + encode + decode × workers + overhead), which the app plots.
    events::MasterPhases fields;
    fields.decode_ms = stats.ms;
    fields.messages_applied = stats.messages;
    fields.lag_max = stats.lag_max;
    fields.lag_mean = stats.messages ? stats.lag_sum / static_cast<double>(stats.messages) : 0.0;
    fields.wait_ms = wait_ms;
    fields.wait_timeouts = w.timeouts;
    return fields;
}

void GradientSharing::report_silent(Worker& w, int local, long iteration, const std::vector<int>& silent,
                                    double waited_ms) {
    // Every step that timed out is counted in the iteration events (wait_timeouts). A warning is
    // for a peer that has gone silent -- paused, or dead before the node link noticed -- not for a
    // late message on a loaded machine, nor for a peer that is slow but sending (it may be waiting
    // for a silent one itself): it comes once a peer has timed out kWarnAfterTimeouts times
    // without a message, then at most every half minute per worker.
    const auto now = clock_->now();
    if (w.last_timeout_warning != std::chrono::steady_clock::time_point{} &&
        now - w.last_timeout_warning < std::chrono::seconds(30))
        return;
    w.last_timeout_warning = now;
    std::string who;
    for (int m : silent) {
        if (!who.empty()) who += ", ";
        who += "worker " + std::to_string(m) + " (node " + std::to_string(m / cluster_.workers_per_node) + ")";
    }
    warn("worker " + std::to_string(cluster_.global_worker(local)) + " has heard nothing from " + who + " for " +
         std::to_string(kWarnAfterTimeouts) + " or more waits of up to " + std::to_string(static_cast<long>(waited_ms)) +
         " ms (staleness bound " + std::to_string(*options_.max_staleness) + ", iteration " + std::to_string(iteration) +
         "); it goes on without those updates, waiting at most that long each step");
}

float GradientSharing::threshold_for(Worker& w, long iteration) {
    // With overlap the ceiling was updated on the worker's thread (the replica is its own).
    if (options_.overlap != GradientSharingOptions::Overlap::Encode) update_ceiling(w, iteration);
    return w.threshold->next(static_cast<int>(iteration), n_, w.last_density);
}

void GradientSharing::update_ceiling(Worker& w, long iteration) {
    // The runaway guard: recompute the ceiling from the replica's scale every 16 messages (an
    // O(N) pass; the scale moves slowly).
    if (w.ceiling == 0.0 || iteration % 16 == 0) {
        const float* p = w.net->params();
        if (!w.host_memory) {
            w.host_copy.resize(n_);
            w.net->backend().download(w.host_copy.data(), p, n_);
            p = w.host_copy.data();
        }
        double sq = 0.0;
        for (std::size_t i = 0; i < n_; ++i) sq += static_cast<double>(p[i]) * p[i];
        const double rms = std::sqrt(sq / static_cast<double>(std::max<std::size_t>(n_, 1)));
        // All-zero parameters (a fresh bias-only model) have no scale yet: leave τ free.
        w.ceiling = rms > 0 && std::isfinite(rms) ? kThresholdCeiling * rms : std::numeric_limits<double>::infinity();
        w.threshold->set_ceiling(w.ceiling);
    }
}

events::MasterPhases GradientSharing::step(int local, long iteration, bool had_batch) {
    Worker& w = *workers_.at(static_cast<std::size_t>(local));
    double comm_wait_ms = 0.0;
    // Overlap: the previous step's message is applied now (its encoding ran beside this gradient).
    const bool overlap = options_.overlap != GradientSharingOptions::Overlap::Off;
    events::MasterPhases previous = overlap ? settle(w, comm_wait_ms) : events::MasterPhases{};
    if (!had_batch) {
        // Its shard ran out: it still sends an (empty) message for this iteration, so the others
        // can count on one message per worker and iteration.
        auto empty = std::make_shared<EncodedUpdate>();
        empty->length = static_cast<std::uint32_t>(n_);
        empty->threshold = 1.f;
        const auto sent = std::chrono::steady_clock::now();
        publish(local, iteration, empty);
        previous.send_ms = ms_between(sent, std::chrono::steady_clock::now());
        if (overlap) previous.comm_wait_ms = comm_wait_ms;
        return previous;
    }
    nn::Network& net = *w.net;
    // Phase times (engine/events/README.md): updater, encode, apply own, send, back to back.
    const auto tu = std::chrono::steady_clock::now();
    net.compute_update(iteration);  // gradients() now holds the update u
    const float* u = net.gradients();
    const auto t0 = std::chrono::steady_clock::now();
    if (options_.overlap == GradientSharingOptions::Overlap::Encode) {
        // Hand the update to the communicator (no job runs now: settle waited for it) and return
        // to compute the next gradient while it encodes and publishes.
        update_ceiling(w, iteration);
        std::copy(u, u + n_, w.update.begin());
        {
            std::lock_guard lock(w.comm_mutex);
            w.job_iteration = iteration;
            w.job_pending = true;
        }
        clock_->notify_all(w.comm_changed);
        previous.updater_ms = ms_between(tu, t0);
        previous.comm_wait_ms = comm_wait_ms;
        previous.overlapped = true;
        return previous;
    }
    Encoded e = encode_and_publish(w, local, iteration, u, /*publish_now=*/false);
    const auto ta = std::chrono::steady_clock::now();
    w.codec->apply(*e.message, net.params(), -1.f);
    const auto ts = std::chrono::steady_clock::now();
    e.fields.updater_ms = ms_between(tu, t0);
    e.fields.apply_ms = ms_between(ta, ts);
    if (overlap) {
        // Send: the communicator publishes it while the next gradient is computed (settle above
        // made sure it is idle). The event reports the previous message's send_ms.
        {
            std::lock_guard lock(w.comm_mutex);
            w.job_iteration = iteration;
            w.job_message = e.message;
            w.job_pending = true;
        }
        clock_->notify_all(w.comm_changed);
        e.fields.comm_wait_ms = comm_wait_ms;
        e.fields.send_async = true;
        if (previous.send_ms) e.fields.send_ms = previous.send_ms;
        return e.fields;
    }
    publish(local, iteration, e.message);
    e.fields.send_ms = ms_between(ts, std::chrono::steady_clock::now());
    return e.fields;
}

GradientSharing::Encoded GradientSharing::encode_and_publish(Worker& w, int local, long iteration, const float* u,
                                                             bool publish_now) {
    const auto t0 = std::chrono::steady_clock::now();
    const float share = options_.average ? 1.f / static_cast<float>(cluster_.total_workers()) : 1.f;
    w.codec->accumulate(share, u);
    if (options_.track_sums) {
        const float* hu = u;
        if (!w.host_memory) {
            w.host_copy.resize(n_);
            w.net->backend().download(w.host_copy.data(), u, n_);
            hu = w.host_copy.data();
        }
        for (std::size_t i = 0; i < n_; ++i) w.sum_updates[i] += share * hu[i];
    }
    const float tau = threshold_for(w, iteration);
    auto message = std::make_shared<EncodedUpdate>();
    w.codec->encode(tau, *message);
    w.codec->post_process(*w.post, static_cast<int>(iteration), tau);
    const double encode_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    w.last_density = static_cast<double>(message->count) / static_cast<double>(n_);
    if (options_.track_sums) {
        std::vector<float> decoded(n_, 0.f);
        apply(*message, decoded.data(), 1.f);
        for (std::size_t i = 0; i < n_; ++i) w.sum_sent[i] += decoded[i];
    }
    ++w.messages;
    if (const auto band = w.threshold->density_band()) {
        // Only above the band: τ cannot follow the updates (the runaway). Below it, τ shrinks and
        // nothing is lost; tiny models often send no entry at all in a step.
        const bool outside = w.last_density > band->high;
        w.out_of_band = outside ? w.out_of_band + 1 : 0;
        if (w.out_of_band == kBandPatience || (w.out_of_band > kBandPatience && w.out_of_band % (10 * kBandPatience) == 0)) {
            std::ostringstream m;
            m << "worker " << cluster_.global_worker(local) << ": message density " << w.last_density
              << " has stayed above the threshold algorithm's band [" << band->low << ", " << band->high << "] for "
              << w.out_of_band << " iterations (threshold " << tau;
            if (std::isfinite(w.ceiling) && tau >= static_cast<float>(w.ceiling) * 0.999f)
                m << ", held at its ceiling " << kThresholdCeiling << " x RMS of the parameters";
            m << "): the updates are larger than the threshold can follow; check the learning rate";
            warn(m.str());
        }
    }
    events::MasterPhases fields;
    fields.encode_ms = encode_ms;
    fields.threshold = tau;
    fields.density = w.last_density;
    fields.message_bytes = encoded_bytes(*message);
    fields.encoding = message->format == EncodedUpdate::Format::Sparse ? "sparse" : "bitmap";
    if (options_.debug_stats) {
        const auto r = w.codec->residual();
        const auto s = residual_stats(r.data(), n_, tau);
        fields.residual = events::ResidualFields{s.mean_abs, s.max_abs, s.p50, s.p90, s.p99};
    }
    if (publish_now) {
        const auto ts = std::chrono::steady_clock::now();
        publish(local, iteration, message);
        fields.send_ms = ms_between(ts, std::chrono::steady_clock::now());
    }
    return {message, fields};
}

events::MasterPhases GradientSharing::settle(Worker& w, double& waited_ms) {
    const auto t0 = std::chrono::steady_clock::now();
    std::unique_lock lock(w.comm_mutex);
    // Encoding one message takes milliseconds; a minute means the communicator is stuck.
    if (!clock_->wait_for(w.comm_changed, lock, std::chrono::seconds(60), [&] { return !w.job_pending; }))
        throw Error("gradient sharing: a worker's communicator has not finished encoding iteration " +
                    std::to_string(w.job_iteration) + " within 60 s");
    waited_ms = ms_between(t0, std::chrono::steady_clock::now());
    if (w.comm_error) std::rethrow_exception(std::exchange(w.comm_error, nullptr));
    if (!w.job_done) return {};
    w.job_done = false;
    Encoded done = std::move(w.result);
    const long encoded_iter = w.job_iteration;
    lock.unlock();
    if (!done.message) return done.fields;  // Send: published, applied at its own step already
    const auto ta = std::chrono::steady_clock::now();
    w.codec->apply(*done.message, w.net->params(), -1.f);
    done.fields.apply_ms = ms_between(ta, std::chrono::steady_clock::now());
    // The fields of the step that made the message (one iteration earlier than the event).
    done.fields.encoded_iter = encoded_iter;
    return done.fields;
}

void GradientSharing::AllDone::operator()() noexcept {
    try {
        if (self->remote_drain_) self->clock_->busy_while(self->remote_drain_);
    } catch (...) {
        self->drain_error_ = std::current_exception();
    }
}

void GradientSharing::AllDrained::operator()() noexcept {
    try {
        if (self->reconcile_) {
            std::vector<nn::Network*> nets;
            for (auto& w : self->workers_) nets.push_back(w->net);
            // A worker that failed before attaching has no replica; the run is failing anyway
            // (its error is what the node reports), so there is nothing to reconcile.
            if (std::find(nets.begin(), nets.end(), nullptr) == nets.end())
                self->clock_->busy_while([&] { self->reconcile_(nets); });
        }
    } catch (...) {
        self->drain_error_ = std::current_exception();
    }
}

void GradientSharing::finish(int local) {
    if (options_.overlap != GradientSharingOptions::Overlap::Off) {
        double waited = 0.0;
        settle(*workers_.at(static_cast<std::size_t>(local)), waited);  // the last own message
    }
    // Once every local worker has stopped producing, every local message is in every inbox;
    // the completion step has also waited for the other nodes' messages.
    clock_->idle_while([&] { done_.arrive_and_wait(); });
    if (drain_error_) std::rethrow_exception(drain_error_);
    drain(*workers_.at(static_cast<std::size_t>(local)), -1);
    clock_->idle_while([&] { drained_.arrive_and_wait(); });
    if (drain_error_) std::rethrow_exception(drain_error_);
}

void GradientSharing::abort(int) {
    done_.arrive_and_drop();
    drained_.arrive_and_drop();
}

GradientSharing::Accounting GradientSharing::accounting(int local) const {
    const Worker& w = *workers_.at(static_cast<std::size_t>(local));
    std::vector<float> residual = w.codec ? w.codec->residual() : w.released_residual;
    if (residual.empty()) residual.assign(n_, 0.f);
    return {w.sum_updates, w.sum_sent, std::move(residual), w.messages};
}

void GradientSharing::release(int local) {
    Worker& w = *workers_.at(static_cast<std::size_t>(local));
    stop_communicator(w);  // it may be encoding with the codec
    if (w.codec && options_.track_sums) w.released_residual = w.codec->residual();
    w.codec.reset();
    w.net = nullptr;
}

}  // namespace thresher::dist
