// Thresher's recurrent layers against PyTorch: data/rnn_reference.json holds small nn.LSTM,
// nn.GRU and nn.RNN layers (one and two directions), their weights mapped to Thresher's layout
// and gate order by data/make_rnn_reference.py, inputs of variable lengths, and torch's outputs
// (packed sequences, so its reverse direction also reads each sample within its length). The
// CPU backend's RnnOp must give the same outputs within 1e-4, every step and the last step, in
// inference and in training mode; the parameter count must be the one shape inference gives.
// Cases with activations torch's modules lack (hard sigmoid gates, softsign and relu cells) are
// the cell equations written out as a float64 loop in the generator; they run on the CPU
// backend's host path and must agree within 1e-5. host_path_matches_onednn runs that host path
// with oneDNN's own activations (RnnDesc::host_loop) against the primitives: outputs, dx and
// every parameter gradient within 1e-5. go_backwards_is_the_reverse_half holds Keras's
// go_backwards to the reverse direction of a bidirectional layer (itself held to torch above).
#include <QtTest>

#include <cmath>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "source_dir.h"
#include "backend/registry.h"
#include "config/model_config.h"
#include "nn/sequence_step.h"

using namespace thresher;

class TestRnnReference : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void matches_torch_data();
    void matches_torch();
    void host_path_matches_onednn_data();
    void host_path_matches_onednn();
    void dropout_masks_hold_for_every_step();
    void go_backwards_is_the_reverse_half_data();
    void go_backwards_is_the_reverse_half();
};

namespace {

nlohmann::json load_cases() {
    std::ifstream in((test_support::source_dir() + "/tests/engine/nn/data/rnn_reference.json").toStdString());
    if (!in) return nlohmann::json::array();
    return nlohmann::json::parse(in).at("cases");
}

}  // namespace

void TestRnnReference::matches_torch_data() {
    QTest::addColumn<int>("index");
    const auto cases = load_cases();
    QVERIFY2(!cases.empty(), "tests/engine/nn/data/rnn_reference.json is missing or empty");
    for (std::size_t i = 0; i < cases.size(); ++i)
        QTest::newRow(cases[i].at("name").get<std::string>().c_str()) << static_cast<int>(i);
}

void TestRnnReference::matches_torch() {
    QFETCH(int, index);
    const auto c = load_cases().at(static_cast<std::size_t>(index));
    const std::string cell = c.at("cell");
    const bool two = c.at("bidirectional");
    const int n = c.at("batch"), t = c.at("steps"), in = c.at("in"), h = c.at("hidden");
    const auto lengths = c.at("lengths").get<std::vector<int>>();
    const auto x = c.at("x").get<std::vector<float>>();
    const auto params = c.at("params").get<std::vector<float>>();
    const auto expected = c.at("y").get<std::vector<float>>();
    const int out = two ? 2 * h : h;
    QCOMPARE(expected.size(), static_cast<std::size_t>(n) * t * out);

    // The layer as a config describes it has exactly these parameters.
    const std::string type = cell == "lstm" ? "lstm" : cell == "gru" ? "gru" : "simple_rnn";
    // Optional fields of the loop cases (absent: torch's modules, oneDNN's activations).
    const std::string act = c.value("activation", "tanh"), gate = c.value("gate_activation", "sigmoid");
    const double gate_alpha = c.value("gate_alpha", 0.2);
    const bool peepholes = c.value("peepholes", false), reset_after = c.value("reset_after", true);
    const double tolerance = c.value("tolerance", 1e-4);
    std::string fields = ",\"activation\":\"" + act + "\"";
    if (type != "simple_rnn") {
        fields += ",\"gate_activation\":\"" + gate + "\"";
        if (gate == "hardsigmoid") fields += ",\"gate_alpha\":" + nlohmann::json(gate_alpha).dump();
    }
    if (peepholes) fields += ",\"peepholes\":true";
    if (type == "gru") fields += std::string(",\"reset_after\":") + (reset_after ? "true" : "false");
    const auto model = config::ModelConfig::parse(
        "{\"input\":{\"steps\":" + std::to_string(t) + ",\"features\":" + std::to_string(in) + "},\"layers\":[{\"type\":\"" + type +
            "\",\"units\":" + std::to_string(h) + (two ? ",\"bidirectional\":\"concat\"" : "") + fields +
            "},{\"type\":\"output\",\"units\":2}]}",
        "reference");
    QCOMPARE(model.layers[0].param_count, params.size());

    auto be = backend::create_backend("cpu", {1});
    QVERIFY(be->has_rnn());
    backend::RnnDesc d;
    d.cell = cell == "lstm"  ? backend::RnnCell::Lstm
             : cell == "gru" ? (reset_after ? backend::RnnCell::GruResetAfter : backend::RnnCell::Gru)
                             : backend::RnnCell::Vanilla;
    // The activations as the config parsed them (the same typed values the network passes on).
    d.act = type == "simple_rnn" ? model.layers[0].activation : model.layers[0].cell_activation;
    d.gate = model.layers[0].gate_activation;
    d.peepholes = peepholes;
    d.batch = n, d.steps = t, d.in = in, d.hidden = h;
    d.merge = two ? backend::RnnMerge::Concat : backend::RnnMerge::None;
    for (bool sequences : {true, false}) {
        d.return_sequences = sequences;
        auto op = be->make_rnn(d);
        for (auto mode : {backend::Mode::Inference, backend::Mode::Training}) {
            std::vector<float> y(static_cast<std::size_t>(n) * (sequences ? t : 1) * out, -1.f);
            op->forward(x.data(), lengths.data(), params.data(), y.data(), mode);
            double worst = 0;
            for (int s = 0; s < n; ++s) {
                for (int step = 0; step < (sequences ? t : 1); ++step) {
                    for (int j = 0; j < out; ++j) {
                        // The last step: the forward direction's state at L - 1, the reverse
                        // direction's after reading the sample backwards (torch's step 0).
                        const int from = sequences ? step : (j < h ? lengths[static_cast<std::size_t>(s)] - 1 : 0);
                        const float want = expected[(static_cast<std::size_t>(s) * t + from) * out + j];
                        const float got = y[(static_cast<std::size_t>(s) * (sequences ? t : 1) + step) * out + j];
                        worst = std::max(worst, static_cast<double>(std::abs(want - got)));
                    }
                }
            }
            qInfo("%s, %s, %s: max |thresher - torch| = %.3g", c.at("name").get<std::string>().c_str(),
                  sequences ? "every step" : "last step", mode == backend::Mode::Training ? "training" : "inference", worst);
            QVERIFY2(worst <= tolerance, qPrintable(QString("max |diff| %1").arg(worst)));
        }
    }
}

