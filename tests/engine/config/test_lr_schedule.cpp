// Learning-rate schedules: every kind's values against the formula its format documents (DL4J's
// ISchedule classes and 0.x lrPolicy, Keras's LearningRateSchedule classes), computed here
// independently; Thresher JSON round trips; imports of real-shaped DL4J and Keras files give the
// schedule; and what cannot be trained is refused naming the field.
#include <QtTest>

#include <cmath>
#include <functional>
#include <numbers>

#include "source_dir.h"
#include "config/lr_schedule.h"
#include "config/model_format.h"
#include "core/error.h"

using namespace thresher;

using test_support::source_dir;

namespace {

std::string fixture(const QString& name) { return (source_dir() + "/tests/engine/config/data/" + name).toStdString(); }

config::LrSchedule parse(const char* json) { return config::LrSchedule::from_json(nlohmann::json::parse(json), "m.json", "updater.schedule"); }

// A Thresher model around an updater with `schedule`, imported like any file.
QByteArray model_with(const QByteArray& schedule) {
    return R"({"input":{"size":2},"updater":{"type":"sgd","schedule":)" + schedule +
           R"(},"layers":[{"type":"output","units":2}]})";
}

bool close(double a, double b) { return std::abs(a - b) <= 1e-12 + 1e-9 * std::abs(b); }

QString why(long i, double got, double want) {
    return QStringLiteral("i=%1: got %2, want %3").arg(i).arg(got, 0, 'g', 17).arg(want, 0, 'g', 17);
}

}  // namespace

class TestLrSchedule : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void values_follow_the_formulas_data();
    void values_follow_the_formulas();
    void by_epoch_and_ramp();
    void thresher_json_round_trips();
    void thresher_json_refusals_data();
    void thresher_json_refusals();
    void dl4j_map_schedule_fixture();
    void dl4j_legacy_step_policy_fixture();
    void dl4j_schedule_classes_data();
    void dl4j_schedule_classes();
    void keras_exponential_decay_fixture();
    void keras_schedule_classes_data();
    void keras_schedule_classes();
    void import_refusals_data();
    void import_refusals();
};

using Formula = std::function<double(long)>;
Q_DECLARE_METATYPE(Formula)

