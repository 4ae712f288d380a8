// bench_resize_ops: the CPU backend's zero padding, cropping and nearest-neighbour upsampling
// (engine/backend/cpu/resize.cpp, plain loops) against a plain copy of the same bytes, the bound
// for an op that only moves memory. Prints GB/s moved (read + written) per op and its ratio to
// the first copy (a copy of the upsampled size is the fairer bound for upsampling: its output
// leaves the cache); bench/README.md records a run.
//   bench_resize_ops [batch] [channels] [side] [threads]     defaults 64 32 32 2
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "backend/registry.h"

using namespace thresher;

namespace {

// Best of `reps` timings of f, in seconds.
double best_of(int reps, const std::function<void()>& f) {
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    const int batch = argc > 1 ? std::atoi(argv[1]) : 64, channels = argc > 2 ? std::atoi(argv[2]) : 32;
    const int side = argc > 3 ? std::atoi(argv[3]) : 32, threads = argc > 4 ? std::atoi(argv[4]) : 2;
    auto be = backend::create_backend("cpu", {threads});
    const int planes = batch * channels, big = side + 2;
    const std::size_t small_n = std::size_t(planes) * side * side, big_n = std::size_t(planes) * big * big;
    const std::size_t up_n = small_n * 4;
    backend::Buffer small(*be, small_n), large(*be, big_n), up(*be, up_n), copy_dst(*be, up_n);
    std::fill(small.data(), small.data() + small_n, 1.f);
    const backend::PadDesc pad{planes, side, side, 1, 1, big, big};
    const backend::UpsampleDesc ups{planes, side, side, 2, 2};
    const int reps = 20;
    struct Row {
        const char* name;
        double bytes;
        std::function<void()> run;
    };
    const Row rows[] = {
        {"copy (bound)", 2.0 * 4 * small_n, [&] { be->copy(copy_dst.data(), small.data(), small_n); }},
        {"zero padding 1", 4.0 * (small_n + big_n), [&] { be->pad_planes(pad, small.data(), large.data()); }},
        {"cropping 1", 4.0 * (small_n + small_n), [&] { be->crop_planes(pad, large.data(), small.data()); }},
        {"copy of 4x the bytes", 2.0 * 4 * up_n, [&] { be->copy(copy_dst.data(), up.data(), up_n); }},
        {"upsampling 2x2", 4.0 * (small_n + up_n), [&] { be->upsample_forward(ups, small.data(), up.data()); }},
        {"upsampling 2x2 backward", 4.0 * (up_n + small_n), [&] { be->upsample_backward(ups, up.data(), small.data()); }},
    };
    std::printf("batch %d, %d channels, %dx%d, %d threads (best of %d)\n", batch, channels, side, side, threads, reps);
    double copy_rate = 0;
    for (const auto& r : rows) {
        const double s = best_of(reps, r.run), rate = r.bytes / s / 1e9;
        if (copy_rate == 0) copy_rate = rate;
        std::printf("%-26s %8.3f ms  %6.2f GB/s  %5.2f x copy\n", r.name, s * 1e3, rate, rate / copy_rate);
    }
    return 0;
}
