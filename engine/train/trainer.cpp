#include "train/trainer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <latch>
#include <mutex>
#include <optional>
#include <thread>

#include <time.h>

#include "backend/registry.h"
#include "config/model_format.h"
#include "core/error.h"
#include "core/rng.h"
#include "data/data_source.h"
#include "data/feature_transform.h"
#include "data/prefetch_iterator.h"
#include "data/shard_reader.h"
#include "data/shard_stream.h"
#include "nn/model_file.h"
#include "nn/network.h"
#include "train/evaluation.h"
#include "train/task.h"
#include "train/finite_guard.h"

namespace thresher::train {

namespace {

using Clock = std::chrono::steady_clock;
// CPU time of the whole process (every thread: workers, network, prefetch) in ms: with the
// iteration events' `cpu_ms` a reader gets the CPU an iteration costs apart from how long it
// waited for a core (local nodes sharing a machine), which wall-clock phases cannot tell.
double process_cpu_ms() {
    timespec ts{};
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0.0;
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double ms_since(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Everything the worker threads of one run share (read-only after setup, except as noted).
struct Run {
    Run(const TrainOptions& options, events::EventWriter& events, std::ostream& log_stream)
        : o(options), ev(events), log(log_stream), left(options.cluster.workers_per_node) {}
    const TrainOptions& o;
    events::EventWriter& ev;
    std::ostream& log;
    config::ModelConfig config;
    std::optional<nn::ModelFile> resume;
    std::vector<float> imported_params;  // a DL4J zip's / Keras file's weights (empty: initialise)
    std::vector<float> imported_state;   // and its updater state, where it maps (empty: fresh)
    data::DataSplit data;
    // Training from a shard folder (data/shard_stream.h): its index; data.train and data.test then
    // hold no rows (their count and shape only: both are streamed), and `eval_rows` the train
    // records evaluation reads when the set has no test part (read_shard_sample: the first
    // shard's, or --test-limit; per node, of the node's own files).
    std::optional<data::ShardIndex> shards;
    data::ShardShare share;  // which of its files this node reads (--shard-placement)
    std::optional<data::Dataset> eval_rows;
    data::FeatureTransform transform;  // fitted on the training set (or the resumed model's)
    TrainingMaster* master = nullptr;
    nn::TrainingPosition start;  // where training starts (a resumed run's saved position)
    // A node that joined a running cluster: the controller's state, and how many batches of the
    // first epoch the cluster had already taken (start.iterations counts up to that epoch).
    std::optional<JoinState> joined;
    long skip = 0;
    int threads_per_worker = 0;
    std::atomic<bool> failed{false};
    std::atomic<bool> stopped{false};     // a worker saw TrainOptions::stop
    std::atomic<long> iterations{0};      // local worker 0's iterations so far (for a stopped run)
    bool stop_requested() const { return o.stop != nullptr && o.stop->load(); }
    std::mutex error_mutex;
    std::exception_ptr error;  // the first worker failure
    std::latch left;           // local workers done with the master (their replicas may go)
    Clock::time_point began = Clock::now();
};

// Names for the confusion table: the data's class names when there is one per class.
std::vector<std::string> confusion_names(const std::vector<std::string>& names, const eval::ClassificationEvaluator& c) {
    return names.size() == static_cast<std::size_t>(c.num_classes()) ? names : std::vector<std::string>{};
}

void record_failure(Run& run) {
    std::lock_guard lock(run.error_mutex);
    if (!run.error) run.error = std::current_exception();
    run.failed = true;
}

// The evaluation's metrics in an epoch_end event (the evaluators' own accessors, not their JSON).
events::ClassificationFields classification_fields(const eval::ClassificationEvaluator& c, const eval::BinaryScores* binary) {
    events::ClassificationFields f;
    f.accuracy = c.accuracy();
    // A binary classifier reports class 1 (DL4J's binary evaluation), others macro averages.
    f.precision = binary ? c.precision(1) : c.macro_precision();
    f.recall = binary ? c.recall(1) : c.macro_recall();
    f.f1 = binary ? c.f1(1) : c.macro_f1();
    for (int a = 0; a < c.num_classes(); ++a) {
        auto& row = f.confusion.emplace_back();
        for (int p = 0; p < c.num_classes(); ++p) row.push_back(c.confusion(a, p));
    }
    if (binary) f.auc = binary->auc();
    if (c.top_k() > 0) {
        f.top_k = c.top_k();
        f.top_k_accuracy = c.top_k_accuracy();
    }
    return f;
}

events::RegressionFields regression_fields(const eval::RegressionEvaluator& g) {
    events::RegressionFields f;
    f.columns = g.columns();
    for (std::size_t c = 0; c < g.columns(); ++c) {
        f.mse.push_back(g.mse(c));
        f.mae.push_back(g.mae(c));
        f.r2.push_back(g.r2(c));
    }
    f.average_mse = g.average_mse();
    f.average_mae = g.average_mae();
    f.average_r2 = g.average_r2();
    return f;
}

// Augmentation crops and mirrors images: refused on other data, and a padding that leaves no
// image in the crop.
void check_augmentation(const spec::Augmentation& a, const config::ModelConfig& m, const data::Dataset& ds) {
    if (!a.active()) return;
    if (m.input_count() > 1)
        throw ConfigError("--augment " + a.text() + ": model \"" + m.name + "\" has " + std::to_string(m.input_count()) +
                          " inputs side by side in each sample; augmentation takes models with one image input");
    if (m.input.flat() || ds.shape.height == 1)
        throw ConfigError("--augment " + a.text() + ": data " + ds.name + " holds " + std::to_string(ds.shape.size()) +
                          " features per sample, not images (augmentation crops and mirrors images)");
    if (a.crop_padding >= std::min(ds.shape.height, ds.shape.width))
        throw ConfigError("--augment " + a.text() + ": a padding of " + std::to_string(a.crop_padding) +
                          " pixels is not smaller than the " + std::to_string(ds.shape.height) + "x" +
                          std::to_string(ds.shape.width) + " images of " + ds.name);
}

// Per-node placement (--shard-placement per-node): every node owns at least one train file
// (spec::shard_owner); a count the nodes do not divide works, with unequal work, and is said.
void check_per_node_placement(const data::ShardIndex& index, int nodes, events::EventWriter& ev, std::ostream& log) {
    const std::size_t files = index.train.shards.size(), n = static_cast<std::size_t>(nodes);
    if (files < n)
        throw ConfigError("--shard-placement per-node: " + index.folder + " holds " + std::to_string(files) + " train shards for " +
                          std::to_string(nodes) + " nodes; every node needs at least one of its own (export with --shards N, "
                          "a multiple of the node count)");
    if (files % n == 0) return;
    const std::string text = "--shard-placement per-node: " + std::to_string(files) + " train shards over " +
                             std::to_string(nodes) + " nodes: some nodes own " + std::to_string(files / n + 1) + " files, others " +
                             std::to_string(files / n) + ", so the work is unequal (export with --shards N, a multiple of the node count)";
    ev.warning(text);
    log << text << "\n";
}

void put_metrics(events::EpochEnd& e, const EvaluationResult& r) {
    if (r.classification)
        e.classification = classification_fields(*r.classification, r.binary ? &*r.binary : nullptr);
    else if (r.regression)
        e.regression = regression_fields(*r.regression);
    for (const auto& o : r.outputs) {
        auto& f = e.outputs.emplace_back();
        f.name = o.name;
        if (o.classification) f.classification = classification_fields(*o.classification, o.binary ? &*o.binary : nullptr);
        if (o.regression) f.regression = regression_fields(*o.regression);
    }
    e.eval_loss = r.loss;
    e.count = r.count;
}

void evaluate_and_report(Run& run, nn::Network& net, int epoch, double epoch_loss, long epoch_samples,
                         const nn::TrainingPosition& pos) {
    const data::Dataset& eval_set = run.data.has_test ? run.data.test : run.eval_rows ? *run.eval_rows : run.data.train;
    const double eval_start_s = run.ev.seconds();  // phase times (engine/events/README.md)
    const auto eval_began = Clock::now();
    const auto& merger = run.master->evaluation_merger();
    const bool sharded = merger.gather && eval_set.is_classification();
    int shard = sharded ? merger.shard : 0, shards = sharded ? merger.shards : 1;
    const int top_k = resolve_top_k(run.o.top_k, eval_set.num_classes);
    // Per node, a node evaluates its own test files (the merge adds the nodes up), or without a
    // test part the sample of its own train files it holds, whole.
    const bool per_node = run.share.placement == spec::ShardPlacement::PerNode;
    if (per_node && run.data.has_test) shard = run.o.cluster.node_rank, shards = run.o.cluster.nodes;
    if (per_node && !run.data.has_test) shard = 0, shards = 1;
    // A shard set's test part is streamed, never held (its blocks are the batches).
    const auto result = run.shards && run.data.has_test
                                ? evaluate_shard_part(net, *run.shards, run.shards->test, &run.transform, run.o.test_limit,
                                                      shard, shards, top_k, run.share)
                                : evaluate(net, eval_set, run.o.eval_batch, run.o.test_limit, shard, shards, top_k);
    if (!run.o.save_path.empty())
        nn::save_model_file(run.o.save_path,
                            {net.config(), net.get_params(), net.get_updater_state(), pos, run.transform, run.data.class_names, run.data.vocabulary});
    events::EpochEnd e;
    std::optional<EvaluationResult> merged;
    if (merger.gather) {
        nlohmann::json part = result.to_json(true);  // what the nodes exchange (evaluation_payload.h)
        part["loss_sum"] = result.loss_sum;
        part["count"] = result.count;
        auto parts = merger.gather(epoch, part);
        if (!parts) return;  // another node reports for the cluster
        merged = merge_classification_parts(*parts);
        // A regression set is evaluated whole on every node (ours stands), but per node each has
        // only its own test files: their sums are added up.
        if (!merged && run.share.placement == spec::ShardPlacement::PerNode) merged = merge_regression_parts(*parts);
        e.nodes_evaluated = parts->size();
    }
    const EvaluationResult& reported = merged ? *merged : result;
    put_metrics(e, reported);
    e.eval_start_s = eval_start_s;
    e.eval_ms = ms_since(eval_began);
    e.epoch = epoch;
    e.loss = epoch_samples ? epoch_loss / static_cast<double>(epoch_samples) : 0.0;
    e.eval_set = run.data.has_test ? "test" : "train";
    run.ev.emit(e);
    if (reported.classification)
        run.log << "epoch " << epoch + 1 << "/" << run.o.epochs << " (" << e.eval_set << " set)\n"
                << reported.classification->confusion_table(confusion_names(run.data.class_names, *reported.classification))
                << "\n";
    else if (reported.regression)
        run.log << "epoch " << epoch + 1 << "/" << run.o.epochs << ": " << reported.regression->summary() << "\n";
    for (const auto& o : reported.outputs) {
        run.log << "  output " << o.name << ": ";
        if (o.classification)
            run.log << "accuracy " << o.classification->accuracy() << ", f1 " << o.classification->macro_f1() << "\n";
        else if (o.regression)
            run.log << "mse " << o.regression->average_mse() << ", mae " << o.regression->average_mae() << "\n";
    }
}

// One worker's training on its replica, from the start position to the end of the run (or a
// stop, where it leaves without saving).
void train_replica(Run& run, int local, nn::Network& net) {
    if (run.joined) {
        net.set_params(run.joined->params);
        net.set_updater_state(run.joined->updater_state);
    } else if (run.resume) {
        net.set_params(run.resume->params);
        net.set_updater_state(run.resume->updater_state);
    } else if (!run.imported_params.empty()) {
        net.set_params(run.imported_params);  // fine-tuning: every replica starts from the file's weights
        if (!run.imported_state.empty()) net.set_updater_state(run.imported_state);
    } else if (run.o.seed) {
        net.init_params(*run.o.seed);  // every replica starts from the same parameters
    }
    TrainingMaster& master = *run.master;
    master.attach(local, net);
    const ClusterShape& cluster = run.o.cluster;
    const int worker = cluster.global_worker(local);
    nn::TrainingPosition pos = run.start;
    long samples_total = 0;
    long skip = run.skip;
    const auto& after_step = master.membership().after_step;
    // The guard reads parameters and gradients in place; a device backend's stay on the device,
    // where the loss check alone applies.
    const bool host_memory = net.backend().host_memory();
    for (int epoch = pos.epochs_done; epoch < run.o.epochs && !run.failed; ++epoch) {
        data::BatchPlan plan;
        plan.batch_size = static_cast<std::size_t>(run.o.batch);
        plan.seed = pos.seed;
        plan.epoch = epoch;
        plan.limit = run.o.train_limit;
        plan.rank = worker;
        plan.world = cluster.total_workers();
        plan.augment = run.o.augment;
        // One batch type from either source; a shard set is read block by block, 2 blocks ahead.
        data::PrefetchIterator batches(run.shards ? std::unique_ptr<data::BatchSource>(std::make_unique<data::ShardStream>(*run.shards, run.shards->train, plan, &run.transform, run.share))
                                                  : std::make_unique<data::BatchIterator>(run.data.train, plan));
        data::Batch batch;
        net.set_epoch(epoch);  // for learning-rate schedules by epoch
        double epoch_loss = 0.0;
        long epoch_samples = 0;
        const long epoch_began = pos.iterations;
        // A joiner's first epoch: the batches the cluster took before it came are its shard's
        // first `skip`; the controller's parameters already hold what the others learnt from them.
        for (; skip > 0 && batches.next(batch); --skip) ++pos.iterations;
        skip = 0;
        for (;;) {
            if (run.failed || run.stop_requested()) {
                // Like a failed worker, one that stops (or sees another fail) releases whatever
                // its peers might wait on for it (a local barrier, an averaging round), then
                // leaves without saving.
                if (!run.failed) run.stopped = true;
                master.abort(local);
                return;
            }
            const double start_s = run.ev.seconds();  // where the phases begin (engine/events/README.md)
            const auto t0 = Clock::now();
            if (!batches.next(batch)) break;
            const double etl_ms = ms_since(t0);
            const auto t1 = Clock::now();
            const int count = static_cast<int>(batch.count);
            // Messages from the other workers go in just before the gradient, so that it sees
            // every update that has arrived (and, with a staleness bound, those it must see).
            events::Iteration it;
            it.master = master.before_gradient(local, pos.iterations);
            const double lr = net.learning_rate(pos.iterations);  // what this step's update uses
            const double receive_ms = ms_since(t1);
            const auto t2 = Clock::now();
            // With several workers each takes the same number of steps; a worker whose shard ran
            // out gets an empty batch at the last step and only joins the synchronous part.
            double loss = 0.0;
            if (count > 0) {
                loss = net.compute_gradients(batch.features.data(), batch.targets.data(), count,
                                             derive_seed(pos.seed, 0x49544552 /* "ITER" */,
                                                         static_cast<std::uint64_t>(pos.iterations) *
                                                                 cluster.total_workers() + worker));
                // The NaN/Inf guard, before anything of this step reaches another replica.
                if (!std::isfinite(loss))
                    throw Error("worker " + std::to_string(worker) + ", iteration " + std::to_string(pos.iterations) +
                                ": the loss is " + std::to_string(loss) +
                                "; training diverged and stopped (lower the learning rate, or check the data)");
                if (host_memory) check_finite(net.gradients(), net.config(), "gradient", worker, pos.iterations);
            }
            const double compute_ms = ms_since(t2);
            const auto t3 = Clock::now();
            it.master.update(master.step(local, pos.iterations, count > 0));
            const double step_ms = ms_since(t3);
            if (host_memory) check_finite(net.params(), net.config(), "parameter", worker, pos.iterations);
            const double iter_ms = ms_since(t1);
            ++pos.iterations;
            if (local == 0) run.iterations = pos.iterations;
            if (local == 0 && after_step) after_step(net, RunPosition{epoch, pos.iterations, pos.iterations - epoch_began});
            if (count == 0) continue;
            samples_total += count;
            epoch_loss += loss * count;
            epoch_samples += count;
            it.worker = worker;
            it.epoch = epoch;
            it.iter = pos.iterations;
            it.loss = loss;
            it.lr = lr;
            it.iter_ms = iter_ms;
            it.etl_ms = etl_ms;
            it.start_s = start_s;
            it.receive_ms = receive_ms;
            it.compute_ms = compute_ms;
            it.step_ms = step_ms;
            it.cpu_ms = process_cpu_ms();
            it.samples = samples_total;
            it.samples_per_s = count / ((iter_ms + etl_ms) / 1000.0);
            it.traffic = master.traffic();
            run.ev.emit(it);
        }
        pos.epochs_done = epoch + 1;
        // Local worker 0 speaks for the node: it evaluates its replica (the others keep training).
        if (local == 0) evaluate_and_report(run, net, epoch, epoch_loss, epoch_samples, pos);
    }
    master.finish(local);
    if (local == 0 && !run.o.save_path.empty())
        nn::save_model_file(run.o.save_path,
                            {net.config(), net.get_params(), net.get_updater_state(), pos, run.transform, run.data.class_names, run.data.vocabulary});
}

// The device of each local worker, in order (for run_started).
std::vector<std::string> worker_devices(const DeviceList& devices, int workers) {
    std::vector<std::string> out;
    for (int w = 0; w < workers; ++w) out.push_back(devices.for_worker(w));
    return out;
}

// One worker: its own backend (OpenMP thread count is per calling thread) and replica.
void worker_main(Run& run, int local) {
    std::unique_ptr<backend::Backend> backend;
    std::optional<nn::Network> net;  // destroyed before its backend
    try {
        backend = backend::create_backend(run.o.device.for_worker(local), {run.threads_per_worker});
        net.emplace(run.config, *backend);
        train_replica(run, local, *net);
    } catch (...) {
        record_failure(run);
        run.master->abort(local);
    }
    // The replica outlives this worker's part in the master. The last worker to leave a barrier
    // (abort's arrive_and_drop, after a stop or a failure) runs its completion step -- a last
    // average, the final reconcile -- which reads every local replica, also those of the workers
    // that left before it. So no replica goes before every local worker is done with the master.
    run.o.clock->idle_while([&] { run.left.arrive_and_wait(); });
    run.master->release(local);  // before the replica and its backend go (a residual on the GPU)
}

}  // namespace

TrainingOutcome run_training(const TrainOptions& o, events::EventWriter& ev, std::ostream& log, const MasterFactory& factory) {
    if (o.epochs < 1) throw ConfigError("--epochs must be at least 1, got " + std::to_string(o.epochs));
    if (o.batch < 1) throw ConfigError("--batch must be at least 1, got " + std::to_string(o.batch));
    const int W = o.cluster.workers_per_node;
    if (W < 1) throw ConfigError("--workers-per-node must be at least 1, got " + std::to_string(W));
    o.device.check_workers(W);
    Run run(o, ev, log);
    config::ImportedNormalization imported_normalization;  // a DL4J zip's normalizer.bin
    if (!o.resume_path.empty()) {
        run.resume = nn::load_model_file(o.resume_path);
        run.config = run.resume->config;
        run.start = run.resume->position;
        if (o.seed && *o.seed != run.start.seed)
            ev.warning("--seed " + std::to_string(*o.seed) + " ignored: resuming run seed " + std::to_string(run.start.seed));
    } else {
        if (o.model_path.empty()) throw ConfigError("train: --model or --resume is required");
        // DL4J and Keras files say what the import approximated; the user sees it as warnings.
        auto imported = config::import_model_file(o.model_path, o.import);
        for (const auto& note : imported.notes) {
            ev.warning("model " + o.model_path + ": " + note);
            log << o.model_path << ": " << note << "\n";  // also for whoever reads only stderr
        }
        run.config = std::move(imported.model);
        run.imported_params = std::move(imported.params);
        run.imported_state = std::move(imported.updater_state);
        imported_normalization = std::move(imported.normalization);
        if (!run.imported_state.empty()) run.start.iterations = imported.iterations;  // DL4J's step count
        run.start.seed = o.seed.value_or(run.config.seed);
    }
    data::ImageFolderOptions images = o.images;
    // Decoding a large folder takes a while: say how far it is, every 5% (events and the log).
    std::size_t next_report = 0;
    images.progress = [&](std::size_t done, std::size_t total) {
        if (done < next_report && done != total) return;
        next_report = done + std::max<std::size_t>(1, total / 20);
        ev.emit(events::DataProgress{"images", done, total});
        log << "decoding images: " << done << "/" << total << "\n";
    };
    if (o.shard_placement == spec::ShardPlacement::PerNode && !data::is_shard_folder(o.data_spec))
        throw ConfigError("--shard-placement per-node: --data " + o.data_spec + " is not a shard set (a folder written by "
                          "thresher-engine export); per-node placement splits a shard set's files among the nodes");
    // A resumed character model reads its text with the vocabulary it was trained on.
    if (data::is_shard_folder(o.data_spec)) {
        // Exported once (thresher-engine export): only the index is read now; both parts stream.
        run.shards = data::read_shard_index(o.data_spec);
        if (o.train_limit)
            throw ConfigError("--limit " + std::to_string(o.train_limit) + ": a shard set (" + o.data_spec +
                              ") streams whole; export a smaller set instead");
        run.share = {o.shard_placement, o.cluster.nodes};
        if (o.shard_placement == spec::ShardPlacement::PerNode) check_per_node_placement(*run.shards, o.cluster.nodes, ev, log);
        run.data.train = run.shards->describe(run.shards->train);
        run.data.has_test = run.shards->has_test;
        if (run.shards->has_test) run.data.test = run.shards->describe(run.shards->test);  // streamed when evaluated
        else {  // a sample, not the whole set: --test-limit records, or the first shard's (per node: of its own)
            const auto own = run.share.placement == spec::ShardPlacement::PerNode
                                     ? data::node_files(run.shards->train, o.cluster.node_rank, o.cluster.nodes)
                                     : run.shards->train;
            run.eval_rows = data::read_shard_sample(*run.shards, own, o.test_limit ? o.test_limit : own.shards.front().records);
        }
        run.data.class_names = run.shards->class_names;
        run.data.vocabulary = run.shards->vocabulary;
        // The checks load_data_for makes for the model: sequence steps, features, per-step labels.
        check_data_for_model(run.data.train, run.config);
        // A character model's ids mean its own vocabulary's characters.
        if (run.resume && !run.resume->vocabulary.empty() && run.resume->vocabulary != run.data.vocabulary)
            throw ConfigError("--data " + o.data_spec + ": its shards were exported with another character vocabulary (" +
                              std::to_string(run.data.vocabulary.size()) + " characters) than " + o.resume_path + " has (" +
                              std::to_string(run.resume->vocabulary.size()) + "); export the text again with --model " +
                              o.resume_path);
    } else {
        run.data = load_data_for(o.data_spec, run.config, images, run.resume ? run.resume->vocabulary : std::vector<std::string>{},
                                 o.sequences);
    }
    report_skipped_images(run.data, ev, log);
    if (run.resume && !run.resume->class_names.empty() && !run.data.class_names.empty())
        check_same_classes(run.resume->class_names, o.resume_path, run.data.class_names, o.data_spec);
    if (run.resume && run.data.class_names.empty()) run.data.class_names = run.resume->class_names;  // kept on save
    if (run.resume) {
        run.transform = run.resume->normalization;
        if (o.normalize != "none" && o.normalize != run.transform.kind)
            ev.warning("--normalize " + o.normalize + " ignored: resuming with the saved " + run.transform.kind + " normalisation");
    } else if (imported_normalization.active()) {
        // The model learned on inputs DL4J normalised this way: fitting anew would feed it others.
        if (o.normalize != "none")
            ev.warning("--normalize " + o.normalize + " ignored: the model file's " + imported_normalization.description +
                       " is applied");
        run.transform = {imported_normalization.kind, imported_normalization.shift, imported_normalization.scale};
    } else {
        // Token ids are indices into an embedding, not measurements: scaling them would change
        // which rows it reads.
        if (o.normalize != "none")
            for (const auto& layer : run.config.layers)
                if (layer.type == config::LayerType::Embedding &&
                    std::any_of(layer.sources.begin(), layer.sources.end(), [](int s) { return s < 0; }))
                    throw ConfigError("--normalize " + o.normalize + ": the model reads token ids (embedding \"" + layer.name +
                                      "\"); ids are not normalised");
        if (run.shards && o.normalize != "none")
            throw ConfigError("--normalize " + o.normalize + ": a shard set (" + o.data_spec +
                              ") is streamed, never held whole to fit a normalisation on; train from the source, or "
                              "resume a model that carries one");
        run.transform = data::fit_transform(o.normalize, run.data.train);
    }
    check_compatible(run.config, run.data.train);
    check_augmentation(run.o.augment, run.config, run.data.train);
    if (run.shards) run.transform.check_width(run.data.train);  // streamed rows: normalised as they are read
    else run.transform.apply(run.data.train);
    if (run.data.has_test && run.shards) run.transform.check_width(run.data.test);
    else if (run.data.has_test) run.transform.apply(run.data.test);
    if (run.eval_rows) run.transform.apply(*run.eval_rows);
    if (run.data.has_test) check_compatible(run.config, run.data.test);
    // Threads are split between the workers: 2 cores, 2 workers -> 1 thread each.
    const int threads = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    run.threads_per_worker = std::max(1, threads / W);

    std::unique_ptr<TrainingMaster> master;
    if (factory) master = factory(run.config);
    if (!master) {
        if (W != 1) throw ConfigError("--workers-per-node " + std::to_string(W) + " needs --strategy gradient-sharing or parameter-averaging");
        master = std::make_unique<LocalMaster>();
    }
    run.master = master.get();
    master->set_warning_sink([&ev](const std::string& message) { ev.warning(message); });
    // Multi-node: the controller waits here for the others to start together; a node that comes
    // once the cluster is training gets its current state and position instead.
    if (master->membership().join) {
        if (auto state = master->membership().join(o.stop)) {
            if (state->params.size() != run.config.param_count())
                throw Error("the controller sent " + std::to_string(state->params.size()) + " parameters, the model has " +
                            std::to_string(run.config.param_count()) + ": is this node running the same model?");
            const RunPosition& p = state->position;
            run.start.epochs_done = p.epoch;
            run.start.iterations = p.iteration - p.epoch_iteration;
            run.skip = p.epoch_iteration;
            run.joined = std::move(state);
        }
    }

    const auto info = backend::create_backend(o.device.for_worker(0), {run.threads_per_worker})->info();
    log << run.config.summary() << "backend: " << info.name << " (" << info.detail << "), " << W << " worker(s) on this node\n"
        << "data: " << run.data.train.name << " (" << run.data.train.count << " training samples"
        << (run.data.has_test ? ", " + std::to_string(run.data.test.count) + " test samples" : std::string()) << ")\n";
    events::RunStarted started;
    started.run = run.config.name;
    started.nodes = o.cluster.nodes;
    started.workers = o.cluster.total_workers();
    started.workers_per_node = W;
    started.params = run.config.param_count();
    started.strategy = master->strategy();
    started.backend = info.name;
    started.backend_detail = info.detail;
    started.devices = worker_devices(o.device, W);
    started.model = run.config.name;
    started.epochs = o.epochs;
    started.start_epoch = run.start.epochs_done;
    started.start_iter = run.start.iterations + run.skip;
    started.joined = run.joined.has_value();
    started.batch = o.batch;
    started.train_samples = o.train_limit ? std::min(o.train_limit, run.data.train.count) : run.data.train.count;
    started.topology = master->topology();
    started.class_names = run.data.class_names;
    ev.emit(started);

    std::vector<std::thread> threads_;
    for (int w = 0; w < W; ++w)
        threads_.push_back(o.clock->spawn([&run, w] { worker_main(run, w); }));
    for (auto& t : threads_) o.clock->join(t);
    if (run.error) std::rethrow_exception(run.error);
    const double wall = std::chrono::duration<double>(Clock::now() - run.began).count();
    if (run.stopped)
        return {"stopped", {.status = "stopped", .iters = run.iterations.load(), .wall_s = wall, .traffic = master->traffic()}};
    long iters = 0;
    {
        data::BatchPlan plan;
        plan.batch_size = static_cast<std::size_t>(o.batch);
        plan.limit = o.train_limit;
        plan.world = o.cluster.total_workers();
        const std::size_t steps = run.shards ? data::shard_schedule(*run.shards, run.shards->train, plan, run.share).steps
                                             : data::batches_per_epoch(run.data.train, plan);
        iters = static_cast<long>(steps) * (o.epochs - run.start.epochs_done) + run.start.iterations;
    }
    master->finished();
    return {"ok",
            {.status = "ok",
             .iters = iters,
             .wall_s = wall,
             .traffic = master->traffic(),  // the node's totals, after the final drain
             .reconcile = master->reconcile_report()}};
}

}  // namespace thresher::train