void TestLrSchedule::values_follow_the_formulas_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<Formula>("formula");
    // DL4J ExponentialSchedule: initialValue * gamma^i.
    QTest::newRow("exponential") << QByteArray(R"({"type":"exponential","initial":0.1,"rate":0.9})")
                                 << Formula([](long i) { return 0.1 * std::pow(0.9, double(i)); });
    // DL4J StepSchedule: initialValue * decayRate^floor(i / step).
    QTest::newRow("step (staircase)") << QByteArray(R"({"type":"exponential","initial":0.1,"rate":0.5,"decay_steps":3,"staircase":true})")
                                      << Formula([](long i) { return 0.1 * std::pow(0.5, std::floor(i / 3.0)); });
    // Keras ExponentialDecay: initial * decay_rate^(step / decay_steps).
    QTest::newRow("keras exponential") << QByteArray(R"({"type":"exponential","initial":0.01,"rate":0.96,"decay_steps":4})")
                                       << Formula([](long i) { return 0.01 * std::pow(0.96, i / 4.0); });
    // DL4J InverseSchedule: initialValue / (1 + gamma*i)^power.
    QTest::newRow("inverse") << QByteArray(R"({"type":"inverse","initial":0.2,"rate":0.1,"power":0.75})")
                             << Formula([](long i) { return 0.2 / std::pow(1 + 0.1 * i, 0.75); });
    // Keras InverseTimeDecay staircase: initial / (1 + rate * floor(step / decay_steps)).
    QTest::newRow("keras inverse time staircase")
        << QByteArray(R"({"type":"inverse","initial":0.5,"rate":2,"decay_steps":5,"staircase":true})")
        << Formula([](long i) { return 0.5 / (1 + 2 * std::floor(i / 5.0)); });
    // DL4J PolySchedule, as its valueAt computes: initialValue * (1 + i/maxIter)^power; 0 from maxIter.
    QTest::newRow("dl4j poly") << QByteArray(R"({"type":"poly","initial":0.1,"power":2,"decay_steps":7})")
                               << Formula([](long i) { return i >= 7 ? 0.0 : 0.1 * std::pow(1 + i / 7.0, 2.0); });
    // Keras PolynomialDecay: (initial - end) * (1 - min(step, D)/D)^power + end.
    QTest::newRow("keras polynomial") << QByteArray(R"({"type":"polynomial","initial":0.1,"end":0.001,"decay_steps":6,"power":0.5})")
                                      << Formula([](long i) {
                                             const double s = std::min<double>(i, 6);
                                             return (0.1 - 0.001) * std::pow(1 - s / 6, 0.5) + 0.001;
                                         });
    // Keras PolynomialDecay with cycle: D * ceil(step / D) (1 at step 0).
    QTest::newRow("keras polynomial cycle") << QByteArray(R"({"type":"polynomial","initial":1,"end":0.1,"decay_steps":4,"power":1,"cycle":true})")
                                            << Formula([](long i) {
                                                   const double d = 4 * (i == 0 ? 1.0 : std::ceil(i / 4.0));
                                                   return 0.9 * (1 - i / d) + 0.1;
                                               });
    // DL4J SigmoidSchedule: initialValue / (1 + exp(-gamma * (i - stepSize))).
    QTest::newRow("sigmoid") << QByteArray(R"({"type":"sigmoid","initial":0.3,"rate":0.5,"step":10})")
                             << Formula([](long i) { return 0.3 / (1 + std::exp(-0.5 * (i - 10.0))); });
    // DL4J CycleSchedule(initial 0.01, max 0.1, cycle 10, annealing 2, decay 0.1): stepSize 4,
    // increment 0.0225; up for 4, down for 4, then initial * decay^(annealing - (cycle - pos)).
    QTest::newRow("cycle") << QByteArray(R"({"type":"cycle","initial":0.01,"max":0.1,"cycle_length":10,"annealing_length":2,"annealing_decay":0.1})")
                           << Formula([](long i) {
                                  const long pos = i % 10;
                                  const double inc = (0.1 - 0.01) / 4;
                                  if (pos < 4) return 0.01 + inc * pos;
                                  if (pos < 8) return 0.1 - inc * (pos - 4);
                                  return 0.01 * std::pow(0.1, double(2 - (10 - pos)));
                              });
    // Keras CosineDecay: initial * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, D) / D)) + alpha).
    QTest::newRow("cosine") << QByteArray(R"({"type":"cosine","initial":0.1,"decay_steps":8,"alpha":0.1})")
                            << Formula([](long i) {
                                   const double s = std::min<double>(i, 8);
                                   return 0.1 * (0.9 * 0.5 * (1 + std::cos(std::numbers::pi * s / 8)) + 0.1);
                               });
    // Keras CosineDecay with warmup: linear from initial to warmup_target, then cosine from the target.
    QTest::newRow("cosine warmup") << QByteArray(R"({"type":"cosine","initial":0,"decay_steps":6,"warmup_target":0.2,"warmup_steps":4})")
                                   << Formula([](long i) {
                                          if (i < 4) return 0.2 * i / 4.0;
                                          const double s = std::min<double>(i - 4, 6);
                                          return 0.2 * 0.5 * (1 + std::cos(std::numbers::pi * s / 6));
                                      });
    // DL4J MapSchedule / Keras PiecewiseConstantDecay: the value of the last position <= i.
    QTest::newRow("map") << QByteArray(R"({"type":"map","values":{"0":0.06,"5":0.05,"12":0.028}})")
                         << Formula([](long i) { return i < 5 ? 0.06 : i < 12 ? 0.05 : 0.028; });
}

