// ThresholdSpec (codec/threshold_spec.h): text ↔ spec ↔ JSON round trips, the separate τ
// merged in by resolve_threshold, and every refusal naming the field it was given (a flag or a
// run spec's JSON path) and the value.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "codec/threshold_algorithm.h"
#include "codec/threshold_spec.h"
#include "core/error.h"

using namespace thresher;
using namespace thresher::dist;

namespace {

// The message of the ConfigError `f` throws; empty when it throws nothing.
template <class F>
QString refusal(F f) {
    try {
        f();
    } catch (const ConfigError& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

}  // namespace

class TestThresholdSpec : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void names_are_one_list();
    void text_round_trip_data();
    void text_round_trip();
    void text_fills_gaps_with_defaults();
    void json_round_trip_data();
    void json_round_trip();
    void json_refusals_data();
    void json_refusals();
    void text_refusals_name_the_field();
    void resolve_data();
    void resolve();
    void resolve_refusals_data();
    void resolve_refusals();
    void builds_the_algorithm_it_describes();
};

void TestThresholdSpec::names_are_one_list() {
    const std::string grammar = threshold_algorithm_grammar();
    for (const auto& n : threshold_algorithm_names()) {
        QCOMPARE(QString(to_string(n.kind)), QString(n.name));
        QVERIFY(grammar.find(n.grammar) != std::string::npos);
        QCOMPARE(parse_threshold_spec(n.name).kind, n.kind);
    }
    QCOMPARE(QString::fromStdString(grammar),
             QString("fixed[:τ], adaptive[:τ[:min[:max[:decay]]]] or target[:density[:τ[:decay]]]"));
}

void TestThresholdSpec::text_round_trip_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("canonical");
    QTest::newRow("adaptive") << "adaptive" << "adaptive";
    QTest::newRow("adaptive τ") << "adaptive:1e-3" << "adaptive:0.001";
    QTest::newRow("adaptive all") << "adaptive:0.002:1e-5:0.05:0.9" << "adaptive:0.002:1e-05:0.05:0.9";
    QTest::newRow("fixed") << "fixed" << "fixed";
    QTest::newRow("fixed τ") << "fixed:0.25" << "fixed:0.25";
    QTest::newRow("target") << "target" << "target";
    QTest::newRow("target density") << "target:1e-3" << "target:0.001";
    QTest::newRow("target all") << "target:0.01:0.5:0.75" << "target:0.01:0.5:0.75";
}

void TestThresholdSpec::text_round_trip() {
    QFETCH(QString, text);
    QFETCH(QString, canonical);
    const ThresholdSpec s = parse_threshold_spec(text.toStdString());
    QCOMPARE(QString::fromStdString(to_text(s)), canonical);
    QVERIFY(parse_threshold_spec(to_text(s)) == s);
}

void TestThresholdSpec::text_fills_gaps_with_defaults() {
    ThresholdSpec s;
    s.decay = 0.75;  // adaptive; τ, min and max unset
    QCOMPARE(QString::fromStdString(to_text(s)), QString("adaptive:0.001:0.0001:0.01:0.75"));
    s = {};
    s.kind = ThresholdKind::Target;
    s.threshold = 0.5;  // density unset, before it
    QCOMPARE(QString::fromStdString(to_text(s)), QString("target:0.001:0.5"));
}

void TestThresholdSpec::json_round_trip_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("object");
    QTest::newRow("adaptive") << "adaptive" << R"({"algorithm":"adaptive"})";
    QTest::newRow("adaptive all") << "adaptive:0.002:1e-05:0.05:0.9"
                                  << R"({"algorithm":"adaptive","decay":0.9,"max_density":0.05,"min_density":1e-05,"threshold":0.002})";
    QTest::newRow("fixed τ") << "fixed:0.25" << R"({"algorithm":"fixed","threshold":0.25})";
    QTest::newRow("target") << "target:0.01:0.5" << R"({"algorithm":"target","density":0.01,"threshold":0.5})";
}

void TestThresholdSpec::json_round_trip() {
    QFETCH(QString, text);
    QFETCH(QString, object);
    const ThresholdSpec s = parse_threshold_spec(text.toStdString());
    QCOMPARE(QString::fromStdString(to_json(s).dump()), object);
    QVERIFY(threshold_spec_from_json(nlohmann::json::parse(object.toStdString()), "t") == s);
    QVERIFY(threshold_spec_from_json(nlohmann::json(text.toStdString()), "t") == s);  // the string form
}

void TestThresholdSpec::json_refusals_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("message");
    const QString f = "training.threshold_algorithm";
    QTest::newRow("number") << "3" << f + ": must be a string (fixed[:τ], adaptive";
    QTest::newRow("no algorithm") << R"({"threshold":0.1})" << f + ".algorithm: missing (one of fixed, adaptive, target)";
    QTest::newRow("unknown algorithm") << R"({"algorithm":"sparse"})" << f + ".algorithm: unknown threshold algorithm \"sparse\"";
    QTest::newRow("field of another") << R"({"algorithm":"fixed","density":0.1})" << f + ".density: not a field of fixed (fixed[:τ])";
    QTest::newRow("unknown field") << R"({"algorithm":"target","tau":0.1})" << f + ".tau: not a field of target";
    QTest::newRow("text number") << R"({"algorithm":"fixed","threshold":"0.1"})" << f + ".threshold: must be a number, got \"0.1\"";
    QTest::newRow("out of range") << R"({"algorithm":"adaptive","min_density":2})"
                                  << f + ": the minimum density must be in (0, 1], got 2";
    QTest::newRow("bad text") << R"("adaptive:x")" << f + ": \"adaptive:x\": \"x\" is not a number";
}

