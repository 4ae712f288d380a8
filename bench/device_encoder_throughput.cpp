// Threshold-encoder throughput on the GPU (backend/cuda/device_encoder.h) against the CPU encoder
// (codec/threshold_encoder.h), for residuals the size of LeNet, the MLP and larger models, at
// message densities from gradient sharing's usual 1e-4 up to bitmap territory.
//
// Each timed call is one encode() as gradient sharing makes it: the residual starts from the same
// contents every time (restored by a device-to-device copy outside the timing), and the call
// returns with the message on the host. Figures:
//   GB/s      residual bytes (4·N) over the call's wall time
//   of copy   that rate over the GPU's measured device-to-device copy rate (bytes read + written,
//             the practical ceiling for a kernel that streams memory), so 1.0 would mean the
//             encoder reads the residual as fast as the GPU can move memory at all
//   apply     applying the message to a parameter vector on the device, as receivers do
// Prints one line per case and a JSON line per case for scripts (bench/gpu_throughput.sh).
//
// Usage: bench_device_encoder [--device cuda:0] [--repeat R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/device_encoder.h"
#include "backend/registry.h"
#include "codec/threshold_encoder.h"

using namespace thresher;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A residual where about `density` of the entries reach τ = 1.
std::vector<float> residual(std::size_t n, double density) {
    std::mt19937 gen(7);
    std::uniform_real_distribution<float> unit(0.f, 1.f);
    std::vector<float> r(n);
    for (auto& v : r) {
        const float sign = unit(gen) < 0.5f ? -1.f : 1.f;
        v = sign * (unit(gen) < density ? 1.f + unit(gen) : 0.9f * unit(gen));
    }
    return r;
}

// Median of `repeat` timings of fn(), each after prepare() (untimed).
template <class Prepare, class Fn>
double median_seconds(int repeat, Prepare prepare, Fn fn) {
    std::vector<double> t;
    for (int i = 0; i < repeat; ++i) {
        prepare();
        const auto t0 = Clock::now();
        fn();
        t.push_back(seconds_since(t0));
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    std::string device = "cuda:0";
    int repeat = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--device")) device = argv[i + 1];
        else if (!std::strcmp(argv[i], "--repeat")) repeat = std::max(1, std::atoi(argv[i + 1]));
    }
    try {
        auto be = backend::create_backend(device);
        std::fprintf(stderr, "device: %s (%s)\n", be->info().name.c_str(), be->info().detail.c_str());
        float sink = 0.f;
        const auto sync = [&](const float* p) { be->download(&sink, p, 1); };

        // The GPU's copy rate: 1 GiB device to device.
        const std::size_t big = std::size_t(1) << 28;
        backend::Buffer a(*be, big), b(*be, big);
        be->copy(b.data(), a.data(), big);  // warm-up
        sync(b.data());
        const double copy_s = median_seconds(5, [] {}, [&] {
            be->copy(b.data(), a.data(), big);
            sync(b.data());
        });
        const double copy_gbs = 2.0 * big * sizeof(float) / copy_s / 1e9;
        std::printf("device-to-device copy: %.0f GB/s (read + written)\n\n", copy_gbs);
        std::printf("%12s %9s %7s %8s %10s %8s %8s %10s %10s\n", "N", "density", "format", "entries",
                    "gpu ms", "GB/s", "of copy", "apply ms", "cpu ms");

        for (std::size_t n : {std::size_t(431080), std::size_t(1796010), std::size_t(25) << 20,
                              std::size_t(100) << 20}) {
            for (double density : {1e-4, 1e-3, 1e-2, 0.1}) {
                const auto host = residual(n, density);
                backend::Buffer pristine(*be, n), r(*be, n), theta(*be, n);
                be->upload(pristine.data(), host.data(), n);

                backend::cuda::DeviceEncoder gpu(*be, n);
                dist::EncodedUpdate message;
                const auto restore = [&] {
                    be->copy(r.data(), pristine.data(), n);
                    sync(r.data());
                };
                restore();
                gpu.encode(r.data(), 1.f, message);  // warm-up (and the format the run settles on)
                const double gpu_s = median_seconds(repeat, restore, [&] { gpu.encode(r.data(), 1.f, message); });
                const double apply_s = median_seconds(repeat, [] {}, [&] {
                    gpu.apply(message, theta.data(), -1.f);
                    sync(theta.data());
                });

                dist::ThresholdEncoder cpu(n);
                std::vector<float> work(n);
                dist::EncodedUpdate cpu_message;
                const double cpu_s = median_seconds(std::max(1, repeat / 4),
                                                    [&] { std::copy(host.begin(), host.end(), work.begin()); },
                                                    [&] { cpu.encode(work.data(), 1.f, cpu_message); });

                const double gbs = 4.0 * n / gpu_s / 1e9;
                const char* format = message.format == dist::EncodedUpdate::Format::Sparse ? "sparse" : "bitmap";
                std::printf("%12zu %9g %7s %8u %10.3f %8.0f %8.2f %10.3f %10.3f\n", n, density, format,
                            message.count, gpu_s * 1e3, gbs, gbs / copy_gbs, apply_s * 1e3, cpu_s * 1e3);
                std::printf("{\"bench\":\"device_encoder\",\"device\":\"%s\",\"n\":%zu,\"density\":%g,"
                            "\"format\":\"%s\",\"entries\":%u,\"gpu_ms\":%.4f,\"gb_per_s\":%.1f,"
                            "\"copy_gb_per_s\":%.1f,\"apply_ms\":%.4f,\"cpu_ms\":%.4f}\n",
                            be->info().name.c_str(), n, density, format, message.count, gpu_s * 1e3, gbs,
                            copy_gbs, apply_s * 1e3, cpu_s * 1e3);
                std::fflush(stdout);
            }
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_device_encoder: %s\n", e.what());
        return 1;
    }
}