void TestLrSchedule::values_follow_the_formulas() {
    QFETCH(QByteArray, json);
    QFETCH(Formula, formula);
    const auto s = config::LrSchedule::from_json(nlohmann::json::parse(json.toStdString()), "m.json", "updater.schedule");
    for (long i = 0; i < 30; ++i) {
        const double got = s.value_at(i, 0), want = formula(i);
        QVERIFY2(close(got, want), qPrintable(why(i, got, want)));
    }
}

void TestLrSchedule::by_epoch_and_ramp() {
    // By epoch: the iteration does not matter.
    const auto e = parse(R"({"type":"exponential","by":"epoch","initial":0.1,"rate":0.5})");
    QVERIFY(close(e.value_at(1000, 0), 0.1));
    QVERIFY(close(e.value_at(0, 2), 0.025));
    // DL4J RampSchedule(base, 4): base * (iteration + 1)/4 until iteration 3.
    const auto r = parse(R"({"type":"map","values":{"0":0.2},"ramp":4})");
    const double want[] = {0.05, 0.1, 0.15, 0.2, 0.2};
    for (long i = 0; i < 5; ++i) QVERIFY2(close(r.value_at(i, 0), want[i]), qPrintable(why(i, r.value_at(i, 0), want[i])));
}

void TestLrSchedule::thresher_json_round_trips() {
    for (const char* j : {R"({"type":"exponential","by":"epoch","initial":0.1,"rate":0.5,"decay_steps":2,"staircase":true})",
                          R"({"type":"cycle","initial":0.01,"max":0.1,"cycle_length":10,"annealing_length":2,"annealing_decay":0.1,"ramp":3})",
                          R"({"type":"cosine","initial":0,"decay_steps":6,"warmup_target":0.2,"warmup_steps":4})",
                          R"({"type":"map","values":{"0":0.06,"5":0.05}})"}) {
        const auto a = parse(j);
        const auto b = config::LrSchedule::from_json(a.to_json(), "again", "s");
        QCOMPARE(b.to_json(), a.to_json());
        for (long i = 0; i < 20; ++i) QVERIFY(close(b.value_at(i, int(i / 3)), a.value_at(i, int(i / 3))));
    }
    // In a model: the updater's learning rate is the schedule's start, and the model saves it.
    const auto m = config::import_model_text(model_with(R"({"type":"exponential","initial":0.25,"rate":0.5})").toStdString(), "m.json").model;
    QVERIFY(m.lr_schedule.has_value());
    QCOMPARE(m.updater.learning_rate, 0.25f);
    QVERIFY(close(m.learning_rate_at(0, 2, 0), 0.0625));
    const auto again = config::ModelConfig::from_json(m.to_json(), "saved");
    QCOMPARE(again.to_json(), m.to_json());
}

void TestLrSchedule::thresher_json_refusals_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QStringList>("expected");
    QTest::newRow("unknown type") << model_with(R"({"type":"warp","initial":1})")
                                  << QStringList{"m.json: updater.schedule: \"type\"", "warp"};
    QTest::newRow("map without 0") << model_with(R"({"type":"map","values":{"5":0.1}})")
                                   << QStringList{"updater.schedule: \"values\"", "position 0"};
    QTest::newRow("missing rate") << model_with(R"({"type":"exponential","initial":0.1})")
                                  << QStringList{"updater.schedule: \"rate\"", "required"};
    QTest::newRow("typo") << model_with(R"({"type":"exponential","initial":0.1,"rate":0.5,"stares":true})")
                          << QStringList{"updater.schedule", "stares"};
    QTest::newRow("negative initial") << model_with(R"({"type":"exponential","initial":-0.1,"rate":0.5})")
                                      << QStringList{"updater.schedule: \"initial\""};
    QTest::newRow("zero decay steps") << model_with(R"({"type":"poly","initial":0.1,"power":1,"decay_steps":0})")
                                      << QStringList{"updater.schedule: \"decay_steps\"", "> 0"};
    QTest::newRow("learning_rate disagrees")
        << QByteArray(R"({"input":{"size":2},"updater":{"type":"sgd","learning_rate":0.5,"schedule":{"type":"exponential","initial":0.1,"rate":0.5}},"layers":[{"type":"output","units":2}]})")
        << QStringList{"updater: \"learning_rate\"", "0.5", "starts at 0.1"};
    QTest::newRow("schedule on a layer")
        << QByteArray(R"({"input":{"size":2},"layers":[{"type":"output","units":2,"updater":{"type":"sgd","schedule":{"type":"map","values":{"0":1}}}}]})")
        << QStringList{"\"schedule\"", "only the model's updater"};
}

