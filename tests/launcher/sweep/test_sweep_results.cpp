// SweepResults: rows written to results.json/csv and read back to resume (only rows of the same
// point, repeat and run spec count, and only "ok" ones are done); per-point means and spreads;
// speedup within each strategy against its fewest-worker point; the HTML report is one file
// with the tables, a chart point per measured point, the what-if curves (10 / 25 / 100 Gbit/s to
// 64 workers, DL4J's estimate) and the scaling model in words, and nothing fetched.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QThread>
#include <cmath>

#include "run_summary.h"
#include "sweep_report.h"
#include "sweep_results.h"

using namespace thresher::launcher::sweep;

namespace {

SweepSpec make_sweep(int batch = 16) {
    return SweepSpec::from_json(QString(R"({"format": "thresher-sweep", "version": 1, "name": "s", "repeats": 2,
        "base": {"format": "thresher-run", "version": 1, "model": "mlp.json", "training": {"batch": %1}},
        "axes": [{"field": "strategy", "values": ["gradient-sharing", "parameter-averaging"]},
                 {"field": "nodes", "values": [1, 2]}]})").arg(batch).toUtf8(), "s.json", qEnvironmentVariable("THRESHER_SOURCE_DIR") + "/resources/models");
}

SweepRow row(const SweepSpec& s, int point, int repeat, double sps, const QString& status = "ok") {
    SweepRow r;
    r.point = point;
    r.repeat = repeat;
    r.spec = s.points[point].spec_json;
    r.values = s.points[point].values;
    r.status = status;
    r.workers = s.points[point].spec.total_workers();
    r.samples_per_s = sps;
    r.iter_ms = 10.0 * r.workers;
    r.bytes_per_iter = r.workers > 1 ? 2048.0 : 0.0;
    r.accuracy = 0.5;
    r.iterations = 20;
    // Phase times: compute 8 ms; gradient sharing encodes 0.5 ms and decodes 0.2 ms per message.
    r.compute_ms = 8.0;
    r.period_ms = 10.5 * r.workers;
    r.cpu_ms = 9.0;
    r.cores_used = 0.9;
    r.phases = {{"compute_ms", 7.5}, {"wait_ms", 1.5 * r.workers}};
    if (s.points[point].spec.training.strategy == "gradient-sharing") {
        r.encode_ms = 0.5;
        if (r.workers > 1) {
            r.decode_ms = 0.2;
            r.messages_per_iter = r.workers - 1.0;
        }
    }
    return r;
}

}  // namespace

class TestSweepResults : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void means_spreads_and_speedup();
    void save_and_resume();
    void not_a_results_file();
    void report();
    void what_if_once_over_a_link_axis();
    void points_past_the_cores();
    void run_summary_periods_cpu_and_phases();
    void report_of_extreme_figures();
};

void TestSweepResults::means_spreads_and_speedup() {
    const SweepSpec s = make_sweep();
    SweepResults res(s);
    res.add(row(s, 0, 0, 1000));
    res.add(row(s, 0, 1, 1200));
    res.add(row(s, 1, 0, 1500));
    res.add(row(s, 2, 0, 900));
    res.add(row(s, 3, 0, 600));
    res.add(row(s, 3, 1, 0, "failed"));  // a failed run counts nowhere
    const auto pts = res.points();
    QCOMPARE(pts.size(), 4);
    QCOMPARE(pts[0].runs, 2);
    QCOMPARE(pts[0].samples_per_s, 1100.0);
    QCOMPARE(pts[0].samples_per_s_spread, std::sqrt(2.0 * 100.0 * 100.0));  // sample standard deviation
    QCOMPARE(pts[1].group, QString("strategy = gradient-sharing"));
    QCOMPARE(pts[1].speedup, 1500.0 / 1100.0);       // against gradient sharing on 1 node
    QCOMPARE(pts[1].efficiency, 1500.0 / 1100.0 / 2);
    QCOMPARE(pts[3].speedup, 600.0 / 900.0);         // against averaging on 1 node
    QCOMPARE(pts[3].runs, 1);
    QCOMPARE(pts[2].speedup, 1.0);
    QVERIFY(res.done(0, 1));
    QVERIFY(!res.done(3, 1));  // failed: a resume runs it again
    QVERIFY(!res.done(2, 1));  // never run
    // The newest run of a point and repeat replaces the older one.
    res.add(row(s, 3, 1, 700));
    QVERIFY(res.done(3, 1));
    QCOMPARE(res.rows().size(), 6);
}

