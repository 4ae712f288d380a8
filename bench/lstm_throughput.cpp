// LSTM training throughput of the engine (the same Network the trainer runs), for
// bench/lstm_throughput.sh, which runs bench/torch_lstm_peer.py on the same sizes beside it.
// Synthetic data: random features and labels (throughput does not depend on them).
//   bench_lstm_throughput [--threads 2] [--batch 32] [--steps 64] [--features 64] [--hidden 256]
//                         [--layers 2] [--iterations 30] [--warmup 3] [--gate sigmoid|hard_sigmoid]
//                         [--retain R] [--device cpu|cuda:0]
// --gate hard_sigmoid (Keras 2's default gates) runs the LSTM on the CPU backend's host path
// (engine/backend/cpu/rnn_host.cpp) instead of oneDNN's primitive.
// --device cuda:0 runs the same network on the CUDA backend (cuDNN's RNN API); bench/lstm_throughput.sh
// passes DEVICE to both sides. Prints one JSON line: samples/s over the timed iterations and the
// peak RSS in MiB (host memory: on a GPU it leaves out the device's).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <random>
#include <string>

#include "backend/registry.h"
#include "nn/network.h"

using namespace thresher;

int main(int argc, char** argv) {
    int threads = 2, batch = 32, steps = 64, features = 64, hidden = 256, layers = 2, iterations = 30, warmup = 3;
    std::string gate = "sigmoid";
    std::string device = "cpu";
    std::string retain;  // --retain R: Keras's dropout and recurrent_dropout 1 - R inside each cell
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i];
        if (k == "--retain") {
            retain = argv[i + 1];
            const double r = std::atof(retain.c_str());
            if (!(r > 0 && r <= 1)) {
                std::fprintf(stderr, "bench_lstm_throughput: --retain wants a probability in (0, 1], got %s\n", retain.c_str());
                return 2;
            }
            continue;
        }
        if (k == "--device") {
            device = argv[i + 1];
            continue;
        }
        if (k == "--gate") {
            gate = argv[i + 1];
            if (gate != "sigmoid" && gate != "hard_sigmoid") {
                std::fprintf(stderr, "bench_lstm_throughput: --gate wants sigmoid or hard_sigmoid, got %s\n", gate.c_str());
                return 2;
            }
            continue;
        }
        const int v = std::atoi(argv[i + 1]);
        if (v <= 0 || v > (1 << 20)) {
            std::fprintf(stderr, "bench_lstm_throughput: %s wants a positive integer, got %s\n", k.c_str(), argv[i + 1]);
            return 2;
        }
        if (k == "--threads") threads = v;
        else if (k == "--batch") batch = v;
        else if (k == "--steps") steps = v;
        else if (k == "--features") features = v;
        else if (k == "--hidden") hidden = v;
        else if (k == "--layers") layers = v;
        else if (k == "--iterations") iterations = v;
        else if (k == "--warmup") warmup = v;
        else {
            std::fprintf(stderr, "bench_lstm_throughput: unknown option %s\n", k.c_str());
            return 2;
        }
    }
    std::string json = "{\"seed\":1,\"input\":{\"steps\":" + std::to_string(steps) + ",\"features\":" + std::to_string(features) +
                       "},\"updater\":{\"type\":\"adam\",\"learning_rate\":0.001},\"layers\":[";
    for (int l = 0; l < layers; ++l)
        json += "{\"type\":\"lstm\",\"units\":" + std::to_string(hidden) + ",\"return_sequences\":" + (l + 1 < layers ? "true" : "false") +
                (gate == "hard_sigmoid" ? ",\"gate_activation\":\"hardsigmoid\"" : "") +
                (retain.empty() ? "" : ",\"input_retain\":" + retain + ",\"recurrent_retain\":" + retain) + "},";
    json += "{\"type\":\"output\",\"units\":10,\"activation\":\"softmax\"}]}";
    const auto config = config::ModelConfig::parse(json, "bench");
    std::unique_ptr<backend::Backend> be;
    try {
        be = backend::create_backend(device, {threads});
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_lstm_throughput: %s\n", e.what());
        return 1;
    }
    nn::Network net(config, *be);
    const std::size_t row = config.input_size();
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.f, 1.f);
    std::vector<float> x(static_cast<std::size_t>(batch) * row), t(static_cast<std::size_t>(batch) * 10, 0.f);
    for (auto& v : x) v = normal(rng);
    for (int n = 0; n < batch; ++n) {
        x[static_cast<std::size_t>(n) * row] = static_cast<float>(steps);  // full-length sequences
        t[static_cast<std::size_t>(n) * 10 + rng() % 10] = 1.f;
    }
    auto step = [&](int it) {
        net.compute_gradients(x.data(), t.data(), batch, static_cast<std::uint64_t>(it));
        net.compute_update(it);
        net.apply_update();
    };
    for (int i = 0; i < warmup; ++i) step(i);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) step(warmup + i);
    (void)net.get_params();  // waits for the last update (a GPU runs it asynchronously)
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    std::printf("{\"impl\":\"thresher\",\"samples_per_s\":%.2f,\"peak_rss_mib\":%.1f,\"threads\":%d,\"batch\":%d,\"steps\":%d,\"hidden\":%d,"
                "\"layers\":%d,\"iterations\":%d,\"gate\":\"%s\",\"retain\":%s,\"device\":\"%s\"}\n",
                iterations * batch / seconds, usage.ru_maxrss / 1024.0, threads, batch, steps, hidden, layers, iterations, gate.c_str(),
                retain.empty() ? "1" : retain.c_str(), device.c_str());
    return 0;
}