void TestLrSchedule::thresher_json_refusals() {
    QFETCH(QByteArray, json);
    QFETCH(QStringList, expected);
    try {
        config::import_model_text(json.toStdString(), "m.json");
        QFAIL("accepted");
    } catch (const ConfigError& e) {
        const QString msg = QString::fromStdString(e.what());
        for (const auto& x : expected) QVERIFY2(msg.contains(x), qPrintable(msg + "  [missing: " + x + "]"));
    }
}

void TestLrSchedule::dl4j_map_schedule_fixture() {
    // DL4J 1.0.0-beta2 shape: Nesterovs with "learningRate": "NaN" beside a MapSchedule on every layer.
    const auto r = config::import_model_file(fixture("dl4j_1.0.0-beta2_iris_map_schedule.json"));
    QVERIFY(r.model.lr_schedule.has_value());
    const auto& s = *r.model.lr_schedule;
    QCOMPARE(s.kind, config::ScheduleKind::Map);
    QCOMPARE(s.by, config::ScheduleUnit::Iteration);
    QCOMPARE(r.model.updater.kind, config::UpdaterKind::Nesterovs);
    QCOMPARE(r.model.updater.momentum, 0.9f);
    QCOMPARE(r.model.updater.learning_rate, 0.06f);
    QVERIFY(close(s.value_at(199, 0), 0.06));
    QVERIFY(close(s.value_at(200, 0), 0.05));
    QVERIFY(close(s.value_at(599, 0), 0.05));
    QVERIFY(close(s.value_at(600, 0), 0.028));
    QVERIFY(close(s.value_at(100000, 0), 0.028));
}

void TestLrSchedule::dl4j_legacy_step_policy_fixture() {
    // DL4J 0.9.1: "learningRatePolicy": "Step", lrPolicyDecayRate 0.5, lrPolicySteps 100 on the
    // layers' learning rate 0.006: lr * 0.5^floor(i / 100).
    const auto r = config::import_model_file(fixture("dl4j_0.9.1_mlp_step_policy.json"));
    QVERIFY(r.model.lr_schedule.has_value());
    for (long i : {0L, 99L, 100L, 250L, 1000L}) {
        const double want = double(0.006f) * std::pow(0.5, std::floor(i / 100.0));
        QVERIFY2(std::abs(r.model.learning_rate_at(0, i, 0) - want) < 1e-9, qPrintable(why(i, r.model.learning_rate_at(0, i, 0), want)));
    }
}

