// DL4J's updaterState.bin with Adam (engine/config/weight_import.cpp): DL4J keeps the state in
// UpdaterBlocks -- consecutive parameters with an equal updater configuration -- each holding m
// for the whole block, then v. Built here from known arrays for an MLP (dense 6 -> 4, output 4 ->
// 3, both Adam) whose two layers share one block, and one whose output layer's other learning
// rate makes a block of its own. Where each value lands is read from the real Network's segments;
// one training step from the imported state is compared with DL4J's Adam formula at DL4J's
// iteration (configuration.json's iterationCount).
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "source_dir.h"
#include "backend/registry.h"
#include "config/model_format.h"
#include "nn/network.h"
#include "weight_files.h"

using namespace thresher;
using namespace test_support;
using nlohmann::json;

namespace {

constexpr int IN = 6, HID = 4, OUT = 3;
constexpr std::size_t kDW = IN * HID, kDB = HID, kOW = HID * OUT, kOB = OUT, kParams = kDW + kDB + kOW + kOB;
constexpr long kIteration = 37;

std::vector<float> values(std::size_t n, float seed, float lo = -0.5f, float hi = 0.5f) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = lo + (hi - lo) * (0.5f + 0.5f * std::sin(seed + 1.37f * static_cast<float>(i)));
    return v;
}

// dl4j_lenet.json's dense and output confs, resized, with Adam (output_lr for the output layer).
std::string mlp_config(double output_lr) {
    std::ifstream in((source_dir() + "/tests/engine/config/data/dl4j_lenet.json").toStdString());
    json j = json::parse(in);
    json dense = j["confs"][4], out = j["confs"][5];
    dense["layer"]["nin"] = IN;
    dense["layer"]["nout"] = HID;
    out["layer"]["nin"] = HID;
    out["layer"]["nout"] = OUT;
    auto adam = [](double lr) {
        return json{{"@class", "org.nd4j.linalg.learning.config.Adam"}, {"learningRate", lr}, {"beta1", 0.9},
                    {"beta2", 0.999}, {"epsilon", 1e-8}, {"learningRateSchedule", nullptr}};
    };
    dense["layer"]["iupdater"] = adam(0.01);
    out["layer"]["iupdater"] = adam(output_lr);
    for (json* c : {&dense, &out}) (*c)["layer"]["regularization"] = json::array();
    j["confs"] = json::array({dense, out});
    j.erase("inputPreProcessors");
    j["iterationCount"] = kIteration;
    return j.dump();
}

// Where a parameter block's state starts in the Network's state buffer.
std::size_t state_of(const nn::Network& net, std::size_t param_offset) {
    for (const auto& seg : net.segments())
        if (seg.offset == param_offset) return seg.state_offset;
    return ~std::size_t{0};
}

}  // namespace

class TestDl4jUpdaterState : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QVERIFY(dir_.isValid()); }
    void adamBlocks_data();
    void adamBlocks();
    void adamStepContinuesDl4j();

private:
    config::ImportResult import(double output_lr, const std::vector<float>& state) {
        const auto file = dir_.filePath("adam.zip").toStdString();
        write_zip(file, {{"configuration.json", text_bytes(mlp_config(output_lr))},
                         {"coefficients.bin", nd4j_row(values(kParams, 1.f), false, false)},
                         {"updaterState.bin", nd4j_row(state, false, false)}});
        return config::import_model_file(file);
    }
    QTemporaryDir dir_;
};

void TestDl4jUpdaterState::adamBlocks_data() {
    QTest::addColumn<double>("output_lr");
    QTest::addColumn<bool>("one_block");
    QTest::newRow("one block over both layers") << 0.01 << true;
    QTest::newRow("a block per layer") << 0.002 << false;
}