void TestRnnReference::host_path_matches_onednn_data() {
    QTest::addColumn<int>("cell");
    QTest::addColumn<bool>("peepholes");
    QTest::addColumn<int>("merge");
    QTest::addColumn<bool>("sequences");
    using backend::RnnCell;
    using backend::RnnMerge;
    QTest::newRow("lstm peepholes, bidirectional concat, every step") << int(RnnCell::Lstm) << true << int(RnnMerge::Concat) << true;
    QTest::newRow("lstm, last step") << int(RnnCell::Lstm) << false << int(RnnMerge::None) << false;
    QTest::newRow("gru reset before, bidirectional mul, last step") << int(RnnCell::Gru) << false << int(RnnMerge::Mul) << false;
    QTest::newRow("gru reset after, bidirectional sum, every step") << int(RnnCell::GruResetAfter) << false << int(RnnMerge::Sum) << true;
    QTest::newRow("vanilla tanh, bidirectional average, every step") << int(RnnCell::Vanilla) << false << int(RnnMerge::Average) << true;
}

// The same layer, the same numbers, once on oneDNN's primitives and once on the host path.
void TestRnnReference::host_path_matches_onednn() {
    QFETCH(int, cell);
    QFETCH(bool, peepholes);
    QFETCH(int, merge);
    QFETCH(bool, sequences);
    backend::RnnDesc d;
    d.cell = static_cast<backend::RnnCell>(cell);
    d.batch = 3, d.steps = 7, d.in = 5, d.hidden = 6;
    d.peepholes = peepholes;
    d.merge = static_cast<backend::RnnMerge>(merge);
    d.return_sequences = sequences;
    const int g = d.cell == backend::RnnCell::Lstm ? 4 : d.cell == backend::RnnCell::Vanilla ? 1 : 3;
    const int gb = d.cell == backend::RnnCell::GruResetAfter ? 4 : g;
    const int dirs = d.merge == backend::RnnMerge::None ? 1 : 2, out = d.merge == backend::RnnMerge::Concat ? 2 * d.hidden : d.hidden;
    const std::size_t per_dir = static_cast<std::size_t>((d.in + d.hidden) * g * d.hidden + gb * d.hidden + (peepholes ? 3 * d.hidden : 0));
    std::mt19937 rng(23);
    std::uniform_real_distribution<float> u(-0.8f, 0.8f);
    auto draw = [&](std::size_t count) {
        std::vector<float> v(count);
        for (auto& e : v) e = u(rng);
        return v;
    };
    const std::vector<int> lengths{7, 3, 1};
    auto x = draw(static_cast<std::size_t>(d.batch) * d.steps * d.in);
    for (int n = 0; n < d.batch; ++n)
        std::fill(x.begin() + (static_cast<long>(n) * d.steps + lengths[n]) * d.in, x.begin() + static_cast<long>(n + 1) * d.steps * d.in, 0.f);
    const auto params = draw(per_dir * dirs);
    const std::size_t ys = static_cast<std::size_t>(d.batch) * (sequences ? d.steps : 1) * out;
    const auto dy = draw(ys);

    // Two threads: the host path splits the batch (3 samples: 1 and 2) between them.
    auto be = backend::create_backend("cpu", {2});
    struct Result {
        std::vector<float> y, dx, grads;
    };
    auto run = [&](bool host) {
        auto desc = d;
        desc.host_loop = host;
        auto op = be->make_rnn(desc);
        Result r{std::vector<float>(ys), std::vector<float>(x.size(), -1.f), std::vector<float>(params.size(), -1.f)};
        op->forward(x.data(), lengths.data(), params.data(), r.y.data(), backend::Mode::Training);
        op->backward(x.data(), lengths.data(), params.data(), dy.data(), r.dx.data(), r.grads.data());
        return r;
    };
    const auto a = run(false), b = run(true);
    auto worst = [](const std::vector<float>& p, const std::vector<float>& q) {
        double w = 0;
        for (std::size_t i = 0; i < p.size(); ++i) w = std::max(w, static_cast<double>(std::abs(p[i] - q[i])));
        return w;
    };
    const double wy = worst(a.y, b.y), wdx = worst(a.dx, b.dx), wg = worst(a.grads, b.grads);
    qInfo("max |oneDNN - host|: y %.3g, dx %.3g, parameter gradients %.3g", wy, wdx, wg);
    QVERIFY2(wy <= 1e-5 && wdx <= 1e-5 && wg <= 1e-5, "the host path and oneDNN's primitives disagree");
}

