// thresher-engine: train, evaluate, predict, compare, devices, inspect, export-model, export. See DESIGN.md
// for the contract: JSON lines on stdout, logs on stderr, a non-zero exit with one clear message on
// any error.
#include <CLI/CLI.hpp>

#include <atomic>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <sys/resource.h>
#include <unistd.h>

#include "cli/cluster.h"
#include "cli/commands.h"
#include "cli/export_command.h"
#include "cli/export_data.h"
#include "cli/inspect.h"
#include "cli/masters.h"
#include "cli/stdin_control.h"
#include "cli/stop_deadline.h"
#include "cli/stop_requests.h"
#include "train/text_sampling.h"
#include "core/error.h"
#include "data/data_source.h"
#include "dist/net/run_key.h"
#include "events/event_writer.h"
#include "train/trainer.h"

int main(int argc, char** argv) {
    using namespace thresher;
    CLI::App app{"thresher-engine: native neural-network training (events as JSON lines on stdout)"};
    app.require_subcommand(1);
    std::string device = "cpu";
    int threads = 0;
    app.add_option("--device", device, "Backend device: cpu, cuda, cuda:N, or one per worker of this node: cuda:0,cuda:1")->capture_default_str();
    app.add_option("--threads", threads, "CPU threads (0: all cores)")->check(CLI::NonNegativeNumber);

    train::TrainOptions t;
    std::uint64_t seed = 0;
    auto* train_cmd = app.add_subcommand("train", "Train a model on one node");
    train_cmd->add_option("--model", t.model_path, "Model config (Thresher JSON)")->check(CLI::ExistingFile);
    train_cmd->add_option("--data", t.data_spec, "fashion-mnist, a folder of IDX files, a folder of images in class folders "
                                                 "(train/<class>/ and test/<class>/, or <class>/), a folder of sequence CSVs "
                                                 "(features/ + labels/), a CSV file, a .txt character corpus, or a shard folder "
                                                 "written by export (streamed)")
        ->capture_default_str();
    train_cmd->add_option("--epochs", t.epochs, "Total epochs")->capture_default_str()->check(CLI::PositiveNumber);
    train_cmd->add_option("--batch", t.batch, "Minibatch size")->capture_default_str()->check(CLI::PositiveNumber);
    auto* seed_opt = train_cmd->add_option("--seed", seed, "Run seed (shuffling, dropout, init)");
    train_cmd->add_option("--save", t.save_path, "Save model, updater state and position after each epoch");
    train_cmd->add_option("--resume", t.resume_path, "Continue a run from a saved model file")->check(CLI::ExistingFile);
    train_cmd->add_option("--limit", t.train_limit, "Use only the first N training samples");
    train_cmd->add_option("--test-limit", t.test_limit, "Evaluate on only the first N test samples");
    train_cmd->add_option("--normalize", t.normalize, "Feature normalisation fitted on the training set: none, standardize, minmax (saved with the model)")
        ->capture_default_str()->check(CLI::IsMember({"none", "standardize", "minmax"}));
    // Typed here, once (spec/augmentation.h).
    train_cmd->add_option("--augment")
        ->description("Augment training images: none, or crop:P (random crop after zero padding P pixels) and/or flip "
                      "(mirror left-right half the time), e.g. crop:4,flip; seeded by the run seed, epoch and sample")
        ->each([&t](const std::string& text) {
            try {
                t.augment = spec::Augmentation::parse(text);
            } catch (const ConfigError& e) {
                throw CLI::ValidationError(e.what());
            }
        });
    // Typed here, once (spec/shard_placement.h); the launcher passes per-node when it uploads each
    // node only its own shard files.
    train_cmd->add_option("--shard-placement")
        ->description("Where a shard set's files are: shared (every node sees the whole folder) or per-node (node n holds "
                      "and reads only the files it owns, file f on node f mod nodes)")
        ->each([&t](const std::string& text) {
            const auto p = spec::parse_shard_placement(text);
            if (!p) throw CLI::ValidationError("--shard-placement " + text + ": expected shared or per-node");
            t.shard_placement = *p;
        });
    // Image folders (data/image_folder.h): typed here, once. The same options for train, evaluate
    // and predict, so evaluating a model on a split folder takes the test images it was tested on.
    data::ImageFolderOptions images;
    auto add_image_options = [&images](CLI::App* sub) {
        sub->add_option("--test-fraction", images.test_fraction,
                        "Image folder without train/: the share of each class held out as the test set, in [0, 1)")
            ->capture_default_str()
            ->check(CLI::Validator(
                [](std::string& v) {
                    try {
                        std::size_t used = 0;
                        const double f = std::stod(v, &used);
                        if (used == v.size() && f >= 0 && f < 1) return std::string();
                    } catch (const std::exception&) {
                    }
                    return "expected a fraction in [0, 1), got " + v;
                },
                "[0, 1)"));
        sub->add_option("--split-seed", images.split_seed, "Image folder without train/: seed of the train/test split")
            ->capture_default_str();
        sub->add_option("--image-fit", "How images take the model's input size: stretch (resize the whole image) or "
                                       "crop (centre crop to the input's aspect ratio, then resize); default stretch")
            ->each([&images](const std::string& v) {
                try {
                    images.fit = data::parse_image_fit(v, "");  // CLI11 names the flag
                } catch (const ConfigError& e) {
                    throw CLI::ValidationError(e.what());
                }
            });
        sub->add_flag("--skip-bad-images", images.skip_bad,
                      "Skip images that cannot be decoded (counted in a warning) instead of stopping with an error");
    };
    // Sequence sources (data/sequence_csv.h, token_csv.h, text_corpus.h); T, features and the label
    // mode come from the model.
    data::SequenceReadOptions sequences;
    auto add_sequence_options = [&sequences](CLI::App* sub) {
        sub->add_option("--sequence-align", "Sequence CSVs: where a shorter label sequence sits and which steps "
                                            "truncation keeps: start (default) or end (DL4J's ALIGN_END)")
            ->check(CLI::IsMember({"start", "end"}))
            ->each([&sequences](const std::string& v) {
                sequences.align = v == "end" ? data::SequenceAlign::end : data::SequenceAlign::start;
            });
        sub->add_flag("--truncate-sequences", sequences.truncate,
                      "Cut sequences longer than the model's input steps instead of refusing them");
        sub->add_option("--text-stride", sequences.text_stride,
                        "Text corpus: characters between window starts (default: the model's input steps)")
            ->check(CLI::NonNegativeNumber);
    };
    // A model file that leaves its sequence input's steps open (config/model_format.h): the user
    // says them, the same flag for every subcommand that imports a model.
    config::ImportOptions import;
    auto add_steps_option = [&import](CLI::App* sub) {
        sub->add_option("--steps", import.steps,
                        "Imported DL4J/Keras file whose sequence input has no fixed length: the time steps, the longest "
                        "sequence the model will read (shorter ones are padded and masked)")
            ->check(CLI::Range(1, config::kMaxImportSteps));
    };
    std::optional<int> top_k;
    auto add_top_k = [&top_k](CLI::App* sub) {
        sub->add_option("--top-k", top_k, "Report top-k accuracy for this k (0: off; default 5 with 20 classes or more)")
            ->check(CLI::Range(0, 1000000));
    };
    add_image_options(train_cmd);
    add_sequence_options(train_cmd);
    add_steps_option(train_cmd);
    add_top_k(train_cmd);
    cli::StrategyOptions strategy;
    train_cmd->add_option("--workers-per-node", t.cluster.workers_per_node, "Workers on this node (threads share --threads)")
        ->capture_default_str()->check(CLI::PositiveNumber);
    train_cmd->add_option("--strategy", strategy.strategy, "single, gradient-sharing or parameter-averaging (auto: by worker count)")
        ->capture_default_str();
    train_cmd->add_option("--threshold", strategy.threshold, "Gradient sharing: initial threshold τ")->check(CLI::PositiveNumber);
    // Typed here, once (codec/threshold_spec.h); --threshold is put in with it in masters.cpp.
    train_cmd->add_option("--threshold-algorithm")
        ->description(dist::threshold_algorithm_grammar() + " (default: adaptive)")
        ->each([&strategy](const std::string& text) {
            try {
                strategy.threshold_algorithm = dist::parse_threshold_spec(text, "");  // CLI11 names the flag
            } catch (const ConfigError& e) {
                throw CLI::ValidationError(e.what());
            }
        });
    train_cmd->add_option("--residual", strategy.residual, "Residual post-processing: clip[:every:multiple] or none")
        ->capture_default_str();
    train_cmd->add_flag("--residual-stats", strategy.residual_stats, "Residual statistics in iteration events (debug)");
    train_cmd->add_option("--max-staleness", strategy.max_staleness,
                          "Gradient sharing: how many of each other worker's latest updates a gradient may miss "
                          "(0: none, synchronous; off: never wait)")
        ->capture_default_str();
    train_cmd->add_option("--overlap-comm", strategy.overlap_comm,
                          "Gradient sharing, communication beside the next gradient: off; send (publishing each message; "
                          "any staleness bound); encode (encoding too; needs --max-staleness 1 or more, and a worker's "
                          "own update then reaches its replica a step late)")
        ->capture_default_str()->check(CLI::IsMember({"off", "send", "encode"}));
    train_cmd->add_option("--averaging-frequency", strategy.averaging_frequency, "Parameter averaging: iterations between averages")
        ->capture_default_str()->check(CLI::PositiveNumber);
    train_cmd->add_option("--save-updater", strategy.save_updater, "Parameter averaging: average updater state too")
        ->capture_default_str();
    cli::ClusterOptions cluster;
    auto add_cluster_options = [&cluster](CLI::App* sub) {
        sub->add_option("--nodes", cluster.nodes, "All nodes of a multi-node run, HOST:PORT,HOST:PORT,... (UDP and TCP port)");
        sub->add_option("--node-rank", cluster.node_rank, "This node's index in --nodes (0 runs the controller)");
        sub->add_option("--secret-file", cluster.secret_file, "Run secret (mode 0600); else THRESHER_SECRET")
            ->check(CLI::ExistingFile);
        sub->add_option("--bind", cluster.bind, "Local address to bind (default: this node's --nodes address)");
        sub->add_option("--network-mask", cluster.network_mask, "Bind the local address inside this CIDR, e.g. 10.0.0.0/24");
        sub->add_option("--run-id", cluster.run_id, "Run id in every datagram (default: derived from the secret and --run-nonce)");
        // The emulated link (dist/net/link_emulator.h), parsed into its typed value here, once.
        const auto typed = [](auto parse) {
            return [parse](const std::string& value) {
                try {
                    parse(value);
                } catch (const ConfigError& e) {
                    throw CLI::ValidationError(e.what());
                }
            };
        };
        sub->add_option("--run-nonce", "This run's nonce, the same on every node: 16 to 128 hex digits, fresh per run "
                                        "(the launchers make one), so runs that reuse a secret cannot accept each "
                                        "other's traffic")
            ->each(typed([&cluster](const std::string& v) { cluster.run_nonce = dist::parse_run_nonce(v, "the run nonce"); }))
            ->type_name("HEX");
        sub->add_option("--link-rate", "Emulate this node's link: egress rate, e.g. 1gbit, 100mbit (UDP and TCP)")
            ->each(typed([&cluster](const std::string& v) { cluster.link.rate_bits_per_s = dist::parse_link_rate(v); }));
        sub->add_option("--link-delay", "Emulated link: one-way delay, e.g. 2ms, 500us")
            ->each(typed([&cluster](const std::string& v) { cluster.link.delay = dist::parse_link_delay(v); }));
        sub->add_option("--link-loss", "Emulated link: UDP datagram loss, e.g. 0.01 or 1% (retransmitted)")
            ->each(typed([&cluster](const std::string& v) { cluster.link.loss = dist::parse_link_loss(v); }));
    };
    add_cluster_options(train_cmd);
    train_cmd->add_option("--join-wait", cluster.join_wait_s,
                          "Seconds the controller waits for every node before training starts; later nodes (and "
                          "nodes restarted with the same command line) join with its current parameters")
        ->capture_default_str()->check(CLI::Range(0.0, 86400.0));
    train_cmd->add_option("--topology", cluster.topology,
                          "How nodes exchange updates and averaging rounds: mesh (each node to every other), relay "
                          "(through node 0), tree (--fanout children per node), auto (mesh; beyond 8 nodes "
                          "averaging rounds in a tree of fanout 4)")
        ->capture_default_str();
    train_cmd->add_option("--fanout", cluster.fanout, "Children per node in a tree topology")
        ->capture_default_str()->check(CLI::Range(1, 1024));
    // train only: predict's nodes are started by hand or by scripts, not by the SSH launcher.
    bool secret_stdin = false;
    train_cmd
        ->add_flag("--secret-stdin", secret_stdin,
                   "Read the run secret from the first line of stdin, then stop the run when stdin ends "
                   "(the SSH launcher's way: a closed connection ends the engine)")
        ->excludes("--secret-file");
    double stdin_heartbeat_s = 0;
    train_cmd
        ->add_option("--stdin-heartbeat", stdin_heartbeat_s,
                     "With --secret-stdin: stop the run when nothing arrives on stdin for this many seconds (the SSH "
                     "launcher writes a heartbeat; 0: off)")
        ->needs("--secret-stdin")
        ->check(CLI::Range(0.0, 86400.0));
    for (auto* sub : {train_cmd}) {
        sub->add_option("--threads", threads, "CPU threads (0: all cores)")->check(CLI::NonNegativeNumber);
        sub->add_option("--device", device, "Backend device");
    }

    std::string model_file, data_spec = "fashion-mnist";
    std::size_t limit = 0;
    auto* eval_cmd = app.add_subcommand("evaluate", "Evaluate a saved model on a data set's test split");
    auto* predict_cmd = app.add_subcommand("predict", "Predict class and probabilities per input");
    for (auto* sub : {eval_cmd, predict_cmd}) {
        sub->add_option("--model-file", model_file, "Saved model (from train --save)")->required()->check(CLI::ExistingFile);
        sub->add_option("--data", data_spec, "fashion-mnist, a folder of IDX files, a folder of images in class folders, "
                                             "a folder of sequence CSVs (features/, labels/), a CSV file or a .txt corpus")->capture_default_str();
        sub->add_option("--limit", limit, "Only the first N samples");
        add_image_options(sub);
        add_sequence_options(sub);
        add_steps_option(sub);
        sub->add_option("--threads", threads, "CPU threads")->check(CLI::NonNegativeNumber);
        sub->add_option("--device", device, "Backend device");
    }

    add_top_k(eval_cmd);
    add_cluster_options(predict_cmd);
    // Text from a character model instead of predictions over --data (train/text_sampling.h).
    train::TextSampleOptions text_sample;
    auto* sample_opt = predict_cmd->add_option("--sample", text_sample.length,
                                               "Character model: draw this many characters instead of predicting --data")
                           ->check(CLI::Range(1, train::kMaxSampleLength));
    predict_cmd->add_option("--temperature", text_sample.temperature, "With --sample: 0 greedy, 1 the model's probabilities, higher more random")
        ->check(CLI::Range(0.0, train::kMaxTemperature))
        ->needs(sample_opt)
        ->capture_default_str();
    predict_cmd->add_option("--prime", text_sample.prime, "With --sample: the text to start from (default: one random character)")
        ->needs(sample_opt);
    predict_cmd->add_option("--sample-seed", text_sample.seed, "With --sample: the seed of the draws")
        ->needs(sample_opt)
        ->capture_default_str();

    std::string a, b;
    double tolerance = std::numeric_limits<double>::infinity();
    auto* compare_cmd = app.add_subcommand("compare", "Max abs difference of two saved models' parameters");
    compare_cmd->add_option("A", a)->required()->check(CLI::ExistingFile);
    compare_cmd->add_option("B", b)->required()->check(CLI::ExistingFile);
    compare_cmd->add_option("--tolerance", tolerance, "Exit 1 when the difference is larger");

    auto* devices_cmd = app.add_subcommand("devices", "List the compute devices this build can use");

    std::string inspect_model;
    bool inspect_json = false;
    auto* inspect_cmd = app.add_subcommand("inspect", "Show a model file (Thresher, DL4J or Keras) as Thresher will train it");
    inspect_cmd->add_option("MODEL", inspect_model, "Model file")->required()->check(CLI::ExistingFile);
    inspect_cmd->add_flag("--json", inspect_json, "One JSON object on stdout instead of a table");
    add_steps_option(inspect_cmd);

    cli::ExportModelOptions export_options;
    auto* export_cmd = app.add_subcommand("export-model", "Write a trained model for another runtime (ONNX, Keras, DL4J)");
    export_cmd->add_option("MODEL", export_options.model, "Model file with weights (.thr, DL4J zip, Keras .h5/.keras)")
        ->required()->check(CLI::ExistingFile);
    export_cmd->add_option("--format", export_options.format, "Format to write: onnx, keras-h5 (Keras 2 .h5), keras (Keras 3 .keras), dl4j (DL4J model zip)")
        ->required();
    export_cmd->add_option("--out", export_options.out, "File to write (replaced atomically)")->required();
    export_cmd->add_option("--class-names", export_options.class_names,
                           "A classifier's class names, comma-separated, recorded in the file "
                           "(ONNX metadata; a Keras file's class_names; a DL4J zip has no place for them)")
        ->delimiter(',');
    add_steps_option(export_cmd);

    // export: a data set written once as shards every worker streams (cli/export_data.h).
    cli::ExportDataOptions export_data;
    std::uint64_t export_seed = 0;
    auto* export_data_cmd = app.add_subcommand("export", "Write a data set as pre-batched shards that train --data DIR streams");
    export_data_cmd->add_option("--data", export_data.data, "The source, as for train --data")->required();
    export_data_cmd->add_option("--out", export_data.out, "The shard folder to create (new or empty)")->required();
    export_data_cmd->add_option("--batch", export_data.batch, "Records per batch (train with this --batch)")
        ->capture_default_str()->check(CLI::Range(1, 1 << 24));
    export_data_cmd->add_option("--shards", export_data.shards, "Shard files per part (0: about 64 MiB each)")->capture_default_str();
    auto* export_seed_opt = export_data_cmd->add_option("--seed", export_seed, "Order of the records: train --seed S's first epoch (default: the model's seed, else 0)");
    export_data_cmd->add_option("--model", export_data.model, "Read the data for this model (image size, sequence steps, task)")
        ->check(CLI::ExistingFile);
    add_image_options(export_data_cmd);
    add_sequence_options(export_data_cmd);
    add_steps_option(export_data_cmd);

    CLI11_PARSE(app, argc, argv);

    events::EventWriter events(std::cout, cluster.node_rank);
    // Exactly one run_finished leaves the process, whether training, a failure or the stop
    // deadline (stop_deadline.h) ends the run.
    std::atomic<bool> finished_reported{false};
    auto report_finished = [&](events::RunFinished finished) {
        if (finished_reported.exchange(true)) return;
        // The process's own peak resident set, so benchmarks on machines without GNU time (the
        // lent GPU machines) still compare memory; Linux reports ru_maxrss in KiB.
        rusage usage{};
        if (getrusage(RUSAGE_SELF, &usage) == 0) finished.peak_rss_mb = usage.ru_maxrss / 1024.0;
        events.emit(finished);
    };
    std::atomic<bool> stop_requested{false};
    // Declared before the session, so both outlive it; the deadline before the requests that
    // start it, so it outlives them too (and stays armed until main() returns).
    std::optional<cli::StopDeadline> stop_deadline;
    std::optional<cli::StopRequests> stop_requests;
    try {
        if (train_cmd->parsed()) {
            // --test-fraction splits image folders and text files only; a CSV is read whole, so
            // a fraction given with one would otherwise change nothing without a word.
            if (train_cmd->get_option("--test-fraction")->count() > 0 && data::is_csv_file(t.data_spec))
                std::cerr << "thresher-engine: warning: --test-fraction splits image folders and text files; " << t.data_spec
                          << " is a CSV, read whole with no test split, so evaluation scores its training rows "
                             "(hold rows out in a file of their own and evaluate on it)\n";
            if (*seed_opt) t.seed = seed;
            t.images = images;
            t.sequences = sequences;
            t.import = import;
            t.top_k = top_k;
            t.threads = threads;
            t.device = DeviceList::parse(device);
            try {
                if (secret_stdin) cluster.secret = cli::read_secret_line(STDIN_FILENO);
                // SIGTERM, SIGINT and (with --secret-stdin) EOF on stdin stop the run gracefully.
                // 3 s: well inside the launchers' default 5 s grace before they kill the group.
                t.stop = &stop_requested;
                stop_deadline.emplace(std::chrono::milliseconds(3000), [&](const std::string& why) {
                    // The run reported its end already and only its exit is late (main() stuck on
                    // a full stderr): nothing may follow run_finished on stdout.
                    if (finished_reported) return;
                    events.warning(why + " and the run did not end within 3 s: ending the process now");
                    report_finished({.status = "stopped", .iters = 0, .wall_s = events.seconds()});
                });
                cli::StopSources sources;
                if (secret_stdin) {
                    sources.stdin_fd = STDIN_FILENO;
                    sources.heartbeat = std::chrono::milliseconds(static_cast<long long>(stdin_heartbeat_s * 1000));
                }
                stop_requests.emplace(stop_requested, sources,
                                      [&](const std::string& why) { stop_deadline->start(why); });
                cli::ClusterSession session(cluster, t.cluster, events);
                auto outcome = train::run_training(t, events, std::cerr, session.factory(strategy));
                report_finished(std::move(outcome.finished));
                if (outcome.status == "stopped") {
                    stop_requests->wait_until_said(std::chrono::seconds(1));  // its line first, then ours
                    std::cerr << "thresher-engine: stopped (" << stop_requests->reason() << ")" << std::endl;
                    return cli::kExitStopped;
                }
            } catch (const std::exception& e) {
                events.error(e.what());
                report_finished({.status = "failed", .iters = 0, .wall_s = events.seconds()});
                throw;
            }
        } else if (eval_cmd->parsed()) {
            cli::evaluate_command(model_file, data_spec, limit, threads, device, images, top_k, sequences, import);
        } else if (predict_cmd->parsed() && *sample_opt) {
            cli::sample_text_command(model_file, text_sample, threads, device, import);
        } else if (predict_cmd->parsed()) {
            cli::ClusterSession session(cluster, t.cluster, events, /*bulk=*/false);
            cli::predict_command(model_file, data_spec, limit, threads, device, images, &session, sequences, import);
        } else if (compare_cmd->parsed()) {
            return cli::compare_command(a, b, tolerance) ? 0 : 1;
        } else if (devices_cmd->parsed()) {
            cli::devices_command();
        } else if (export_data_cmd->parsed()) {
            if (*export_seed_opt) export_data.seed = export_seed;
            export_data.images = images;
            export_data.sequences = sequences;
            export_data.import = import;
            cli::export_data_command(export_data, events, std::cout, std::cerr);
        } else if (export_cmd->parsed()) {
            export_options.import = import;
            cli::export_model_command(export_options, std::cout, std::cerr);
        } else if (inspect_cmd->parsed()) {
            cli::inspect_command(inspect_model, inspect_json, std::cout, std::cerr, import);
        }
    } catch (const Error& e) {
        std::cerr << "thresher-engine: error: " << e.what() << std::endl;
        return 1;
    } catch (const std::bad_alloc&) {
        std::cerr << "thresher-engine: error: out of memory" << std::endl;
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "thresher-engine: internal error: " << e.what() << std::endl;
        return 70;
    }
    return 0;
}