void TestSweepResults::save_and_resume() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const SweepSpec s = make_sweep();
    SweepResults res(s);
    res.add(row(s, 0, 0, 1000));
    res.add(row(s, 1, 0, 1500));
    res.add(row(s, 2, 0, 900, "failed"));
    res.save(dir.path());
    const QStringList csv = [&] {
        QFile f(dir.filePath("results.csv"));
        f.open(QIODevice::ReadOnly);
        return QString::fromUtf8(f.readAll()).trimmed().split('\n');
    }();
    QCOMPARE(csv.size(), 4);
    QVERIFY2(csv[0].startsWith("point,repeat,strategy,nodes,status,workers,iterations,samples_per_s,speedup,efficiency,"), qPrintable(csv[0]));
    QVERIFY2(csv[2].startsWith("2,1,gradient-sharing,2,ok,2,20,1500,"), qPrintable(csv[2]));

    SweepResults again(s);
    again.load(dir.path());
    QCOMPARE(again.rows().size(), 3);
    QVERIFY(again.done(0, 0));
    QVERIFY(again.done(1, 0));
    QVERIFY(!again.done(2, 0));
    QCOMPARE(*again.rows()[1].samples_per_s, 1500.0);
    QCOMPARE(*again.rows()[1].bytes_per_iter, 2048.0);
    QCOMPARE(*again.rows()[1].period_ms, 21.0);
    QCOMPARE(*again.rows()[1].cpu_ms, 9.0);
    QCOMPARE(*again.rows()[1].cores_used, 0.9);
    QCOMPARE(again.rows()[1].phases.at("wait_ms"), 3.0);
    {
        QFile f(dir.filePath("results.json"));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject doc = QJsonDocument::fromJson(f.readAll()).object();
        // The machine the figures were measured on goes with them.
        QCOMPARE(doc.value("machine").toObject().value("cpu_threads").toInt(), QThread::idealThreadCount());
        QVERIFY(doc.value("machine").toObject().contains("host"));
        const QJsonObject point = doc.value("points").toArray().at(1).toObject();
        QCOMPARE(point.value("period_ms").toDouble(), 21.0);
        QCOMPARE(point.value("phases").toObject().value("wait_ms").toDouble(), 3.0);
    }

    // Another base (batch 32): the old runs are another experiment's, nothing counts as done.
    SweepResults changed(make_sweep(32));
    changed.load(dir.path());
    QCOMPARE(changed.rows().size(), 0);

    // An empty folder: nothing done, no error.
    QTemporaryDir empty;
    SweepResults fresh(s);
    fresh.load(empty.path());
    QVERIFY(fresh.rows().isEmpty());
}

void TestSweepResults::not_a_results_file() {
    QTemporaryDir dir;
    QFile f(dir.filePath("results.json"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"format": "thresher-run"})");
    f.close();
    SweepResults res(make_sweep());
    try {
        res.load(dir.path());
        QFAIL("no error");
    } catch (const thresher::launcher::SpecError& e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains("results.json: not a sweep's results file"), e.what());
    }
}

// Groups that differ only in their own link's rate have the same what-if (it replaces the link):
// one set of curves, named after the strategy, not one per group under a rate it does not use.
void TestSweepResults::what_if_once_over_a_link_axis() {
    const SweepSpec s = SweepSpec::from_json(R"({"format": "thresher-sweep", "version": 1, "name": "l", "repeats": 1,
        "base": {"format": "thresher-run", "version": 1, "model": "mlp.json", "training": {"strategy": "gradient-sharing"}},
        "axes": [{"field": "link_rate", "values": [100, 1000]}, {"field": "nodes", "values": [1, 2]}]})",
                                             "l.json", qEnvironmentVariable("THRESHER_SOURCE_DIR") + "/resources/models");
    SweepResults res(s);
    for (int p = 0; p < 4; ++p) res.add(row(s, p, 0, 1000.0));
    QTemporaryDir dir;
    QFile f(write_html_report(res, dir.path()));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString html = QString::fromUtf8(f.readAll());
    for (const char* rate : {"10", "25", "100"})
        QCOMPARE(html.count(QString("gradient-sharing, %1 Gbit/s: (64, ").arg(rate)), 1);
    QCOMPARE(html.count(QRegularExpression("link_rate = [0-9]+, [0-9]+ Gbit/s")), 0);
}