// Keras's dropout / recurrent_dropout (RnnDesc::input_retain, recurrent_retain) with weights that
// make the masks visible: a vanilla cell with an identity activation, W = I, R = I, b = 0, so
//   h_t = m_in ∘ x_t + m_rec ∘ h_{t-1}.
// Input dropout alone: h_0 = m_in ∘ x_0 and h_1 - h_0 = m_in ∘ x_1, so each unit's ratio to its
// input is the same at both steps (one mask per sample for all steps), 0 or 1 / retain. Recurrent
// dropout alone, x = (1, 0, 0): h_1 = m_rec, h_2 = m_rec², the same mask again. Inference applies
// none; the same seed draws the same masks, another seed others; about retain of them are kept.
void TestRnnReference::dropout_masks_hold_for_every_step() {
    backend::RnnDesc d;
    d.cell = backend::RnnCell::Vanilla;
    d.act = {vocab::Activation::Identity, 0.f};
    d.batch = 64, d.steps = 3, d.in = 32, d.hidden = 32;
    const std::size_t h2 = static_cast<std::size_t>(d.hidden) * d.hidden;
    std::vector<float> params(2 * h2 + static_cast<std::size_t>(d.hidden), 0.f);
    for (int j = 0; j < d.hidden; ++j) params[static_cast<std::size_t>(j) * d.hidden + j] = params[h2 + static_cast<std::size_t>(j) * d.hidden + j] = 1.f;
    const std::vector<int> lengths(static_cast<std::size_t>(d.batch), d.steps);
    auto be = backend::create_backend("cpu", {2});
    const std::size_t values = static_cast<std::size_t>(d.batch) * d.steps * d.hidden;
    auto run = [&](const backend::RnnDesc& desc, const std::vector<float>& x, backend::Mode mode, std::uint64_t seed) {
        auto op = be->make_rnn(desc);
        std::vector<float> y(values);
        if (mode == backend::Mode::Training) op->draw_dropout(seed);
        op->forward(x.data(), lengths.data(), params.data(), y.data(), mode);
        return y;
    };
    auto at = [&](std::size_t n, int t, int j) { return (n * static_cast<std::size_t>(d.steps) + static_cast<std::size_t>(t)) * d.hidden + j; };

    // Input dropout: x_t = t + 1 + (j % 5) / 10 (never 0).
    auto in = d;
    in.input_retain = 0.75f;
    std::vector<float> x(values);
    for (std::size_t n = 0; n < static_cast<std::size_t>(d.batch); ++n)
        for (int t = 0; t < d.steps; ++t)
            for (int j = 0; j < d.hidden; ++j) x[at(n, t, j)] = static_cast<float>(t + 1) + static_cast<float>(j % 5) / 10.f;
    const auto y = run(in, x, backend::Mode::Training, 11);
    std::size_t kept = 0;
    for (std::size_t n = 0; n < static_cast<std::size_t>(d.batch); ++n)
        for (int j = 0; j < d.hidden; ++j) {
            const float m0 = y[at(n, 0, j)] / x[at(n, 0, j)], m1 = (y[at(n, 1, j)] - y[at(n, 0, j)]) / x[at(n, 1, j)];
            QVERIFY2(std::abs(m0 - m1) < 1e-5f, qPrintable(QString("sample %1 unit %2: masks %3 and %4 at steps 0 and 1").arg(n).arg(j).arg(m0).arg(m1)));
            QVERIFY2(std::abs(m0) < 1e-6f || std::abs(m0 - 1.f / 0.75f) < 1e-5f, qPrintable(QString("mask value %1").arg(m0)));
            kept += m0 > 0.5f;
        }
    const double share = static_cast<double>(kept) / (d.batch * d.hidden);
    qInfo("input dropout: %.3f of the features kept (retain 0.75)", share);
    QVERIFY(std::abs(share - 0.75) < 0.05);  // 2048 draws: 5 standard deviations is 0.048
    QCOMPARE(run(in, x, backend::Mode::Training, 11), y);
    QVERIFY(run(in, x, backend::Mode::Training, 12) != y);
    auto none = d;
    QCOMPARE(run(in, x, backend::Mode::Inference, 11), run(none, x, backend::Mode::Inference, 0));

    // Recurrent dropout: x = (1, 0, 0) per unit.
    auto rec = d;
    rec.recurrent_retain = 0.6f;
    std::vector<float> pulse(values, 0.f);
    for (std::size_t n = 0; n < static_cast<std::size_t>(d.batch); ++n)
        for (int j = 0; j < d.hidden; ++j) pulse[at(n, 0, j)] = 1.f;
    const auto r = run(rec, pulse, backend::Mode::Training, 5);
    kept = 0;
    for (std::size_t n = 0; n < static_cast<std::size_t>(d.batch); ++n)
        for (int j = 0; j < d.hidden; ++j) {
            const float m = r[at(n, 1, j)];
            QCOMPARE(r[at(n, 0, j)], 1.f);
            QVERIFY2(std::abs(r[at(n, 2, j)] - m * m) < 1e-5f, qPrintable(QString("sample %1 unit %2: h1 %3, h2 %4").arg(n).arg(j).arg(m).arg(r[at(n, 2, j)])));
            QVERIFY2(std::abs(m) < 1e-6f || std::abs(m - 1.f / 0.6f) < 1e-5f, qPrintable(QString("mask value %1").arg(m)));
            kept += m > 0.5f;
        }
    qInfo("recurrent dropout: %.3f of the units kept (retain 0.6)", static_cast<double>(kept) / (d.batch * d.hidden));
    QVERIFY(std::abs(static_cast<double>(kept) / (d.batch * d.hidden) - 0.6) < 0.06);
}


