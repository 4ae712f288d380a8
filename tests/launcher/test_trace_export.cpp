// The run timeline as Chrome trace-event JSON (launcher/trace_export.h), from a real run: two
// engine nodes on loopback behind an emulated 100 Mbit/s, 1 ms link (RunSpec cluster.link),
// started by `thresher-launch run --events --trace`. The trace is read back with nlohmann-json:
// every slice has the trace-event fields with the right types, one process per node and one
// thread per worker, one compute slice per iteration event, and a worker's slices never overlap
// (they are measured back to back). `thresher-launch trace` on the recorded events keeps only the
// iterations asked for; bad input is refused naming the file and line.
#include <QtTest>

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <algorithm>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "launch_fixture.h"

using namespace launch_fixture;

namespace {

nlohmann::json read_json(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return nullptr;
    return nlohmann::json::parse(f.readAll().toStdString(), nullptr, /*allow_exceptions=*/false);
}

}  // namespace

class TestTraceExport : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void run_writes_a_valid_trace();
    void trace_command_keeps_the_range();
    void refuses_bad_input();

private:
    QString path(const QString& name) const { return dir_.filePath(name); }
    QTemporaryDir dir_;
    QStringList events_;  // of the run, one JSON line each
};

void TestTraceExport::initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY2(QFileInfo(bin("thresher-launch")).isExecutable(), qPrintable(bin("thresher-launch")));
    QVERIFY(write_file(path("slow.json"), kSlowModel));
    QVERIFY(write_file(path("data.csv"), three_class_csv(480)));
}

void TestTraceExport::run_writes_a_valid_trace() {
    const QByteArray spec = QString(R"({"format":"thresher-run","version":1,"model":"slow.json","data":"data.csv",
        "training":{"strategy":"gradient-sharing","epochs":1,"batch":8,"threads":1},
        "cluster":{"kind":"local","nodes":2,"workers_per_node":1,"link":{"rate_mbit":100,"delay_ms":1}},
        "udp_port":%1})").arg(free_ports(2)).toUtf8();
    QVERIFY(write_file(path("run.json"), spec));
    const auto r = run_cli({"run", path("run.json"), "--events", "--verbose", "--trace", path("trace.json"), "--engine",
                            bin("thresher-engine")});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    // Both engines were told about the link (the launcher passed cluster.link on).
    QCOMPARE(r.err.count("sends through an emulated link: 100 Mbit/s, 1 ms"), 2);
    QVERIFY2(r.err.contains("timeline: " + path("trace.json")), qPrintable(r.err));

    std::map<std::pair<int, int>, int> iterations;  // (node, worker) -> iteration events
    for (const QString& line : r.out.split('\n', Qt::SkipEmptyParts)) {
        events_ << line;
        const QJsonObject e = QJsonDocument::fromJson(line.toUtf8()).object();
        if (e.value("event").toString() == "iteration") ++iterations[{e.value("node").toInt(), e.value("worker").toInt()}];
    }
    QCOMPARE(iterations.size(), std::size_t{2});

    const nlohmann::json trace = read_json(path("trace.json"));
    QVERIFY2(trace.is_object() && trace.contains("traceEvents") && trace["traceEvents"].is_array(), "not a trace document");
    std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> slices;
    std::map<std::pair<int, int>, int> computes;
    std::set<int> named_processes;
    const std::set<std::string> categories{"compute", "communicate", "wait", "eval"};
    for (const auto& e : trace["traceEvents"]) {
        QVERIFY(e.is_object());
        QVERIFY(e.contains("ph") && e["ph"].is_string());
        QVERIFY(e.contains("pid") && e["pid"].is_number_integer());
        QVERIFY(e.contains("tid") && e["tid"].is_number_integer());
        QVERIFY(e.contains("name") && e["name"].is_string());
        if (e["ph"] == "M") {
            if (e["name"] == "process_name") named_processes.insert(e["pid"].get<int>());
            continue;
        }
        QCOMPARE(QString::fromStdString(e["ph"].get<std::string>()), QString("X"));
        QVERIFY(e.contains("ts") && e["ts"].is_number() && e["ts"].get<double>() >= 0);
        QVERIFY(e.contains("dur") && e["dur"].is_number() && e["dur"].get<double>() > 0);
        QVERIFY2(categories.count(e["cat"].get<std::string>()), e["cat"].dump().c_str());
        const std::pair<int, int> thread{e["pid"].get<int>(), e["tid"].get<int>()};
        slices[thread].push_back({e["ts"].get<double>(), e["dur"].get<double>()});
        if (e["name"] == "compute") {
            ++computes[thread];
            QVERIFY(e["args"]["iter"].is_number());
        }
    }
    QCOMPARE(named_processes, (std::set<int>{0, 1}));
    // One thread per worker (global worker = node here: one worker per node), one compute slice
    // per iteration event.
    QCOMPARE(computes, iterations);
    for (auto& [thread, list] : slices) {
        std::sort(list.begin(), list.end());
        for (std::size_t i = 1; i < list.size(); ++i)
            QVERIFY2(list[i].first >= list[i - 1].first + list[i - 1].second - 0.01,
                     qPrintable(QString("node %1 worker %2: a slice at %3 µs starts inside the one at %4 µs (%5 µs long)")
                                    .arg(thread.first).arg(thread.second).arg(list[i].first, 0, 'f', 3)
                                    .arg(list[i - 1].first, 0, 'f', 3).arg(list[i - 1].second, 0, 'f', 3)));
    }
}

void TestTraceExport::trace_command_keeps_the_range() {
    QVERIFY2(!events_.isEmpty(), "needs run_writes_a_valid_trace's events");
    QVERIFY(write_file(path("events.jsonl"), events_.join('\n').toUtf8() + '\n'));
    const auto r = run_cli({"trace", path("events.jsonl"), "-o", path("part.json"), "--iterations", "5:10"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const nlohmann::json trace = read_json(path("part.json"));
    QVERIFY(trace.is_object());
    std::set<long> iters;
    for (const auto& e : trace["traceEvents"])
        if (e["ph"] == "X" && e["cat"] != "eval") iters.insert(e["args"]["iter"].get<long>());
    QCOMPARE(iters, (std::set<long>{5, 6, 7, 8, 9, 10}));
}

void TestTraceExport::refuses_bad_input() {
    QVERIFY(write_file(path("garbage.jsonl"), "{\"event\":\"run_started\",\"t\":0}\nnot json\n"));
    auto r = run_cli({"trace", path("garbage.jsonl"), "-o", path("x.json")});
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains(path("garbage.jsonl") + ":2: not a JSON event"), qPrintable(r.err));
    QVERIFY(!QFile::exists(path("x.json")));

    QVERIFY(write_file(path("old.jsonl"), R"({"event":"iteration","t":1,"node":0,"worker":0,"iter":1,"iter_ms":3})" "\n"));
    r = run_cli({"trace", path("old.jsonl"), "-o", path("x.json")});
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("carry no phase times"), qPrintable(r.err));

    r = run_cli({"trace", path("old.jsonl"), "-o", path("x.json"), "--iterations", "9:3"});
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("--iterations 9:3"), qPrintable(r.err));
}

QTEST_GUILESS_MAIN(TestTraceExport)
#include "test_trace_export.moc"