// Local nodes that need more threads than the machine has are said so (the report, the page).
void TestSweepResults::points_past_the_cores() {
    QList<PointResult> points;
    for (int n = 1; n <= 3; ++n) {
        PointResult p;
        p.point = n - 1;
        p.workers = n;
        p.threads = 1;
        p.cpu_threads = 2;
        p.cores_used = 1.5 + 0.1 * n;
        points << p;
    }
    QCOMPARE(past_the_cores(points), QString("Point 3 ran 3 engine threads on 2 CPU threads (the engines kept 1.8 of them "
                                             "busy): their time per iteration includes waiting for a core, which nodes on "
                                             "machines of their own would not do. The what-if chart leaves that out; the "
                                             "model predicts such points least well."));
    points[1].threads = 0;  // automatic: every CPU thread per worker, 2 × 2
    QVERIFY(past_the_cores(points).startsWith("Points 2, 3 ran 3–4 engine threads on 2 CPU threads (the engines kept 1.7–1.8"));
    for (auto& p : points) p.local = false;  // nodes on machines of their own
    QVERIFY(past_the_cores(points).isEmpty());
    for (auto& p : points) p.local = true, p.cpu_threads = 0;  // not recorded
    QVERIFY(past_the_cores(points).isEmpty());

    // A row records its machine's CPU threads; one written before that takes the file's.
    const SweepSpec s = make_sweep();
    SweepResults res(s);
    SweepRow r = row(s, 3, 0, 900);
    r.cpu_threads = 6;
    res.add(r);
    res.add(row(s, 1, 0, 950));
    QTemporaryDir dir;
    res.save(dir.path());
    QFile f(dir.filePath("results.json"));
    QVERIFY(f.open(QIODevice::ReadWrite));
    QJsonObject doc = QJsonDocument::fromJson(f.readAll()).object();
    QJsonObject machine = doc.value("machine").toObject();
    machine.insert("cpu_threads", 3);
    doc.insert("machine", machine);
    f.resize(0);
    f.write(QJsonDocument(doc).toJson());
    f.close();
    SweepResults again(s);
    again.load(dir.path());
    std::map<int, int> threads;
    for (const auto& p : again.points()) threads[p.point] = p.cpu_threads;
    QCOMPARE(threads[3], 6);
    QCOMPARE(threads[1], 3);
}

void TestSweepResults::report() {
    QTemporaryDir dir;
    const SweepSpec s = make_sweep();
    SweepResults res(s);
    for (int p = 0; p < 4; ++p) res.add(row(s, p, 0, 1000.0 - 100 * p));
    const QString path = write_html_report(res, dir.path());
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString html = QString::fromUtf8(f.readAll());
    QVERIFY(html.startsWith("<!DOCTYPE html>"));
    // Throughput, speedup, time (with the model), traffic, accuracy: 4 measured points on each;
    // the what-if chart has, per strategy, a curve per link rate at 1, 2, 4 … 64 workers (7
    // points), and DL4J's estimate for gradient sharing (7).
    QCOMPARE(html.count("<svg "), 6);
    QCOMPARE(html.count("<circle class=\"point\""), 5 * 4 + 2 * 3 * 7 + 7);
    for (const char* rate : {"10", "25", "100"})
        QCOMPARE(html.count(QString(", %1 Gbit/s: (64, ").arg(rate)), 2);  // each curve reaches 64
    QVERIFY(html.contains("gradient-sharing: DL4J's estimate"));
    QVERIFY(html.contains("<p id=\"model-form\">"));
    QCOMPARE(html.count("<li class=\"model\">"), 2);  // a model per strategy, in words
    QVERIFY(html.contains("gradient-sharing: time per iteration = compute 8.00 ms"));
    QVERIFY(html.contains("encode 0.50 ms at 1 worker (0.06 × compute where not measured) + decode 0.20 ms × messages received"));
    QCOMPARE(html.count("<li class=\"what-if\">"), 2);
    QVERIFY(html.contains("gradient-sharing at 64 workers, one node per machine: speedup "));
    QVERIFY(html.contains("<table id=\"points\">"));
    QVERIFY(html.contains("<table id=\"leave-one-out\">"));
    QVERIFY(html.contains("strategy = parameter-averaging"));
    QVERIFY(html.contains("&quot;thresher-sweep&quot;"));  // the sweep file, escaped
    // Self-contained: nothing to fetch (the SVG namespace is a name, not a fetch).
    QVERIFY(!html.contains("<script"));
    QVERIFY(!html.contains("src="));
    QVERIFY(!html.contains("href="));
    QVERIFY(!html.contains("@import"));
}