void TestLrSchedule::dl4j_schedule_classes_data() {
    QTest::addColumn<QByteArray>("schedule");
    QTest::addColumn<Formula>("formula");  // of (iteration), epoch 0
    QTest::newRow("StepSchedule") << QByteArray(R"({"@class":"org.nd4j.linalg.schedule.StepSchedule","scheduleType":"ITERATION","initialValue":0.1,"decayRate":0.5,"step":4.0})")
                                  << Formula([](long i) { return 0.1 * std::pow(0.5, std::floor(i / 4.0)); });
    QTest::newRow("InverseSchedule") << QByteArray(R"({"@class":"org.nd4j.linalg.schedule.InverseSchedule","scheduleType":"ITERATION","initialValue":0.1,"gamma":0.2,"power":2.0})")
                                     << Formula([](long i) { return 0.1 / std::pow(1 + 0.2 * i, 2.0); });
    QTest::newRow("PolySchedule") << QByteArray(R"({"@class":"org.nd4j.linalg.schedule.PolySchedule","scheduleType":"ITERATION","initialValue":0.1,"power":1.5,"maxIter":9})")
                                  << Formula([](long i) { return i >= 9 ? 0.0 : 0.1 * std::pow(1 + i / 9.0, 1.5); });
    QTest::newRow("SigmoidSchedule (0.9 wrapper)") << QByteArray(R"({"SigmoidSchedule":{"scheduleType":"ITERATION","initialValue":0.1,"gamma":1.0,"stepSize":5}})")
                                                   << Formula([](long i) { return 0.1 / (1 + std::exp(-(i - 5.0))); });
    QTest::newRow("CycleSchedule") << QByteArray(R"({"@class":"org.nd4j.linalg.schedule.CycleSchedule","scheduleType":"ITERATION","initialLearningRate":0.01,"maxLearningRate":0.05,"cycleLength":12,"annealingLength":2,"annealingDecay":0.5,"stepSize":5,"increment":0.008})")
                                   << Formula([](long i) {
                                          const long pos = i % 12;
                                          if (pos < 5) return 0.01 + 0.008 * pos;
                                          if (pos < 10) return 0.05 - 0.008 * (pos - 5);
                                          return 0.01 * std::pow(0.5, double(2 - (12 - pos)));
                                      });
    QTest::newRow("RampSchedule over Exponential")
        << QByteArray(R"({"@class":"org.nd4j.linalg.schedule.RampSchedule","baseSchedule":{"@class":"org.nd4j.linalg.schedule.ExponentialSchedule","scheduleType":"ITERATION","initialValue":0.1,"gamma":0.9},"numIter":5})")
        << Formula([](long i) { return 0.1 * std::pow(0.9, double(i)) * (i < 4 ? (i + 1) / 5.0 : 1.0); });
}