void TestThresholdSpec::json_refusals() {
    QFETCH(QString, json);
    QFETCH(QString, message);
    const QString what = refusal([&] {
        (void)threshold_spec_from_json(nlohmann::json::parse(json.toStdString()), "training.threshold_algorithm");
    });
    QVERIFY2(what.startsWith(message), qPrintable(what + " | expected: " + message));
}

void TestThresholdSpec::text_refusals_name_the_field() {
    for (const char* field : {"--threshold-algorithm", "training.threshold_algorithm"}) {
        const QString what = refusal([&] { (void)parse_threshold_spec("adaptive:1e-3:0.5:0.1", field); });
        QCOMPARE(what, QString(field) + ": \"adaptive:1e-3:0.5:0.1\": the minimum density 0.5 is above the maximum density 0.1");
    }
    // A megabyte of text is refused in a message of a line, not a megabyte.
    const std::string huge = "fixed:" + std::string(1 << 20, '7') + "x";
    QVERIFY(refusal([&] { (void)parse_threshold_spec(huge); }).size() < 300);
    QVERIFY(refusal([&] { (void)parse_threshold_spec(std::string(1 << 20, 'q')); }).size() < 300);
    const nlohmann::json object{{"algorithm", "fixed"}, {std::string(1 << 20, 'k'), 1}};
    QVERIFY(refusal([&] { (void)threshold_spec_from_json(object, "t"); }).size() < 300);
    QVERIFY(refusal([&] { (void)threshold_spec_from_json(nlohmann::json::array({std::string(1 << 20, 'a')}), "t"); }).size() < 300);
}

void TestThresholdSpec::resolve_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<double>("threshold");  // 0: none
    QTest::addColumn<QString>("resolved");
    QTest::newRow("adaptive, no τ") << "adaptive" << 0.0 << "adaptive";
    QTest::newRow("adaptive + τ") << "adaptive" << 0.002 << "adaptive:0.002";
    QTest::newRow("fixed + τ") << "fixed" << 0.01 << "fixed:0.01";
    QTest::newRow("fixed:τ") << "fixed:0.01" << 0.0 << "fixed:0.01";
    // A target density given in the text, τ separately: each number has its own place.
    QTest::newRow("target density + τ") << "target:1e-3" << 0.01 << "target:0.001:0.01";
    QTest::newRow("target + τ") << "target" << 0.01 << "target:0.001:0.01";
}

void TestThresholdSpec::resolve() {
    QFETCH(QString, text);
    QFETCH(double, threshold);
    QFETCH(QString, resolved);
    const auto tau = threshold > 0 ? std::optional<double>(threshold) : std::nullopt;
    const ThresholdSpec s = resolve_threshold(parse_threshold_spec(text.toStdString()), tau);
    QCOMPARE(QString::fromStdString(to_text(s)), resolved);
}

void TestThresholdSpec::resolve_refusals_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<double>("threshold");
    QTest::addColumn<QString>("flags");  // the engine's words
    QTest::addColumn<QString>("spec");   // a run spec's words
    QTest::newRow("fixed without τ") << "fixed" << 0.0
                                     << "--threshold-algorithm: \"fixed\" needs its threshold: fixed:<τ>, or --threshold"
                                     << "training.threshold_algorithm: \"fixed\" needs its threshold: fixed:<τ>, or training.threshold";
    QTest::newRow("τ twice") << "adaptive:0.001" << 0.01
                             << "--threshold: 0.01 conflicts with --threshold-algorithm \"adaptive:0.001\", which sets τ already"
                             << "training.threshold: 0.01 conflicts with training.threshold_algorithm \"adaptive:0.001\", which sets τ already";
    QTest::newRow("τ below float") << "fixed" << 1e-50 << "--threshold: the threshold 1e-50 is too small for a float"
                                   << "training.threshold: the threshold 1e-50 is too small for a float";
}

void TestThresholdSpec::resolve_refusals() {
    QFETCH(QString, text);
    QFETCH(double, threshold);
    QFETCH(QString, flags);
    QFETCH(QString, spec);
    const auto tau = threshold > 0 ? std::optional<double>(threshold) : std::nullopt;
    const ThresholdSpec parsed = parse_threshold_spec(text.toStdString());
    QCOMPARE(refusal([&] { (void)resolve_threshold(parsed, tau); }), flags);
    QCOMPARE(refusal([&] { (void)resolve_threshold(parsed, tau, {"training.threshold_algorithm", "training.threshold"}); }), spec);
}

void TestThresholdSpec::builds_the_algorithm_it_describes() {
    // The algorithm's own name() (its full spec) reads back as the spec it was built from.
    for (const char* text : {"fixed:0.5", "adaptive:0.002:1e-05:0.05:0.9", "target:0.01:0.5:0.75"}) {
        const ThresholdSpec s = parse_threshold_spec(text);
        QCOMPARE(QString::fromStdString(make_threshold_algorithm(s)->name()), QString(text));
    }
    // Defaults filled in: adaptive starts at 1e-3.
    QCOMPARE(make_threshold_algorithm(parse_threshold_spec("adaptive"))->next(0, 10, -1), 1e-3f);
    QVERIFY(!refusal([] { (void)make_threshold_algorithm(parse_threshold_spec("fixed")); }).isEmpty());
}

QTEST_APPLESS_MAIN(TestThresholdSpec)
#include "test_threshold_spec.moc"
