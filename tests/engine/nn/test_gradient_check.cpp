// Finite-difference gradient checks: for small networks exercising every layer, activation and
// loss, the backward pass must agree with central differences of the training-mode loss,
//   dL/dθ_i ≈ (L(θ + h e_i) − L(θ − h e_i)) / 2h,
// for every trainable parameter, tightly enough that a derivative off by 5% fails: per parameter
// |fd − an| ≤ noise/h + 1e-2 · max(|fd|, |an|), and over each parameter block (a layer's weights,
// its biases) ‖fd − an‖ ≤ 1e-2 · max(‖fd‖, ‖an‖). The loss is summed in double; the forward pass
// is float32, whose rounding (≤ 1e-7 of the loss, measured) over a step h is the noise/h term.
//
// Kinks (ReLU, a max-pool tie, MAE at its target, a thresholded ReLU's jump) bend the central
// difference when θ ± h crosses one. So the check tries h = 1e-2, 2.5e-3, 6.25e-4 and accepts the
// first that agrees: a kink farther than h from θ cannot touch that difference. When none agrees,
// the parameter is excused only with evidence of a kink: the central differences disagree with
// one another (a smooth loss gives the same slope at every step) AND the analytic gradient equals
// the one-sided slope on one side of θ at the smallest step (the kink lies on the other side). A
// wrong gradient at a smooth point fails both. At most a tenth of a row's parameters may be
// excused so; GC_VERBOSE=1 prints every parameter's differences (add -maxwarnings 0).
//
// The 5% claim was shown by scaling the CPU dense and convolution weight gradients by 1.05: every
// row with such a layer then fails (see the commit that tightened this check).
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <random>

#include "backend/registry.h"
#include "nn/network.h"

using namespace thresher;

namespace {

// A model JSON with the given input and hidden layers, ending in `output`.
QByteArray model(const char* input, const char* layers, const char* output) {
    return QByteArray("{\"name\":\"gc\",\"seed\":7,\"input\":") + input + ",\"layers\":[" + layers +
           (layers[0] ? "," : "") + output + "]}";
}

struct Batch {
    std::vector<float> x, t;
};

// Sequence inputs (seq_spec.md) get lengths T, T-1, ... (at least 1) in their first column and
// zeros at padded steps; an input an embedding reads gets integer ids. A per-step output takes
// a target per step.
Batch make_batch(const config::ModelConfig& c, int n, bool one_hot, std::uint64_t seed) {
    std::mt19937 rng(static_cast<unsigned>(seed));
    std::normal_distribution<float> normal(0.f, 1.f);
    std::uniform_real_distribution<float> unit(0.05f, 0.95f);
    Batch b;
    const std::size_t row = c.input_size();
    b.x.resize(static_cast<std::size_t>(n) * row);
    for (auto& v : b.x) v = normal(rng);
    std::size_t column = 0;
    for (std::size_t k = 0; k < c.input_count(); ++k) {
        const auto& shape = c.input_shape(k);
        if (shape.sequence()) {
            int vocabulary = 0;
            for (const auto& l : c.layers)
                if (l.type == config::LayerType::Embedding && l.sources[0] == config::LayerConfig::model_input(k)) vocabulary = l.vocabulary;
            for (int i = 0; i < n; ++i) {
                float* x = b.x.data() + static_cast<std::size_t>(i) * row + column;
                const int len = std::max(1, shape.t - i);
                x[0] = static_cast<float>(len);
                for (int t = 0; t < shape.t; ++t)
                    for (int f = 0; f < shape.c; ++f) {
                        float& v = x[1 + static_cast<std::size_t>(t) * shape.c + f];
                        if (t >= len) v = 0.f;
                        else if (vocabulary) v = static_cast<float>(rng() % static_cast<unsigned>(vocabulary));
                    }
            }
            ++column;
        }
        column += shape.size();
    }
    // Each output takes its columns of the target row: a one-hot row of its own for a softmax
    // (cross-entropy's (p - t) gradient holds for targets summing to 1), values in (0, 1) else.
    const auto k = c.target_size();
    b.t.assign(static_cast<std::size_t>(n) * k, 0.f);
    for (int i = 0; i < n; ++i) {
        std::size_t at = 0;
        for (auto o : c.output_layers) {
            const auto& shape = c.layers[o].out_shape;
            if (c.layers[o].image_output()) {
                // An image output: C x H x W values, one-hot over the channels of each pixel.
                const int units = c.layers[o].output_width(), pixels = shape.h * shape.w;
                float* row = b.t.data() + static_cast<std::size_t>(i) * k + at;
                if (one_hot) {  // also 0/1 labels for xent on sigmoid outputs
                    for (int p = 0; p < pixels; ++p) row[static_cast<int>(rng() % static_cast<unsigned>(shape.c)) * pixels + p] = 1.f;
                } else {
                    for (int j = 0; j < units; ++j) row[j] = unit(rng);
                }
                at += static_cast<std::size_t>(units);
                continue;
            }
            const int units = c.layers[o].units;
            const int steps = std::max(1, shape.t);
            for (int t = 0; t < steps; ++t) {
                float* row_t = b.t.data() + static_cast<std::size_t>(i) * k + at;
                if (one_hot) {  // also 0/1 labels for xent on sigmoid outputs
                    row_t[rng() % units] = 1.f;
                } else {
                    for (int j = 0; j < units; ++j) row_t[j] = unit(rng);
                }
                at += static_cast<std::size_t>(units);
            }
        }
    }
    return b;
}

// Central differences at three steps: a kink (ReLU, a max-pool tie) farther than h from θ does not
// touch the difference at step h, so the first step that agrees settles the parameter.
constexpr double kSteps[] = {1e-2, 2.5e-3, 6.25e-4};
constexpr double kRtol = 1e-2;
// The float32 forward pass rounds the loss by about this much (times max(1, |L|)); a difference
// over step h carries noise/h of it. Measured on these rows: below 6e-8.
constexpr double kLossNoise = 1e-7;

enum class Verdict { Agrees, Kink, Wrong };
struct ParamCheck {
    Verdict verdict = Verdict::Wrong;
    double fd = 0;      // the finite difference compared
    double excess = 0;  // how far beyond the tolerance (Wrong)
    QString text;       // the differences, for messages
};

double tolerance(double a, double b, double noise, double h) {
    return noise / h + kRtol * std::max(std::abs(a), std::abs(b));
}

// `loss_at(v)`: the loss with this parameter set to v (a float, as the network holds it).
template <typename LossAt>
ParamCheck check_param(double an, float theta, double noise, LossAt loss_at, double base) {
    ParamCheck c;
    double fd[std::size(kSteps)];
    double last_plus = 0, last_minus = 0, h_plus = 0, h_minus = 0, h = 0;
    for (std::size_t k = 0; k < std::size(kSteps); ++k) {
        // The step taken is the float nearest θ ± ε minus θ, not ε itself.
        const float up = static_cast<float>(theta + kSteps[k]), down = static_cast<float>(theta - kSteps[k]);
        last_plus = loss_at(up), last_minus = loss_at(down);
        h_plus = double(up) - theta, h_minus = theta - double(down);
        h = (h_plus + h_minus) / 2;
        fd[k] = (last_plus - last_minus) / (h_plus + h_minus);
        c.text += QString(k ? ", %1" : "central differences %1").arg(fd[k], 0, 'g', 7);
        if (std::abs(fd[k] - an) <= tolerance(fd[k], an, noise, h)) {
            c.verdict = Verdict::Agrees;
            c.fd = fd[k];
            return c;
        }
    }
    const double last = fd[std::size(kSteps) - 1];
    c.fd = last;
    c.excess = std::abs(last - an) - tolerance(last, an, noise, h);
    // A smooth loss gives the same central difference at every step (to h²·L'''/6 and the noise,
    // well below 1e-3 relative here): if they agree with each other but not with the analytic
    // gradient, the gradient is wrong.
    double spread = 0, largest = 0;
    for (double f : fd) spread = std::max(spread, std::abs(f - last)), largest = std::max(largest, std::abs(f));
    if (spread <= noise / h + kRtol / 10 * largest) return c;
    // A kink within the smallest step lies on one side of θ: the slope on the other side is the
    // derivative at θ, to O(h) (about 3e-4·|L''|, inside the tolerance for these rows).
    const double right = (last_plus - base) / h_plus, left = (base - last_minus) / h_minus;
    c.text += QString("; one-sided %1, %2").arg(left, 0, 'g', 7).arg(right, 0, 'g', 7);
    for (double side : {left, right}) {
        if (std::abs(side - an) <= tolerance(side, an, 2 * noise, h)) {
            c.verdict = Verdict::Kink;
            c.fd = side;
            return c;
        }
    }
    return c;
}

// The trainable parameter blocks of a model, named for messages: "layers[0] (dense) weight".
struct Block {
    QString name;
    std::size_t offset = 0, size = 0;
};

const char* role_name(config::ParamRole r) {
    switch (r) {
        case config::ParamRole::Weight: return "weight";
        case config::ParamRole::Bias: return "bias";
        case config::ParamRole::Gamma: return "gamma";
        case config::ParamRole::Beta: return "beta";
        case config::ParamRole::Alpha: return "alpha";
        case config::ParamRole::Depthwise: return "depthwise weight";
        case config::ParamRole::RunningMean: return "running mean";
        case config::ParamRole::RunningVar: return "running variance";
        case config::ParamRole::Recurrent: return "recurrent weight";
        case config::ParamRole::Peephole: return "peephole";
    }
    return "?";
}

std::vector<Block> blocks_of(const config::ModelConfig& c) {
    std::vector<Block> out;
    for (std::size_t li = 0; li < c.layers.size(); ++li) {
        const auto& l = c.layers[li];
        if (l.shares_index >= 0) continue;  // a shared layer's parameters are its owner's blocks
        for (const auto& b : l.blocks) {
            if (!b.trainable()) continue;
            out.push_back({QString::fromStdString(l.label(li)) + " " + role_name(b.role), l.param_offset + b.offset, b.size});
        }
    }
    return out;
}

}  // namespace