void TestRnnReference::go_backwards_is_the_reverse_half_data() {
    QTest::addColumn<QString>("cell");
    for (const char* cell : {"lstm", "gru", "simple_rnn"}) QTest::newRow(cell) << QString(cell);
}

// Keras's go_backwards on its own against the reverse direction of a bidirectional concat layer
// with the same weights (lengths 5, 3, 1, 4 of 5 steps). The last step: the reverse half's. Every
// step: Keras's outputs in reading order, right-aligned (its cuDNN path's "expected_output =
// [0, 0, 6, 5, 4]" for the reversed outputs [6, 5, 4] of a sample of length 3), which is the
// reverse half (zero at padded steps) flipped over all T steps: y[p] = rev[T-1-p]. dx: where the
// layer read each step, the gradient flows back to it (the bidirectional layer's dx with the
// forward half's weights zero and dy only on the reverse half).
void TestRnnReference::go_backwards_is_the_reverse_half() {
    QFETCH(QString, cell);
    const int n = 4, t = 5, in = 3, h = 4;
    const std::vector<int> lengths{5, 3, 1, 4};
    auto be = backend::create_backend("cpu", {1});
    for (bool every : {false, true}) {
        auto layer = [&](const char* extra) {
            const auto m = config::ModelConfig::parse(
                "{\"input\":{\"steps\":5,\"features\":3},\"layers\":[{\"type\":\"" + cell.toStdString() +
                    "\",\"units\":4,\"return_sequences\":" + (every ? "true" : "false") + "," + extra +
                    "},{\"type\":\"output\",\"units\":2}]}",
                "go_backwards");
            return m.layers[0];
        };
        const auto back = layer("\"go_backwards\":true"), both = layer("\"bidirectional\":\"concat\"");
        QCOMPARE(both.param_count, 2 * back.param_count);
        std::mt19937 gen(5);
        std::uniform_real_distribution<float> u(-0.5f, 0.5f);
        std::vector<float> x(std::size_t(n) * t * in), p(back.param_count);
        for (auto& v : x) v = u(gen);
        for (auto& v : p) v = u(gen);
        for (int s = 0; s < n; ++s)  // padded steps hold values that must not count
            for (int k = lengths[s]; k < t; ++k)
                for (int c = 0; c < in; ++c) x[(std::size_t(s) * t + k) * in + c] = 9.f;
        std::vector<float> p2(both.param_count, 0.f);  // forward half zero, reverse half p
        std::copy(p.begin(), p.end(), p2.begin() + std::ptrdiff_t(p.size()));
        const std::size_t steps_out = every ? t : 1;
        std::vector<float> y(std::size_t(n) * steps_out * h), y2(std::size_t(n) * steps_out * 2 * h);
        auto step = nn::plan_sequence_layer(*be, back, 0, n);
        auto step2 = nn::plan_sequence_layer(*be, both, 0, n);
        nn::StepContext ctx;
        ctx.lengths = lengths.data();
        step->forward(p.data(), x.data(), y.data(), ctx);
        step2->forward(p2.data(), x.data(), y2.data(), ctx);
        for (int s = 0; s < n; ++s)
            for (std::size_t q = 0; q < steps_out; ++q) {
                const int pos = int(q);
                const bool lead = every && pos < t - lengths[s];  // Keras's leading zero steps
                for (int j = 0; j < h; ++j) {
                    const float got = y[(std::size_t(s) * steps_out + q) * h + j];
                    const std::size_t from = every ? std::size_t(t - 1 - pos) : 0;
                    const float want = lead ? 0.f : y2[(std::size_t(s) * steps_out + from) * 2 * h + h + j];
                    QVERIFY2(std::abs(got - want) <= 1e-6f, qPrintable(QString("%1 every=%2 sample %3 step %4 unit %5: %6, want %7")
                                                                        .arg(cell).arg(every).arg(s).arg(pos).arg(j).arg(got).arg(want)));
                }
            }
        // Backward: dy on the reverse half only (the forward half's zero weights pass nothing),
        // at the same steps as forward; padded steps' dy is zero, as the network leaves it.
        std::vector<float> dy(y.size()), dy2(y2.size(), 0.f);
        for (auto& v : dy) v = u(gen);
        for (int s = 0; s < n && every; ++s)
            for (int q = lengths[s]; q < t; ++q)
                for (int j = 0; j < h; ++j) dy[(std::size_t(s) * t + q) * h + j] = 0.f;
        for (int s = 0; s < n; ++s)
            for (std::size_t q = 0; q < steps_out; ++q) {
                if (every && int(q) < t - lengths[s]) continue;  // Keras's leading zero steps: constants
                const std::size_t from = every ? std::size_t(t - 1 - int(q)) : 0;
                for (int j = 0; j < h; ++j)
                    dy2[(std::size_t(s) * steps_out + from) * 2 * h + h + j] = dy[(std::size_t(s) * steps_out + q) * h + j];
            }
        std::vector<float> dx(x.size()), dx2(x.size()), g(p.size()), g2(p2.size());
        step->backward(p.data(), x.data(), y.data(), dy.data(), dx.data(), g.data());
        step2->backward(p2.data(), x.data(), y2.data(), dy2.data(), dx2.data(), g2.data());
        for (std::size_t i = 0; i < dx.size(); ++i)
            QVERIFY2(std::abs(dx[i] - dx2[i]) <= 1e-6f, qPrintable(QString("%1 every=%2 dx[%3]: %4, want %5").arg(cell).arg(every).arg(i).arg(dx[i]).arg(dx2[i])));
        for (std::size_t i = 0; i < g.size(); ++i)
            QVERIFY2(std::abs(g[i] - g2[p.size() + i]) <= 1e-6f,
                     qPrintable(QString("%1 every=%2 grad[%3]: %4, want %5").arg(cell).arg(every).arg(i).arg(g[i]).arg(g2[p.size() + i])));
    }
}

QTEST_APPLESS_MAIN(TestRnnReference)
#include "test_rnn_reference.moc"
