// Single-node training: the epoch loop with prefetching, per-iteration and per-epoch events,
// evaluation on the test set, saving, and exact resumption. Determinism is by construction:
// the shuffle order depends only on (seed, epoch) and dropout only on (seed, iteration), so a
// run resumed from a model file repeats the uninterrupted run's losses.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "core/clock.h"
#include "config/model_format.h"
#include "core/device_list.h"
#include "data/data_source.h"
#include "data/image_folder.h"
#include "spec/augmentation.h"
#include "spec/shard_placement.h"
#include "events/event_writer.h"
#include "train/training_master.h"

namespace thresher::train {

struct TrainOptions {
    std::string model_path;   // Thresher JSON, or a DL4J / Keras file (config/model_format.h)
    config::ImportOptions import;  // what the user adds to an imported model_path (--steps)
    std::string data_spec = "fashion-mnist";
    int epochs = 1;           // total; a resumed run continues up to this many
    int batch = 64;
    int threads = 0;          // 0: the backend's default
    std::optional<std::uint64_t> seed;  // run seed: shuffling, dropout (and init unless the model sets one)
    std::string save_path;
    std::string resume_path;
    DeviceList device;        // one for every local worker, or one per worker (core/device_list.h)
    std::size_t train_limit = 0;  // 0: every training sample
    std::size_t test_limit = 0;
    int eval_batch = 256;
    std::string normalize = "none";  // none | standardize | minmax, fitted on the training set
    // Training-time augmentation of image samples (random crop with padding, horizontal flip).
    spec::Augmentation augment;
    // Where a shard set's files are (--shard-placement): every node sees all (shared, the default),
    // or each node holds only the files it owns (per-node: spec::shard_owner, data/shard_stream.h).
    spec::ShardPlacement shard_placement = spec::ShardPlacement::Shared;
    data::ImageFolderOptions images;  // how an image folder is read (its shape: the model's input)
    data::SequenceReadOptions sequences;  // sequence CSVs and text corpora: alignment, truncation, stride
    // Top-k accuracy in the evaluation: k > 0, 0 off, nullopt: 5 for 20 classes or more, else off.
    std::optional<int> top_k;
    ClusterShape cluster;     // nodes, this node's rank, workers per node
    // Set from another thread to end the run early: each worker stops before its next
    // iteration (nothing is saved beyond the last finished epoch). Null: never stopped.
    const std::atomic<bool>* stop = nullptr;
    // Starts and joins the worker threads (core/clock.h): a test on a VirtualClock counts them as
    // taking part in the run, so its time stands still while they compute.
    Clock* clock = &real_clock();
};

// How a run ended, for the caller's run_finished event: status "ok" (every epoch done) or
// "stopped" (TrainOptions::stop), and the event itself (iters, wall_s, traffic totals, the
// reconcile's report; finished.status is `status`). The caller writes the event so that exactly
// one run_finished leaves the process whoever ends it.
struct TrainingOutcome {
    std::string status;
    events::RunFinished finished;
};

// Builds the master once the model is known (it needs the parameter count, for example).
using MasterFactory = std::function<std::unique_ptr<TrainingMaster>(const config::ModelConfig&)>;

// Runs training on this node's workers (one thread each, with its own backend and replica) and
// writes events up to (not including) run_finished. Returns how the run ended; throws
// thresher::Error (with a message naming what and where) on bad input or a failed worker.
TrainingOutcome run_training(const TrainOptions&, events::EventWriter&, std::ostream& log,
                  const MasterFactory& master = {});

}  // namespace thresher::train