void TestSweepResults::run_summary_periods_cpu_and_phases() {
    // Two nodes whose clocks differ by 5 s (each counts from its own start): node 0's worker runs
    // an iteration every 20 ms, node 1's every 30 ms; each node's process spends 10 ms of CPU per
    // iteration. Node 1 waits 4 ms per iteration, node 0 does not report a wait.
    RunSummary s;
    for (int i = 1; i <= 11; ++i) {
        s.add(QJsonObject{{"event", "iteration"}, {"node", 0}, {"worker", 0}, {"iter", i}, {"t", 1.0 + 0.020 * i},
                          {"samples", 32 * i}, {"cpu_ms", 100.0 + 10.0 * i}, {"compute_ms", 6.0}});
        s.add(QJsonObject{{"event", "iteration"}, {"node", 1}, {"worker", 1}, {"iter", i}, {"t", 6.0 + 0.030 * i},
                          {"samples", 32 * i}, {"cpu_ms", 50.0 + 10.0 * i}, {"compute_ms", 8.0}, {"wait_ms", 4.0}});
    }
    QVERIFY(std::abs(*s.iteration_period_ms() - 25.0) < 1e-9);  // (20 + 30) ÷ 2, the 5 s offset unseen
    QVERIFY(std::abs(*s.cpu_ms_per_iteration() - 10.0) < 1e-9);
    // Node 0: 100 ms of CPU in 0.2 s; node 1: 100 ms in 0.3 s.
    QVERIFY(std::abs(*s.cores_used() - (0.5 + 1.0 / 3)) < 1e-9);
    QVERIFY(std::abs(*s.mean_phase_ms("compute_ms") - 7.0) < 1e-9);
    QVERIFY(std::abs(*s.mean_phase_ms("wait_ms") - 2.0) < 1e-9);  // absent counts 0
    QVERIFY(!s.mean_phase_ms("average_ms"));  // no event carried it
    // 32 samples per 20 ms on node 0 and per 30 ms on node 1: 1600 + 1066.7 samples/s, each on its
    // own clock. The last event (node 1, t 6.33) comes after node 0's first (t 1.02) on the wall but
    // it does not matter here; in the reverse skew a span of t across nodes was negative.
    QVERIFY(std::abs(*s.samples_per_s() - (1600.0 + 3200.0 / 3)) < 1e-6);
    RunSummary behind;  // node 1 started 5 s after node 0: its t is behind for the same moment
    for (int i = 1; i <= 4; ++i) {
        behind.add(QJsonObject{{"event", "iteration"}, {"node", 0}, {"worker", 0}, {"iter", i}, {"t", 6.0 + 0.020 * i},
                               {"samples", 32 * i}});
        behind.add(QJsonObject{{"event", "iteration"}, {"node", 1}, {"worker", 1}, {"iter", i}, {"t", 1.0 + 0.020 * i},
                               {"samples", 32 * i}});
    }
    QVERIFY2(behind.samples_per_s() && std::abs(*behind.samples_per_s() - 3200.0) < 1e-6,
             qPrintable(QString::number(behind.samples_per_s().value_or(-1))));
    RunSummary none;
    QVERIFY(!none.iteration_period_ms());
    QVERIFY(!none.cpu_ms_per_iteration());
    QVERIFY(!none.mean_phase_ms("compute_ms"));
    QVERIFY(!none.samples_per_s());
}

// A results file is read back on resume and drawn: equal figures past 2^53 (every run of a
// point at -1e17 samples/s) gave an axis one unit wide, which their precision cannot hold, and
// the chart's tick loop, never moving, wrote ticks until memory ran out (tests/fuzz,
// fuzz_sweep_results). Every axis now has at most 50 ticks, whatever the figures.
void TestSweepResults::report_of_extreme_figures() {
    const SweepSpec s = make_sweep();
    SweepResults res(s);
    for (int point = 0; point < 4; ++point) res.add(row(s, point, 0, -1e17));
    QString html = html_report(res);
    QVERIFY(html.contains("</html>"));
    QVERIFY2(html.size() < 2'000'000, qPrintable(QString::number(html.size())));
    res.add(row(s, 2, 0, 1e308));
    res.add(row(s, 3, 0, 1e-308));
    html = html_report(res);
    QVERIFY(html.contains("</html>"));
    struct Case {
        double a, b, x;
        bool from_zero;
    };
    for (const Case& k : {Case{1e17, 1e17, 2, false}, Case{-1e17, -1e17, 2, true}, Case{-1e308, 1e308, 2, true},
                          Case{1, 2, 1e17, true}, Case{1, 2, 1e300, true}}) {
        SvgChart c;
        c.y_from_zero = k.from_zero;
        c.series.append(SvgSeries{"s", {QPointF(1, k.a), QPointF(k.x, k.b)}});
        QVERIFY(c.svg().count("<line") <= 2 * 50 + 2);
        c.log2_x = true;
        QVERIFY(c.svg().count("<line") <= 2 * 50 + 2);
    }
}

QTEST_MAIN(TestSweepResults)
#include "test_sweep_results.moc"
