// Every backend this build registers, op by op, against plain double-precision loops
// (reference_ops.h) and, for backends other than the CPU, against the CPU backend itself: forward
// and backward of dense (each activation), convolution (padding, stride, dilation, DL4J's
// asymmetric Same padding), max and average pooling (with padding), batch normalisation
// (training, inference, backward), activations including softmax, dropout (the same mask from
// the same seed, bit for bit), the small vector ops, every updater over several iterations, and
// a few training steps of whole networks (every layer type; standalone activations; zero
// padding, cropping and upsampling), recurrent layers (every cell and merge the backend plans,
// against the CPU backend), the embedding lookup and pooling along time (against loops here),
// and a network of every sequence layer.
//
// Rows are per device ("cpu", "cuda:0", ...). A row whose device this machine does not have
// skips with the reason ("no CUDA device: ..."), so the suite passes on GPU-less CI and runs for
// real where a GPU is present. Tolerance: |got - want| <= 1e-4·|want| + 1e-4·max|want| (float
// sums in another order, cuDNN's algorithms, exp/tanh of another maths library).
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>

#include "backend/registry.h"
#include "core/error.h"
#include "nn/network.h"
#include "reference_ops.h"

using namespace thresher;
using namespace thresher::backend;
using reference::Vec;

namespace {

constexpr double kTolerance = 1e-4;

Vec random_vec(std::size_t n, unsigned seed, float lo = -1.f, float hi = 1.f) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    Vec v(n);
    for (auto& x : v) x = dist(gen);
    return v;
}

// "" when every element is within tolerance, else the first offender and the worst error.
QString compare(const char* what, const Vec& got, const Vec& want, double tol = kTolerance) {
    if (got.size() != want.size())
        return QString("%1: %2 values, expected %3").arg(what).arg(got.size()).arg(want.size());
    double scale = 0;
    for (float w : want) scale = std::max(scale, std::abs(double(w)));
    std::size_t bad = got.size(), worst = 0;
    double worst_err = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double err = std::abs(double(got[i]) - want[i]);
        const bool ok = err <= tol * std::abs(double(want[i])) + tol * scale;  // false for NaN
        if (!ok && bad == got.size()) bad = i;
        if (!(err <= worst_err)) worst_err = err, worst = i;
    }
    if (bad == got.size()) return {};
    return QString("%1[%2] = %3, expected %4 (worst: [%5] off by %6, scale %7)")
        .arg(what).arg(bad).arg(got[bad], 0, 'g', 9).arg(want[bad], 0, 'g', 9)
        .arg(worst).arg(worst_err, 0, 'g', 3).arg(scale, 0, 'g', 3);
}

#define EXPECT_CLOSE(...)                                      \
    do {                                                       \
        const QString problem_ = compare(__VA_ARGS__);         \
        QVERIFY2(problem_.isEmpty(), qPrintable(problem_));    \
    } while (false)

// Backend memory for a test: uploads, zeroed outputs, downloads.
class On {
public:
    explicit On(Backend& be) : be_(be) {}
    float* put(const Vec& v) {
        keep_.emplace_back(be_, v.size());
        be_.upload(keep_.back().data(), v.data(), v.size());
        return keep_.back().data();
    }
    float* zeros(std::size_t n) {
        keep_.emplace_back(be_, n);
        return keep_.back().data();
    }
    Vec get(const float* p, std::size_t n) {
        Vec v(n);
        be_.download(v.data(), p, n);
        return v;
    }
    Backend& backend() { return be_; }

private:
    Backend& be_;
    std::vector<Buffer> keep_;
};

const char* activation_name(Activation a) {
    switch (a) {
        case Activation::Identity: return "identity";
        case Activation::Relu: return "relu";
        case Activation::LeakyRelu: return "leakyrelu";
        case Activation::Tanh: return "tanh";
        case Activation::Sigmoid: return "sigmoid";
        case Activation::Softmax: return "softmax";
        case Activation::Elu: return "elu";
        case Activation::Selu: return "selu";
        case Activation::Relu6: return "relu6";
        case Activation::HardSigmoid: return "hardsigmoid";
        case Activation::Softplus: return "softplus";
        case Activation::Softsign: return "softsign";
        case Activation::ThresholdedRelu: return "thresholdedrelu";
        case Activation::Swish: return "swish";
        case Activation::Gelu: return "gelu";
        case Activation::GeluTanh: return "gelu_tanh";
        case Activation::GeluSigmoid: return "gelu_sigmoid";
    }
    return "?";
}

constexpr Activation kActivations[] = {Activation::Identity, Activation::Relu,     Activation::LeakyRelu,
                                       Activation::Tanh,     Activation::Sigmoid,  Activation::Softmax,
                                       Activation::Elu,      Activation::Selu,     Activation::Relu6,
                                       Activation::HardSigmoid, Activation::Softplus, Activation::Softsign,
                                       Activation::ThresholdedRelu, Activation::Swish, Activation::Gelu,
                                       Activation::GeluTanh, Activation::GeluSigmoid};

int conv_out(int in, int k, int s, int d, int pad_before, int pad_after) {
    return (in + pad_before + pad_after - ((k - 1) * d + 1)) / s + 1;
}

}  // namespace

class TestBackendParity : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void device_listing();
    void memory_data() { device_rows(); }
    void memory();
    void elementwise_data() { device_rows(); }
    void elementwise();
    void dropout_data() { device_rows(); }
    void dropout();
    void spatial_dropout_data() { device_rows(); }
    void spatial_dropout();
    void softmax_channels_data() { device_rows(); }
    void softmax_channels();
    void activations_data();
    void activations();
    void dense_data();
    void dense();
    void conv_data();
    void conv();
    void pool_data();
    void pool();
    void batch_norm_data();
    void batch_norm();
    void updaters_data();
    void updaters();
    void prelu_data();
    void prelu();
    void network_steps_data();
    void network_steps();
    void sequences_data() { device_rows(); }
    void sequences();
    void recurrent_data();
    void recurrent();
    void embedding_data() { device_rows(); }
    void embedding();
    void time_pool_data();
    void time_pool();
    void sequence_network_data() { device_rows(); }
    void sequence_network();

private:
    // One row per device of every registered backend: "cpu", "cuda:0", ...; `suffix` names the
    // variant, and `add` appends the variant's columns.
    template <class Add>
    void device_rows(const char* suffix, Add add) {
        for (const auto& kind : registered_backends()) {
            const QString device = kind == "cpu" ? QString("cpu") : QString::fromStdString(kind + ":0");
            add(QTest::newRow(qPrintable(device + (suffix[0] ? " " : "") + suffix)) << device);
        }
    }
    void device_rows() {
        QTest::addColumn<QString>("device");
        device_rows("", [](QTestData&) {});
    }
    // The backend for a row, or null with the reason to skip.
    std::unique_ptr<Backend> open(const QString& device, QString& why);

    std::unique_ptr<Backend> cpu_;
};

#define OPEN_OR_SKIP(be, device)                          \
    QString why_;                                         \
    auto be = open(device, why_);                         \
    if (!be) QSKIP(qPrintable(why_));                     \
    [[maybe_unused]] const bool is_cpu_ = (device) == "cpu"

void TestBackendParity::initTestCase() { cpu_ = create_backend("cpu", {2}); }

std::unique_ptr<Backend> TestBackendParity::open(const QString& device, QString& why) {
    try {
        return create_backend(device.toStdString(), {2});
    } catch (const Error& e) {
        if (device == "cpu") throw;  // the reference must always be there
        why = QString("no %1 device: %2").arg(device.section(':', 0, 0).toUpper(), e.what());
        return nullptr;
    }
}

void TestBackendParity::device_listing() {
    // `thresher-engine devices` prints this list: cpu always, one entry per GPU (none without).
    const auto devices = list_devices();
    QVERIFY(!devices.empty());
    QCOMPARE(devices.front().name, std::string("cpu"));
    for (const auto& d : devices) {
        if (d.name.rfind("cuda:", 0) != 0) continue;
        QVERIFY2(d.description.find("compute capability") != std::string::npos, d.description.c_str());
        QVERIFY2(d.description.find("GiB") != std::string::npos, d.description.c_str());
        auto be = create_backend(d.name);  // every listed device opens
        QCOMPARE(be->info().name, d.name);
        QVERIFY(!be->host_memory());
    }
    const auto kinds = registered_backends();
    if (std::find(kinds.begin(), kinds.end(), "cuda") != kinds.end()) {
        try {
            create_backend("cuda:99");
            QFAIL("cuda:99 opened");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("cuda:99"), e.what());
        }
    }
}