class TestGradientCheck : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void gradients_data();
    void gradients();
    void padded_steps_change_nothing();
};

void TestGradientCheck::gradients_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<bool>("one_hot");

    const char* flat = "{\"size\":6}";
    const char* image = "{\"channels\":2,\"height\":7,\"width\":6}";
    const char* softmax = "{\"type\":\"output\",\"units\":3,\"activation\":\"softmax\",\"loss\":\"mcxent\"}";
    for (const char* act : {"identity", "relu", "leakyrelu", "tanh", "sigmoid", "softmax", "elu", "selu", "relu6",
                            "hardsigmoid", "softplus", "softsign", "swish", "gelu", "gelu_tanh", "gelu_sigmoid"}) {
        const QByteArray layer = QByteArray("{\"type\":\"dense\",\"units\":5,\"activation\":\"") + act + "\"}";
        QTest::newRow(QByteArray("dense ") + act) << model(flat, layer.constData(), softmax) << true;
    }
    QTest::newRow("output sigmoid xent")
        << model(flat, "{\"type\":\"dense\",\"units\":4,\"activation\":\"tanh\"}",
                 "{\"type\":\"output\",\"units\":3,\"activation\":\"sigmoid\",\"loss\":\"xent\"}")
        << false;
    QTest::newRow("output identity mse")
        << model(flat, "", "{\"type\":\"output\",\"units\":2,\"activation\":\"identity\",\"loss\":\"mse\"}") << false;
    QTest::newRow("output tanh mse")
        << model(flat, "", "{\"type\":\"output\",\"units\":2,\"activation\":\"tanh\",\"loss\":\"mse\"}") << false;
    QTest::newRow("output negativeloglikelihood")
        << model(flat, "", "{\"type\":\"output\",\"units\":4,\"activation\":\"softmax\",\"loss\":\"negativeloglikelihood\"}") << true;
    QTest::newRow("dense tanh with l2 (applied later, by the updater)")
        << model("{\"size\":6}", "{\"type\":\"dense\",\"units\":5,\"activation\":\"tanh\",\"l2\":0.1}", softmax) << true;

    QTest::newRow("conv 3x3 truncate")
        << model(image, "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[3,3],\"activation\":\"tanh\"}", softmax) << true;
    QTest::newRow("conv stride 2 padding 1")
        << model(image, "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[3,2],\"stride\":[2,2],\"padding\":[1,1],\"activation\":\"sigmoid\"}", softmax) << true;
    QTest::newRow("conv dilation 2")
        << model(image, "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[2,2],\"dilation\":[2,2],\"activation\":\"identity\"}", softmax) << true;
    QTest::newRow("conv same mode stride 2")
        << model(image, "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[3,3],\"stride\":2,\"mode\":\"same\",\"activation\":\"relu\"}", softmax) << true;
    QTest::newRow("conv leakyrelu")
        << model(image, "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[2,2],\"activation\":\"leakyrelu\",\"alpha\":0.2}", softmax) << true;
    QTest::newRow("conv relu then max pool")
        << model(image, "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[2,2],\"activation\":\"relu\"},"
                        "{\"type\":\"subsampling\",\"pooling\":\"max\",\"kernel\":[2,2],\"stride\":[2,2]}", softmax) << true;
    for (const char* act : {"identity", "tanh"}) {
        const QByteArray layers = QByteArray("{\"type\":\"convolution\",\"filters\":3,\"kernel\":[2,2],\"activation\":\"") + act +
                                  "\"},{\"type\":\"subsampling\",\"pooling\":\"max\",\"kernel\":[2,2],\"stride\":[2,2]}";
        QTest::newRow(QByteArray("conv ") + act + " then max pool") << model(image, layers.constData(), softmax) << true;
    }
    // The activations imported files bring run after the convolution (not fused by oneDNN).
    for (const char* act : {"elu", "selu", "relu6", "hardsigmoid", "softplus", "softsign", "swish", "gelu", "gelu_tanh",
                            "gelu_sigmoid"}) {
        const QByteArray layer = QByteArray("{\"type\":\"convolution\",\"filters\":3,\"kernel\":[2,2],\"activation\":\"") + act + "\"}";
        QTest::newRow(QByteArray("conv ") + act) << model(image, layer.constData(), softmax) << true;
    }
    QTest::newRow("dense elu alpha 0.5")
        << model(flat, "{\"type\":\"dense\",\"units\":5,\"activation\":\"elu\",\"alpha\":0.5}", softmax) << true;
    // Binary classification (one sigmoid unit, xent) and regression with mae (issue 13 class 5).
    QTest::newRow("dense tanh, one sigmoid unit xent")
        << model(flat, "{\"type\":\"dense\",\"units\":4,\"activation\":\"tanh\"}",
                 "{\"type\":\"output\",\"units\":1,\"activation\":\"sigmoid\",\"loss\":\"xent\"}") << false;
    QTest::newRow("dense relu, identity mae")
        << model(flat, "{\"type\":\"dense\",\"units\":4,\"activation\":\"relu\"}",
                 "{\"type\":\"output\",\"units\":2,\"activation\":\"identity\",\"loss\":\"mae\"}") << false;
    QTest::newRow("output sigmoid mae")
        << model(flat, "", "{\"type\":\"output\",\"units\":1,\"activation\":\"sigmoid\",\"loss\":\"mae\"}") << false;
    // θ = 0.3: inputs near the threshold jump from 0 to 0.3, so a finite difference across it is
    // one-sided (the check falls back to those).
    QTest::newRow("dense thresholdedrelu 0.3")
        << model(flat, "{\"type\":\"dense\",\"units\":5,\"activation\":\"thresholdedrelu\",\"alpha\":0.3}", softmax) << true;
    QTest::newRow("conv thresholdedrelu then max pool")
        << model("{\"channels\":1,\"height\":6,\"width\":6}",
                 "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[3,3],\"activation\":\"thresholdedrelu\",\"alpha\":0.2},"
                 "{\"type\":\"subsampling\",\"pooling\":\"max\",\"kernel\":[2,2]}", softmax) << true;
    // Global pooling (one window over the whole 4x4 map): the C channel values go to the output.
    QTest::newRow("conv then global avg pool")
        << model("{\"channels\":1,\"height\":6,\"width\":6}",
                 "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[3,3],\"activation\":\"tanh\"},"
                 "{\"type\":\"subsampling\",\"pooling\":\"avg\",\"global\":true}", softmax) << true;
    QTest::newRow("conv then global max pool")
        << model("{\"channels\":1,\"height\":6,\"width\":6}",
                 "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[3,3],\"activation\":\"tanh\"},"
                 "{\"type\":\"subsampling\",\"pooling\":\"max\",\"global\":true}", softmax) << true;
    QTest::newRow("output softplus mse")
        << model(flat, "", "{\"type\":\"output\",\"units\":2,\"activation\":\"softplus\",\"loss\":\"mse\"}") << false;
    QTest::newRow("output softsign mse")
        << model(flat, "", "{\"type\":\"output\",\"units\":2,\"activation\":\"softsign\",\"loss\":\"mse\"}") << false;
    QTest::newRow("conv leakyrelu then max pool")
        << model(image, "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[2,2],\"activation\":\"leakyrelu\"},"
                        "{\"type\":\"subsampling\",\"pooling\":\"max\",\"kernel\":[2,2],\"stride\":[2,2]}", softmax) << true;
    QTest::newRow("conv then avg pool same")
        << model(image, "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[2,2],\"activation\":\"tanh\"},"
                        "{\"type\":\"subsampling\",\"pooling\":\"avg\",\"kernel\":[3,3],\"stride\":[2,2],\"mode\":\"same\"}", softmax) << true;
    QTest::newRow("batch norm on conv")
        << model(image, "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[3,3],\"activation\":\"identity\"},"
                        "{\"type\":\"batch_norm\"}", softmax) << true;
    QTest::newRow("batch norm on dense")
        << model(flat, "{\"type\":\"dense\",\"units\":5,\"activation\":\"identity\"},{\"type\":\"batch_norm\"},"
                       "{\"type\":\"dense\",\"units\":4,\"activation\":\"tanh\"}", softmax) << true;
    // A ReLU layer that alone reads a batch norm in the native layout (16 channels): the CPU backend
    // applies it inside the batch norm (fuse_norm_relu) and passes the gradient through the ReLU
    // layer. On dense features (NCHW) the two stay apart.
    QTest::newRow("batch norm then relu layer, 16 channels (fused)")
        << model(image, "{\"type\":\"convolution\",\"filters\":16,\"kernel\":[3,3],\"activation\":\"identity\"},"
                        "{\"type\":\"batch_norm\"},{\"type\":\"activation\",\"activation\":\"relu\"},"
                        "{\"type\":\"subsampling\",\"pooling\":\"avg\",\"global\":true}", softmax) << true;
    QTest::newRow("batch norm then relu on dense")
        << model(flat, "{\"type\":\"dense\",\"units\":5,\"activation\":\"identity\"},{\"type\":\"batch_norm\"},"
                       "{\"type\":\"activation\",\"activation\":\"relu\"},"
                       "{\"type\":\"dense\",\"units\":4,\"activation\":\"tanh\"}", softmax) << true;
    QTest::newRow("dropout")
        << model(flat, "{\"type\":\"dense\",\"units\":8,\"activation\":\"tanh\"},{\"type\":\"dropout\",\"retain\":0.6}", softmax) << true;
    // PReLU: the alpha gradients (one per unit, per channel, per position) as well as the input's.
    QTest::newRow("prelu per unit")
        << model(flat, "{\"type\":\"dense\",\"units\":5,\"activation\":\"identity\"},{\"type\":\"prelu\",\"alpha_init\":0.25}",
                 softmax) << true;
    QTest::newRow("prelu one alpha")
        << model(flat, "{\"type\":\"dense\",\"units\":5,\"activation\":\"identity\"},"
                       "{\"type\":\"prelu\",\"shared_axes\":[\"channels\"],\"alpha_init\":-0.5}", softmax) << true;
    QTest::newRow("conv prelu per channel")
        << model(image, "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[2,2],\"activation\":\"identity\"},"
                        "{\"type\":\"prelu\",\"shared_axes\":[\"height\",\"width\"],\"alpha_init\":0.3}", softmax) << true;
    QTest::newRow("conv prelu per position")
        << model(image, "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[3,3],\"activation\":\"identity\"},"
                        "{\"type\":\"prelu\",\"shared_axes\":[\"width\"],\"alpha_init\":0.1}", softmax) << true;
    // Standalone activation layers (Keras Activation, DL4J ActivationLayer): after a layer that
    // has its own, on images, from the pre-activation (swish), and last, carrying the loss.
    QTest::newRow("activation tanh after dense relu")
        << model(flat, "{\"type\":\"dense\",\"units\":5,\"activation\":\"relu\"},{\"type\":\"activation\",\"activation\":\"tanh\"}",
                 softmax) << true;
    QTest::newRow("activation softmax, hidden")
        << model(flat, "{\"type\":\"dense\",\"units\":5,\"activation\":\"tanh\"},{\"type\":\"activation\",\"activation\":\"softmax\"}",
                 softmax) << true;
    QTest::newRow("activation swish after dense elu")
        << model(flat, "{\"type\":\"dense\",\"units\":5,\"activation\":\"elu\"},{\"type\":\"activation\",\"activation\":\"swish\"}",
                 softmax) << true;
    QTest::newRow("activation elu on conv tanh, then max pool")
        << model(image, "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[2,2],\"activation\":\"tanh\"},"
                        "{\"type\":\"activation\",\"activation\":\"elu\",\"alpha\":0.7},"
                        "{\"type\":\"subsampling\",\"pooling\":\"max\",\"kernel\":[2,2],\"stride\":[2,2]}", softmax) << true;
    QTest::newRow("activation leakyrelu after avg pool")
        << model(image, "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[2,2],\"activation\":\"identity\"},"
                        "{\"type\":\"subsampling\",\"pooling\":\"avg\",\"kernel\":[2,2],\"stride\":[2,2]},"
                        "{\"type\":\"activation\",\"activation\":\"leakyrelu\",\"alpha\":0.2}", softmax) << true;
    QTest::newRow("activation softmax last, after dense relu (mcxent)")
        << model(flat, "{\"type\":\"dense\",\"units\":3,\"activation\":\"relu\"}",
                 "{\"type\":\"activation\",\"activation\":\"softmax\",\"loss\":\"mcxent\"}") << true;
    QTest::newRow("activation sigmoid last, after dense tanh (xent)")
        << model(flat, "{\"type\":\"dense\",\"units\":3,\"activation\":\"tanh\"}",
                 "{\"type\":\"activation\",\"activation\":\"sigmoid\",\"loss\":\"xent\"}") << false;
    QTest::newRow("activation tanh last, after dense sigmoid (mse)")
        << model(flat, "{\"type\":\"dense\",\"units\":2,\"activation\":\"sigmoid\"}",
                 "{\"type\":\"activation\",\"activation\":\"tanh\",\"loss\":\"mse\"}") << false;
    // Zero padding, cropping and upsampling as layers of their own (Keras ZeroPadding2D, Cropping2D,
    // UpSampling2D; DL4J ZeroPaddingLayer, Cropping2D, Upsampling2D): between convolutions, so
    // both the gradient that passes through them and the weights before them are checked.
    QTest::newRow("zero padding asymmetric between convolutions")
        << model(image, "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[2,2],\"activation\":\"tanh\"},"
                        "{\"type\":\"zero_padding\",\"padding\":[1,0,2,1]},"
                        "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[3,3],\"activation\":\"tanh\"}", softmax) << true;
    QTest::newRow("cropping between convolutions")
        << model(image, "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[2,2],\"activation\":\"tanh\"},"
                        "{\"type\":\"cropping\",\"cropping\":[1,2,0,1]},"
                        "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[2,2],\"activation\":\"sigmoid\"}", softmax) << true;
    QTest::newRow("upsampling 2x3 between convolutions")
        << model(image, "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[3,3],\"stride\":[2,2],\"activation\":\"tanh\"},"
                        "{\"type\":\"upsampling\",\"size\":[2,3]},"
                        "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[3,3],\"stride\":[2,2],\"activation\":\"tanh\"}", softmax) << true;
    QTest::newRow("zero padding, upsampling, cropping, then max pool")
        << model(image, "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[2,2],\"activation\":\"identity\"},"
                        "{\"type\":\"zero_padding\",\"padding\":1},{\"type\":\"upsampling\",\"size\":2},"
                        "{\"type\":\"cropping\",\"cropping\":[2,3]},"
                        "{\"type\":\"subsampling\",\"pooling\":\"avg\",\"kernel\":[3,3],\"stride\":[3,3]}", softmax) << true;
    // Graphs (issue 22): one tensor read by two branches (fan-out: its gradient is the sum of
    // both), joined again by a vertex (fan-in). Every vertex type, on images and on flat features.
    QTest::newRow("graph residual add (conv read by conv and add)")
        << model(image, "{\"type\":\"convolution\",\"name\":\"c1\",\"filters\":3,\"kernel\":[3,3],\"mode\":\"same\",\"activation\":\"tanh\"},"
                        "{\"type\":\"convolution\",\"name\":\"c2\",\"filters\":3,\"kernel\":[3,3],\"mode\":\"same\",\"activation\":\"tanh\"},"
                        "{\"type\":\"add\",\"name\":\"sum\",\"inputs\":[\"c1\",\"c2\"]},"
                        "{\"type\":\"batch_norm\",\"inputs\":\"sum\"}", softmax) << true;
    // 16 channels: on the CPU backend (AVX-512 or AVX2) this chain lives in oneDNN's blocked
    // layout end to end (backend.h ImageLayout::Native): conv, batch norm, activation layers, max
    // pool, the residual add and the global pool, converted from NCHW at the stem and back into the
    // dense. Tanh rather than ReLU and pooling windows that do not overlap: with 16 channels
    // through batch norm, ReLU kinks and pooling ties would be too many to excuse.
    QTest::newRow("graph residual block, 16 channels (native layout)")
        << model(image, "{\"type\":\"convolution\",\"name\":\"stem\",\"filters\":16,\"kernel\":[3,3],\"mode\":\"same\",\"activation\":\"identity\"},"
                        "{\"type\":\"batch_norm\",\"name\":\"bn1\"},"
                        "{\"type\":\"activation\",\"name\":\"r1\",\"activation\":\"tanh\"},"
                        "{\"type\":\"subsampling\",\"name\":\"mp\",\"pooling\":\"max\",\"kernel\":[2,2],\"stride\":[2,2]},"
                        "{\"type\":\"convolution\",\"name\":\"c2\",\"filters\":16,\"kernel\":[3,3],\"mode\":\"same\",\"activation\":\"tanh\"},"
                        "{\"type\":\"batch_norm\",\"name\":\"bn2\"},"
                        "{\"type\":\"add\",\"name\":\"sum\",\"inputs\":[\"bn2\",\"mp\"]},"
                        "{\"type\":\"activation\",\"name\":\"r2\",\"activation\":\"tanh\"},"
                        "{\"type\":\"subsampling\",\"pooling\":\"avg\",\"global\":true}", softmax) << true;
    QTest::newRow("graph concatenate two branches of one conv")
        << model(image, "{\"type\":\"convolution\",\"name\":\"stem\",\"filters\":2,\"kernel\":[2,2],\"activation\":\"tanh\"},"
                        "{\"type\":\"convolution\",\"name\":\"a\",\"inputs\":\"stem\",\"filters\":2,\"kernel\":[1,1],\"activation\":\"sigmoid\"},"
                        "{\"type\":\"convolution\",\"name\":\"b\",\"inputs\":[\"stem\"],\"filters\":3,\"kernel\":[3,3],\"mode\":\"same\",\"activation\":\"tanh\"},"
                        "{\"type\":\"concatenate\",\"inputs\":[\"a\",\"b\",\"stem\"]}", softmax) << true;
    QTest::newRow("graph two branches from the model's input, subtract")
        << model(flat, "{\"type\":\"dense\",\"name\":\"a\",\"inputs\":\"input\",\"units\":4,\"activation\":\"tanh\"},"
                       "{\"type\":\"dense\",\"name\":\"b\",\"inputs\":\"input\",\"units\":4,\"activation\":\"sigmoid\"},"
                       "{\"type\":\"subtract\",\"inputs\":[\"a\",\"b\"]}", softmax) << true;
    QTest::newRow("graph multiply three, one twice")
        << model(flat, "{\"type\":\"dense\",\"name\":\"a\",\"units\":4,\"activation\":\"tanh\"},"
                       "{\"type\":\"dense\",\"name\":\"b\",\"inputs\":\"input\",\"units\":4,\"activation\":\"sigmoid\"},"
                       "{\"type\":\"multiply\",\"inputs\":[\"a\",\"b\",\"a\"]}", softmax) << true;
    QTest::newRow("graph average and maximum")
        << model(flat, "{\"type\":\"dense\",\"name\":\"a\",\"units\":5,\"activation\":\"tanh\"},"
                       "{\"type\":\"dense\",\"name\":\"b\",\"inputs\":\"input\",\"units\":5,\"activation\":\"identity\"},"
                       "{\"type\":\"dense\",\"name\":\"c\",\"inputs\":\"b\",\"units\":5,\"activation\":\"sigmoid\"},"
                       "{\"type\":\"average\",\"name\":\"avg\",\"inputs\":[\"a\",\"b\",\"c\"]},"
                       "{\"type\":\"maximum\",\"inputs\":[\"avg\",\"b\"]}", softmax) << true;
    QTest::newRow("graph subset of conv channels beside the whole")
        << model(image, "{\"type\":\"convolution\",\"name\":\"c\",\"filters\":4,\"kernel\":[2,2],\"activation\":\"tanh\"},"
                        "{\"type\":\"subset\",\"name\":\"s\",\"channels\":[1,2]},"
                        "{\"type\":\"convolution\",\"name\":\"d\",\"inputs\":\"s\",\"filters\":4,\"kernel\":[1,1],\"activation\":\"identity\"},"
                        "{\"type\":\"add\",\"inputs\":[\"d\",\"c\"]}", softmax) << true;
    // Shared layers (issue 22, Keras calling one layer twice): each weight's gradient is the sum
    // over every call; a network that overwrote instead of adding would miss the earlier calls'
    // share and fail. Two inputs through one convolution (siamese), one dense called three times
    // (the owner, then a sharer of a sharer), and a shared batch norm.
    QTest::newRow("graph shared convolution and dense (siamese, two inputs)")
        << QByteArray(R"({"input":[{"name":"left","channels":2,"height":5,"width":5},{"name":"right","channels":2,"height":5,"width":5}],
            "layers":[{"type":"convolution","name":"conv","inputs":"left","filters":2,"kernel":[3,3],"activation":"tanh"},
                      {"type":"convolution","name":"conv@1","inputs":"right","shares":"conv","filters":2,"kernel":[3,3],"activation":"tanh"},
                      {"type":"dense","name":"embed","inputs":"conv","units":4,"activation":"tanh"},
                      {"type":"dense","name":"embed@1","inputs":"conv@1","shares":"embed","units":4,"activation":"tanh"},
                      {"type":"dense","name":"h","inputs":"embed","units":4,"activation":"sigmoid"},
                      {"type":"dense","name":"h@1","inputs":"embed@1","shares":"h","units":4,"activation":"sigmoid"},
                      {"type":"subtract","name":"diff","inputs":["h","h@1"]},
                      {"type":"dense","name":"h@2","inputs":"diff","shares":"h@1","units":4,"activation":"sigmoid"},
                      {"type":"output","inputs":"h@2","units":3,"activation":"softmax","loss":"mcxent"}]})")
        << true;
    QTest::newRow("graph shared batch norm and dense on one input")
        << QByteArray(R"({"input":{"size":4},
            "layers":[{"type":"dense","name":"d","units":4,"activation":"sigmoid"},
                      {"type":"batch_norm","name":"bn","inputs":"d"},
                      {"type":"dense","name":"d@1","inputs":"bn","shares":"d","units":4,"activation":"sigmoid"},
                      {"type":"batch_norm","name":"bn@1","inputs":"d@1","shares":"bn"},
                      {"type":"add","name":"sum","inputs":["bn","bn@1"]},
                      {"type":"output","inputs":"sum","units":3,"activation":"softmax","loss":"mcxent"}]})")
        << true;
    // Depthwise and separable convolutions (Keras DepthwiseConv2D / SeparableConv2D, DL4J's).
    QTest::newRow("depthwise convolution x1")
        << model(image, "{\"type\":\"depthwise_convolution\",\"kernel\":[3,3],\"activation\":\"tanh\"}", softmax) << true;
    QTest::newRow("depthwise convolution x2, stride 2, same")
        << model(image, "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[2,2],\"activation\":\"identity\"},"
                        "{\"type\":\"depthwise_convolution\",\"depth_multiplier\":2,\"kernel\":[3,3],\"stride\":2,\"mode\":\"same\",\"activation\":\"sigmoid\"}",
                 softmax) << true;
    QTest::newRow("separable convolution x2")
        << model(image, "{\"type\":\"separable_convolution\",\"filters\":3,\"depth_multiplier\":2,\"kernel\":[3,2],\"activation\":\"tanh\"}",
                 softmax) << true;
    QTest::newRow("separable convolution swish, dilation 2, after a conv")
        << model(image, "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[2,2],\"activation\":\"tanh\"},"
                        "{\"type\":\"separable_convolution\",\"filters\":2,\"kernel\":[2,2],\"dilation\":2,\"activation\":\"swish\"}",
                 softmax) << true;
    // Transposed convolutions (Keras Conv2DTranspose, DL4J Deconvolution2D): valid and same.
    QTest::newRow("transposed convolution 3x3 stride 2")
        << model(image, "{\"type\":\"transposed_convolution\",\"filters\":2,\"kernel\":[3,3],\"stride\":2,\"activation\":\"tanh\"}",
                 softmax) << true;
    QTest::newRow("transposed convolution same, 4x3 stride 2, after a conv")
        << model(image, "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[2,2],\"activation\":\"sigmoid\"},"
                        "{\"type\":\"transposed_convolution\",\"filters\":2,\"kernel\":[4,3],\"stride\":[2,2],\"mode\":\"same\",\"activation\":\"identity\"}",
                 softmax) << true;
    QTest::newRow("transposed convolution padding 1, dilation 2")
        << model(image, "{\"type\":\"transposed_convolution\",\"filters\":2,\"kernel\":[3,3],\"padding\":1,\"dilation\":2,\"activation\":\"tanh\"}",
                 softmax) << true;
    // Several inputs (the feature row split between them) and several outputs (the loss is the
    // sum of theirs): an image input and a flat one, joined; a softmax head and an mse head, the
    // latter reading a tensor the other branch reads too.
    QTest::newRow("graph two inputs, two outputs")
        << QByteArray(R"({"input":[{"name":"img","channels":2,"height":5,"width":5},{"name":"meta","size":3}],
            "outputs":["cls","reg"],
            "layers":[{"type":"convolution","name":"c","inputs":"img","filters":2,"kernel":[3,3],"activation":"tanh"},
                      {"type":"dense","name":"f","inputs":"c","units":4,"activation":"tanh"},
                      {"type":"dense","name":"m","inputs":"meta","units":4,"activation":"sigmoid"},
                      {"type":"concatenate","name":"j","inputs":["f","m"]},
                      {"type":"output","name":"reg","inputs":"m","units":2,"activation":"identity","loss":"mse"},
                      {"type":"output","name":"cls","inputs":"j","units":3,"activation":"softmax","loss":"mcxent"}]})")
        << true;
    // Cross-entropy on sigmoid outputs (DL4J's two-output graph example): dL/dp = -t/p through
    // the sigmoid, not the softmax shortcut.
    QTest::newRow("mcxent on a sigmoid output, two outputs sharing a layer")
        << QByteArray(R"({"input":{"size":5},
            "layers":[{"type":"dense","name":"h","units":4,"activation":"tanh"},
                      {"type":"output","name":"o1","inputs":"h","units":3,"activation":"sigmoid","loss":"negativeloglikelihood"},
                      {"type":"output","name":"o2","inputs":"h","units":2,"activation":"softplus","loss":"mcxent"}]})")
        << true;
    // Reshape and permute (issue 22): values moved through an index map; a wrong map or a
    // backward that does not invert it shows in every parameter before them.
    QTest::newRow("reshape dense to image, channels last, then conv")
        << model(flat, "{\"type\":\"dense\",\"units\":12,\"activation\":\"tanh\"},"
                       "{\"type\":\"reshape\",\"shape\":{\"channels\":3,\"height\":2,\"width\":2},\"order\":\"channels_last\"},"
                       "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[2,1],\"activation\":\"tanh\"}", softmax) << true;
    QTest::newRow("reshape image to features, channels first, and back")
        << model(image, "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[3,3],\"activation\":\"tanh\"},"
                        "{\"type\":\"reshape\",\"shape\":{\"size\":40}},"
                        "{\"type\":\"reshape\",\"shape\":{\"channels\":4,\"height\":5,\"width\":2},\"order\":\"channels_last\"},"
                        "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[2,2],\"activation\":\"sigmoid\"}", softmax) << true;
    QTest::newRow("permute width, channels, height between convolutions")
        << model(image, "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[2,3],\"activation\":\"tanh\"},"
                        "{\"type\":\"permute\",\"axes\":[\"width\",\"channels\",\"height\"]},"
                        "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[2,2],\"activation\":\"tanh\"}", softmax) << true;
    // Sequences (issue 23): inputs of 5 steps, lengths 5, 4, 3, 2 in the batch of 4 (make_batch),
    // so every row also checks that padded steps neither add to the loss nor take gradient.
    const char* seq = "{\"steps\":5,\"features\":3}";
    QTest::newRow("lstm, last step")
        << model(seq, "{\"type\":\"lstm\",\"units\":4}", softmax) << true;
    QTest::newRow("lstm every step, peepholes, then lstm last step")
        << model(seq, "{\"type\":\"lstm\",\"units\":3,\"return_sequences\":true,\"peepholes\":true},{\"type\":\"lstm\",\"units\":3}", softmax)
        << true;
    QTest::newRow("gru reset after (lbr), last step")
        << model(seq, "{\"type\":\"gru\",\"units\":4}", softmax) << true;
    QTest::newRow("gru reset before, last step")
        << model(seq, "{\"type\":\"gru\",\"units\":4,\"reset_after\":false}", softmax) << true;
    for (const char* act : {"tanh", "sigmoid", "relu"}) {
        const QByteArray layer = QByteArray("{\"type\":\"simple_rnn\",\"units\":4,\"activation\":\"") + act + "\"}";
        QTest::newRow(QByteArray("simple_rnn ") + act) << model(seq, layer.constData(), softmax) << true;
    }
    // Activations oneDNN has no primitive for (Keras 2 / DL4J hard sigmoid gates, softsign and relu
    // cells): the CPU backend's host path (cpu/rnn_host.cpp), its backward through time checked here.
    QTest::newRow("lstm hardsigmoid gates, softsign cell, peepholes, bidirectional concat every step")
        << model(seq, "{\"type\":\"lstm\",\"units\":3,\"return_sequences\":true,\"peepholes\":true,\"bidirectional\":\"concat\","
                      "\"activation\":\"softsign\",\"gate_activation\":\"hardsigmoid\"}", softmax) << true;
    QTest::newRow("lstm hardsigmoid 1/6 gates, swish cell (derivative from the input), last step")
        << model(seq, "{\"type\":\"lstm\",\"units\":4,\"activation\":\"swish\",\"gate_activation\":\"hardsigmoid\","
                      "\"gate_alpha\":0.16666667}", softmax) << true;
    QTest::newRow("gru reset after, hardsigmoid gates, relu candidate, last step")
        << model(seq, "{\"type\":\"gru\",\"units\":4,\"activation\":\"relu\",\"gate_activation\":\"hardsigmoid\"}", softmax) << true;
    QTest::newRow("gru reset before, hardsigmoid gates, relu candidate, bidirectional sum")
        << model(seq, "{\"type\":\"gru\",\"units\":4,\"reset_after\":false,\"bidirectional\":\"sum\",\"activation\":\"relu\","
                      "\"gate_activation\":\"hardsigmoid\"}", softmax) << true;
    QTest::newRow("simple_rnn softsign, last step")
        << model(seq, "{\"type\":\"simple_rnn\",\"units\":4,\"activation\":\"softsign\"}", softmax) << true;
    QTest::newRow("simple_rnn elu, bidirectional mul every step")
        << model(seq, "{\"type\":\"simple_rnn\",\"units\":3,\"activation\":\"elu\",\"return_sequences\":true,\"bidirectional\":\"mul\"}",
                 softmax) << true;
    // Dropout inside the cells (Keras's dropout / recurrent_dropout): fixed masks for a fixed seed,
    // so the loss is a smooth function of the parameters and its gradient checks like any other.
    // Units are 6 so that each mask drops some and keeps some.
    QTest::newRow("lstm input and recurrent dropout, peepholes, bidirectional concat every step")
        << model(seq, "{\"type\":\"lstm\",\"units\":6,\"return_sequences\":true,\"peepholes\":true,\"bidirectional\":\"concat\","
                      "\"input_retain\":0.7,\"recurrent_retain\":0.6}", softmax) << true;
    QTest::newRow("gru reset after, input and recurrent dropout, last step")
        << model(seq, "{\"type\":\"gru\",\"units\":6,\"input_retain\":0.7,\"recurrent_retain\":0.6}", softmax) << true;
    QTest::newRow("gru reset before, recurrent dropout, hardsigmoid gates, bidirectional sum")
        << model(seq, "{\"type\":\"gru\",\"units\":6,\"reset_after\":false,\"bidirectional\":\"sum\",\"recurrent_retain\":0.6,"
                      "\"gate_activation\":\"hardsigmoid\"}", softmax) << true;
    QTest::newRow("simple_rnn tanh, input and recurrent dropout, every step")
        << model(seq, "{\"type\":\"simple_rnn\",\"units\":6,\"return_sequences\":true,\"input_retain\":0.5,\"recurrent_retain\":0.5}",
                 softmax) << true;
    // Sequences joined step by step (Keras Concatenate(axis=-1), DL4J MergeVertex on recurrent
    // activations): two recurrent branches of one input, then a recurrent layer over both.
    QTest::newRow("graph concatenate two lstm sequences, then gru")
        << model(seq, "{\"type\":\"lstm\",\"name\":\"a\",\"units\":3,\"return_sequences\":true,\"inputs\":\"input\"},"
                      "{\"type\":\"simple_rnn\",\"name\":\"b\",\"units\":2,\"return_sequences\":true,\"inputs\":\"input\"},"
                      "{\"type\":\"concatenate\",\"name\":\"ab\",\"inputs\":[\"a\",\"b\"]},"
                      "{\"type\":\"gru\",\"units\":3,\"inputs\":\"ab\"}", softmax) << true;
    for (const char* merge : {"concat", "sum", "mul", "average"}) {
        const QByteArray layer = QByteArray("{\"type\":\"gru\",\"units\":3,\"bidirectional\":\"") + merge + "\"}";
        QTest::newRow(QByteArray("bidirectional gru, ") + merge + ", last step") << model(seq, layer.constData(), softmax) << true;
    }
    QTest::newRow("bidirectional lstm concat every step, per-step softmax output")
        << model(seq, "{\"type\":\"lstm\",\"units\":3,\"return_sequences\":true,\"bidirectional\":\"concat\"}", softmax) << true;
    QTest::newRow("per-step dense tanh, per-step mse output")
        << model(seq, "{\"type\":\"dense\",\"units\":4,\"activation\":\"tanh\"}",
                 "{\"type\":\"output\",\"units\":2,\"activation\":\"sigmoid\",\"loss\":\"mse\"}") << false;
    QTest::newRow("simple_rnn every step, per-step xent output")
        << model(seq, "{\"type\":\"simple_rnn\",\"units\":4,\"return_sequences\":true}",
                 "{\"type\":\"output\",\"units\":2,\"activation\":\"sigmoid\",\"loss\":\"xent\"}") << false;
    // go_backwards (Keras): each sample reversed within its length on the way in, and with every
    // step the outputs right-aligned on the way out; a dense layer before it takes its gradient
    // back through both moves.
    QTest::newRow("per-step dense, lstm go_backwards, last step")
        << model(seq, "{\"type\":\"dense\",\"units\":3,\"activation\":\"tanh\"},{\"type\":\"lstm\",\"units\":4,\"go_backwards\":true}",
                 softmax) << true;
    QTest::newRow("per-step dense, gru go_backwards every step, per-step softmax output")
        << model(seq, "{\"type\":\"dense\",\"units\":3,\"activation\":\"tanh\"},"
                      "{\"type\":\"gru\",\"units\":3,\"go_backwards\":true,\"return_sequences\":true}", softmax) << true;
    QTest::newRow("embedding then gru")
        << model("{\"steps\":5,\"features\":1}", "{\"type\":\"embedding\",\"vocabulary\":6,\"units\":3},{\"type\":\"gru\",\"units\":3}",
                 softmax) << true;
    QTest::newRow("lstm every step, global avg pool over time")
        << model(seq, "{\"type\":\"lstm\",\"units\":4,\"return_sequences\":true},{\"type\":\"subsampling\",\"pooling\":\"avg\",\"global\":true}",
                 softmax) << true;
    QTest::newRow("per-step dense, global max pool over time")
        << model(seq, "{\"type\":\"dense\",\"units\":4,\"activation\":\"tanh\"},{\"type\":\"subsampling\",\"pooling\":\"max\",\"global\":true}",
                 softmax) << true;
    QTest::newRow("convolution1d truncate k3, then lstm")
        << model(seq, "{\"type\":\"convolution1d\",\"filters\":3,\"kernel\":3,\"activation\":\"tanh\"},{\"type\":\"lstm\",\"units\":3}", softmax) << true;
    QTest::newRow("convolution1d causal k2 dilation 2, per-step softmax")
        << model(seq, "{\"type\":\"convolution1d\",\"filters\":3,\"kernel\":2,\"dilation\":2,\"mode\":\"causal\",\"activation\":\"sigmoid\"}",
                 softmax) << true;
    QTest::newRow("convolution1d same stride 2 swish, then gru")
        << model(seq, "{\"type\":\"convolution1d\",\"filters\":2,\"kernel\":3,\"stride\":2,\"mode\":\"same\",\"activation\":\"swish\"},"
                      "{\"type\":\"gru\",\"units\":3}", softmax) << true;
    QTest::newRow("per-step dense, avg pool along time k2 same, lstm")
        << model(seq, "{\"type\":\"dense\",\"units\":3,\"activation\":\"tanh\"},{\"type\":\"subsampling\",\"pooling\":\"avg\",\"kernel\":2,\"mode\":\"same\"},"
                      "{\"type\":\"lstm\",\"units\":3}", softmax) << true;
    QTest::newRow("per-step dense, max pool along time k2 stride 1, per-step softmax")
        << model(seq, "{\"type\":\"dense\",\"units\":3,\"activation\":\"tanh\"},{\"type\":\"subsampling\",\"pooling\":\"max\",\"kernel\":2,\"stride\":1}",
                 softmax) << true;
    QTest::newRow("repeat_vector then simple_rnn every step, per-step softmax")
        << model(flat, "{\"type\":\"dense\",\"units\":3,\"activation\":\"tanh\"},{\"type\":\"repeat_vector\",\"times\":3},"
                       "{\"type\":\"simple_rnn\",\"units\":4,\"return_sequences\":true}", softmax) << true;
    // Image outputs (autoencoders, segmentation heads): the loss at every pixel, averaged over
    // pixels; a softmax over the channels of each pixel with mcxent.
    const char* conv_in = "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[2,2],\"activation\":\"tanh\"}";
    QTest::newRow("image output: conv sigmoid mse")
        << model(image, conv_in, "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[2,2],\"activation\":\"sigmoid\",\"loss\":\"mse\"}")
        << false;
    QTest::newRow("image output: conv sigmoid xent")
        << model(image, conv_in, "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[2,2],\"activation\":\"sigmoid\",\"loss\":\"xent\"}")
        << true;
    QTest::newRow("image output: conv channel softmax mcxent")
        << model(image, conv_in, "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[2,2],\"activation\":\"softmax\",\"loss\":\"mcxent\"}")
        << true;
    QTest::newRow("image output: activation layer softmax over channels (CnnLossLayer)")
        << model(image, "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[2,2],\"activation\":\"identity\"}",
                 "{\"type\":\"activation\",\"activation\":\"softmax\",\"loss\":\"mcxent\"}")
        << true;
    QTest::newRow("image output: transposed conv identity mae")
        << model(image, conv_in, "{\"type\":\"transposed_convolution\",\"filters\":1,\"kernel\":[2,2],\"stride\":[2,2],\"loss\":\"mae\"}")
        << false;
    QTest::newRow("image output: upsampling after a conv, mse")
        << model(image, conv_in, "{\"type\":\"upsampling\",\"size\":[2,2],\"loss\":\"mse\"}") << false;
    QTest::newRow("spatial dropout between convolutions")
        << model(image, "{\"type\":\"convolution\",\"filters\":4,\"kernel\":[2,2],\"activation\":\"tanh\"},"
                        "{\"type\":\"dropout\",\"retain\":0.5,\"spatial\":true},"
                        "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[2,2],\"activation\":\"tanh\"}", softmax) << true;
    if (qEnvironmentVariableIsSet("GC_JSON")) QTest::newRow("env") << qgetenv("GC_JSON") << true;
    QTest::newRow("lenet-like stack")
        << model("{\"channels\":1,\"height\":9,\"width\":9}",
                 "{\"type\":\"convolution\",\"filters\":2,\"kernel\":[3,3],\"activation\":\"identity\"},"
                 "{\"type\":\"subsampling\",\"pooling\":\"max\",\"kernel\":[2,2]},"
                 "{\"type\":\"convolution\",\"filters\":3,\"kernel\":[2,2],\"activation\":\"identity\"},"
                 "{\"type\":\"dense\",\"units\":6,\"activation\":\"relu\"}", softmax) << true;
}

