// The CUDA backend's plan-time side of recurrent layers, on machines without a GPU
// (engine/backend/cuda/rnn_layout.h): which layers cuDNN's RNN API is refused for, with the
// reason, and the index map from Thresher's parameters into cuDNN's weight space.
//
// The map is checked three ways: element by element for one lstm gate (the worked example in
// rnn_layout.h), by its bounds and shape checks, and by meaning: parameters packed through the
// map into a weight space laid out as cudnnGetRNNWeightParams describes it, run through cuDNN's
// documented cell equations (its gate ids, two biases per gate, its GRU's reset after the
// recurrent GEMM) on the host, give the CPU backend's (oneDNN's) outputs for the same parameters
// and lengths. What cuDNN itself computes is test_backend_parity's `recurrent` on a GPU.
#include <QtTest>

#include <cmath>
#include <random>

#include "backend/cuda/rnn_layout.h"
#include "backend/registry.h"
#include "core/error.h"

using namespace thresher;
using namespace thresher::backend;
using namespace thresher::backend::cuda;

namespace {

using Vec = std::vector<float>;

Vec random_vec(std::size_t n, unsigned seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> dist(-0.8f, 0.8f);
    Vec v(n);
    for (auto& x : v) x = dist(gen);
    return v;
}

// A weight space laid out as cuDNN 9 does for one layer: per direction, the 2G matrices by
// linLayerID (input ones [H x in], recurrent ones [H x H], row-major), then the 2G biases [H].
std::vector<CudnnDirection> cudnn_like_layout(const RnnDesc& d, std::size_t& floats) {
    const int g = rnn_gates(d.cell), dirs = d.merge == RnnMerge::None ? 1 : 2;
    std::vector<CudnnDirection> out(static_cast<std::size_t>(dirs));
    floats = 0;
    for (auto& dir : out) {
        for (int id = 0; id < 2 * g; ++id) {
            const int cols = id < g ? d.in : d.hidden;
            dir.matrices.push_back({floats, d.hidden, cols, cols});
            floats += static_cast<std::size_t>(d.hidden) * cols;
        }
        for (int id = 0; id < 2 * g; ++id) {
            dir.biases.push_back({floats, d.hidden, 1, 1});
            floats += static_cast<std::size_t>(d.hidden);
        }
    }
    return out;
}

float sigmoid(float v) { return 1.f / (1.f + std::exp(-v)); }

// cuDNN's cell equations (cuDNN API reference, cudnnRNNMode_t) over one direction, left to right,
// from a zero state, reading the weight space `ws` through `dir`; y [N x T x H], zero from each
// sample's length on.
Vec cudnn_equations(const RnnDesc& d, const CudnnDirection& dir, const Vec& ws, const Vec& x, const std::vector<int>& lengths) {
    const int H = d.hidden, g = rnn_gates(d.cell);
    // W_id x + b_W_id (input side) and R_id h + b_R_id (recurrent side) for unit j.
    auto in_part = [&](int id, const float* xt, int j) {
        const CudnnBlock& m = dir.matrices[static_cast<std::size_t>(id)];
        float s = ws[dir.biases[static_cast<std::size_t>(id)].offset + static_cast<std::size_t>(j)];
        for (int c = 0; c < d.in; ++c) s += ws[m.offset + static_cast<std::size_t>(j) * d.in + c] * xt[c];
        return s;
    };
    auto rec_part = [&](int id, const Vec& h, int j) {
        const CudnnBlock& m = dir.matrices[static_cast<std::size_t>(id + g)];
        float s = ws[dir.biases[static_cast<std::size_t>(id + g)].offset + static_cast<std::size_t>(j)];
        for (int q = 0; q < H; ++q) s += ws[m.offset + static_cast<std::size_t>(j) * H + q] * h[static_cast<std::size_t>(q)];
        return s;
    };
    Vec y(static_cast<std::size_t>(d.batch) * d.steps * H, 0.f);
    for (int n = 0; n < d.batch; ++n) {
        Vec h(static_cast<std::size_t>(H), 0.f), c(static_cast<std::size_t>(H), 0.f);
        for (int t = 0; t < lengths[static_cast<std::size_t>(n)]; ++t) {
            const float* xt = x.data() + (static_cast<std::size_t>(n) * d.steps + t) * d.in;
            Vec next(static_cast<std::size_t>(H));
            for (int j = 0; j < H; ++j) {
                const auto uj = static_cast<std::size_t>(j);
                if (d.cell == RnnCell::Lstm) {  // ids 0 i, 1 f, 2 c', 3 o
                    const float i = sigmoid(in_part(0, xt, j) + rec_part(0, h, j));
                    const float f = sigmoid(in_part(1, xt, j) + rec_part(1, h, j));
                    const float cc = std::tanh(in_part(2, xt, j) + rec_part(2, h, j));
                    const float o = sigmoid(in_part(3, xt, j) + rec_part(3, h, j));
                    c[uj] = f * c[uj] + i * cc;
                    next[uj] = o * std::tanh(c[uj]);
                } else if (d.cell == RnnCell::GruResetAfter) {  // ids 0 r, 1 update, 2 h'
                    const float r = sigmoid(in_part(0, xt, j) + rec_part(0, h, j));
                    const float z = sigmoid(in_part(1, xt, j) + rec_part(1, h, j));
                    const float hh = std::tanh(in_part(2, xt, j) + r * rec_part(2, h, j));
                    next[uj] = (1.f - z) * hh + z * h[uj];
                } else {
                    const float v = in_part(0, xt, j) + rec_part(0, h, j);
                    next[uj] = d.act.kind == Activation::Relu ? std::max(v, 0.f) : std::tanh(v);
                }
            }
            h = next;
            std::copy(h.begin(), h.end(), y.begin() + static_cast<std::ptrdiff_t>((static_cast<std::size_t>(n) * d.steps + t) * H));
        }
    }
    return y;
}

RnnDesc desc(RnnCell cell, Activation act = Activation::Tanh) {
    RnnDesc d;
    d.cell = cell;
    d.batch = 4, d.steps = 5, d.in = 3, d.hidden = 4;
    d.act = {act, 0.01f};
    return d;
}

}  // namespace