void TestBackendParity::memory() {
    QFETCH(QString, device);
    OPEN_OR_SKIP(be, device);
    QCOMPARE(QString::fromStdString(be->info().name), device);
    QCOMPARE(be->host_memory(), is_cpu_);
    const std::size_t n = 1000;
    Buffer a(*be, n), b(*be, n);
    Vec host(n, 1.f);
    be->download(host.data(), a.data(), n);
    QVERIFY2(std::all_of(host.begin(), host.end(), [](float v) { return v == 0.f; }), "allocate() is not zero-filled");

    const Vec x = random_vec(n, 1);
    be->upload(a.data(), x.data(), n);
    be->copy(b.data(), a.data(), n);
    be->download(host.data(), b.data(), n);
    QCOMPARE(host, x);

    // Overlapping copy: memmove semantics.
    be->copy(a.data() + 1, a.data(), n - 1);
    be->download(host.data(), a.data(), n);
    Vec shifted = x;
    std::copy_backward(x.begin(), x.end() - 1, shifted.end());
    QCOMPARE(host, shifted);

    be->fill(b.data() + 10, -2.5f, 20);
    be->download(host.data(), b.data(), n);
    for (std::size_t i = 0; i < n; ++i) QCOMPARE(host[i], i >= 10 && i < 30 ? -2.5f : x[i]);

    // stage_input: a device view of host data, valid until the next call.
    const Vec y = random_vec(n, 2);
    const float* staged = be->stage_input(x.data(), n);
    be->download(host.data(), staged, n);
    QCOMPARE(host, x);
    staged = be->stage_input(y.data(), n / 2);
    be->download(host.data(), staged, n / 2);
    QVERIFY(std::equal(y.begin(), y.begin() + n / 2, host.begin()));
}

void TestBackendParity::elementwise() {
    QFETCH(QString, device);
    OPEN_OR_SKIP(be, device);
    On on(*be);
    const std::size_t n = 777;
    const Vec a = random_vec(n, 3), b = random_vec(n, 4);
    Vec product(n), axpy = b, blend = a;
    for (std::size_t i = 0; i < n; ++i) {
        product[i] = a[i] * b[i];
        axpy[i] += 0.3f * a[i];
        blend[i] = 0.9f * a[i] + (1.f - 0.9f) * b[i];
    }
    float* pa = on.put(a);
    float* pb = on.put(b);
    float* out = on.zeros(n);
    be->multiply(pa, pb, out, n);
    EXPECT_CLOSE("multiply", on.get(out, n), product, 1e-6);
    float* y = on.put(b);
    be->axpy(0.3f, pa, y, n);
    EXPECT_CLOSE("axpy", on.get(y, n), axpy, 1e-6);
    float* running = on.put(a);
    be->blend(running, pb, 0.9f, n);
    EXPECT_CLOSE("blend", on.get(running, n), blend, 1e-6);
    // Graph vertices: the maximum and its backward, and a strided copy (7 runs of 37 of 111).
    Vec mx(n), routed(n);
    for (std::size_t i = 0; i < n; ++i) {
        mx[i] = std::max(a[i], b[i]);
        routed[i] = a[i] == mx[i] ? b[i] : 0.f;
    }
    float* pm = on.zeros(n);
    be->maximum(pa, pb, pm, n);
    EXPECT_CLOSE("maximum", on.get(pm, n), mx, 0.0);
    float* pr = on.zeros(n);
    be->max_route(pa, pm, pb, pr, n);
    EXPECT_CLOSE("max_route", on.get(pr, n), routed, 0.0);
    Vec rows(n, 0.f);
    for (std::size_t r = 0; r < 7; ++r)
        for (std::size_t k = 0; k < 37; ++k) rows[r * 111 + 5 + k] = a[r * 37 + k];
    float* pc = on.zeros(n);
    be->copy_rows(pc + 5, 111, pa, 37, 37, 7);
    EXPECT_CLOSE("copy_rows", on.get(pc, n), rows, 0.0);
    // Reshape/permute's gather through an index map (a reversal with a stride, 7 rows of 111),
    // and its scatter back: the round trip restores the input.
    std::vector<std::uint32_t> map(111);
    for (std::uint32_t j = 0; j < 111; ++j) map[j] = (j * 22 + 5) % 111;  // gcd(22, 111) = 1: a permutation
    Vec gathered(n, 0.f);
    for (std::size_t r = 0; r < 7; ++r)
        for (std::size_t j = 0; j < 111; ++j) gathered[r * 111 + j] = a[r * 111 + map[j]];
    auto op = be->make_gather(map);
    float* pg = on.zeros(n);
    op->forward(pa, pg, 7);
    EXPECT_CLOSE("gather", on.get(pg, n), gathered, 0.0);
    float* ps = on.zeros(n);
    op->backward(pg, ps, 7);
    Vec back(n, 0.f);
    std::copy_n(a.begin(), 7 * 111, back.begin());
    EXPECT_CLOSE("gather backward", on.get(ps, n), back, 0.0);
}

void TestBackendParity::dropout() {
    QFETCH(QString, device);
    OPEN_OR_SKIP(be, device);
    On on(*be);
    const std::size_t n = 5000;
    const float retain = 0.7f;
    const Vec x = random_vec(n, 5);
    float* y = on.zeros(n);
    float* mask = on.zeros(n);
    be->dropout_forward(on.put(x), y, mask, n, retain, 42);
    // The same seed gives the same mask on every backend, bit for bit.
    const Vec want = reference::dropout_mask(n, retain, 42);
    QCOMPARE(on.get(mask, n), want);
    Vec yw(n);
    for (std::size_t i = 0; i < n; ++i) yw[i] = x[i] * want[i];
    QCOMPARE(on.get(y, n), yw);
    const auto kept = std::count_if(want.begin(), want.end(), [](float m) { return m != 0.f; });
    QVERIFY2(std::abs(double(kept) / n - retain) < 0.03, "the mask keeps the wrong fraction");
}

