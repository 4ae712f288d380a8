// Each event struct to its JSON fields: every field name of the contract is written here once.
// Numbers keep the kinds they had when each call site built its own JSON (an integer stays an
// integer, a float a number with a fraction), so the lines read the same as before the types.
#include "events/events.h"

#include <tuple>

namespace thresher::events {

namespace {

// MasterPhases is merged field by field (update) as well as written, so its fields are listed
// once as data and both walk the list: a field added to one cannot be missing from the other.
template <class T>
struct PhaseField {
    const char* name;
    std::optional<T> MasterPhases::*member;
};

constexpr auto kPhaseFields = std::tuple{
        PhaseField<double>{"decode_ms", &MasterPhases::decode_ms},
        PhaseField<long>{"messages_applied", &MasterPhases::messages_applied},
        PhaseField<long>{"lag_max", &MasterPhases::lag_max},
        PhaseField<double>{"lag_mean", &MasterPhases::lag_mean},
        PhaseField<double>{"wait_ms", &MasterPhases::wait_ms},
        PhaseField<long>{"wait_timeouts", &MasterPhases::wait_timeouts},
        PhaseField<double>{"updater_ms", &MasterPhases::updater_ms},
        PhaseField<double>{"average_ms", &MasterPhases::average_ms},
        PhaseField<double>{"average_local_ms", &MasterPhases::average_local_ms},
        PhaseField<double>{"encode_ms", &MasterPhases::encode_ms},
        PhaseField<double>{"apply_ms", &MasterPhases::apply_ms},
        PhaseField<double>{"send_ms", &MasterPhases::send_ms},
        PhaseField<double>{"comm_wait_ms", &MasterPhases::comm_wait_ms},
        PhaseField<float>{"threshold", &MasterPhases::threshold},
        PhaseField<double>{"density", &MasterPhases::density},
        PhaseField<std::size_t>{"message_bytes", &MasterPhases::message_bytes},
        PhaseField<std::string>{"encoding", &MasterPhases::encoding},
        PhaseField<bool>{"overlapped", &MasterPhases::overlapped},
        PhaseField<bool>{"send_async", &MasterPhases::send_async},
        PhaseField<long>{"encoded_iter", &MasterPhases::encoded_iter},
        PhaseField<ResidualFields>{"residual", &MasterPhases::residual},
};

nlohmann::json value_of(const ResidualFields& r) {
    return {{"mean_abs", r.mean_abs}, {"max_abs", r.max_abs}, {"p50", r.p50}, {"p90", r.p90}, {"p99", r.p99}};
}
template <class T>
nlohmann::json value_of(const T& v) {
    return v;
}

template <class T>
void put(nlohmann::json& j, const char* name, const std::optional<T>& v) {
    if (v) j[name] = value_of(*v);
}

void put_traffic(nlohmann::json& j, const Traffic& t) {
    j["bytes_tx"] = t.bytes_tx;
    j["bytes_rx"] = t.bytes_rx;
    put(j, "dropped", t.dropped);
    put(j, "retransmitted", t.retransmitted);
    put(j, "relayed", t.relayed);
}

void put_classification(nlohmann::json& j, const ClassificationFields& c) {
    j["accuracy"] = c.accuracy;
    j["precision"] = c.precision;
    j["recall"] = c.recall;
    j["f1"] = c.f1;
    j["confusion"] = c.confusion;
    if (c.auc) {
        j["auc"] = *c.auc;  // NaN (one class only) is written as null
        j["task"] = "binary";
    }
    if (c.top_k) {
        j["top_k"] = *c.top_k;
        j["top_k_accuracy"] = c.top_k_accuracy;
    }
}

void put_regression(nlohmann::json& j, const RegressionFields& r) {
    j["columns"] = r.columns;
    j["mse"] = r.mse;  // a column without a defined value: NaN, written as null
    j["mae"] = r.mae;
    j["r2"] = r.r2;
    j["average_mse"] = r.average_mse;
    j["average_mae"] = r.average_mae;
    j["average_r2"] = r.average_r2;
}

}  // namespace

MasterPhases& MasterPhases::update(const MasterPhases& later) {
    std::apply([&](const auto&... f) { ((later.*f.member ? void(this->*f.member = later.*f.member) : void()), ...); },
               kPhaseFields);
    return *this;
}

nlohmann::json to_json(const Traffic& t) {
    nlohmann::json j = nlohmann::json::object();
    put_traffic(j, t);
    return j;
}

nlohmann::json to_json(const MasterPhases& p) {
    nlohmann::json j = nlohmann::json::object();
    std::apply([&](const auto&... f) { (put(j, f.name, p.*f.member), ...); }, kPhaseFields);
    return j;
}

nlohmann::json to_json(const DataProgress& e) { return {{"what", e.what}, {"done", e.done}, {"total", e.total}}; }

nlohmann::json to_json(const RunStarted& e) {
    nlohmann::json j{{"run", e.run},
                     {"nodes", e.nodes},
                     {"workers", e.workers},
                     {"workers_per_node", e.workers_per_node},
                     {"params", e.params},
                     {"strategy", e.strategy},
                     {"backend", e.backend},
                     {"backend_detail", e.backend_detail},
                     {"devices", e.devices},
                     {"model", e.model},
                     {"epochs", e.epochs},
                     {"start_epoch", e.start_epoch},
                     {"start_iter", e.start_iter},
                     {"joined", e.joined},
                     {"batch", e.batch},
                     {"train_samples", e.train_samples}};
    put(j, "topology", e.topology);
    if (!e.class_names.empty()) j["class_names"] = e.class_names;
    return j;
}

nlohmann::json to_json(const Iteration& e) {
    nlohmann::json j = to_json(e.master);
    j["worker"] = e.worker;
    j["epoch"] = e.epoch;
    j["iter"] = e.iter;
    j["loss"] = e.loss;
    j["lr"] = e.lr;
    j["iter_ms"] = e.iter_ms;
    j["etl_ms"] = e.etl_ms;
    j["start_s"] = e.start_s;
    j["receive_ms"] = e.receive_ms;
    j["compute_ms"] = e.compute_ms;
    j["step_ms"] = e.step_ms;
    j["cpu_ms"] = e.cpu_ms;
    j["samples"] = e.samples;
    j["samples_per_s"] = e.samples_per_s;
    put_traffic(j, e.traffic);
    return j;
}

nlohmann::json to_json(const EpochEnd& e) {
    nlohmann::json j = nlohmann::json::object();
    if (e.classification) put_classification(j, *e.classification);
    if (e.regression) put_regression(j, *e.regression);
    j["epoch"] = e.epoch;
    j["loss"] = e.loss;
    j["eval_loss"] = e.eval_loss;
    j["eval_set"] = e.eval_set;
    j["count"] = e.count;
    j["eval_start_s"] = e.eval_start_s;
    j["eval_ms"] = e.eval_ms;
    put(j, "nodes_evaluated", e.nodes_evaluated);
    if (!e.outputs.empty()) {
        auto& list = j["outputs"] = nlohmann::json::array();
        for (const auto& o : e.outputs) {
            nlohmann::json one{{"name", o.name}};
            if (o.classification) put_classification(one, *o.classification);
            if (o.regression) put_regression(one, *o.regression);
            list.push_back(std::move(one));
        }
    }
    return j;
}

nlohmann::json to_json(const NodeJoined& e) {
    return {{"joined_node", e.joined_node}, {"epoch", e.epoch}, {"iter", e.iter}, {"rejoin", e.rejoin}, {"message", e.message}};
}

nlohmann::json to_json(const Warning& e) {
    nlohmann::json j{{"message", e.message}};
    put(j, "worker", e.worker);
    return j;
}

nlohmann::json to_json(const ErrorEvent& e) {
    nlohmann::json j{{"message", e.message}};
    put(j, "worker", e.worker);
    return j;
}

nlohmann::json to_json(const RunFinished& e) {
    nlohmann::json j{{"status", e.status}, {"iters", e.iters}, {"wall_s", e.wall_s}};
    if (e.traffic) put_traffic(j, *e.traffic);
    put(j, "peak_rss_mb", e.peak_rss_mb);
    if (e.reconcile) {
        j["reconcile_gap"] = e.reconcile->gap;
        put(j, "reconcile_gap_at", e.reconcile->at);
    }
    return j;
}

}  // namespace thresher::events