class TestCudaRnnLayout : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void refusals_data();
    void refusals();
    void lstm_gate_element();
    void gru_gate_order();
    void bidirectional_blocks();
    void layout_mismatch_refused();
    void equations_data();
    void equations();
};

void TestCudaRnnLayout::refusals_data() {
    QTest::addColumn<int>("cell");
    QTest::addColumn<int>("act");
    QTest::addColumn<int>("gate");
    QTest::addColumn<bool>("peepholes");
    QTest::addColumn<QString>("reason");  // empty: supported
    const int lstm = int(RnnCell::Lstm), gru = int(RnnCell::Gru), lbr = int(RnnCell::GruResetAfter),
              vanilla = int(RnnCell::Vanilla);
    const int tanh = int(Activation::Tanh), relu = int(Activation::Relu), sig = int(Activation::Sigmoid),
              hard = int(Activation::HardSigmoid);
    QTest::newRow("lstm") << lstm << tanh << sig << false << "";
    QTest::newRow("gru reset_after") << lbr << tanh << sig << false << "";
    QTest::newRow("simple tanh") << vanilla << tanh << sig << false << "";
    QTest::newRow("simple relu") << vanilla << relu << sig << false << "";
    QTest::newRow("gru reset_after=false") << gru << tanh << sig << false << "reset_after=false";
    QTest::newRow("lstm peepholes") << lstm << tanh << sig << true << "peephole";
    QTest::newRow("lstm hard_sigmoid gates") << lstm << tanh << hard << false << "gate activation";
    QTest::newRow("gru hard_sigmoid gates") << lbr << tanh << hard << false << "gate activation";
    QTest::newRow("lstm relu cell") << lstm << relu << sig << false << "cell activation";
    QTest::newRow("simple sigmoid") << vanilla << sig << sig << false << "tanh or relu";
}

