#include "train/trainer.h"

#include <chrono>
#include <cmath>

#include "backend/registry.h"
#include "core/error.h"
#include "core/rng.h"
#include "data/data_source.h"
#include "data/prefetch_iterator.h"
#include "nn/model_file.h"
#include "nn/network.h"
#include "train/evaluation.h"

namespace thresher::train {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

struct Loaded {
    nn::ModelConfig config;
    std::optional<nn::ModelFile> resume;
};

Loaded load_model(const TrainOptions& o) {
    Loaded l;
    if (!o.resume_path.empty()) {
        l.resume = nn::load_model_file(o.resume_path);
        l.config = l.resume->config;
    } else {
        if (o.model_path.empty()) throw ConfigError("train: --model or --resume is required");
        l.config = nn::ModelConfig::load(o.model_path);
    }
    return l;
}

}  // namespace

void run_training(const TrainOptions& o, events::EventWriter& ev, std::ostream& log) {
    if (o.epochs < 1) throw ConfigError("--epochs must be at least 1, got " + std::to_string(o.epochs));
    if (o.batch < 1) throw ConfigError("--batch must be at least 1, got " + std::to_string(o.batch));
    Loaded model = load_model(o);
    auto backend = backend::create_backend(o.device, {o.threads});
    const data::DataSplit data = data::load_data(o.data_spec);
    check_compatible(model.config, data.train);
    if (data.has_test) check_compatible(model.config, data.test);

    nn::Network net(model.config, *backend);
    nn::TrainingPosition pos;
    pos.seed = o.seed.value_or(model.config.seed);
    if (model.resume) {
        net.set_params(model.resume->params);
        net.set_updater_state(model.resume->updater_state);
        pos = model.resume->position;
        if (o.seed && *o.seed != pos.seed)
            ev.warning("--seed " + std::to_string(*o.seed) + " ignored: resuming run seed " + std::to_string(pos.seed));
    } else if (o.seed) {
        net.init_params(*o.seed);
    }
    log << net.config().summary() << "backend: " << backend->info().name << " (" << backend->info().detail << ")\n"
        << "data: " << data.train.name << " (" << data.train.count << " training samples"
        << (data.has_test ? ", " + std::to_string(data.test.count) + " test samples" : std::string()) << ")\n";

    ev.write("run_started", {{"run", net.config().name},
                             {"nodes", 1},
                             {"workers", 1},
                             {"params", net.param_count()},
                             {"strategy", "single"},
                             {"backend", backend->info().name},
                             {"backend_detail", backend->info().detail},
                             {"model", net.config().name},
                             {"epochs", o.epochs},
                             {"start_epoch", pos.epochs_done},
                             {"batch", o.batch},
                             {"train_samples", o.train_limit ? std::min(o.train_limit, data.train.count) : data.train.count}});

    const auto run_start = Clock::now();
    long samples_total = 0;
    const data::Dataset& eval_set = data.has_test ? data.test : data.train;
    for (int epoch = pos.epochs_done; epoch < o.epochs; ++epoch) {
        data::BatchPlan plan;
        plan.batch_size = static_cast<std::size_t>(o.batch);
        plan.seed = pos.seed;
        plan.epoch = epoch;
        plan.limit = o.train_limit;
        data::PrefetchIterator batches(data.train, plan);
        data::Batch batch;
        double epoch_loss = 0.0;
        long epoch_samples = 0;
        for (;;) {
            const auto t0 = Clock::now();
            if (!batches.next(batch)) break;
            // With several ranks every rank takes the same number of steps; a rank whose shard
            // ran out gets an empty batch at the last step (data/batch_iterator.h).
            if (batch.count == 0) continue;
            const double etl_ms = ms_since(t0);
            const auto t1 = Clock::now();
            const int count = static_cast<int>(batch.count);
            const double loss = net.compute_gradients(batch.features.data(), batch.targets.data(), count,
                                                      derive_seed(pos.seed, 0x49544552 /* "ITER" */, pos.iterations));
            net.compute_update(pos.iterations);
            net.apply_update();
            const double iter_ms = ms_since(t1);
            ++pos.iterations;
            samples_total += count;
            epoch_loss += loss * count;
            epoch_samples += count;
            ev.write("iteration", {{"worker", 0},
                                   {"epoch", epoch},
                                   {"iter", pos.iterations},
                                   {"loss", loss},
                                   {"iter_ms", iter_ms},
                                   {"etl_ms", etl_ms},
                                   {"samples", samples_total},
                                   {"samples_per_s", count / ((iter_ms + etl_ms) / 1000.0)},
                                   {"bytes_tx", 0},
                                   {"bytes_rx", 0}});
            if (!std::isfinite(loss)) {
                ev.error("loss diverged to " + std::to_string(loss) + " at iteration " + std::to_string(pos.iterations) +
                         "; lower the learning rate");
                throw Error("training diverged (loss " + std::to_string(loss) + ") at iteration " +
                            std::to_string(pos.iterations));
            }
        }
        pos.epochs_done = epoch + 1;
        const auto result = evaluate(net, eval_set, o.eval_batch, o.test_limit);
        nlohmann::json fields = result.to_json();
        fields.erase("confusion");
        fields["epoch"] = epoch;
        fields["loss"] = epoch_samples ? epoch_loss / static_cast<double>(epoch_samples) : 0.0;
        fields["eval_loss"] = result.loss;
        fields["eval_set"] = data.has_test ? "test" : "train";
        if (result.classification) fields["confusion"] = result.to_json()["confusion"];
        ev.write("epoch_end", fields);
        if (result.classification)
            log << "epoch " << epoch + 1 << "/" << o.epochs << " (" << fields["eval_set"].get<std::string>() << " set)\n"
                << result.classification->confusion_table() << "\n";
        else
            log << "epoch " << epoch + 1 << "/" << o.epochs << ": " << result.regression->summary() << "\n";
        if (!o.save_path.empty())
            nn::save_model_file(o.save_path, {net.config(), net.get_params(), net.get_updater_state(), pos});
    }
    const double wall = std::chrono::duration<double>(Clock::now() - run_start).count();
    ev.write("run_finished", {{"status", "ok"}, {"iters", pos.iterations}, {"wall_s", wall}});
}

}  // namespace thresher::train