void TestBackendParity::spatial_dropout() {
    // Spatial dropout: one draw per group (a channel of a sample), the draw element i / group
    // would get, so every backend keeps or drops the same channels.
    QFETCH(QString, device);
    OPEN_OR_SKIP(be, device);
    On on(*be);
    const std::size_t groups = 300, group = 20, n = groups * group;
    const float retain = 0.6f;
    const Vec x = random_vec(n, 6);
    float* y = on.zeros(n);
    float* mask = on.zeros(n);
    be->dropout_forward(on.put(x), y, mask, n, retain, 43, group);
    const Vec draws = reference::dropout_mask(groups, retain, 43);
    Vec want(n), yw(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = draws[i / group], yw[i] = x[i] * want[i];
    QCOMPARE(on.get(mask, n), want);
    QCOMPARE(on.get(y, n), yw);
}

void TestBackendParity::softmax_channels() {
    // A softmax over the channels of each pixel of [3 x 5 x 7x6] (a segmentation output), large
    // logits included (the maximum is subtracted first), in place as the convolution runs it.
    QFETCH(QString, device);
    OPEN_OR_SKIP(be, device);
    On on(*be);
    const int batch = 3, channels = 5, pixels = 42;
    const std::size_t n = std::size_t(batch) * channels * pixels;
    Vec x = random_vec(n, 8);
    for (std::size_t i = 0; i < n; i += 17) x[i] *= 200.f;
    Vec want(n);
    for (int b = 0; b < batch; ++b)
        for (int p = 0; p < pixels; ++p) {
            auto at = [&](int c) { return std::size_t(b) * channels * pixels + std::size_t(c) * pixels + std::size_t(p); };
            double m = x[at(0)], sum = 0;
            for (int c = 1; c < channels; ++c) m = std::max<double>(m, x[at(c)]);
            for (int c = 0; c < channels; ++c) sum += std::exp(x[at(c)] - m);
            for (int c = 0; c < channels; ++c) want[at(c)] = float(std::exp(x[at(c)] - m) / sum);
        }
    float* y = on.put(x);
    be->softmax_channels(y, y, batch, channels, pixels);
    EXPECT_CLOSE("softmax over channels", on.get(y, n), want, 1e-6);
}

void TestBackendParity::activations_data() {
    QTest::addColumn<QString>("device");
    QTest::addColumn<int>("kind");
    for (Activation a : kActivations)
        device_rows(activation_name(a), [a](QTestData& row) { row << int(a); });
}

void TestBackendParity::activations() {
    QFETCH(QString, device);
    QFETCH(int, kind);
    OPEN_OR_SKIP(be, device);
    const ActivationSpec act{static_cast<Activation>(kind), 0.05f};
    const int rows = 7, cols = 13;
    const std::size_t n = rows * cols;
    const Vec x = random_vec(n, 6, -3.f, 3.f), dy = random_vec(n, 7);
    auto run = [&](Backend& b) {
        On on(b);
        float* y = on.zeros(n);
        const float* px = on.put(x);
        b.activation_forward(act, px, y, rows, cols);
        float* d = on.put(dy);
        // In place, as the layers call it; swish and gelu from the pre-activation.
        b.activation_backward(act, derivative_from_input(act.kind) ? px : y, d, d, rows, cols);
        return std::pair{on.get(y, n), on.get(d, n)};
    };
    const auto [y, dz] = run(*be);
    const Vec y_ref = reference::activation_forward(act, x, rows, cols);
    EXPECT_CLOSE("y", y, y_ref);
    EXPECT_CLOSE("dz", dz, reference::activation_backward(act, derivative_from_input(act.kind) ? x : y_ref, dy, rows, cols));
    if (!is_cpu_) {
        const auto [yc, dzc] = run(*cpu_);
        EXPECT_CLOSE("y vs cpu", y, yc);
        EXPECT_CLOSE("dz vs cpu", dz, dzc);
    }
}

void TestBackendParity::prelu_data() {
    QTest::addColumn<QString>("device");
    QTest::addColumn<int>("shared");  // bit 0 channels, 1 height, 2 width
    for (int shared : {0, 6, 4, 1, 7})
        device_rows(qPrintable("shared " + QString::number(shared)), [shared](QTestData& row) { row << shared; });
}

// PReLU against plain loops (y, dx, and dalpha summed over the batch and the shared axes).
// A backend without the kernels must say so and refuse, not compute something else.
void TestBackendParity::prelu() {
    QFETCH(QString, device);
    QFETCH(int, shared);
    OPEN_OR_SKIP(be, device);
    const PReluDesc d{3, 4, 5, 3, (shared & 1) != 0, (shared & 2) != 0, (shared & 4) != 0};
    const int ac = d.shared_c ? 1 : d.c, ah = d.shared_h ? 1 : d.h, aw = d.shared_w ? 1 : d.w;
    const std::size_t n = std::size_t(d.batch) * d.c * d.h * d.w, na = std::size_t(ac) * ah * aw;
    const Vec x = random_vec(n, 21, -2.f, 2.f), alpha = random_vec(na, 22), dy = random_vec(n, 23);
    if (!be->has_prelu()) {
        On on(*be);
        float* y = on.zeros(n);
        try {
            be->prelu_forward(d, on.put(x), on.put(alpha), y);
            QFAIL("a backend without PReLU kernels computed a PReLU");
        } catch (const std::runtime_error& e) {
            QVERIFY2(QString(e.what()).contains("PReLU"), e.what());
        }
        return;
    }
    On on(*be);
    float* y = on.zeros(n);
    float* dx = on.zeros(n);
    float* da = on.zeros(na);
    const float* px = on.put(x);
    const float* pa = on.put(alpha);
    be->prelu_forward(d, px, pa, y);
    be->prelu_backward(d, px, pa, on.put(dy), dx, da);
    Vec y_ref(n), dx_ref(n);
    std::vector<double> da_ref(na, 0.0);
    for (int b = 0; b < d.batch; ++b)
        for (int c = 0; c < d.c; ++c)
            for (int h = 0; h < d.h; ++h)
                for (int w = 0; w < d.w; ++w) {
                    const std::size_t i = ((std::size_t(b) * d.c + c) * d.h + h) * d.w + w;
                    const std::size_t a = (std::size_t(d.shared_c ? 0 : c) * ah + (d.shared_h ? 0 : h)) * aw + (d.shared_w ? 0 : w);
                    y_ref[i] = x[i] > 0 ? x[i] : alpha[a] * x[i];
                    dx_ref[i] = x[i] > 0 ? dy[i] : alpha[a] * dy[i];
                    if (x[i] <= 0) da_ref[a] += double(dy[i]) * x[i];
                }
    EXPECT_CLOSE("y", on.get(y, n), y_ref);
    EXPECT_CLOSE("dx", on.get(dx, n), dx_ref);
    EXPECT_CLOSE("dalpha", on.get(da, na), Vec(da_ref.begin(), da_ref.end()));
}

void TestBackendParity::dense_data() {
    QTest::addColumn<QString>("device");
    QTest::addColumn<int>("kind");
    for (Activation a : kActivations)
        device_rows(activation_name(a), [a](QTestData& row) { row << int(a); });
}

void TestBackendParity::dense() {
    QFETCH(QString, device);
    QFETCH(int, kind);
    OPEN_OR_SKIP(be, device);
    const DenseDesc d{9, 37, 11, {static_cast<Activation>(kind), 0.05f}};
    const Vec x = random_vec(std::size_t(d.batch) * d.in, 8), w = random_vec(std::size_t(d.in) * d.out, 9),
              b = random_vec(d.out, 10), dz = random_vec(std::size_t(d.batch) * d.out, 11);
    auto run = [&](Backend& be_) {
        On on(be_);
        auto op = be_.make_dense(d);
        float* px = on.put(x);
        float* pw = on.put(w);
        float* y = on.zeros(dz.size());
        float* dx = on.zeros(x.size());
        float* dw = on.zeros(w.size());
        float* db = on.zeros(b.size());
        op->forward(px, pw, on.put(b), y);
        op->backward(px, pw, on.put(dz), dx, dw, db);
        return std::vector<Vec>{on.get(y, dz.size()), on.get(dx, x.size()), on.get(dw, w.size()),
                                on.get(db, b.size())};
    };
    const auto got = run(*be);
    const auto g = reference::dense_backward(d, x, w, dz);
    const std::vector<Vec> want{reference::dense_forward(d, x, w, b), g.dx, g.dw, g.db};
    const char* names[] = {"y", "dx", "dw", "db"};
    for (int i = 0; i < 4; ++i) EXPECT_CLOSE(names[i], got[i], want[i]);
    if (!is_cpu_) {
        const auto cpu = run(*cpu_);
        for (int i = 0; i < 4; ++i) EXPECT_CLOSE(names[i], got[i], cpu[i]);
    }
}

void TestBackendParity::conv_data() {
    QTest::addColumn<QString>("device");
    QTest::addColumn<QVector<int>>("shape");  // in_c in_h in_w out_c kh kw sh sw dh dw pt pl pb pr act
    const std::vector<std::pair<const char*, QVector<int>>> cases{
        {"3x3 pad 1 relu", {3, 7, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, int(Activation::Relu)}},
        {"5x3 stride 2x1 tanh", {2, 9, 8, 5, 5, 3, 2, 1, 1, 1, 0, 0, 0, 0, int(Activation::Tanh)}},
        {"dilation 2 pad 2", {3, 8, 8, 2, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, int(Activation::Identity)}},
        {"same asymmetric", {2, 7, 7, 3, 4, 4, 2, 2, 1, 1, 1, 1, 2, 2, int(Activation::LeakyRelu)}},
        {"same asymmetric stride 1", {1, 6, 5, 2, 2, 2, 1, 1, 1, 1, 0, 0, 1, 1, int(Activation::Sigmoid)}},
        {"1x1", {6, 4, 4, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, int(Activation::Identity)}},
        // Activations oneDNN does not fuse: applied after the convolution.
        {"3x3 elu", {2, 6, 6, 3, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, int(Activation::Elu)}},
        {"3x3 swish", {2, 6, 6, 3, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, int(Activation::Swish)}},
        {"3x3 gelu", {2, 6, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, int(Activation::Gelu)}},
        {"3x3 pad 1 softsign", {2, 6, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, int(Activation::Softsign)}},
        // Grouped (the 16th number): depthwise (groups = in_c, multiplier 2) and two groups.
        {"depthwise x2 3x3 same relu", {3, 7, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, int(Activation::Relu), 3}},
        {"depthwise stride 2 asymmetric", {4, 8, 8, 4, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, int(Activation::Tanh), 4}},
        {"2 groups 2x2", {4, 6, 6, 6, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, int(Activation::Identity), 2}},
    };
    for (const auto& [name, shape] : cases)
        device_rows(name, [&shape](QTestData& row) { row << shape; });
}

void TestBackendParity::conv() {
    QFETCH(QString, device);
    QFETCH(QVector<int>, shape);
    OPEN_OR_SKIP(be, device);
    ConvDesc d;
    d.batch = 3;
    d.in_c = shape[0], d.in_h = shape[1], d.in_w = shape[2], d.out_c = shape[3];
    d.kh = shape[4], d.kw = shape[5], d.sh = shape[6], d.sw = shape[7], d.dh = shape[8], d.dw = shape[9];
    d.pad_t = shape[10], d.pad_l = shape[11], d.pad_b = shape[12], d.pad_r = shape[13];
    d.act = {static_cast<Activation>(shape[14]), 0.05f};
    d.groups = shape.size() > 15 ? shape[15] : 1;
    d.out_h = conv_out(d.in_h, d.kh, d.sh, d.dh, d.pad_t, d.pad_b);
    d.out_w = conv_out(d.in_w, d.kw, d.sw, d.dw, d.pad_l, d.pad_r);
    const std::size_t nx = std::size_t(d.batch) * d.in_c * d.in_h * d.in_w;
    const std::size_t nw = std::size_t(d.out_c) * (d.in_c / d.groups) * d.kh * d.kw;
    const std::size_t ny = std::size_t(d.batch) * d.out_c * d.out_h * d.out_w;
    const Vec x = random_vec(nx, 12), w = random_vec(nw, 13), b = random_vec(d.out_c, 14),
              dz = random_vec(ny, 15);
    auto run = [&](Backend& be_) {
        On on(be_);
        auto op = be_.make_conv(d);
        float* px = on.put(x);
        float* pw = on.put(w);
        float* y = on.zeros(ny);
        float* dx = on.zeros(nx);
        float* dw = on.zeros(nw);
        float* db = on.zeros(b.size());
        op->forward(px, pw, on.put(b), y);
        op->backward(px, pw, on.put(dz), dx, dw, db);
        const Vec dx_first = on.get(dx, nx);
        op->backward(px, pw, on.put(dz), nullptr, dw, db);  // the first layer: no dx
        return std::vector<Vec>{on.get(y, ny), dx_first, on.get(dw, nw), on.get(db, b.size())};
    };
    const auto got = run(*be);
    const auto g = reference::conv_backward(d, x, w, dz);
    const std::vector<Vec> want{reference::conv_forward(d, x, w, b), g.dx, g.dw, g.db};
    const char* names[] = {"y", "dx", "dw", "db"};
    for (int i = 0; i < 4; ++i) EXPECT_CLOSE(names[i], got[i], want[i]);
    if (!is_cpu_) {
        const auto cpu = run(*cpu_);
        for (int i = 0; i < 4; ++i) EXPECT_CLOSE(names[i], got[i], cpu[i]);
    }
}

void TestBackendParity::pool_data() {
    QTest::addColumn<QString>("device");
    QTest::addColumn<QVector<int>>("shape");  // max in_h in_w kh kw sh sw pt pl pb pr
    const std::vector<std::pair<const char*, QVector<int>>> cases{
        {"max 2x2", {1, 8, 8, 2, 2, 2, 2, 0, 0, 0, 0}},
        {"max 3x3 stride 2 pad 1", {1, 9, 7, 3, 3, 2, 2, 1, 1, 1, 1}},
        {"max same asymmetric", {1, 8, 8, 3, 3, 2, 2, 0, 0, 1, 1}},
        {"max overlapping asymmetric", {1, 6, 7, 3, 2, 1, 1, 0, 0, 2, 1}},
        {"avg 2x2", {0, 8, 6, 2, 2, 2, 2, 0, 0, 0, 0}},
        {"avg 3x3 stride 1 pad 1", {0, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1}},
        {"avg same asymmetric", {0, 7, 5, 2, 2, 2, 2, 0, 0, 1, 1}},
    };
    for (const auto& [name, shape] : cases)
        device_rows(name, [&shape](QTestData& row) { row << shape; });
}

void TestBackendParity::pool() {
    QFETCH(QString, device);
    QFETCH(QVector<int>, shape);
    OPEN_OR_SKIP(be, device);
    PoolDesc d;
    d.batch = 2, d.c = 3;
    d.max = shape[0] != 0;
    d.in_h = shape[1], d.in_w = shape[2], d.kh = shape[3], d.kw = shape[4], d.sh = shape[5], d.sw = shape[6];
    d.pad_t = shape[7], d.pad_l = shape[8], d.pad_b = shape[9], d.pad_r = shape[10];
    d.out_h = conv_out(d.in_h, d.kh, d.sh, 1, d.pad_t, d.pad_b);
    d.out_w = conv_out(d.in_w, d.kw, d.sw, 1, d.pad_l, d.pad_r);
    const std::size_t nx = std::size_t(d.batch) * d.c * d.in_h * d.in_w;
    const std::size_t ny = std::size_t(d.batch) * d.c * d.out_h * d.out_w;
    const Vec x = random_vec(nx, 16), dy = random_vec(ny, 17);
    auto run = [&](Backend& be_) {
        On on(be_);
        auto op = be_.make_pool(d);
        float* px = on.put(x);
        float* y = on.zeros(ny);
        float* dx = on.zeros(nx);
        op->forward(px, y, Mode::Inference);
        const Vec y_inference = on.get(y, ny);
        op->forward(px, y, Mode::Training);
        op->backward(on.put(dy), dx);
        return std::vector<Vec>{y_inference, on.get(y, ny), on.get(dx, nx)};
    };
    const auto got = run(*be);
    const Vec y_ref = reference::pool_forward(d, x);
    const std::vector<Vec> want{y_ref, y_ref, reference::pool_backward(d, x, dy)};
    const char* names[] = {"y (inference)", "y (training)", "dx"};
    for (int i = 0; i < 3; ++i) EXPECT_CLOSE(names[i], got[i], want[i]);
    if (!is_cpu_) {
        const auto cpu = run(*cpu_);
        for (int i = 0; i < 3; ++i) EXPECT_CLOSE(names[i], got[i], cpu[i]);
    }
}

void TestBackendParity::batch_norm_data() {
    QTest::addColumn<QString>("device");
    QTest::addColumn<QVector<int>>("shape");  // batch c h w
    device_rows("images", [](QTestData& row) { row << QVector<int>{4, 3, 5, 6}; });
    device_rows("flat", [](QTestData& row) { row << QVector<int>{6, 7, 1, 1}; });
    device_rows("one sample", [](QTestData& row) { row << QVector<int>{1, 2, 3, 3}; });
    device_rows("one value per channel", [](QTestData& row) { row << QVector<int>{1, 4, 1, 1}; });
}

void TestBackendParity::batch_norm() {
    QFETCH(QString, device);
    QFETCH(QVector<int>, shape);
    OPEN_OR_SKIP(be, device);
    const BatchNormDesc d{shape[0], shape[1], shape[2], shape[3], 1e-5f};
    const std::size_t n = std::size_t(d.batch) * d.c * d.h * d.w, c = std::size_t(d.c);
    Vec x = random_vec(n, 18, -2.f, 3.f);
    const Vec gamma = random_vec(c, 19, 0.5f, 1.5f), beta = random_vec(c, 20), dy = random_vec(n, 21),
              run_mean = random_vec(c, 22), run_var = random_vec(c, 23, 0.5f, 2.f);
    auto run = [&](Backend& be_) {
        On on(be_);
        auto op = be_.make_batch_norm(d);
        float* px = on.put(x);
        float* pg = on.put(gamma);
        float* pb = on.put(beta);
        float* y = on.zeros(n);
        float* mean = on.zeros(c);
        float* var = on.zeros(c);
        float* yi = on.zeros(n);
        float* dx = on.zeros(n);
        float* dg = on.zeros(c);
        float* db = on.zeros(c);
        op->forward_training(px, pg, pb, y, mean, var);
        op->forward_inference(px, pg, pb, on.put(run_mean), on.put(run_var), yi);
        op->backward(px, on.put(dy), pg, pb, mean, var, dx, dg, db);
        return std::vector<Vec>{on.get(y, n),  on.get(mean, c), on.get(var, c), on.get(yi, n),
                                on.get(dx, n), on.get(dg, c),   on.get(db, c)};
    };
    const auto got = run(*be);
    const auto f = reference::batch_norm_training(d, x, gamma, beta);
    const auto g = reference::batch_norm_backward(d, x, dy, gamma, f.mean, f.var);
    const std::vector<Vec> want{f.y,  f.mean,   f.var, reference::batch_norm_inference(d, x, gamma, beta, run_mean, run_var),
                                g.dx, g.dgamma, g.dbeta};
    const char* names[] = {"y", "batch mean", "batch var", "y (inference)", "dx", "dgamma", "dbeta"};
    for (int i = 0; i < 7; ++i) EXPECT_CLOSE(names[i], got[i], want[i]);
    if (!is_cpu_) {
        const auto cpu = run(*cpu_);
        for (int i = 0; i < 7; ++i) EXPECT_CLOSE(names[i], got[i], cpu[i]);
    }
}

void TestBackendParity::updaters_data() {
    QTest::addColumn<QString>("device");
    QTest::addColumn<int>("kind");
    QTest::addColumn<bool>("regularised");
    const std::pair<const char*, UpdaterKind> kinds[] = {{"sgd", UpdaterKind::Sgd},
                                                         {"nesterovs", UpdaterKind::Nesterovs},
                                                         {"adagrad", UpdaterKind::AdaGrad},
                                                         {"rmsprop", UpdaterKind::RmsProp},
                                                         {"adam", UpdaterKind::Adam}};
    for (const auto& [name, kind] : kinds)
        for (bool reg : {false, true}) {
            const QString label = QString(name) + (reg ? " l1 l2" : "");
            device_rows(qPrintable(label), [kind, reg](QTestData& row) { row << int(kind) << reg; });
        }
}

void TestBackendParity::updaters() {
    QFETCH(QString, device);
    QFETCH(int, kind);
    QFETCH(bool, regularised);
    OPEN_OR_SKIP(be, device);
    UpdaterSpec spec;
    spec.kind = static_cast<UpdaterKind>(kind);
    spec.learning_rate = spec.kind == UpdaterKind::Adam ? 0.01f : 0.1f;
    spec.epsilon = spec.kind == UpdaterKind::AdaGrad ? 1e-6f : 1e-8f;
    if (regularised) spec.l1 = 0.01f, spec.l2 = 0.05f;
    const std::size_t n = 1000;
    const std::size_t state_n = n * updater_state_per_param(spec.kind);
    const Vec params = random_vec(n, 24);
    const int steps = 5;
    auto run = [&](Backend& be_) {
        On on(be_);
        float* w = on.put(params);
        float* g = on.zeros(n);
        float* state = on.zeros(state_n);
        std::vector<Vec> updates;
        for (int t = 0; t < steps; ++t) {
            const Vec grad = random_vec(n, 100 + t);
            be_.upload(g, grad.data(), n);
            be_.updater_step(spec, g, state, w, n, t);
            updates.push_back(on.get(g, n));
        }
        updates.push_back(on.get(state, state_n));
        return updates;
    };
    const auto got = run(*be);
    std::vector<double> state(state_n, 0.0);
    for (int t = 0; t < steps; ++t) {
        const Vec grad = random_vec(n, 100 + t);
        std::vector<double> g(grad.begin(), grad.end());
        reference::updater_step(spec, g, state, params, t);
        EXPECT_CLOSE(qPrintable(QString("update %1").arg(t)), got[t], Vec(g.begin(), g.end()));
    }
    EXPECT_CLOSE("state", got[steps], Vec(state.begin(), state.end()));
    if (!is_cpu_) {
        const auto cpu = run(*cpu_);
        for (int t = 0; t <= steps; ++t)
            EXPECT_CLOSE(qPrintable(QString(t < steps ? "update %1 vs cpu" : "state vs cpu").arg(t)), got[t], cpu[t]);
    }
}

void TestBackendParity::network_steps_data() {
    QTest::addColumn<QString>("device");
    QTest::addColumn<QByteArray>("json");
    const QByteArray every_layer = R"({"input":{"channels":2,"height":9,"width":9},
        "seed":7, "updater":{"type":"nesterovs","learning_rate":0.05,"momentum":0.9}, "l2":0.001,
        "layers":[
          {"type":"convolution","filters":4,"kernel":3,"mode":"same","activation":"relu"},
          {"type":"subsampling","pooling":"max","kernel":2,"stride":2,"mode":"same"},
          {"type":"batch_norm"},
          {"type":"convolution","filters":3,"kernel":2,"activation":"tanh"},
          {"type":"subsampling","pooling":"avg","kernel":2,"stride":1},
          {"type":"dropout","retain":0.8},
          {"type":"dense","units":8,"activation":"sigmoid"},
          {"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})";
    // Standalone activation layers (issue 22): on an image, from the pre-activation (swish), and
    // last, as the output that carries the loss.
    const QByteArray activation_layers = R"({"input":{"channels":2,"height":9,"width":9},
        "seed":7, "updater":{"type":"nesterovs","learning_rate":0.05,"momentum":0.9},
        "layers":[
          {"type":"convolution","filters":4,"kernel":3,"activation":"relu"},
          {"type":"activation","activation":"elu"},
          {"type":"subsampling","pooling":"avg","kernel":2,"stride":2},
          {"type":"dense","units":8,"activation":"relu"},
          {"type":"activation","activation":"swish"},
          {"type":"dense","units":3,"activation":"tanh"},
          {"type":"activation","activation":"softmax","loss":"mcxent"}]})";
    // Zero padding (asymmetric), upsampling and cropping between convolutions (issue 22).
    const QByteArray resize_layers = R"({"input":{"channels":2,"height":9,"width":9},
        "seed":7, "updater":{"type":"nesterovs","learning_rate":0.05,"momentum":0.9},
        "layers":[
          {"type":"convolution","filters":3,"kernel":3,"stride":2,"activation":"tanh"},
          {"type":"zero_padding","padding":[1,0,2,1]},
          {"type":"upsampling","size":[2,3]},
          {"type":"cropping","cropping":[1,2,3,0]},
          {"type":"convolution","filters":2,"kernel":3,"stride":2,"activation":"relu"},
          {"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})";
    device_rows("every layer", [&](QTestData& row) { row << every_layer; });
    device_rows("activation layers", [&](QTestData& row) { row << activation_layers; });
    device_rows("resize layers", [&](QTestData& row) { row << resize_layers; });
    // A graph (issue 22): fan-out, every vertex, depthwise and separable convolutions.
    const QByteArray graph = R"({"input":{"channels":2,"height":9,"width":9},
        "seed":7, "updater":{"type":"nesterovs","learning_rate":0.05,"momentum":0.9},
        "layers":[
          {"type":"convolution","name":"stem","filters":4,"kernel":3,"mode":"same","activation":"relu"},
          {"type":"depthwise_convolution","name":"dw","depth_multiplier":2,"kernel":3,"mode":"same","activation":"tanh"},
          {"type":"separable_convolution","name":"sep","inputs":"stem","filters":8,"kernel":3,"mode":"same","activation":"sigmoid"},
          {"type":"add","name":"sum","inputs":["dw","sep"]},
          {"type":"maximum","name":"max","inputs":["sum","dw"]},
          {"type":"multiply","name":"mul","inputs":["max","sep"]},
          {"type":"subset","name":"part","inputs":"mul","channels":[2,5]},
          {"type":"concatenate","name":"cat","inputs":["part","stem"]},
          {"type":"subsampling","pooling":"avg","global":true},
          {"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})";
    device_rows("graph", [&](QTestData& row) { row << graph; });
    // A PReLU, transposed convolutions (valid; same with the asymmetric padding a 4x3 kernel at stride 2
    // gives; dilated) and the gather vertices, reshape in Keras's order and permute.
    const QByteArray transposed = R"({"input":{"channels":2,"height":9,"width":9},
        "seed":7, "updater":{"type":"nesterovs","learning_rate":0.05,"momentum":0.9},
        "layers":[
          {"type":"convolution","filters":3,"kernel":3,"stride":2,"activation":"tanh"},
          {"type":"prelu","shared_axes":["height","width"]},
          {"type":"transposed_convolution","filters":3,"kernel":[3,3],"stride":2,"activation":"relu"},
          {"type":"transposed_convolution","filters":2,"kernel":[4,3],"stride":[2,2],"mode":"same","activation":"sigmoid"},
          {"type":"transposed_convolution","filters":2,"kernel":[3,3],"padding":1,"dilation":2,"activation":"tanh"},
          {"type":"permute","axes":["channels","width","height"]},
          {"type":"reshape","shape":{"channels":4,"height":10,"width":20},"order":"channels_last"},
          {"type":"subsampling","pooling":"max","global":true},
          {"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})";
    device_rows("transposed and gather", [&](QTestData& row) { row << transposed; });
    // An image output (issue 22): spatial dropout, a transposed convolution and a convolution
    // whose softmax is over the channels of each pixel, with mcxent at every pixel.
    const QByteArray segmentation = R"({"input":{"channels":2,"height":9,"width":9},
        "seed":7, "updater":{"type":"nesterovs","learning_rate":0.05,"momentum":0.9},
        "layers":[
          {"type":"convolution","filters":4,"kernel":3,"stride":2,"activation":"relu"},
          {"type":"dropout","retain":0.7,"spatial":true},
          {"type":"transposed_convolution","filters":4,"kernel":[3,3],"stride":2,"activation":"tanh"},
          {"type":"convolution","filters":3,"kernel":1,"activation":"softmax","loss":"mcxent"}]})";
    device_rows("segmentation output", [&](QTestData& row) { row << segmentation; });
}

void TestBackendParity::network_steps() {
    // A bit of every layer, three Nesterov steps, then inference: the whole Network on the device
    // (uploads, staging, flat buffers, dropout seeds, running statistics) against the CPU backend.
    QFETCH(QString, device);
    OPEN_OR_SKIP(be, device);
    QFETCH(QByteArray, json);
    const auto config = config::ModelConfig::parse(json.toStdString(), "parity");
    const int batch = 6;
    const Vec x = random_vec(std::size_t(batch) * 2 * 9 * 9, 30);
    // One-hot rows over the outputs (an image output: over its channels at each pixel).
    const auto& out = config.main_output();
    const std::size_t k = std::size_t(config.output_size()), pixels = std::size_t(out.out_shape.h) * out.out_shape.w;
    Vec t(std::size_t(batch) * k, 0.f);
    for (int i = 0; i < batch; ++i)
        for (std::size_t p = 0; p < pixels; ++p) t[std::size_t(i) * k + std::size_t((i + p) % std::size_t(out.out_shape.c)) * pixels + p] = 1.f;
    struct Run {
        std::vector<double> losses;
        Vec params, out;
    };
    auto run = [&](Backend& be_) {
        nn::Network net(config, be_);
        Run r;
        for (int step = 0; step < 3; ++step) {
            r.losses.push_back(net.compute_gradients(x.data(), t.data(), batch, 1000 + step));
            net.compute_update(step);
            net.apply_update();
        }
        r.params = net.get_params();
        r.out.resize(t.size());
        net.predict(x.data(), batch, r.out.data());
        return r;
    };
    const Run got = run(*be);
    const Run want = run(*cpu_);  // for the cpu row: the run is reproducible
    for (int step = 0; step < 3; ++step)
        QVERIFY2(std::abs(got.losses[step] - want.losses[step]) <= kTolerance * std::abs(want.losses[step]),
                 qPrintable(QString("loss at step %1: %2, cpu %3").arg(step).arg(got.losses[step]).arg(want.losses[step])));
    EXPECT_CLOSE("parameters", got.params, want.params);
    EXPECT_CLOSE("predictions", got.out, want.out);
}

// Sequences (issue 23): per-step dense layers and a per-step loss over variable lengths (the
// network's masking: lengths split off the row, padded steps zeroed, the masked mean) run on
// every backend and agree with the CPU; an lstm network's loss and gradients agree with the CPU
// where the backend has RNN ops, and a layer it lacks (CUDA: a GRU with reset_after=false; any
// recurrent layer where has_rnn() is false) is refused when the network is planned, naming it.
void TestBackendParity::sequences() {
    QFETCH(QString, device);
    OPEN_OR_SKIP(be, device);
    const auto per_step = config::ModelConfig::parse(R"({"input":{"steps":6,"features":3},"seed":7,
        "updater":{"type":"nesterovs","learning_rate":0.05,"momentum":0.9},
        "layers":[{"type":"dense","units":5,"activation":"tanh"},{"type":"dropout","retain":0.8},
                  {"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})", "parity");
    const int batch = 4;
    const std::size_t row = per_step.input_size();
    Vec x = random_vec(std::size_t(batch) * row, 31);
    Vec t(std::size_t(batch) * per_step.target_size(), 0.f);
    for (int i = 0; i < batch; ++i) {
        const int len = 6 - i;
        x[std::size_t(i) * row] = static_cast<float>(len);
        for (int s = 0; s < 6; ++s) t[(std::size_t(i) * 6 + s) * 3 + (i + s) % 3] = s < len ? 1.f : 0.f;
    }
    auto run = [&](Backend& be_) {
        nn::Network net(per_step, be_);
        std::vector<double> losses;
        for (int step = 0; step < 3; ++step) {
            losses.push_back(net.compute_gradients(x.data(), t.data(), batch, 1000 + step));
            net.compute_update(step);
            net.apply_update();
        }
        Vec out(t.size());
        net.predict(x.data(), batch, out.data());
        return std::make_pair(losses, out);
    };
    const auto got = run(*be);
    const auto want = run(*cpu_);
    for (int step = 0; step < 3; ++step)
        QVERIFY2(std::abs(got.first[step] - want.first[step]) <= kTolerance * std::abs(want.first[step]),
                 qPrintable(QString("loss at step %1: %2, cpu %3").arg(step).arg(got.first[step]).arg(want.first[step])));
    EXPECT_CLOSE("predictions", got.second, want.second);

    const auto recurrent = config::ModelConfig::parse(R"({"input":{"steps":6,"features":3},
        "layers":[{"type":"lstm","units":4},{"type":"output","units":3}]})", "parity");
    nn::Network net(recurrent, *be);
    Vec tl(std::size_t(batch) * 3, 0.f);
    if (be->has_rnn()) {
        const double loss = net.compute_gradients(x.data(), tl.data(), batch, 1);
        nn::Network reference(recurrent, *cpu_);
        const double want_loss = reference.compute_gradients(x.data(), tl.data(), batch, 1);
        QVERIFY2(std::abs(loss - want_loss) <= kTolerance * std::abs(want_loss),
                 qPrintable(QString("lstm network loss %1, cpu %2").arg(loss).arg(want_loss)));
        EXPECT_CLOSE("lstm network gradients", net.get_gradients(), reference.get_gradients());
        if (is_cpu_) return;
        // What cuDNN lacks is refused when the network is planned, naming the layer (issue 23).
        const auto plain_gru = config::ModelConfig::parse(R"({"input":{"steps":6,"features":3},
            "layers":[{"type":"gru","units":4,"reset_after":false},{"type":"output","units":3}]})", "parity");
        nn::Network gru_net(plain_gru, *be);
        try {
            gru_net.compute_gradients(x.data(), tl.data(), batch, 1);
            QFAIL("a GRU with reset_after=false ran on a backend that refuses it");
        } catch (const ConfigError& e) {
            const QString msg = e.what();
            QVERIFY2(msg.contains("layers[0] (gru)") && msg.contains("reset_after=false") && msg.contains("CPU backend"),
                     qPrintable(msg));
        }
        return;
    }
    try {
        net.compute_gradients(x.data(), tl.data(), batch, 1);
        QFAIL("a backend without recurrent layers ran an lstm");
    } catch (const ConfigError& e) {
        const QString msg = e.what();
        QVERIFY2(msg.contains("layers[0] (lstm)") && msg.contains("no recurrent layers"), qPrintable(msg));
    }
}

void TestBackendParity::recurrent_data() {
    QTest::addColumn<QString>("device");
    QTest::addColumn<int>("cell");
    QTest::addColumn<int>("act");
    QTest::addColumn<int>("merge");
    QTest::addColumn<bool>("sequences");
    struct Variant {
        const char* name;
        RnnCell cell;
        Activation act;
        RnnMerge merge;
        bool sequences;
    };
    const Variant variants[] = {
        {"lstm", RnnCell::Lstm, Activation::Tanh, RnnMerge::None, true},
        {"gru reset_after", RnnCell::GruResetAfter, Activation::Tanh, RnnMerge::None, true},
        {"simple tanh", RnnCell::Vanilla, Activation::Tanh, RnnMerge::None, true},
        {"simple relu", RnnCell::Vanilla, Activation::Relu, RnnMerge::None, true},
        {"bidirectional lstm concat", RnnCell::Lstm, Activation::Tanh, RnnMerge::Concat, true},
        {"bidirectional gru sum", RnnCell::GruResetAfter, Activation::Tanh, RnnMerge::Sum, true},
        {"bidirectional lstm mul", RnnCell::Lstm, Activation::Tanh, RnnMerge::Mul, true},
        {"bidirectional simple average", RnnCell::Vanilla, Activation::Tanh, RnnMerge::Average, true},
        {"lstm last step", RnnCell::Lstm, Activation::Tanh, RnnMerge::None, false},
        {"bidirectional lstm concat last step", RnnCell::Lstm, Activation::Tanh, RnnMerge::Concat, false},
        {"bidirectional gru sum last step", RnnCell::GruResetAfter, Activation::Tanh, RnnMerge::Sum, false},
        {"bidirectional lstm mul last step", RnnCell::Lstm, Activation::Tanh, RnnMerge::Mul, false},
    };
    for (const Variant& v : variants)
        device_rows(v.name, [v](QTestData& row) { row << int(v.cell) << int(v.act) << int(v.merge) << v.sequences; });
}

// Recurrent layers (issue 23): zeros at padded steps on every backend, and on the others the
// CPU backend's results (it is held to PyTorch by test_rnn_reference): samples of lengths 5, 3, 1, 4 in 5 steps, forward in both modes and every
// gradient (dx, and per direction dW, dR, db). dy is random at padded steps too: they must be ignored.
void TestBackendParity::recurrent() {
    QFETCH(QString, device);
    QFETCH(int, cell);
    QFETCH(int, act);
    QFETCH(int, merge);
    QFETCH(bool, sequences);
    OPEN_OR_SKIP(be, device);
    RnnDesc d;
    d.cell = static_cast<RnnCell>(cell);
    d.act = {static_cast<Activation>(act), 0.01f};
    d.merge = static_cast<RnnMerge>(merge);
    d.return_sequences = sequences;
    d.batch = 4, d.steps = 5, d.in = 3, d.hidden = 4;
    const std::vector<int> lengths{5, 3, 1, 4};
    const int gates = d.cell == RnnCell::Lstm ? 4 : d.cell == RnnCell::Vanilla ? 1 : 3;
    const int biases = d.cell == RnnCell::GruResetAfter ? 4 : gates;
    const std::size_t gh = std::size_t(gates) * d.hidden, w_size = std::size_t(d.in) * gh,
                      r_size = std::size_t(d.hidden) * gh, b_size = std::size_t(biases) * d.hidden;
    const int dirs = d.merge == RnnMerge::None ? 1 : 2, out = d.merge == RnnMerge::Concat ? 2 * d.hidden : d.hidden;
    const std::size_t per_dir = w_size + r_size + b_size;
    const std::size_t y_size = std::size_t(d.batch) * (sequences ? d.steps : 1) * out;
    const Vec x = random_vec(std::size_t(d.batch) * d.steps * d.in, 41), params = random_vec(per_dir * dirs, 42, -0.6f, 0.6f),
              dy = random_vec(y_size, 43);
    auto run = [&](Backend& be_) {
        On on(be_);
        auto op = be_.make_rnn(d);
        float* px = on.put(x);
        float* pp = on.put(params);
        float* y_inf = on.zeros(y_size);
        float* y = on.zeros(y_size);
        float* dx = on.zeros(x.size());
        float* grads = on.zeros(params.size());
        op->forward(px, lengths.data(), pp, y_inf, Mode::Inference);
        op->forward(px, lengths.data(), pp, y, Mode::Training);
        op->backward(px, lengths.data(), pp, on.put(dy), dx, grads);
        return std::vector<Vec>{on.get(y_inf, y_size), on.get(y, y_size), on.get(dx, x.size()), on.get(grads, params.size())};
    };
    const auto got = run(*be);
    // The contract on every backend: padded steps of y and dx are zero.
    for (int n = 0; n < d.batch; ++n)
        for (int t = lengths[std::size_t(n)]; t < d.steps; ++t) {
            for (int c = 0; sequences && c < out; ++c)
                QCOMPARE(got[1][(std::size_t(n) * d.steps + t) * out + c], 0.f);
            for (int c = 0; c < d.in; ++c) QCOMPARE(got[2][(std::size_t(n) * d.steps + t) * d.in + c], 0.f);
        }
    if (is_cpu_) return;  // the reference of the other rows (test_rnn_reference holds it to PyTorch)
    const auto want = run(*cpu_);
    EXPECT_CLOSE("y (inference)", got[0], want[0]);
    EXPECT_CLOSE("y", got[1], want[1]);
    EXPECT_CLOSE("dx", got[2], want[2]);
    auto slice = [](const Vec& v, std::size_t from, std::size_t n) { return Vec(v.begin() + from, v.begin() + from + n); };
    for (int k = 0; k < dirs; ++k) {
        const std::size_t base = std::size_t(k) * per_dir;
        const QByteArray dir = k == 0 ? "" : " (reverse)";
        EXPECT_CLOSE(("dW" + dir).constData(), slice(got[3], base, w_size), slice(want[3], base, w_size));
        EXPECT_CLOSE(("dR" + dir).constData(), slice(got[3], base + w_size, r_size), slice(want[3], base + w_size, r_size));
        EXPECT_CLOSE(("db" + dir).constData(), slice(got[3], base + w_size + r_size, b_size),
                     slice(want[3], base + w_size + r_size, b_size));
    }
}

// The embedding lookup (issue 23): rows by id, zeros for -1 (a padded step), and the table's
// gradient summed by id in row order, the same sums bit for bit on every backend (each id's
// rows added in row order: no atomics on a GPU). Ids repeat, and two ids are never used.
void TestBackendParity::embedding() {
    QFETCH(QString, device);
    OPEN_OR_SKIP(be, device);
    const int rows = 14, units = 5, vocabulary = 9;
    const std::vector<int> ids{3, 0, -1, 3, 8, 3, -1, 5, 0, 2, 2, 3, 7, -1};
    const Vec table = random_vec(std::size_t(vocabulary) * units, 51), dy = random_vec(std::size_t(rows) * units, 52);
    On on(*be);
    auto op = be->make_row_gather({rows, units, vocabulary});
    float* y = on.zeros(std::size_t(rows) * units);
    float* dtable = on.put(random_vec(table.size(), 53));  // overwritten, old values must go
    op->forward(ids.data(), rows, on.put(table), y);
    op->backward(on.put(dy), dtable);
    const Vec got_y = on.get(y, std::size_t(rows) * units), got_d = on.get(dtable, table.size());
    Vec want_d(table.size(), 0.f);
    for (int r = 0; r < rows; ++r)
        for (int j = 0; j < units; ++j) {
            const std::size_t at = std::size_t(r) * units + j;
            QCOMPARE(got_y[at], ids[r] < 0 ? 0.f : table[std::size_t(ids[r]) * units + j]);
            if (ids[r] >= 0) want_d[std::size_t(ids[r]) * units + j] += dy[at];
        }
    for (std::size_t i = 0; i < want_d.size(); ++i) QCOMPARE(got_d[i], want_d[i]);
    // A shorter batch (the last one of an epoch) uses the same op.
    const std::vector<int> few{4, 4};
    op->forward(few.data(), few.size(), on.put(table), y);
    op->backward(on.put(dy), dtable);
    const Vec few_d = on.get(dtable, table.size());
    for (int j = 0; j < units; ++j) QCOMPARE(few_d[4 * std::size_t(units) + j], dy[std::size_t(j)] + dy[std::size_t(units + j)]);
    QCOMPARE(std::count(few_d.begin(), few_d.end(), 0.f), std::ptrdiff_t((vocabulary - 1) * units));
}

void TestBackendParity::time_pool_data() {
    QTest::addColumn<QString>("device");
    QTest::addColumn<bool>("max");
    QTest::addColumn<bool>("global");
    QTest::addColumn<int>("kernel");
    QTest::addColumn<int>("stride");
    QTest::addColumn<int>("pad");
    for (bool max : {true, false}) {
        const QByteArray kind = max ? "max" : "avg";
        device_rows(("global " + kind).constData(), [max](QTestData& row) { row << max << true << 0 << 0 << 0; });
        device_rows(("k3 s2 pad1 " + kind).constData(), [max](QTestData& row) { row << max << false << 3 << 2 << 1; });
        device_rows(("overlapping k3 s1 " + kind).constData(), [max](QTestData& row) { row << max << false << 3 << 1 << 1; });
    }
}

// Pooling along time within each sample's length (lengths 5, 3, 1, 4 of 5 steps): forward and
// backward against loops here, windows cut to the valid steps, empty ones zero.
void TestBackendParity::time_pool() {
    QFETCH(QString, device);
    QFETCH(bool, max);
    QFETCH(bool, global);
    QFETCH(int, kernel);
    QFETCH(int, stride);
    QFETCH(int, pad);
    OPEN_OR_SKIP(be, device);
    TimePoolDesc d;
    d.batch = 4, d.t_in = 5, d.channels = 3, d.max = max;
    if (global) d.t_out = 1, d.kernel = d.stride = d.t_in, d.pad = 0;
    else d.kernel = kernel, d.stride = stride, d.pad = pad, d.t_out = (d.t_in + 2 * pad - kernel) / stride + 1;
    const std::vector<int> lengths{5, 3, 1, 4};
    const std::size_t in_size = std::size_t(d.batch) * d.t_in * d.channels, out_size = std::size_t(d.batch) * d.t_out * d.channels;
    const Vec x = random_vec(in_size, 61), dy = random_vec(out_size, 62);
    On on(*be);
    auto op = be->make_time_pool(d);
    float* y = on.zeros(out_size);
    float* dx = on.put(random_vec(in_size, 63));  // overwritten
    op->forward(on.put(x), lengths.data(), y);
    op->backward(on.put(dy), dx);
    Vec want_y(out_size, 0.f), want_dx(in_size, 0.f);
    for (int n = 0; n < d.batch; ++n)
        for (int o = 0; o < d.t_out; ++o) {
            const int from = std::max(o * d.stride - d.pad, 0), to = std::min(o * d.stride - d.pad + d.kernel, lengths[n]);
            for (int c = 0; c < d.channels; ++c) {
                const std::size_t at = (std::size_t(n) * d.t_out + o) * d.channels + c;
                auto in = [&](int t) { return (std::size_t(n) * d.t_in + t) * d.channels + c; };
                if (from >= to) continue;
                if (max) {
                    int best = from;
                    for (int t = from + 1; t < to; ++t)
                        if (x[in(t)] > x[in(best)]) best = t;
                    want_y[at] = x[in(best)];
                    want_dx[in(best)] += dy[at];
                } else {
                    double sum = 0;
                    for (int t = from; t < to; ++t) sum += x[in(t)], want_dx[in(t)] += dy[at] / float(to - from);
                    want_y[at] = float(sum / (to - from));
                }
            }
        }
    EXPECT_CLOSE("y", on.get(y, out_size), want_y);
    EXPECT_CLOSE("dx", on.get(dx, in_size), want_dx);
}

// A network of every sequence layer on the backend against the CPU backend: embedding (ids
// repeating, padded steps holding ids that must be ignored), a causal dilated convolution1d,
// windowed max pooling over time, an LSTM over every step reading backwards (go_backwards: its
// input reversed within each length, its outputs right-aligned), masked global average pooling,
// repeat_vector and a last-step GRU reading backwards: loss, every gradient, then three updates
// and predictions.
// An id out of the vocabulary is the user's data error on every backend, naming layer and step.
void TestBackendParity::sequence_network() {
    QFETCH(QString, device);
    OPEN_OR_SKIP(be, device);
    if (!be->has_rnn()) QSKIP("this backend has no recurrent layers");
    const auto model = config::ModelConfig::parse(R"({"input":{"steps":6,"features":1},"seed":5,
        "updater":{"type":"adam","learning_rate":0.01},
        "layers":[{"type":"embedding","vocabulary":11,"units":4},
                  {"type":"convolution1d","filters":3,"kernel":2,"dilation":2,"mode":"causal","activation":"tanh"},
                  {"type":"subsampling","kernel":2,"stride":1,"pooling":"max"},
                  {"type":"lstm","units":4,"return_sequences":true,"go_backwards":true},
                  {"type":"subsampling","pooling":"avg","global":true},
                  {"type":"repeat_vector","times":3},
                  {"type":"gru","units":3,"go_backwards":true},
                  {"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})", "parity");
    const int batch = 4;
    const std::size_t row = model.input_size();
    const int lengths[] = {6, 4, 2, 5};
    std::mt19937 gen(71);
    Vec x(std::size_t(batch) * row), t(std::size_t(batch) * 3, 0.f);
    for (int n = 0; n < batch; ++n) {
        x[std::size_t(n) * row] = float(lengths[n]);
        for (int s = 0; s < 6; ++s) x[std::size_t(n) * row + 1 + s] = float(gen() % 11);
        t[std::size_t(n) * 3 + n % 3] = 1.f;
    }
    auto run = [&](Backend& be_) {
        nn::Network net(model, be_);
        std::vector<double> losses{net.compute_gradients(x.data(), t.data(), batch, 7)};
        const Vec grads = net.get_gradients();
        for (int step = 0; step < 3; ++step) {
            net.compute_update(step);
            net.apply_update();
            losses.push_back(net.compute_gradients(x.data(), t.data(), batch, 8 + step));
        }
        Vec out(t.size());
        net.predict(x.data(), batch, out.data());
        return std::make_tuple(losses, grads, out);
    };
    const auto [losses, grads, out] = run(*be);
    for (double loss : losses) QVERIFY(std::isfinite(loss));
    QVERIFY(losses.back() < losses.front());
    if (!is_cpu_) {
        const auto [want_losses, want_grads, want_out] = run(*cpu_);
        for (std::size_t i = 0; i < losses.size(); ++i)
            QVERIFY2(std::abs(losses[i] - want_losses[i]) <= kTolerance * std::abs(want_losses[i]),
                     qPrintable(QString("loss %1: %2, cpu %3").arg(i).arg(losses[i]).arg(want_losses[i])));
        EXPECT_CLOSE("gradients", grads, want_grads);
        EXPECT_CLOSE("predictions", out, want_out);
    }
    Vec bad = x;
    bad[std::size_t(2) * row + 1 + 1] = 11.f;  // sample 2, step 1: inside its length 2
    nn::Network net(model, *be);
    try {
        net.compute_gradients(bad.data(), t.data(), batch, 7);
        QFAIL("an id outside the vocabulary was looked up");
    } catch (const DataError& e) {
        const QString msg = e.what();
        QVERIFY2(msg.contains("layers[0] (embedding)") && msg.contains("token id 11 at step 1 of sample 2") &&
                     msg.contains("[0, 11)"),
                 qPrintable(msg));
    }
    bad[std::size_t(2) * row + 1 + 1] = 3.f;
    bad[std::size_t(2) * row + 1 + 4] = 99.f;  // step 4 of sample 2 is padding: ignored
    net.compute_gradients(bad.data(), t.data(), batch, 7);
}

QTEST_GUILESS_MAIN(TestBackendParity)
#include "test_backend_parity.moc"