void TestGradientCheck::gradients() {
    QFETCH(QByteArray, json);
    QFETCH(bool, one_hot);
    const auto config = config::ModelConfig::parse(json.toStdString(), QTest::currentDataTag());
    auto backend = backend::create_backend("cpu", {1});
    nn::Network net(config, *backend);
    const int batch = qEnvironmentVariableIntValue("GC_BATCH") > 0 ? qEnvironmentVariableIntValue("GC_BATCH") : 4;
    const auto b = make_batch(net.config(), batch, one_hot, 99);
    const std::uint64_t seed = 5;

    net.compute_gradients(b.x.data(), b.t.data(), batch, seed);
    const auto analytic = net.get_gradients();
    auto params = net.get_params();
    auto loss_with = [&](std::size_t i, float value) {
        const float saved = params[i];
        params[i] = value;
        net.set_params(params);
        const double l = net.loss(b.x.data(), b.t.data(), batch, seed, backend::Mode::Training);
        params[i] = saved;
        return l;
    };
    const double base = loss_with(0, params[0]);
    const double noise = kLossNoise * std::max(1.0, std::abs(base));

    const bool verbose = qEnvironmentVariableIsSet("GC_VERBOSE");
    int checked = 0, kinks = 0, failed = 0;
    double worst_block = 0;  // the largest block's relative error, reported per row
    QStringList problems;
    for (const auto& block : blocks_of(net.config())) {
        int block_failed = 0;
        double worst = 0, diff2 = 0, an2 = 0, fd2 = 0;
        QString worst_text;
        for (std::size_t i = block.offset; i < block.offset + block.size; ++i) {
            const double an = analytic[i];
            const ParamCheck c = check_param(an, params[i], noise,
                                             [&](float value) { return loss_with(i, value); }, base);
            ++checked;
            if (verbose)
                qDebug().noquote() << QString("%1 %2 param %3: analytic %4, %5")
                                          .arg(block.name).arg(QTest::currentDataTag()).arg(i).arg(an, 0, 'g', 7)
                                          .arg(c.text);
            if (c.verdict == Verdict::Kink) {
                ++kinks;
                continue;
            }
            diff2 += (c.fd - an) * (c.fd - an);
            an2 += an * an;
            fd2 += c.fd * c.fd;
            if (c.verdict == Verdict::Wrong) {
                ++block_failed;
                if (c.excess > worst) {
                    worst = c.excess;
                    worst_text = QString("param %1: analytic %2, %3").arg(i).arg(an, 0, 'g', 7).arg(c.text);
                }
            }
        }
        // Over the whole block: a gradient scaled by 1 + δ misses by δ/(1 + δ) here whatever the
        // size of its entries, so small entries (where the absolute tolerance dominates) count too.
        const double norm_err = std::sqrt(diff2) / std::max({std::sqrt(an2), std::sqrt(fd2), 1e-30});
        worst_block = std::max(worst_block, norm_err);
        const bool norm_bad = norm_err > kRtol && std::sqrt(diff2) > noise / kSteps[0] * std::sqrt(double(block.size));
        if (block_failed || norm_bad) {
            failed += block_failed;
            problems << QString("%1: %2 of %3 parameters disagree, relative error of the block %4%5")
                            .arg(block.name).arg(block_failed).arg(block.size).arg(norm_err, 0, 'g', 3)
                            .arg(worst_text.isEmpty() ? QString() : "; worst " + worst_text);
        }
    }
    net.set_params(params);
    qInfo("%d parameters, %d at a kink; largest relative error of a block %.2g", checked, kinks, worst_block);
    QVERIFY2(checked > 0, "no trainable parameters were checked");
    QVERIFY2(problems.isEmpty(), qPrintable(problems.join("\n")));
    // A kink excuses a parameter only where one is shown; when many are, the row tests little.
    QVERIFY2(kinks * 10 <= checked,
             qPrintable(QString("%1 of %2 parameters sit at a kink: choose inputs away from them").arg(kinks).arg(checked)));
}