void TestCudaRnnLayout::refusals() {
    QFETCH(int, cell);
    QFETCH(int, act);
    QFETCH(int, gate);
    QFETCH(bool, peepholes);
    QFETCH(QString, reason);
    RnnDesc d = desc(static_cast<RnnCell>(cell), static_cast<Activation>(act));
    d.gate = {static_cast<Activation>(gate), 0.2f};
    d.peepholes = peepholes;
    for (RnnMerge m : {RnnMerge::None, RnnMerge::Concat, RnnMerge::Sum, RnnMerge::Mul, RnnMerge::Average}) {
        d.merge = m;
        const auto why = cuda_rnn_unsupported(d);
        if (reason.isEmpty()) {
            QVERIFY2(!why, why ? why->c_str() : "");
        } else {
            QVERIFY2(why && QString::fromStdString(*why).contains(reason), why ? why->c_str() : "accepted");
            QVERIFY(QString::fromStdString(*why).contains("cuDNN"));
        }
    }
}

void TestCudaRnnLayout::lstm_gate_element() {
    // rnn_layout.h's worked example: lstm in = 2, H = 3, gate f.
    RnnDesc d = desc(RnnCell::Lstm);
    d.in = 2, d.hidden = 3;
    std::size_t floats = 0;
    const auto layout = cudnn_like_layout(d, floats);
    const auto map = cudnn_weight_map(d, layout, floats);
    QCOMPARE(map.size(), rnn_direction_size(d));
    const std::size_t gh = 12, w_size = 2 * gh, r_size = 3 * gh;
    for (int c = 0; c < 2; ++c)
        for (int j = 0; j < 3; ++j) QCOMPARE(std::size_t(map[c * gh + 3 + j]), layout[0].matrices[1].offset + j * 2 + c);
    for (int q = 0; q < 3; ++q)
        for (int j = 0; j < 3; ++j) QCOMPARE(std::size_t(map[w_size + q * gh + 3 + j]), layout[0].matrices[5].offset + j * 3 + q);
    for (int j = 0; j < 3; ++j) QCOMPARE(std::size_t(map[w_size + r_size + 3 + j]), layout[0].biases[1].offset + j);
    // No recurrent bias receives a parameter.
    for (std::uint32_t target : map)
        for (int id = 4; id < 8; ++id) {
            const auto& b = layout[0].biases[static_cast<std::size_t>(id)];
            QVERIFY(target < b.offset || target >= b.offset + 3);
        }
}

void TestCudaRnnLayout::gru_gate_order() {
    // Thresher u, r, o -> cuDNN ids 1, 0, 2; the 4th bias block -> the candidate's recurrent bias (id 5).
    QCOMPARE(cudnn_lin_layer(RnnCell::GruResetAfter, 0), 1);
    QCOMPARE(cudnn_lin_layer(RnnCell::GruResetAfter, 1), 0);
    QCOMPARE(cudnn_lin_layer(RnnCell::GruResetAfter, 2), 2);
    for (int g = 0; g < 4; ++g) QCOMPARE(cudnn_lin_layer(RnnCell::Lstm, g), g);
    const RnnDesc d = desc(RnnCell::GruResetAfter);
    std::size_t floats = 0;
    const auto layout = cudnn_like_layout(d, floats);
    const auto map = cudnn_weight_map(d, layout, floats);
    const std::size_t gh = 12, bias = std::size_t(d.in) * gh + std::size_t(d.hidden) * gh;
    QCOMPARE(map.size(), bias + 4 * 4);
    for (int j = 0; j < 4; ++j) {
        QCOMPARE(std::size_t(map[bias + j]), layout[0].biases[1].offset + j);          // b_u
        QCOMPARE(std::size_t(map[bias + 4 + j]), layout[0].biases[0].offset + j);      // b_r
        QCOMPARE(std::size_t(map[bias + 8 + j]), layout[0].biases[2].offset + j);      // b_o
        QCOMPARE(std::size_t(map[bias + 12 + j]), layout[0].biases[5].offset + j);     // b_o' (recurrent)
    }
}

void TestCudaRnnLayout::bidirectional_blocks() {
    RnnDesc d = desc(RnnCell::Lstm);
    d.merge = RnnMerge::Concat;
    std::size_t floats = 0;
    const auto layout = cudnn_like_layout(d, floats);
    const auto map = cudnn_weight_map(d, layout, floats);
    const std::size_t per_dir = rnn_direction_size(d);
    QCOMPARE(map.size(), 2 * per_dir);
    const std::size_t second = layout[1].matrices[0].offset;
    for (std::size_t i = 0; i < per_dir; ++i) {
        QVERIFY(map[i] < second);
        QVERIFY(map[per_dir + i] >= second);
        QCOMPARE(map[per_dir + i] - map[i], std::uint32_t(second));  // the same place in the reverse direction's blocks
    }
}

