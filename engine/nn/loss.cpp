#include "nn/loss.h"

#include <algorithm>
#include <cmath>

namespace thresher::nn {

namespace {
// Keeps log() finite when a probability underflows to 0 (DL4J clips the same way).
constexpr double kMinProb = 1e-12;
}

LossResult compute_loss(config::LossKind kind, const float* p, const float* t, float* delta, int rows,
                        int cols, bool softmax) {
    const long n = static_cast<long>(rows) * cols;
    const float inv_rows = 1.f / static_cast<float>(rows);
    double sum = 0.0;
    switch (kind) {
        case config::LossKind::MultiClassCrossEntropy:
        case config::LossKind::NegativeLogLikelihood:
            if (!softmax) {
                // DL4J's LossMCXENT on another activation: dL/dp, clipped as its softmaxClipEps.
                constexpr double kClip = 1e-10;
                for (long i = 0; i < n; ++i) {
                    const double pi = std::max<double>(p[i], kClip);
                    if (t[i] != 0.f) sum -= t[i] * std::log(pi);
                    delta[i] = static_cast<float>(-t[i] / pi) * inv_rows;
                }
                return {sum / rows, false};
            }
            for (long i = 0; i < n; ++i) {
                if (t[i] != 0.f) sum -= t[i] * std::log(std::max<double>(p[i], kMinProb));
                delta[i] = (p[i] - t[i]) * inv_rows;
            }
            return {sum / rows, true};
        case config::LossKind::BinaryCrossEntropy:
            for (long i = 0; i < n; ++i) {
                const double pi = std::clamp<double>(p[i], kMinProb, 1.0 - kMinProb);
                sum -= t[i] * std::log(pi) + (1.0 - t[i]) * std::log(1.0 - pi);
                delta[i] = (p[i] - t[i]) * inv_rows;
            }
            return {sum / rows, true};
        case config::LossKind::MSE: {
            const float scale = 2.f / (static_cast<float>(rows) * static_cast<float>(cols));
            for (long i = 0; i < n; ++i) {
                const double d = static_cast<double>(p[i]) - t[i];
                sum += d * d;
                delta[i] = static_cast<float>(d) * scale;
            }
            return {sum / (static_cast<double>(rows) * cols), false};
        }
        case config::LossKind::MAE: {
            // d|p - t|/dp = sign(p - t); 0 where the output hits the target exactly.
            const float scale = 1.f / (static_cast<float>(rows) * static_cast<float>(cols));
            for (long i = 0; i < n; ++i) {
                const double d = static_cast<double>(p[i]) - t[i];
                sum += std::abs(d);
                delta[i] = d > 0 ? scale : d < 0 ? -scale : 0.f;
            }
            return {sum / (static_cast<double>(rows) * cols), false};
        }
    }
    return {};
}

}  // namespace thresher::nn