// seq_spec.md's masking rule: whatever sits at a padded step (input values, ids, targets), the
// loss and every gradient are the same, and an embedding row only padded steps name gets none.
void TestGradientCheck::padded_steps_change_nothing() {
    const auto values = config::ModelConfig::parse(R"({"input":{"steps":5,"features":3},"layers":[
        {"type":"convolution1d","filters":3,"kernel":3,"mode":"same","activation":"tanh"},
        {"type":"gru","units":3,"return_sequences":true,"bidirectional":"sum"},
        {"type":"lstm","units":3,"return_sequences":true,"bidirectional":"concat"},
        {"type":"dense","units":4,"activation":"sigmoid"},
        {"type":"output","units":2,"activation":"softmax"}]})", "values");
    const auto ids = config::ModelConfig::parse(R"({"input":{"steps":5,"features":1},"layers":[
        {"type":"embedding","vocabulary":7,"units":3},
        {"type":"simple_rnn","units":3,"return_sequences":true,"bidirectional":"mul"},
        {"type":"subsampling","pooling":"avg","global":true},
        {"type":"output","units":2,"activation":"softmax"}]})", "ids");
    for (const auto* config : {&values, &ids}) {
        auto backend = backend::create_backend("cpu", {1});
        nn::Network net(*config, *backend);
        const int batch = 4;
        auto b = make_batch(net.config(), batch, true, 3);
        if (config == &ids)  // id 6 is for padded steps only
            for (auto& v : b.x)
                if (v == 6.f) v = 0.f;
        const double loss = net.compute_gradients(b.x.data(), b.t.data(), batch, 1);
        const auto grads = net.get_gradients();
        // Sample 2 has length 3 (make_batch): change its steps 3 and 4 (ids: to the unused id 6),
        // and its per-step targets there.
        const auto& shape = net.config().input;
        const std::size_t row = net.config().input_size();
        QCOMPARE(b.x[2 * row], 3.f);
        for (int t = 3; t < shape.t; ++t)
            for (int f = 0; f < shape.c; ++f) b.x[2 * row + 1 + static_cast<std::size_t>(t) * shape.c + f] = config == &ids ? 6.f : 7.5f + t - f;
        const auto& out = net.config().main_output();
        if (out.out_shape.sequence()) {
            const auto k = static_cast<std::size_t>(out.units);
            for (std::size_t j = 3 * k; j < 5 * k; ++j) b.t[2 * net.config().target_size() + j] = 0.5f;
        }
        const double changed = net.compute_gradients(b.x.data(), b.t.data(), batch, 1);
        QCOMPARE(changed, loss);
        const auto changed_grads = net.get_gradients();
        QVERIFY2(changed_grads == grads, config->layers[0].label(0).c_str());
        if (config == &ids) {
            const auto& e = net.config().layers[0];
            for (std::size_t j = 0; j < 3; ++j) QCOMPARE(changed_grads[e.param_offset + 6 * 3 + j], 0.f);
            // Row 6 is read nowhere valid; rows that are read get gradient.
            double read = 0;
            for (std::size_t j = 0; j < 6 * 3; ++j) read += std::abs(changed_grads[e.param_offset + j]);
            QVERIFY(read > 0);
        }
        // And a valid step does matter (the test could not pass by ignoring the input).
        b.x[2 * row + 1] = config == &ids ? 4.f : b.x[2 * row + 1] + 1.f;
        b.x[2 * row + 1 + 1] = config == &ids ? 4.f : b.x[2 * row + 2] + 1.f;
        QVERIFY(net.compute_gradients(b.x.data(), b.t.data(), batch, 1) != loss);
    }
}

QTEST_APPLESS_MAIN(TestGradientCheck)
#include "test_gradient_check.moc"
