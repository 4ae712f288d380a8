// Zero padding, cropping and nearest-neighbour upsampling of NCHW image planes, the CPU
// backend's plain loops. They move memory and do no arithmetic beyond upsampling's backward sums,
// so a loop over rows of memcpy-sized runs is as fast as a oneDNN reorder would be; OpenMP splits
// the planes once there are enough of them to pay for it. The CUDA backend mirrors them
// (elementwise.cu's pad/crop kernels, resize_kernels.cu).
#include <algorithm>
#include <cstring>

#include "backend/cpu/ops.h"

namespace thresher::backend::cpu {

namespace {
constexpr long kParallelPlanes = 16;
}

void pad_planes(const PadDesc& d, const float* small, float* large) {
    const long planes = d.planes;
    const std::size_t in_plane = static_cast<std::size_t>(d.h) * d.w, out_plane = static_cast<std::size_t>(d.hp) * d.wp;
#pragma omp parallel for if (planes >= kParallelPlanes)
    for (long p = 0; p < planes; ++p) {
        float* out = large + p * out_plane;
        const float* in = small + p * in_plane;
        std::fill(out, out + out_plane, 0.f);
        for (int r = 0; r < d.h; ++r)
            std::memcpy(out + static_cast<std::size_t>(r + d.top) * d.wp + d.left, in + static_cast<std::size_t>(r) * d.w,
                        sizeof(float) * d.w);
    }
}

void crop_planes(const PadDesc& d, const float* large, float* small) {
    const long planes = d.planes;
    const std::size_t in_plane = static_cast<std::size_t>(d.hp) * d.wp, out_plane = static_cast<std::size_t>(d.h) * d.w;
#pragma omp parallel for if (planes >= kParallelPlanes)
    for (long p = 0; p < planes; ++p) {
        const float* in = large + p * in_plane;
        float* out = small + p * out_plane;
        for (int r = 0; r < d.h; ++r)
            std::memcpy(out + static_cast<std::size_t>(r) * d.w, in + static_cast<std::size_t>(r + d.top) * d.wp + d.left,
                        sizeof(float) * d.w);
    }
}

void upsample_forward(const UpsampleDesc& d, const float* x, float* y) {
    const long planes = d.planes;
    const int ow = d.w * d.sw;
    const std::size_t in_plane = static_cast<std::size_t>(d.h) * d.w, out_plane = in_plane * d.sh * d.sw;
#pragma omp parallel for if (planes >= kParallelPlanes)
    for (long p = 0; p < planes; ++p) {
        const float* in = x + p * in_plane;
        float* out = y + p * out_plane;
        // The first output row of each input row is written pixel by pixel; the other sh - 1 are
        // copies of it (no division per element).
        for (int r = 0; r < d.h; ++r) {
            const float* src = in + static_cast<std::size_t>(r) * d.w;
            float* dst = out + static_cast<std::size_t>(r) * d.sh * ow;
            for (int q = 0; q < d.w; ++q)
                for (int j = 0; j < d.sw; ++j) dst[q * d.sw + j] = src[q];
            for (int i = 1; i < d.sh; ++i) std::memcpy(dst + static_cast<std::size_t>(i) * ow, dst, sizeof(float) * ow);
        }
    }
}

void upsample_backward(const UpsampleDesc& d, const float* dy, float* dx) {
    const long planes = d.planes;
    const int ow = d.w * d.sw;
    const std::size_t in_plane = static_cast<std::size_t>(d.h) * d.w, out_plane = in_plane * d.sh * d.sw;
#pragma omp parallel for if (planes >= kParallelPlanes)
    for (long p = 0; p < planes; ++p) {
        const float* g = dy + p * out_plane;
        float* out = dx + p * in_plane;
        // Each dx sums its sh x sw block row by row, each row left to right: the order the CUDA
        // kernel adds in, so both round alike. Rows of dy are read in memory order.
        for (int r = 0; r < d.h; ++r) {
            float* o = out + static_cast<std::size_t>(r) * d.w;
            std::fill(o, o + d.w, 0.f);
            for (int i = 0; i < d.sh; ++i) {
                const float* row = g + static_cast<std::size_t>(r * d.sh + i) * ow;
                for (int q = 0; q < d.w; ++q)
                    for (int j = 0; j < d.sw; ++j) o[q] += row[q * d.sw + j];
            }
        }
    }
}

}  // namespace thresher::backend::cpu