void TestDl4jUpdaterState::adamBlocks() {
    QFETCH(double, output_lr);
    QFETCH(bool, one_block);
    const auto st = values(2 * kParams, 2.f, 0.f, 1.f);
    const auto r = import(output_lr, st);
    QCOMPARE(r.iterations, kIteration);
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(r.model, *be);
    QCOMPARE(r.updater_state.size(), net.updater_state_size());
    const auto& dense = r.model.layers[0];
    const auto& out = r.model.layers[1];
    // DL4J's order of the state: per block, m over the block's parameters (dense W 'f', b, output
    // W 'f', b) then v over the same.
    const std::size_t dense_part = kDW + kDB, block1 = one_block ? kParams : dense_part;
    struct Part {
        std::size_t param_offset, n, m_at;  // m_at: where this part's m starts in DL4J's state
        bool f_order;
        int rows, cols;
        std::size_t block;  // the size of its block (v starts block later)
    };
    const Part parts[] = {
        {dense.param_offset, kDW, 0, true, IN, HID, block1},
        {dense.param_offset + kDW, kDB, kDW, false, 1, HID, block1},
        {out.param_offset, kOW, one_block ? dense_part : 2 * dense_part, true, HID, OUT, one_block ? kParams : kOW + kOB},
        {out.param_offset + kOW, kOB, (one_block ? dense_part : 2 * dense_part) + kOW, false, 1, OUT,
         one_block ? kParams : kOW + kOB},
    };
    for (const auto& p : parts) {
        const std::size_t at = state_of(net, p.param_offset);
        QVERIFY(at != ~std::size_t{0});
        for (int comp = 0; comp < 2; ++comp)  // Thresher: [m..., v...] per segment
            for (std::size_t i = 0; i < p.n; ++i) {
                // Thresher index i = row * cols + col; DL4J's 'f' index = row + col * rows.
                const std::size_t theirs = p.f_order ? (i / p.cols) + (i % p.cols) * p.rows : i;
                QCOMPARE(r.updater_state[at + comp * p.n + i], st[p.m_at + comp * p.block + theirs]);
            }
    }
}

// One step from the imported state: m' = b1 m + (1 - b1) g, v' = b2 v + (1 - b2) g², and
// p' = p - lr·sqrt(1 - b2^t) / (1 - b1^t) · m' / (sqrt(v') + eps) with t = iterationCount + 1.
void TestDl4jUpdaterState::adamStepContinuesDl4j() {
    const auto st = values(2 * kParams, 3.f, 0.f, 1e-2f);
    const auto r = import(0.01, st);
    auto be = backend::create_backend("cpu", {1});
    nn::Network net(r.model, *be);
    net.set_params(r.params);
    net.set_updater_state(r.updater_state);
    const auto x = values(5 * IN, 4.f, -1.f, 1.f);
    std::vector<float> t(5 * OUT, 0.f);
    for (int s = 0; s < 5; ++s) t[static_cast<std::size_t>(s * OUT + s % OUT)] = 1.f;
    net.compute_gradients(x.data(), t.data(), 5, 0);
    const auto g = net.get_gradients();
    net.compute_update(r.iterations);
    net.apply_update();
    const auto after = net.get_params();
    const double tt = static_cast<double>(kIteration) + 1, b1 = 0.9, b2 = 0.999, eps = 1e-8;
    const double alpha = 0.01 * std::sqrt(1 - std::pow(b2, tt)) / (1 - std::pow(b1, tt));
    for (const auto& seg : net.segments())
        for (std::size_t i = 0; i < seg.size; ++i) {
            const std::size_t k = seg.offset + i;
            const double m = b1 * r.updater_state[seg.state_offset + i] + (1 - b1) * g[k];
            const double v = b2 * r.updater_state[seg.state_offset + seg.size + i] + (1 - b2) * double(g[k]) * g[k];
            const double want = r.params[k] - alpha * m / (std::sqrt(v) + eps);
            QVERIFY2(std::abs(after[k] - want) < 1e-6 + 1e-4 * std::abs(want),
                     qPrintable(QString("param %1: %2, DL4J's Adam %3").arg(k).arg(after[k]).arg(want)));
        }
    // The same step from a fresh start (t = 1, zero moments) lands elsewhere: the state matters.
    nn::Network fresh(r.model, *be);
    fresh.set_params(r.params);
    fresh.compute_gradients(x.data(), t.data(), 5, 0);
    fresh.compute_update(0);
    fresh.apply_update();
    const auto other = fresh.get_params();
    double differs = 0;
    for (std::size_t k = 0; k < after.size(); ++k) differs = std::max(differs, double(std::abs(after[k] - other[k])));
    QVERIFY2(differs > 1e-4, qPrintable(QString("%1").arg(differs)));
}

QTEST_GUILESS_MAIN(TestDl4jUpdaterState)
#include "test_dl4j_updater_state.moc"