void TestCudaRnnLayout::layout_mismatch_refused() {
    const RnnDesc d = desc(RnnCell::Lstm);
    std::size_t floats = 0;
    auto layout = cudnn_like_layout(d, floats);
    auto transposed = layout;
    std::swap(transposed[0].matrices[2].rows, transposed[0].matrices[2].cols);
    transposed[0].matrices[2].row_stride = transposed[0].matrices[2].cols;
    try {
        cudnn_weight_map(d, transposed, floats);
        QFAIL("a transposed input matrix was accepted");
    } catch (const BackendError& e) {
        QVERIFY2(QString(e.what()).contains("input matrix 2"), e.what());
    }
    try {
        cudnn_weight_map(d, layout, layout[0].biases[4].offset - 1);  // cuts the last input bias short
        QFAIL("a block past the weight space was accepted");
    } catch (const BackendError& e) {
        QVERIFY2(QString(e.what()).contains("reaches float"), e.what());
    }
    auto overlapping = layout;
    overlapping[0].biases[1].offset = overlapping[0].biases[0].offset + 1;
    try {
        cudnn_weight_map(d, overlapping, floats);
        QFAIL("overlapping blocks were accepted");
    } catch (const BackendError& e) {
        QVERIFY2(QString(e.what()).contains("share"), e.what());
    }
    RnnDesc gru = desc(RnnCell::Gru);
    QVERIFY_THROWS_EXCEPTION(BackendError, cudnn_weight_map(gru, layout, floats));
}

void TestCudaRnnLayout::equations_data() {
    QTest::addColumn<int>("cell");
    QTest::addColumn<int>("act");
    QTest::newRow("lstm") << int(RnnCell::Lstm) << int(Activation::Tanh);
    QTest::newRow("gru reset_after") << int(RnnCell::GruResetAfter) << int(Activation::Tanh);
    QTest::newRow("simple tanh") << int(RnnCell::Vanilla) << int(Activation::Tanh);
    QTest::newRow("simple relu") << int(RnnCell::Vanilla) << int(Activation::Relu);
}

void TestCudaRnnLayout::equations() {
    QFETCH(int, cell);
    QFETCH(int, act);
    const RnnDesc d = desc(static_cast<RnnCell>(cell), static_cast<Activation>(act));
    const std::vector<int> lengths{5, 3, 1, 4};
    const Vec x = random_vec(std::size_t(d.batch) * d.steps * d.in, 3);
    const Vec params = random_vec(rnn_direction_size(d), 4);

    auto cpu = create_backend("cpu", {2});
    Buffer px(*cpu, x.size()), pp(*cpu, params.size()), py(*cpu, std::size_t(d.batch) * d.steps * d.hidden);
    cpu->upload(px.data(), x.data(), x.size());
    cpu->upload(pp.data(), params.data(), params.size());
    cpu->make_rnn(d)->forward(px.data(), lengths.data(), pp.data(), py.data(), Mode::Inference);
    Vec want(py.size());
    cpu->download(want.data(), py.data(), want.size());

    std::size_t floats = 0;
    const auto layout = cudnn_like_layout(d, floats);
    const auto map = cudnn_weight_map(d, layout, floats);
    Vec ws(floats, 0.f);
    for (std::size_t i = 0; i < map.size(); ++i) ws[map[i]] = params[i];  // what rnn_op.cpp's gather does
    const Vec got = cudnn_equations(d, layout[0], ws, x, lengths);

    QCOMPARE(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i)
        QVERIFY2(std::abs(got[i] - want[i]) <= 1e-5f + 1e-4f * std::abs(want[i]),
                 qPrintable(QString("y[%1] = %2 from cuDNN's equations, %3 from the CPU backend").arg(i).arg(got[i]).arg(want[i])));
}

QTEST_GUILESS_MAIN(TestCudaRnnLayout)
#include "test_cuda_rnn_layout.moc"
