// Thresher's recurrent layers against PyTorch: data/rnn_reference.json holds small nn.LSTM,
// nn.GRU and nn.RNN layers (one and two directions), their weights mapped to Thresher's layout
// and gate order by data/make_rnn_reference.py, inputs of variable lengths, and torch's outputs
// (packed sequences, so its reverse direction also reads each sample within its length). The
// CPU backend's RnnOp must give the same outputs within 1e-4, every step and the last step, in
// inference and in training mode; the parameter count must be the one shape inference gives.
#include <QtTest>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "source_dir.h"
#include "backend/registry.h"
#include "config/model_config.h"

using namespace thresher;

class TestRnnReference : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void matches_torch_data();
    void matches_torch();
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
    const auto model = config::ModelConfig::parse(
        "{\"input\":{\"steps\":" + std::to_string(t) + ",\"features\":" + std::to_string(in) + "},\"layers\":[{\"type\":\"" + type +
            "\",\"units\":" + std::to_string(h) + (two ? ",\"bidirectional\":\"concat\"" : "") +
            "},{\"type\":\"output\",\"units\":2}]}",
        "reference");
    QCOMPARE(model.layers[0].param_count, params.size());

    auto be = backend::create_backend("cpu", {1});
    QVERIFY(be->has_rnn());
    backend::RnnDesc d;
    d.cell = cell == "lstm" ? backend::RnnCell::Lstm : cell == "gru" ? backend::RnnCell::GruResetAfter : backend::RnnCell::Vanilla;
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
            QVERIFY2(worst <= 1e-4, qPrintable(QString("max |diff| %1").arg(worst)));
        }
    }
}

QTEST_APPLESS_MAIN(TestRnnReference)
#include "test_rnn_reference.moc"
