// One instance of every event struct (engine/events/events.h) with every optional field set, and
// one with none: what the event tests serialise, compare with the documentation and feed to the
// launcher's reader. A field added to a struct belongs in full() too, or no test sees it.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "events/events.h"

namespace events_fixture {

namespace ev = thresher::events;

inline ev::MasterPhases full_phases() {
    ev::MasterPhases p;
    p.decode_ms = 0.5;
    p.messages_applied = 3;
    p.lag_max = 1;
    p.lag_mean = 0.5;
    p.wait_ms = 0.25;
    p.wait_timeouts = 0;
    p.updater_ms = 1.5;
    p.average_ms = 2.5;
    p.average_local_ms = 1.25;
    p.encode_ms = 0.75;
    p.apply_ms = 0.125;
    p.send_ms = 0.0625;
    p.comm_wait_ms = 0.03125;
    p.threshold = 0.001f;
    p.density = 0.01;
    p.message_bytes = 4096;
    p.encoding = "sparse";
    p.overlapped = true;
    p.send_async = true;
    p.encoded_iter = 41;
    p.residual = ev::ResidualFields{0.1, 0.9, 0.2, 0.5, 0.8};
    return p;
}

inline ev::Traffic full_traffic() { return {1000, 2000, 3, 4, 5}; }

inline ev::RunStarted full_run_started() {
    ev::RunStarted e;
    e.run = e.model = "mlp";
    e.nodes = 2;
    e.workers = 4;
    e.workers_per_node = 2;
    e.params = 101770;
    e.strategy = "gradient-sharing";
    e.backend = "cpu";
    e.backend_detail = "2 threads";
    e.devices = {"cpu", "cpu"};
    e.epochs = 3;
    e.start_epoch = 1;
    e.start_iter = 469;
    e.joined = true;
    e.batch = 64;
    e.train_samples = 60000;
    e.class_names = {"cat", "dog"};
    e.topology = "star";
    return e;
}

inline ev::Iteration full_iteration() {
    ev::Iteration e;
    e.worker = 1;
    e.epoch = 1;
    e.iter = 42;
    e.loss = 0.25;
    e.lr = 0.01;
    e.iter_ms = 12.5;
    e.etl_ms = 0.5;
    e.start_s = 3.25;
    e.receive_ms = 1;
    e.compute_ms = 8;
    e.step_ms = 3;
    e.cpu_ms = 4000;
    e.samples = 2688;
    e.samples_per_s = 4923.1;
    e.master = full_phases();
    e.traffic = full_traffic();
    return e;
}

inline ev::EpochEnd full_epoch_end() {
    ev::EpochEnd e;
    e.epoch = 1;
    e.loss = 0.3;
    e.eval_loss = 0.35;
    e.eval_set = "test";
    e.count = 4;
    e.eval_start_s = 10.5;
    e.eval_ms = 250;
    e.nodes_evaluated = 2;
    e.classification = ev::ClassificationFields{0.75, 0.7, 0.8, 0.74, {{1, 1}, {0, 2}}, 0.875, 1, 0.75};
    e.regression = ev::RegressionFields{1, {0.5}, {0.25}, {std::numeric_limits<double>::quiet_NaN()}, 0.5, 0.25, 0.9};
    ev::OutputFields aux;
    aux.name = "aux";
    aux.classification = ev::ClassificationFields{0.5, 0.5, 0.5, 0.5, {{1, 1}, {1, 1}}, std::nullopt, std::nullopt, 0};
    e.outputs = {aux};
    return e;
}

inline ev::DataProgress full_data_progress() { return {"images", 4800, 12000}; }

inline ev::NodeJoined full_node_joined() {
    return {1, 2, 938, true, "node 1 rejoined at epoch 2 iteration 938, parameters from the controller"};
}
inline ev::Warning full_warning() { return {"worker 3 has heard nothing from worker 0", 3}; }
inline ev::ErrorEvent full_error() { return {"the loss is nan", 2}; }

inline ev::RunFinished full_run_finished() {
    return {.status = "ok",
            .iters = 1407,
            .wall_s = 61.5,
            .traffic = full_traffic(),
            .peak_rss_mb = 512.25,
            .reconcile = ev::ReconcileReport{2e-6, "layers[2] \"fc1\" (dense), its parameter 12"}};
}

// Every event, full, as (name, fields): the documentation tests look names up here.
inline std::vector<std::pair<std::string, nlohmann::json>> all_full() {
    return {{std::string(ev::DataProgress::kName), ev::to_json(full_data_progress())},
            {std::string(ev::RunStarted::kName), ev::to_json(full_run_started())},
            {std::string(ev::Iteration::kName), ev::to_json(full_iteration())},
            {std::string(ev::EpochEnd::kName), ev::to_json(full_epoch_end())},
            {std::string(ev::NodeJoined::kName), ev::to_json(full_node_joined())},
            {std::string(ev::Warning::kName), ev::to_json(full_warning())},
            {std::string(ev::ErrorEvent::kName), ev::to_json(full_error())},
            {std::string(ev::RunFinished::kName), ev::to_json(full_run_finished())}};
}

}  // namespace events_fixture
