// The engine's events as types: one struct per event kind, the only place a field's name is
// spelt (events.cpp turns each into its JSON object). Writers fill a struct and hand it to
// EventWriter::emit, which adds "event", "t" and "node" (DESIGN.md "The event contract"; the
// phase fields: engine/events/README.md). A std::optional member is a field that is left out of
// the line when unset: readers ignore fields they do not know and must cope with absent ones.
//
// Worked example: an iteration of a single-node run has no master fields and only the two
// traffic counters, so its line is {"bytes_rx":0,"bytes_tx":0,"compute_ms":…,"event":
// "iteration",…}; a gradient-sharing worker's also carries encode_ms, threshold, density, ….
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace thresher::events {

// A node's cumulative traffic. A single node has no link: only the two byte counters (0).
struct Traffic {
    std::uint64_t bytes_tx = 0, bytes_rx = 0;
    // The node link's counters (dist/masters/node_link.h), set together when there is one.
    std::optional<std::uint64_t> dropped, retransmitted, relayed;
};

// The residual's spread after encoding, as multiples of τ (gradient sharing's --debug-stats).
struct ResidualFields {
    double mean_abs = 0, max_abs = 0, p50 = 0, p90 = 0, p99 = 0;
};

// What a training master adds to an iteration (before_gradient and step). Every field is
// optional: a master sets those it measures (README.md "One iteration, in order").
struct MasterPhases {
    // Gradient sharing, receiving (before_gradient).
    std::optional<double> decode_ms;
    std::optional<long> messages_applied;
    std::optional<long> lag_max;
    std::optional<double> lag_mean;
    std::optional<double> wait_ms;
    std::optional<long> wait_timeouts;
    // Both masters: the updater; averaging's round.
    std::optional<double> updater_ms, average_ms, average_local_ms;
    // Gradient sharing, the message (with overlap: of iteration encoded_iter).
    std::optional<double> encode_ms, apply_ms, send_ms, comm_wait_ms;
    std::optional<float> threshold;
    std::optional<double> density;
    std::optional<std::size_t> message_bytes;
    std::optional<std::string> encoding;  // "sparse" | "bitmap"
    std::optional<bool> overlapped, send_async;
    std::optional<long> encoded_iter;
    std::optional<ResidualFields> residual;

    // Takes every field `later` sets (as a later phase's measurement replaces an earlier one).
    MasterPhases& update(const MasterPhases& later);
};

// Reading the data before the first step (image folders: decoding), as it goes: `done` of
// `total` items of `what` ("images"). Emitted every 5% and at the end, before run_started.
struct DataProgress {
    static constexpr std::string_view kName = "data_progress";
    std::string what;
    std::size_t done = 0, total = 0;
};

struct RunStarted {
    static constexpr std::string_view kName = "run_started";
    std::string run, model;
    int nodes = 1, workers = 1, workers_per_node = 1;
    std::size_t params = 0;
    std::string strategy, backend, backend_detail;
    std::vector<std::string> devices;  // one per local worker
    int epochs = 1, start_epoch = 0;
    long start_iter = 0;
    bool joined = false;
    int batch = 0;
    std::size_t train_samples = 0;
    std::optional<std::string> topology;  // multi-node runs (dist/topology.h's name)
    // The data's class names, label order (image folders, or a resumed model's); absent when
    // the data names none. Readers that predate it skip it.
    std::vector<std::string> class_names;
};

struct Iteration {
    static constexpr std::string_view kName = "iteration";
    int worker = 0, epoch = 0;
    long iter = 0;
    double loss = 0, lr = 0;
    double iter_ms = 0, etl_ms = 0, start_s = 0, receive_ms = 0, compute_ms = 0, step_ms = 0, cpu_ms = 0;
    long samples = 0;
    double samples_per_s = 0;
    MasterPhases master;
    Traffic traffic;
};

// A classifier's evaluation (eval::ClassificationEvaluator), merged over the nodes' shards.
struct ClassificationFields {
    double accuracy = 0, precision = 0, recall = 0, f1 = 0;  // macro; binary: of class 1
    std::vector<std::vector<std::int64_t>> confusion;        // [actual][predicted]
    // A binary classifier (one sigmoid output): its AUC (NaN: null), and "task": "binary".
    std::optional<double> auc;
    // Top-k accuracy ("top_k", "top_k_accuracy"), when counted (--top-k; 20 classes or more).
    std::optional<int> top_k;
    double top_k_accuracy = 0;
};

// A regression model's evaluation (eval::RegressionEvaluator), per target column; NaN: null.
struct RegressionFields {
    std::size_t columns = 0;
    std::vector<double> mse, mae, r2;
    double average_mse = 0, average_mae = 0, average_r2 = 0;
};

// One output's evaluation in a model with several (its name from the model).
struct OutputFields {
    std::string name;
    std::optional<ClassificationFields> classification;
    std::optional<RegressionFields> regression;
};

struct EpochEnd {
    static constexpr std::string_view kName = "epoch_end";
    int epoch = 0;
    double loss = 0;       // the epoch's training loss
    double eval_loss = 0;  // on eval_set
    std::string eval_set;  // "test" | "train"
    std::size_t count = 0;  // samples evaluated
    double eval_start_s = 0, eval_ms = 0;
    std::optional<std::size_t> nodes_evaluated;  // a sharded evaluation's parts
    std::optional<ClassificationFields> classification;
    std::optional<RegressionFields> regression;
    // A model with several outputs: each one's metrics ("outputs": [{"name", ...}, ...]); the
    // fields above stay the main output's.
    std::vector<OutputFields> outputs;
};

struct NodeJoined {
    static constexpr std::string_view kName = "node_joined";
    int joined_node = 0, epoch = 0;
    long iter = 0;
    bool rejoin = false;
    std::string message;
};

struct Warning {
    static constexpr std::string_view kName = "warning";
    std::string message;
    std::optional<int> worker;
};

struct ErrorEvent {
    static constexpr std::string_view kName = "error";
    std::string message;
    std::optional<int> worker;
};

// The final reconcile of a multi-node gradient-sharing run (README.md): the largest |θ − average|
// over the node's replicas before it, and where it was when not 0.
struct ReconcileReport {
    double gap = 0;
    std::optional<std::string> at;
};

struct RunFinished {
    static constexpr std::string_view kName = "run_finished";
    std::string status;  // "ok" | "stopped" | "failed"
    long iters = 0;
    double wall_s = 0;
    // ({}: filled with designated initializers, naming only what a path knows.)
    std::optional<Traffic> traffic{};  // absent when the run failed or was cut short
    std::optional<double> peak_rss_mb{};
    std::optional<ReconcileReport> reconcile{};  // reconcile_gap, reconcile_gap_at
};

// The fields of each event (without "event", "t", "node"): the one place they are named.
nlohmann::json to_json(const Traffic&);
nlohmann::json to_json(const MasterPhases&);
nlohmann::json to_json(const DataProgress&);
nlohmann::json to_json(const RunStarted&);
nlohmann::json to_json(const Iteration&);
nlohmann::json to_json(const EpochEnd&);
nlohmann::json to_json(const NodeJoined&);
nlohmann::json to_json(const Warning&);
nlohmann::json to_json(const ErrorEvent&);
nlohmann::json to_json(const RunFinished&);

}  // namespace thresher::events
