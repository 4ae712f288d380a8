// Training with a learning-rate schedule: every iteration event's `lr` is the schedule's value
// for that step (by iteration and by epoch), and the updates really use it: once a map schedule
// drops the rate to 0 the parameters stop moving, so a full-batch run repeats its loss exactly.
#include <QtTest>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "config/model_config.h"
#include "train/trainer.h"

using namespace thresher;

namespace {

// 64 samples, two features, class 1 when x0 + 2·x1 > 0 (fixed seed).
void write_csv(const QString& path) {
    std::ofstream out(path.toStdString());
    std::mt19937 rng(7);
    std::normal_distribution<float> n(0.f, 1.f);
    for (int i = 0; i < 64; ++i) {
        const float a = n(rng), b = n(rng);
        out << a << "," << b << "," << (a + 2 * b > 0 ? 1 : 0) << "\n";
    }
}

void write_model(const QString& path, const char* schedule) {
    std::ofstream out(path.toStdString());
    out << R"({"input":{"size":2},"seed":3,"updater":{"type":"sgd","schedule":)" << schedule
        << R"(},"layers":[{"type":"dense","units":4,"activation":"tanh"},{"type":"output","units":2,"activation":"softmax","loss":"mcxent"}]})";
}

std::vector<nlohmann::json> iterations(const std::string& events) {
    std::vector<nlohmann::json> out;
    std::istringstream in(events);
    for (std::string line; std::getline(in, line);) {
        auto j = nlohmann::json::parse(line);
        if (j["event"] == "iteration") out.push_back(j);
    }
    return out;
}

std::vector<nlohmann::json> run_and_collect(const QString& model, const QString& csv, int batch, int epochs) {
    train::TrainOptions o;
    o.model_path = model.toStdString();
    o.data_spec = csv.toStdString();
    o.batch = batch;
    o.epochs = epochs;
    o.threads = 1;
    std::ostringstream events, log;
    events::EventWriter ev(events);
    train::run_training(o, ev, log);
    return iterations(events.str());
}

}  // namespace

class TestScheduleTraining : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void events_carry_the_scheduled_lr();
    void lr_zero_freezes_the_model();
};

void TestScheduleTraining::events_carry_the_scheduled_lr() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    write_csv(dir.filePath("d.csv"));
    // By iteration: Keras ExponentialDecay(0.2, decay_steps 3, rate 0.5); 64 samples / 16 = 4 per epoch.
    write_model(dir.filePath("it.json"), R"({"type":"exponential","initial":0.2,"rate":0.5,"decay_steps":3})");
    auto it = run_and_collect(dir.filePath("it.json"), dir.filePath("d.csv"), 16, 3);
    QCOMPARE(it.size(), std::size_t(12));
    for (const auto& e : it) {
        const long step = e["iter"].get<long>() - 1;  // "iter" counts iterations done
        const double want = 0.2 * std::pow(0.5, step / 3.0);
        QVERIFY2(std::abs(e["lr"].get<double>() - want) < 1e-12, qPrintable(QString::fromStdString(e.dump())));
    }
    // By epoch: DL4J StepSchedule(EPOCH, 0.1, 0.5, 1): 0.1, 0.05, 0.025 per epoch.
    write_model(dir.filePath("ep.json"), R"({"type":"exponential","by":"epoch","initial":0.1,"rate":0.5,"staircase":true})");
    auto ep = run_and_collect(dir.filePath("ep.json"), dir.filePath("d.csv"), 16, 3);
    QCOMPARE(ep.size(), std::size_t(12));
    for (const auto& e : ep) {
        const double want = 0.1 * std::pow(0.5, e["epoch"].get<int>());
        QVERIFY2(std::abs(e["lr"].get<double>() - want) < 1e-12, qPrintable(QString::fromStdString(e.dump())));
    }
}

void TestScheduleTraining::lr_zero_freezes_the_model() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    write_csv(dir.filePath("d.csv"));
    // Full batch (one iteration per epoch): steps 0-2 at 0.5, then 0. The loss of step k is taken
    // before its update, so losses 0..3 differ and 3, 4, 5 are equal.
    write_model(dir.filePath("m.json"), R"({"type":"map","values":{"0":0.5,"3":0}})");
    auto e = run_and_collect(dir.filePath("m.json"), dir.filePath("d.csv"), 64, 6);
    QCOMPARE(e.size(), std::size_t(6));
    std::vector<double> loss;
    for (const auto& x : e) loss.push_back(x["loss"].get<double>());
    for (int k = 0; k < 3; ++k) QVERIFY2(loss[k + 1] < loss[k], qPrintable(QString("loss %1 -> %2").arg(loss[k]).arg(loss[k + 1])));
    QCOMPARE(loss[4], loss[3]);
    QCOMPARE(loss[5], loss[3]);
    QCOMPARE(e[2]["lr"].get<double>(), 0.5);
    QCOMPARE(e[3]["lr"].get<double>(), 0.0);
}

QTEST_APPLESS_MAIN(TestScheduleTraining)
#include "test_schedule_training.moc"