void TestLrSchedule::dl4j_schedule_classes() {
    QFETCH(QByteArray, schedule);
    QFETCH(Formula, formula);
    auto layer = [&](const char* cls, const char* extra) {
        return QByteArray(R"({"layer":{"@class":"org.deeplearning4j.nn.conf.layers.)") + cls + R"(","nin":)" + extra +
               R"(,"iupdater":{"@class":"org.nd4j.linalg.learning.config.Sgd","learningRate":"NaN","learningRateSchedule":)" +
               schedule + "}}}";
    };
    const QByteArray text = "{\"confs\":[" + layer("DenseLayer", R"(4,"nout":3)") + "," +
                            layer("OutputLayer", R"(3,"nout":2,"lossFn":{"@class":"org.nd4j.linalg.lossfunctions.impl.LossMCXENT"},"activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationSoftmax"})") +
                            "]}";
    const auto r = config::import_model_text(text.toStdString(), "cfg.json");
    QVERIFY(r.model.lr_schedule.has_value());
    for (long i = 0; i < 30; ++i) {
        const double got = r.model.learning_rate_at(1, i, 0), want = formula(i);
        QVERIFY2(close(got, want), qPrintable(why(i, got, want)));
    }
}

void TestLrSchedule::keras_exponential_decay_fixture() {
    // Keras 3 to_json() with compile_config: SGD(ExponentialDecay(0.1, decay_steps 2, rate 0.5,
    // staircase)); Keras stores 0.1 as float32 0.10000000149011612.
    const auto r = config::import_model_file(fixture("keras3_mlp_exponential_decay.json"));
    QVERIFY(r.model.lr_schedule.has_value());
    QCOMPARE(r.model.updater.kind, config::UpdaterKind::Sgd);
    QCOMPARE(r.model.updater.learning_rate, 0.1f);
    const double want[] = {0.1, 0.1, 0.05, 0.05, 0.025};
    for (long i = 0; i < 5; ++i)
        QVERIFY2(std::abs(r.model.learning_rate_at(0, i, 0) - want[i]) < 1e-8, qPrintable(why(i, r.model.learning_rate_at(0, i, 0), want[i])));
    // The saved config shows the decimal the user wrote.
    QCOMPARE(r.model.to_json()["updater"]["schedule"]["initial"].dump(), std::string("0.1"));
}

void TestLrSchedule::keras_schedule_classes_data() {
    QTest::addColumn<QByteArray>("schedule");
    QTest::addColumn<Formula>("formula");
    QTest::newRow("InverseTimeDecay") << QByteArray(R"({"class_name":"InverseTimeDecay","config":{"initial_learning_rate":0.1,"decay_steps":3,"decay_rate":0.5,"staircase":false}})")
                                      << Formula([](long i) { return 0.1 / (1 + 0.5 * i / 3.0); });
    QTest::newRow("PolynomialDecay default end") << QByteArray(R"({"class_name":"PolynomialDecay","config":{"initial_learning_rate":0.1,"decay_steps":10,"power":2.0}})")
                                                 << Formula([](long i) {
                                                        const double s = std::min<double>(i, 10);
                                                        return (0.1 - 0.0001) * std::pow(1 - s / 10, 2.0) + 0.0001;
                                                    });
    QTest::newRow("CosineDecay") << QByteArray(R"({"class_name":"CosineDecay","config":{"initial_learning_rate":0.1,"decay_steps":12,"alpha":0.0,"warmup_target":null,"warmup_steps":0}})")
                                 << Formula([](long i) { return 0.1 * 0.5 * (1 + std::cos(std::numbers::pi * std::min<double>(i, 12) / 12)); });
    // boundaries [4, 9], values [0.1, 0.05, 0.01]: step <= 4 -> 0.1, 4 < step <= 9 -> 0.05, then 0.01.
    QTest::newRow("PiecewiseConstantDecay") << QByteArray(R"({"class_name":"PiecewiseConstantDecay","config":{"boundaries":[4,9],"values":[0.1,0.05,0.01]}})")
                                            << Formula([](long i) { return i <= 4 ? 0.1 : i <= 9 ? 0.05 : 0.01; });
    // Keras 2's optimizer "decay": lr / (1 + decay * iterations).
    QTest::newRow("Keras 2 decay") << QByteArray("decay")
                                   << Formula([](long i) { return double(0.05f) / (1 + double(0.01f) * i); });
}

void TestLrSchedule::keras_schedule_classes() {
    QFETCH(QByteArray, schedule);
    QFETCH(Formula, formula);
    const QByteArray lr = schedule == "decay" ? QByteArray(R"(0.05,"decay":0.01)") : schedule;
    const QByteArray text = R"({"class_name":"Sequential","config":{"name":"s","layers":[
        {"class_name":"InputLayer","config":{"batch_shape":[null,6],"name":"in"}},
        {"class_name":"Dense","config":{"name":"out","units":3,"activation":"softmax"}}]},
        "compile_config":{"optimizer":{"class_name":"SGD","config":{"learning_rate":)" + lr +
                            R"(}},"loss":"categorical_crossentropy"}})";
    const auto r = config::import_model_text(text.toStdString(), "k.json");
    QVERIFY(r.model.lr_schedule.has_value());
    for (long i = 0; i < 30; ++i) {
        const double got = r.model.learning_rate_at(0, i, 0), want = formula(i);
        QVERIFY2(std::abs(got - want) <= 1e-7 * want + 1e-12, qPrintable(why(i, got, want)));
    }
}

void TestLrSchedule::import_refusals_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QStringList>("expected");
    auto dl4j_sched = [](const QByteArray& sched) {
        return QByteArray(R"({"confs":[{"layer":{"@class":"org.deeplearning4j.nn.conf.layers.OutputLayer","nin":4,"nout":2,
            "lossFn":{"@class":"org.nd4j.linalg.lossfunctions.impl.LossMCXENT"},"activationFn":{"@class":"org.nd4j.linalg.activations.impl.ActivationSoftmax"},
            "iupdater":{"@class":"org.nd4j.linalg.learning.config.Sgd","learningRate":"NaN","learningRateSchedule":)") + sched + "}}}]}";
    };
    QTest::newRow("MapSchedule without 0")
        << dl4j_sched(R"({"@class":"org.nd4j.linalg.schedule.MapSchedule","scheduleType":"ITERATION","values":{"10":0.1}})")
        << QStringList{"confs[0] (OutputLayer).iupdater.learningRateSchedule (MapSchedule)", "\"values\"", "position 0"};
    QTest::newRow("ExponentialSchedule gamma NaN")
        << dl4j_sched(R"({"@class":"org.nd4j.linalg.schedule.ExponentialSchedule","scheduleType":"ITERATION","initialValue":0.1,"gamma":"NaN"})")
        << QStringList{"(ExponentialSchedule)", "\"gamma\""};
    QTest::newRow("unknown schedule class")
        << dl4j_sched(R"({"@class":"com.example.WarpSchedule","initialValue":0.1})")
        << QStringList{"\"learningRateSchedule\"", "WarpSchedule is not supported"};
    QTest::newRow("0.x TorchStep policy")
        << QByteArray(R"({"confs":[{"learningRatePolicy":"TorchStep","lrPolicyDecayRate":0.5,"lrPolicySteps":10,"layer":{"output":{"nIn":4,"nOut":2,
            "activationFunction":"softmax","lossFunction":"MCXENT","updater":"SGD","learningRate":0.1}}}]})")
        << QStringList{"confs[0]", "\"learningRatePolicy\"", "TorchStep is not supported"};
    QTest::newRow("0.x Step policy without steps")
        << QByteArray(R"({"confs":[{"learningRatePolicy":"Step","lrPolicyDecayRate":0.5,"lrPolicySteps":"NaN","layer":{"output":{"nIn":4,"nOut":2,
            "activationFunction":"softmax","lossFunction":"MCXENT","updater":"SGD","learningRate":0.1}}}]})")
        << QStringList{"confs[0]", "\"lrPolicySteps\""};
    QTest::newRow("keras CosineDecayRestarts")
        << QByteArray(R"({"class_name":"Sequential","config":{"name":"s","layers":[{"class_name":"InputLayer","config":{"batch_shape":[null,6],"name":"in"}},
            {"class_name":"Dense","config":{"name":"out","units":3,"activation":"softmax"}}]},
            "compile_config":{"optimizer":{"class_name":"SGD","config":{"learning_rate":{"class_name":"CosineDecayRestarts","config":{"initial_learning_rate":0.1,"first_decay_steps":10}}}},"loss":"categorical_crossentropy"}})")
        << QStringList{"compile_config.optimizer (SGD)", "\"learning_rate\"", "CosineDecayRestarts is not supported"};
    QTest::newRow("keras piecewise values count")
        << QByteArray(R"({"class_name":"Sequential","config":{"name":"s","layers":[{"class_name":"InputLayer","config":{"batch_shape":[null,6],"name":"in"}},
            {"class_name":"Dense","config":{"name":"out","units":3,"activation":"softmax"}}]},
            "compile_config":{"optimizer":{"class_name":"SGD","config":{"learning_rate":{"class_name":"PiecewiseConstantDecay","config":{"boundaries":[5],"values":[0.1]}}}},"loss":"categorical_crossentropy"}})")
        << QStringList{"(PiecewiseConstantDecay)", "\"values\"", "one more entry"};
}

void TestLrSchedule::import_refusals() {
    QFETCH(QByteArray, json);
    QFETCH(QStringList, expected);
    try {
        config::import_model_text(json.toStdString(), "cfg.json");
        QFAIL("accepted");
    } catch (const ConfigError& e) {
        const QString msg = QString::fromStdString(e.what());
        for (const auto& x : expected) QVERIFY2(msg.contains(x), qPrintable(msg + "  [missing: " + x + "]"));
    }
}

QTEST_APPLESS_MAIN(TestLrSchedule)
#include "test_lr_schedule.moc"
