#include "dist/masters/node_link.h"

#include <cstring>

#include "core/error.h"

namespace thresher::dist {

namespace {

// Control payloads: kind byte, then fields.
constexpr std::uint8_t kDone = 1;

template <typename T>
void put(std::vector<std::uint8_t>& out, T v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
}

template <typename T>
bool get(std::span<const std::uint8_t>& in, T& v) {
    if (in.size() < sizeof(T)) return false;
    std::memcpy(&v, in.data(), sizeof(T));
    in = in.subspan(sizeof(T));
    return true;
}

// Average / AverageResult: round u64, workers u32, params u64, state u64, then float sums.
std::vector<std::uint8_t> pack_sums(std::uint64_t round, int workers, const std::vector<double>& params,
                                    const std::vector<double>& state) {
    std::vector<std::uint8_t> out;
    out.reserve(28 + 4 * (params.size() + state.size()));
    put(out, round);
    put(out, static_cast<std::uint32_t>(workers));
    put(out, static_cast<std::uint64_t>(params.size()));
    put(out, static_cast<std::uint64_t>(state.size()));
    for (double v : params) put(out, static_cast<float>(v));
    for (double v : state) put(out, static_cast<float>(v));
    return out;
}

// Adds a peer's sums into ours; false (and nothing added) when the payload does not fit them.
bool add_sums(std::span<const std::uint8_t> in, std::uint64_t round, std::vector<double>& params,
              std::vector<double>& state, int& workers, bool replace) {
    std::uint64_t r = 0, np = 0, ns = 0;
    std::uint32_t w = 0;
    if (!get(in, r) || !get(in, w) || !get(in, np) || !get(in, ns)) return false;
    if (r != round || np != params.size() || ns != state.size() || in.size() != 4 * (np + ns) || w == 0 ||
        w > (1u << 20))
        return false;
    auto read = [&](std::vector<double>& dst) {
        for (auto& d : dst) {
            float f;
            get(in, f);
            d = replace ? f : d + f;
        }
    };
    read(params);
    read(state);
    workers = replace ? static_cast<int>(w) : workers + static_cast<int>(w);
    return true;
}

}  // namespace

NodeLink::NodeLink(std::unique_ptr<Transport> transport, const train::ClusterShape& cluster, std::size_t param_count,
                   events::EventWriter* events, std::unique_ptr<BulkChannel> bulk)
    : transport_(std::move(transport)), cluster_(cluster), n_(param_count), events_(events),
      updates_received_(static_cast<std::size_t>(cluster.nodes), 0),
      updates_announced_(static_cast<std::size_t>(cluster.nodes), -1),
      last_poke_(static_cast<std::size_t>(cluster.nodes)),
      lost_(static_cast<std::size_t>(cluster.nodes), false), bulk_(std::move(bulk)) {}

void NodeLink::start() {
    if (!receiver_.joinable()) receiver_ = std::thread([this] { receive_loop(); });
    if (bulk_ && !bulk_receiver_.joinable()) bulk_receiver_ = std::thread([this] { bulk_loop(); });
}

void NodeLink::bulk_loop() {
    while (!stop_) {
        auto m = bulk_->receive(std::chrono::milliseconds(50));
        if (m) handle(std::move(*m));
    }
}

void NodeLink::send_large(int dest, MessageType type, const std::vector<std::uint8_t>& payload) {
    if (bulk_)
        bulk_->send(dest, type, payload);
    else
        transport_->send(dest, type, payload);
}

NodeLink::~NodeLink() {
    stop_ = true;
    changed_.notify_all();
    if (receiver_.joinable()) receiver_.join();
    if (bulk_receiver_.joinable()) bulk_receiver_.join();
    // Give the last acknowledgements a moment, so peers do not retransmit into a closed port.
    transport_->flush(std::chrono::milliseconds(2000));
}

void NodeLink::warn(const std::string& message) {
    if (events_) events_->warning(message);
}

bool NodeLink::peer_lost(int node) {
    if (lost_[static_cast<std::size_t>(node)]) return true;
    for (int p : transport_->unreachable_peers())
        if (p == node) {
            lost_[static_cast<std::size_t>(node)] = true;
            warn("node " + std::to_string(node) + " stopped answering; the run goes on without it");
            return true;
        }
    return false;
}

void NodeLink::poke(int node) {
    auto& last = last_poke_[static_cast<std::size_t>(node)];
    const auto now = std::chrono::steady_clock::now();
    if (now - last < std::chrono::seconds(1)) return;
    last = now;
    transport_->send(node, MessageType::Heartbeat, {});
}

void NodeLink::receive_loop() {
    while (!stop_) {
        auto m = transport_->receive(std::chrono::milliseconds(50));
        if (m) handle(std::move(*m));
    }
}

void NodeLink::handle(Message&& m) {
    if (m.sender < 0 || m.sender >= cluster_.nodes || m.sender == cluster_.node_rank) return;
    switch (m.type) {
        case MessageType::Update: {
            // [u32 worker][encoded update]; authenticated, but still checked field by field.
            std::span<const std::uint8_t> in(m.payload);
            std::uint32_t worker = 0;
            try {
                if (!get(in, worker)) throw Error("no worker id");
                auto update = std::make_shared<EncodedUpdate>(deserialize(in, static_cast<std::uint32_t>(n_)));
                if (sharing_) sharing_->deliver_remote(std::move(update));
            } catch (const Error& e) {
                ++rejected_;
                warn("update from node " + std::to_string(m.sender) + " rejected: " + e.what());
            }
            std::lock_guard lock(mutex_);
            ++updates_received_[static_cast<std::size_t>(m.sender)];
            break;
        }
        case MessageType::Control: {
            std::span<const std::uint8_t> in(m.payload);
            std::uint8_t kind = 0;
            std::uint64_t count = 0;
            if (!get(in, kind) || kind != kDone || !get(in, count)) return;
            std::lock_guard lock(mutex_);
            updates_announced_[static_cast<std::size_t>(m.sender)] = static_cast<std::int64_t>(count);
            break;
        }
        case MessageType::Average: {
            std::uint64_t round = 0;
            std::span<const std::uint8_t> in(m.payload);
            if (!get(in, round)) return;
            std::lock_guard lock(mutex_);
            averages_[round].push_back(std::move(m));
            break;
        }
        case MessageType::AverageResult: {
            std::uint64_t round = 0;
            std::span<const std::uint8_t> in(m.payload);
            if (!get(in, round)) return;
            std::lock_guard lock(mutex_);
            average_results_.emplace(round, std::move(m));
            break;
        }
        case MessageType::Evaluation: {
            std::span<const std::uint8_t> in(m.payload);
            std::int32_t epoch = 0;
            if (!get(in, epoch)) return;
            try {
                auto part = nlohmann::json::parse(in.begin(), in.end());
                if (!part.is_object()) throw Error("not an object");
                std::lock_guard lock(mutex_);
                evaluations_[epoch].push_back(std::move(part));
            } catch (const std::exception& e) {
                warn("evaluation from node " + std::to_string(m.sender) + " rejected: " + e.what());
                return;
            }
            break;
        }
        default: return;
    }
    changed_.notify_all();
}

GradientSharing::Outbox NodeLink::outbox() {
    return [this](int worker, const std::vector<std::uint8_t>& bytes) {
        std::vector<std::uint8_t> payload;
        payload.reserve(4 + bytes.size());
        put(payload, static_cast<std::uint32_t>(worker));
        payload.insert(payload.end(), bytes.begin(), bytes.end());
        transport_->broadcast(MessageType::Update, payload);
        std::lock_guard lock(mutex_);
        ++updates_sent_;
    };
}

void NodeLink::attach(GradientSharing& sharing) { sharing_ = &sharing; }

void NodeLink::drain_remote() {
    std::vector<std::uint8_t> done;
    {
        std::lock_guard lock(mutex_);
        put(done, kDone);
        put(done, updates_sent_);
    }
    transport_->broadcast(MessageType::Control, done);
    std::unique_lock lock(mutex_);
    for (;;) {
        bool complete = true;
        for (int node = 0; node < cluster_.nodes; ++node) {
            if (node == cluster_.node_rank || lost_[static_cast<std::size_t>(node)]) continue;
            const auto announced = updates_announced_[static_cast<std::size_t>(node)];
            if (announced < 0 || updates_received_[static_cast<std::size_t>(node)] < static_cast<std::uint64_t>(announced)) {
                poke(node);
                complete = complete && peer_lost(node);
            }
        }
        if (complete) return;
        changed_.wait_for(lock, std::chrono::milliseconds(100));
    }
}

void NodeLink::reconcile(const std::vector<nn::Network*>& replicas) {
    const std::size_t p = replicas.front()->param_count();
    std::vector<double> sums(p, 0.0), no_state;
    for (auto* net : replicas) {
        const auto params = net->get_params();
        for (std::size_t i = 0; i < p; ++i) sums[i] += params[i];
    }
    int workers = static_cast<int>(replicas.size());
    try {
        reduce(sums, no_state, workers);
    } catch (const Error& e) {
        warn(std::string("final reconciliation failed, replicas may differ: ") + e.what());
        return;
    }
    std::vector<float> mean(p);
    for (std::size_t i = 0; i < p; ++i) mean[i] = static_cast<float>(sums[i] / workers);
    for (auto* net : replicas) net->set_params(mean);
}

ParameterAveraging::Reducer NodeLink::reducer() {
    return [this](std::vector<double>& params, std::vector<double>& state, int& workers) { reduce(params, state, workers); };
}

void NodeLink::reduce(std::vector<double>& params, std::vector<double>& state, int& workers) {
    const std::uint64_t round = round_++;
    std::unique_lock lock(mutex_);
    if (cluster_.node_rank != 0) {
        lock.unlock();
        send_large(0, MessageType::Average, pack_sums(round, workers, params, state));
        lock.lock();
        while (!average_results_.count(round)) {
            poke(0);
            if (peer_lost(0)) throw Error("the controller (node 0) stopped answering during averaging round " + std::to_string(round));
            changed_.wait_for(lock, std::chrono::milliseconds(100));
        }
        const Message result = std::move(average_results_.at(round));
        average_results_.erase(round);
        lock.unlock();
        if (!add_sums(result.payload, round, params, state, workers, true))
            throw Error("averaging round " + std::to_string(round) + ": malformed result from node 0");
        return;
    }
    // The controller: wait for every other node's sums, add them, send the totals back.
    for (;;) {
        int expected = 0;
        for (int node = 1; node < cluster_.nodes; ++node) expected += !lost_[static_cast<std::size_t>(node)];
        if (static_cast<int>(averages_[round].size()) >= expected) break;
        for (int node = 1; node < cluster_.nodes; ++node)
            if (!lost_[static_cast<std::size_t>(node)]) {
                poke(node);
                peer_lost(node);
            }
        changed_.wait_for(lock, std::chrono::milliseconds(100));
    }
    std::vector<Message> parts = std::move(averages_[round]);
    averages_.erase(round);
    lock.unlock();
    for (const auto& part : parts)
        if (!add_sums(part.payload, round, params, state, workers, false))
            warn("averaging round " + std::to_string(round) + ": malformed sums from node " + std::to_string(part.sender) + " ignored");
    const auto result = pack_sums(round, workers, params, state);
    for (int node = 1; node < cluster_.nodes; ++node) {
        if (lost_[static_cast<std::size_t>(node)]) continue;
        try {
            send_large(node, MessageType::AverageResult, result);
        } catch (const Error& e) {
            warn("averaging round " + std::to_string(round) + ": node " + std::to_string(node) + ": " + e.what());
        }
    }
}

std::optional<std::vector<nlohmann::json>> NodeLink::gather_evaluation(int epoch, const nlohmann::json& local) {
    if (cluster_.node_rank != 0) {
        std::vector<std::uint8_t> payload;
        put(payload, static_cast<std::int32_t>(epoch));
        const std::string text = local.dump();
        payload.insert(payload.end(), text.begin(), text.end());
        transport_->send(0, MessageType::Evaluation, payload);
        return std::nullopt;
    }
    std::unique_lock lock(mutex_);
    for (;;) {
        int expected = 0;
        for (int node = 1; node < cluster_.nodes; ++node) {
            if (lost_[static_cast<std::size_t>(node)]) continue;
            ++expected;
            poke(node);
            peer_lost(node);
        }
        if (static_cast<int>(evaluations_[epoch].size()) >= expected) break;
        changed_.wait_for(lock, std::chrono::milliseconds(100));
    }
    std::vector<nlohmann::json> parts{local};
    for (auto& p : evaluations_[epoch]) parts.push_back(std::move(p));
    evaluations_.erase(epoch);
    return parts;
}

nlohmann::json NodeLink::traffic() const {
    const auto s = transport_->stats();
    const std::uint64_t bulk_tx = bulk_ ? bulk_->bytes_tx() : 0, bulk_rx = bulk_ ? bulk_->bytes_rx() : 0;
    return {{"bytes_tx", s.bytes_tx + bulk_tx},
            {"bytes_rx", s.bytes_rx + bulk_rx},
            {"dropped", s.dropped_total()},
            {"retransmitted", s.retransmitted}};
}

}  // namespace thresher::dist
