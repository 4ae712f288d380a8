#include "reference_ops.h"

#include <algorithm>
#include <cmath>

#include "core/rng.h"

namespace reference {

using namespace thresher::backend;

namespace {

double activate(ActivationSpec a, double x) {
    switch (a.kind) {
        case Activation::Relu: return x > 0 ? x : 0;
        case Activation::LeakyRelu: return x > 0 ? x : a.alpha * x;
        case Activation::Tanh: return std::tanh(x);
        case Activation::Sigmoid: return 1 / (1 + std::exp(-x));
        case Activation::Elu: return x > 0 ? x : a.alpha * (std::exp(x) - 1);
        case Activation::Selu: return double(kSeluLambda) * (x > 0 ? x : double(kSeluAlpha) * (std::exp(x) - 1));
        case Activation::Relu6: return std::min(std::max(x, 0.0), 6.0);
        case Activation::HardSigmoid: return std::min(std::max(a.alpha * x + 0.5, 0.0), 1.0);
        case Activation::Softplus: return std::log(1 + std::exp(x));
        case Activation::Softsign: return x / (1 + std::abs(x));
        case Activation::ThresholdedRelu: return x > a.alpha ? x : 0;
        case Activation::Swish: return x / (1 + std::exp(-x));
        case Activation::Gelu: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
        case Activation::GeluTanh: return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
        case Activation::GeluSigmoid: return x / (1 + std::exp(-1.702 * x));
        case Activation::Identity:
        case Activation::Softmax: return x;
    }
    return x;
}

Vec to_float(const std::vector<double>& v) { return Vec(v.begin(), v.end()); }

// Index helpers for NCHW and OIHW.
std::size_t at4(int a, int b, int c, int d, int B, int C, int D) {
    return ((static_cast<std::size_t>(a) * B + b) * C + c) * D + d;
}

}  // namespace

Vec activation_forward(ActivationSpec a, const Vec& x, int rows, int cols) {
    std::vector<double> y(x.size());
    if (a.kind == Activation::Softmax) {
        for (int r = 0; r < rows; ++r) {
            const float* xr = x.data() + static_cast<std::size_t>(r) * cols;
            const double m = *std::max_element(xr, xr + cols);
            double sum = 0;
            for (int c = 0; c < cols; ++c) sum += std::exp(xr[c] - m);
            for (int c = 0; c < cols; ++c)
                y[static_cast<std::size_t>(r) * cols + c] = std::exp(xr[c] - m) / sum;
        }
        return to_float(y);
    }
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = activate(a, x[i]);
    return to_float(y);
}

Vec activation_backward(ActivationSpec a, const Vec& y, const Vec& dy, int rows, int cols) {
    std::vector<double> dz(y.size());
    for (int r = 0; r < rows; ++r) {
        const std::size_t o = static_cast<std::size_t>(r) * cols;
        double dot = 0;
        if (a.kind == Activation::Softmax)
            for (int c = 0; c < cols; ++c) dot += double(dy[o + c]) * y[o + c];
        for (int c = 0; c < cols; ++c) {
            const double yv = y[o + c], g = dy[o + c];
            double v = g;
            switch (a.kind) {
                case Activation::Relu: v = yv > 0 ? g : 0; break;
                case Activation::LeakyRelu: v = yv > 0 ? g : a.alpha * g; break;
                case Activation::Tanh: v = g * (1 - yv * yv); break;
                case Activation::Sigmoid: v = g * yv * (1 - yv); break;
                // The rest from the output too: each is monotone, so y tells x's side.
                case Activation::Elu: v = yv > 0 ? g : g * (yv + a.alpha); break;
                case Activation::Selu: v = yv > 0 ? g * kSeluLambda : g * (yv + double(kSeluLambda) * kSeluAlpha); break;
                case Activation::Relu6: v = yv > 0 && yv < 6 ? g : 0; break;
                case Activation::HardSigmoid: v = yv > 0 && yv < 1 ? g * a.alpha : 0; break;
                case Activation::Softplus: v = g * (1 - std::exp(-yv)); break;
                case Activation::Softsign: v = g * (1 - std::abs(yv)) * (1 - std::abs(yv)); break;
                case Activation::ThresholdedRelu: v = yv > 0 ? g : 0; break;
                // Not monotone: `y` holds the pre-activation x (derivative_from_input).
                case Activation::Swish: {
                    const double s = 1 / (1 + std::exp(-yv));
                    v = g * (s + yv * s * (1 - s));
                    break;
                }
                case Activation::Gelu:
                    v = g * (0.5 * (1 + std::erf(yv / std::sqrt(2.0))) + yv * std::exp(-0.5 * yv * yv) / std::sqrt(2 * M_PI));
                    break;
                case Activation::GeluTanh: {
                    const double k = std::sqrt(2 / M_PI), t = std::tanh(k * (yv + 0.044715 * yv * yv * yv));
                    v = g * (0.5 * (1 + t) + 0.5 * yv * (1 - t * t) * k * (1 + 3 * 0.044715 * yv * yv));
                    break;
                }
                case Activation::GeluSigmoid: {
                    const double s = 1 / (1 + std::exp(-1.702 * yv));
                    v = g * (s + 1.702 * yv * s * (1 - s));
                    break;
                }
                case Activation::Softmax: v = yv * (g - dot); break;
                case Activation::Identity: break;
            }
            dz[o + c] = v;
        }
    }
    return to_float(dz);
}

Vec dense_forward(const DenseDesc& d, const Vec& x, const Vec& w, const Vec& b) {
    Vec z(static_cast<std::size_t>(d.batch) * d.out);
    for (int n = 0; n < d.batch; ++n)
        for (int o = 0; o < d.out; ++o) {
            double s = b[o];
            for (int i = 0; i < d.in; ++i)
                s += double(x[static_cast<std::size_t>(n) * d.in + i]) * w[static_cast<std::size_t>(i) * d.out + o];
            z[static_cast<std::size_t>(n) * d.out + o] = static_cast<float>(s);
        }
    return activation_forward(d.act, z, d.batch, d.out);
}

Grads dense_backward(const DenseDesc& d, const Vec& x, const Vec& w, const Vec& dz) {
    std::vector<double> dx(x.size()), dw(w.size()), db(static_cast<std::size_t>(d.out));
    for (int n = 0; n < d.batch; ++n)
        for (int o = 0; o < d.out; ++o) {
            const double g = dz[static_cast<std::size_t>(n) * d.out + o];
            db[o] += g;
            for (int i = 0; i < d.in; ++i) {
                dw[static_cast<std::size_t>(i) * d.out + o] += double(x[static_cast<std::size_t>(n) * d.in + i]) * g;
                dx[static_cast<std::size_t>(n) * d.in + i] += double(w[static_cast<std::size_t>(i) * d.out + o]) * g;
            }
        }
    return {to_float(dx), to_float(dw), to_float(db)};
}

Vec conv_forward(const ConvDesc& d, const Vec& x, const Vec& w, const Vec& b) {
    Vec y(static_cast<std::size_t>(d.batch) * d.out_c * d.out_h * d.out_w);
    for (int n = 0; n < d.batch; ++n)
        for (int oc = 0; oc < d.out_c; ++oc)
            for (int oh = 0; oh < d.out_h; ++oh)
                for (int ow = 0; ow < d.out_w; ++ow) {
                    double s = b[oc];
                    // Grouped: output channel oc sees input channels g*icg .. g*icg + icg - 1.
                    const int icg = d.in_c / d.groups, g = oc / (d.out_c / d.groups);
                    for (int k = 0; k < icg; ++k)
                        for (int i = 0; i < d.kh; ++i)
                            for (int j = 0; j < d.kw; ++j) {
                                const int ic = g * icg + k;
                                const int ih = oh * d.sh - d.pad_t + i * d.dh;
                                const int iw = ow * d.sw - d.pad_l + j * d.dw;
                                if (ih < 0 || ih >= d.in_h || iw < 0 || iw >= d.in_w) continue;
                                s += double(x[at4(n, ic, ih, iw, d.in_c, d.in_h, d.in_w)]) *
                                     w[at4(oc, k, i, j, icg, d.kh, d.kw)];
                            }
                    y[at4(n, oc, oh, ow, d.out_c, d.out_h, d.out_w)] = static_cast<float>(activate(d.act, s));
                }
    return y;
}

Grads conv_backward(const ConvDesc& d, const Vec& x, const Vec& w, const Vec& dz) {
    std::vector<double> dx(x.size()), dw(w.size()), db(static_cast<std::size_t>(d.out_c));
    for (int n = 0; n < d.batch; ++n)
        for (int oc = 0; oc < d.out_c; ++oc)
            for (int oh = 0; oh < d.out_h; ++oh)
                for (int ow = 0; ow < d.out_w; ++ow) {
                    const double g = dz[at4(n, oc, oh, ow, d.out_c, d.out_h, d.out_w)];
                    db[oc] += g;
                    const int icg = d.in_c / d.groups, grp = oc / (d.out_c / d.groups);
                    for (int k = 0; k < icg; ++k)
                        for (int i = 0; i < d.kh; ++i)
                            for (int j = 0; j < d.kw; ++j) {
                                const int ic = grp * icg + k;
                                const int ih = oh * d.sh - d.pad_t + i * d.dh;
                                const int iw = ow * d.sw - d.pad_l + j * d.dw;
                                if (ih < 0 || ih >= d.in_h || iw < 0 || iw >= d.in_w) continue;
                                const std::size_t xi = at4(n, ic, ih, iw, d.in_c, d.in_h, d.in_w);
                                const std::size_t wi = at4(oc, k, i, j, icg, d.kh, d.kw);
                                dw[wi] += g * x[xi];
                                dx[xi] += g * w[wi];
                            }
                }
    return {to_float(dx), to_float(dw), to_float(db)};
}

namespace {

struct Window {
    int h0, h1, w0, w1;
};

Window window(const PoolDesc& d, int oh, int ow) {
    const int hs = oh * d.sh - d.pad_t, ws = ow * d.sw - d.pad_l;
    return {std::max(hs, 0), std::min(hs + d.kh, d.in_h), std::max(ws, 0), std::min(ws + d.kw, d.in_w)};
}

// Visits every output with its window and the offset of its input plane.
template <class Fn>
void each_output(const PoolDesc& d, Fn fn) {
    for (int p = 0; p < d.batch * d.c; ++p)
        for (int oh = 0; oh < d.out_h; ++oh)
            for (int ow = 0; ow < d.out_w; ++ow)
                fn((static_cast<std::size_t>(p) * d.out_h + oh) * d.out_w + ow, window(d, oh, ow),
                   static_cast<std::size_t>(p) * d.in_h * d.in_w);
}

}  // namespace

Vec pool_forward(const PoolDesc& d, const Vec& x) {
    Vec y(static_cast<std::size_t>(d.batch) * d.c * d.out_h * d.out_w);
    each_output(d, [&](std::size_t o, Window win, std::size_t plane) {
        double best = -INFINITY, sum = 0;
        int count = 0;
        for (int h = win.h0; h < win.h1; ++h)
            for (int w = win.w0; w < win.w1; ++w) {
                const double v = x[plane + static_cast<std::size_t>(h) * d.in_w + w];
                best = std::max(best, v);
                sum += v;
                ++count;
            }
        y[o] = static_cast<float>(d.max ? best : sum / count);
    });
    return y;
}

Vec pool_backward(const PoolDesc& d, const Vec& x, const Vec& dy) {
    std::vector<double> dx(x.size());
    each_output(d, [&](std::size_t o, Window win, std::size_t plane) {
        const int count = (win.h1 - win.h0) * (win.w1 - win.w0);
        std::size_t best_at = 0;
        double best = -INFINITY;
        for (int h = win.h0; h < win.h1; ++h)
            for (int w = win.w0; w < win.w1; ++w) {
                const std::size_t i = plane + static_cast<std::size_t>(h) * d.in_w + w;
                if (d.max && x[i] > best) best = x[i], best_at = i;
                if (!d.max) dx[i] += double(dy[o]) / count;
            }
        if (d.max) dx[best_at] += dy[o];
    });
    return to_float(dx);
}

namespace {

template <class Fn>
void each_in_channel(const BatchNormDesc& d, int c, Fn fn) {
    const std::size_t hw = static_cast<std::size_t>(d.h) * d.w;
    for (int n = 0; n < d.batch; ++n)
        for (std::size_t k = 0; k < hw; ++k) fn((static_cast<std::size_t>(n) * d.c + c) * hw + k);
}

}  // namespace

BatchNormForward batch_norm_training(const BatchNormDesc& d, const Vec& x, const Vec& gamma,
                                     const Vec& beta) {
    const double m = double(d.batch) * d.h * d.w;
    BatchNormForward r{Vec(x.size()), Vec(static_cast<std::size_t>(d.c)), Vec(static_cast<std::size_t>(d.c))};
    for (int c = 0; c < d.c; ++c) {
        double sum = 0, sq = 0;
        each_in_channel(d, c, [&](std::size_t i) { sum += x[i]; });
        const double mean = sum / m;
        each_in_channel(d, c, [&](std::size_t i) { sq += (x[i] - mean) * (x[i] - mean); });
        const double var = sq / m;
        r.mean[c] = static_cast<float>(mean);
        r.var[c] = static_cast<float>(var);
        each_in_channel(d, c, [&](std::size_t i) {
            r.y[i] = static_cast<float>(gamma[c] * (x[i] - mean) / std::sqrt(var + d.eps) + beta[c]);
        });
    }
    return r;
}

Vec batch_norm_inference(const BatchNormDesc& d, const Vec& x, const Vec& gamma, const Vec& beta,
                         const Vec& mean, const Vec& var) {
    Vec y(x.size());
    for (int c = 0; c < d.c; ++c)
        each_in_channel(d, c, [&](std::size_t i) {
            y[i] = static_cast<float>(gamma[c] * (double(x[i]) - mean[c]) / std::sqrt(double(var[c]) + d.eps) + beta[c]);
        });
    return y;
}

BatchNormGrads batch_norm_backward(const BatchNormDesc& d, const Vec& x, const Vec& dy,
                                   const Vec& gamma, const Vec& mean, const Vec& var) {
    const double m = double(d.batch) * d.h * d.w;
    BatchNormGrads g{Vec(x.size()), Vec(static_cast<std::size_t>(d.c)), Vec(static_cast<std::size_t>(d.c))};
    for (int c = 0; c < d.c; ++c) {
        const double inv = 1 / std::sqrt(double(var[c]) + d.eps);
        double sum_dy = 0, sum_dy_xhat = 0;
        each_in_channel(d, c, [&](std::size_t i) {
            sum_dy += dy[i];
            sum_dy_xhat += dy[i] * (x[i] - mean[c]) * inv;
        });
        g.dbeta[c] = static_cast<float>(sum_dy);
        g.dgamma[c] = static_cast<float>(sum_dy_xhat);
        each_in_channel(d, c, [&](std::size_t i) {
            const double xhat = (x[i] - mean[c]) * inv;
            g.dx[i] = static_cast<float>(gamma[c] * inv * (dy[i] - sum_dy / m - xhat * sum_dy_xhat / m));
        });
    }
    return g;
}

void updater_step(const UpdaterSpec& s, std::vector<double>& g, std::vector<double>& state,
                  const Vec& w, long iteration) {
    const std::size_t n = g.size();
    const double lr = s.learning_rate;
    for (std::size_t i = 0; i < n; ++i) {
        g[i] += double(s.l2) * w[i] + double(s.l1) * ((w[i] > 0) - (w[i] < 0));
        switch (s.kind) {
            case UpdaterKind::Sgd: g[i] *= lr; break;
            case UpdaterKind::Nesterovs: {
                const double mu = s.momentum, prev = state[i];
                state[i] = mu * prev - lr * g[i];
                g[i] = mu * prev - (1 + mu) * state[i];
                break;
            }
            case UpdaterKind::AdaGrad:
                state[i] += g[i] * g[i];
                g[i] = lr * g[i] / (std::sqrt(state[i]) + s.epsilon);
                break;
            case UpdaterKind::RmsProp:
                state[i] = s.rms_decay * state[i] + (1 - double(s.rms_decay)) * g[i] * g[i];
                g[i] = lr * g[i] / std::sqrt(state[i] + s.epsilon);
                break;
            case UpdaterKind::Adam: {
                const double t = iteration + 1.0, b1 = s.beta1, b2 = s.beta2;
                double& m = state[i];
                double& v = state[n + i];
                m = b1 * m + (1 - b1) * g[i];
                v = b2 * v + (1 - b2) * g[i] * g[i];
                g[i] = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t)) * m / (std::sqrt(v) + s.epsilon);
                break;
            }
        }
    }
}

Vec dropout_mask(std::size_t n, float retain, unsigned long long seed) {
    const std::uint64_t key = thresher::derive_seed(seed, 0x44524f50);
    Vec mask(n);
    for (std::size_t i = 0; i < n; ++i) {
        const double u = static_cast<double>(thresher::derive_seed(key, i) >> 11) * 0x1.0p-53;
        mask[i] = u < retain ? 1.f / retain : 0.f;
    }
    return mask;
}

}  // namespace reference
