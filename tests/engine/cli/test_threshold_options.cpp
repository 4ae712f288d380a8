// The threshold settings accepted and refused alike by thresher-engine (--threshold-algorithm,
// --threshold) and by a run spec (training.threshold_algorithm, training.threshold), over one
// table of inputs: the engine as a process on a tiny CSV, the spec through RunSpec::from_json.
// Both use the engine's codec (codec/threshold_spec.h); each names the field in its own
// terms, with the same words otherwise.
#include <QtTest>

#include <QFile>
#include <QJsonObject>
#include <QTemporaryDir>

#include "engine_process.h"
#include "run_spec.h"

using thresher::launcher::RunSpec;
using thresher::launcher::SpecError;

namespace {

bool write_text(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

// The spec's words put into the engine's: its JSON paths become flags.
QString as_flags(QString message) {
    return message.replace("training.threshold_algorithm", "--threshold-algorithm").replace("training.threshold", "--threshold");
}

}  // namespace

class TestThresholdOptions : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void same_answers_data();
    void same_answers();

private:
    QString path(const QString& name) const { return dir_.filePath(name); }
    QTemporaryDir dir_;
};

void TestThresholdOptions::initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY2(QFile::exists(engine_binary()), qPrintable(engine_binary()));
    QVERIFY(write_text(path("m.json"), R"({"input":{"size":3},"updater":{"type":"sgd","learning_rate":0.05},
                                           "layers":[{"type":"output","units":3}]})"));
    QVERIFY(write_text(path("d.csv"), "1,2,3,0\n4,5,6,1\n7,8,9,2\n1,1,1,0\n"));
}

void TestThresholdOptions::same_answers_data() {
    QTest::addColumn<QString>("algorithm");  // empty: not given
    QTest::addColumn<double>("threshold");   // NaN: not given
    QTest::addColumn<bool>("accepted");
    QTest::addColumn<bool>("same_words");  // false: CLI11's own range check words the refusal
    const double none = std::numeric_limits<double>::quiet_NaN();
    QTest::newRow("default") << "" << none << true << true;
    QTest::newRow("adaptive") << "adaptive" << none << true << true;
    QTest::newRow("adaptive + τ") << "adaptive" << 0.002 << true << true;
    QTest::newRow("adaptive, all numbers") << "adaptive:0.002:1e-5:0.05:0.9" << none << true << true;
    QTest::newRow("fixed + τ") << "fixed" << 0.01 << true << true;
    QTest::newRow("fixed:τ") << "fixed:0.01" << none << true << true;
    QTest::newRow("target density + τ") << "target:1e-3" << 0.01 << true << true;
    QTest::newRow("target") << "target" << none << true << true;
    QTest::newRow("fixed without τ") << "fixed" << none << false << true;
    QTest::newRow("τ twice") << "adaptive:1e-3" << 0.01 << false << true;
    QTest::newRow("unknown name") << "magic:1" << none << false << true;
    QTest::newRow("name's case") << "Adaptive" << none << false << true;
    QTest::newRow("not a number") << "fixed:abc" << none << false << true;
    QTest::newRow("too many numbers") << "target:0.01:0.1:0.9:1" << none << false << true;
    QTest::newRow("min above max") << "adaptive:1e-3:0.5:0.1" << none << false << true;
    QTest::newRow("decay 1") << "target:0.01:0.1:1" << none << false << true;
    QTest::newRow("τ below a float") << "fixed" << 1e-50 << false << true;
    QTest::newRow("τ 0") << "adaptive" << 0.0 << false << false;
    QTest::newRow("τ negative") << "fixed" << -1.0 << false << false;
}

void TestThresholdOptions::same_answers() {
    QFETCH(QString, algorithm);
    QFETCH(double, threshold);
    QFETCH(bool, accepted);
    QFETCH(bool, same_words);

    // The engine, as the launcher would start it for one worker.
    QStringList args{"train", "--model", path("m.json"), "--data", path("d.csv"), "--strategy", "gradient-sharing",
                     "--epochs", "1", "--threads", "1"};
    // The spec, as a user would write it.
    QJsonObject training{{"strategy", "gradient-sharing"}, {"epochs", 1}};
    if (!algorithm.isEmpty()) {
        args << "--threshold-algorithm" << algorithm;
        training["threshold_algorithm"] = algorithm;
    }
    if (!std::isnan(threshold)) {
        args << "--threshold" << QString::number(threshold, 'g', 17);
        training["threshold"] = threshold;
    }
    const QJsonObject spec{{"format", "thresher-run"}, {"version", 1}, {"model", path("m.json")},
                           {"data", path("d.csv")}, {"training", training}};

    QString spec_error;
    try {
        (void)RunSpec::from_json(spec, "spec.json", dir_.path());
    } catch (const SpecError& e) {
        spec_error = QString::fromStdString(e.what());
    }
    const EngineRun engine = run_engine(args, 60000);
    QVERIFY2(engine.finished, qPrintable(engine.summary()));

    QCOMPARE(spec_error.isEmpty(), accepted);
    QCOMPARE(engine.exit_code == 0, accepted);
    if (accepted) return;
    // Each refusal names the field in its own terms...
    QVERIFY2(spec_error.startsWith("spec.json: training.threshold"), qPrintable(spec_error));
    QVERIFY2(engine.stderr_text.contains("--threshold"), qPrintable(engine.stderr_text));
    QVERIFY2(!engine.stderr_text.contains("training."), qPrintable(engine.stderr_text));
    // ... and otherwise says the same.
    if (same_words) {
        const QString words = as_flags(spec_error.mid(QString("spec.json: ").size()));
        QVERIFY2(engine.stderr_text.contains(words), qPrintable(QString("the engine said:\n%1\nthe spec said:\n%2")
                                                                     .arg(engine.stderr_text, words)));
    }
}

QTEST_GUILESS_MAIN(TestThresholdOptions)
#include "test_threshold_options.moc"
