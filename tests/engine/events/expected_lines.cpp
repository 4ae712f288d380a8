// The lines every full struct of full_events.h must make, written out by hand from what the
// call sites wrote before the structs (kept out of test_events.cpp: moc does not read raw strings).
#include "expected_lines.h"

#include <stdexcept>

namespace events_fixture {

std::string expected_fields(const std::string& event) {
    if (event == "data_progress") return R"({"done":4800,"total":12000,"what":"images"})";
    if (event == "run_started")
        return R"({
            "backend":"cpu","backend_detail":"2 threads","batch":64,"class_names":["cat","dog"],"devices":["cpu","cpu"],"epochs":3,
            "joined":true,"model":"mlp","nodes":2,"params":101770,"run":"mlp","start_epoch":1,"start_iter":469,
            "strategy":"gradient-sharing","topology":"star","train_samples":60000,"workers":4,"workers_per_node":2})";
    if (event == "iteration")
        return R"({
            "apply_ms":0.125,"average_local_ms":1.25,"average_ms":2.5,"bytes_rx":2000,"bytes_tx":1000,
            "comm_wait_ms":0.03125,"compute_ms":8.0,"cpu_ms":4000.0,"decode_ms":0.5,"density":0.01,"dropped":3,
            "encode_ms":0.75,"encoded_iter":41,"encoding":"sparse","epoch":1,"etl_ms":0.5,"iter":42,"iter_ms":12.5,
            "lag_max":1,"lag_mean":0.5,"loss":0.25,"lr":0.01,"message_bytes":4096,"messages_applied":3,
            "overlapped":true,"receive_ms":1.0,"relayed":5,
            "residual":{"max_abs":0.9,"mean_abs":0.1,"p50":0.2,"p90":0.5,"p99":0.8},"retransmitted":4,
            "samples":2688,"samples_per_s":4923.1,"send_async":true,"send_ms":0.0625,"start_s":3.25,"step_ms":3.0,
            "threshold":0.0010000000474974513,"updater_ms":1.5,"wait_ms":0.25,"wait_timeouts":0,"worker":1})";
    if (event == "epoch_end")
        return R"({
            "accuracy":0.75,"auc":0.875,"average_mae":0.25,"average_mse":0.5,"average_r2":0.9,"columns":1,
            "confusion":[[1,1],[0,2]],"count":4,"epoch":1,"eval_loss":0.35,"eval_ms":250.0,"eval_set":"test",
            "eval_start_s":10.5,"f1":0.74,"loss":0.3,"mae":[0.25],"mse":[0.5],"nodes_evaluated":2,
            "outputs":[{"accuracy":0.5,"confusion":[[1,1],[1,1]],"f1":0.5,"name":"aux","precision":0.5,"recall":0.5}],
            "precision":0.7,"r2":[null],"recall":0.8,"task":"binary","top_k":1,"top_k_accuracy":0.75})";
    if (event == "node_joined")
        return R"({
            "epoch":2,"iter":938,"joined_node":1,
            "message":"node 1 rejoined at epoch 2 iteration 938, parameters from the controller","rejoin":true})";
    if (event == "warning")
        return R"({"message":"worker 3 has heard nothing from worker 0","worker":3})";
    if (event == "error")
        return R"({"message":"the loss is nan","worker":2})";
    if (event == "run_finished")
        return R"({
            "bytes_rx":2000,"bytes_tx":1000,"dropped":3,"iters":1407,"peak_rss_mb":512.25,"reconcile_gap":2e-06,
            "reconcile_gap_at":"layers[2] \"fc1\" (dense), its parameter 12","relayed":5,"retransmitted":4,
            "status":"ok","wall_s":61.5})";
    throw std::invalid_argument("no expected line for event " + event);
}

}  // namespace events_fixture
