// The event structs (engine/events/events.h) as the lines they make: every field of a full
// struct with its name and JSON kind (an integer stays an integer: the launcher and the UI read
// these lines), the optional ones absent when unset, the writer's envelope, and the field names
// the documentation promises -- DESIGN.md's contract table and engine/events/README.md's tables,
// parsed, so a field renamed in code or in the docs fails here.
#include <QtTest>

#include <cmath>
#include <set>
#include <sstream>

#include "events/event_writer.h"
#include "expected_lines.h"
#include "full_events.h"
#include "markdown_tables.h"
#include "source_dir.h"

using namespace events_fixture;
namespace ev = thresher::events;

namespace {

// Key order and number kinds as nlohmann writes them: "1.0" stays a float, "1" an integer.
std::string normal(const std::string& json_text) { return nlohmann::json::parse(json_text).dump(); }

QStringList keys(const nlohmann::json& j) {
    QStringList out;
    for (const auto& [k, v] : j.items()) out << QString::fromStdString(k);
    return out;
}

const nlohmann::json* full_event(const std::vector<std::pair<std::string, nlohmann::json>>& all, const std::string& name) {
    for (const auto& [n, j] : all)
        if (n == name) return &j;
    return nullptr;
}

// Every `field` the cell names is written by the full struct of each `event` of `events_cell`.
void expect_fields(const std::string& events_cell, const std::string& fields_cell, const std::string& where) {
    const auto all = all_full();
    const auto events = code_spans(events_cell);
    QVERIFY2(!events.empty(), qPrintable(QString::fromStdString(where + ": a row names no event")));
    for (const auto& name : events) {
        const nlohmann::json* j = full_event(all, name);
        QVERIFY2(j, qPrintable(QString::fromStdString(where + ": no struct writes event \"" + name + "\"")));
        for (const auto& field : code_spans(fields_cell))
            QVERIFY2(j->contains(field), qPrintable(QString::fromStdString(where + ": " + name + " has no field \"" + field +
                                                                           "\"; it writes " + j->dump())));
    }
}

}  // namespace

class TestEvents : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void full_structs_data() {
        QTest::addColumn<std::string>("made");
        QTest::addColumn<std::string>("expected");
        for (const auto& [name, fields] : all_full())
            QTest::newRow(name.c_str()) << fields.dump() << normal(expected_fields(name));
    }
    void full_structs() {
        QFETCH(std::string, made);
        QFETCH(std::string, expected);
        QCOMPARE(QString::fromStdString(made), QString::fromStdString(expected));
    }

    // Unset optionals are left out: a single node's iteration has no master fields and only the
    // two byte counters; a failed run's run_finished no traffic at all.
    void optional_fields_absent_when_unset_data() {
        QTest::addColumn<QStringList>("made");
        QTest::addColumn<QStringList>("expected");
        QTest::newRow("run_started") << keys(ev::to_json(ev::RunStarted{}))
                                     << QStringList{"backend", "backend_detail", "batch", "devices", "epochs", "joined",
                                                    "model", "nodes", "params", "run", "start_epoch", "start_iter",
                                                    "strategy", "train_samples", "workers", "workers_per_node"};
        QTest::newRow("iteration") << keys(ev::to_json(ev::Iteration{}))
                                   << QStringList{"bytes_rx", "bytes_tx", "compute_ms", "cpu_ms", "epoch", "etl_ms",
                                                  "iter", "iter_ms", "loss", "lr", "receive_ms", "samples",
                                                  "samples_per_s", "start_s", "step_ms", "worker"};
        QTest::newRow("epoch_end") << keys(ev::to_json(ev::EpochEnd{}))
                                   << QStringList{"count", "epoch", "eval_loss", "eval_ms", "eval_set", "eval_start_s", "loss"};
        ev::EpochEnd classified;
        classified.classification.emplace();  // not binary: no auc, no task
        QTest::newRow("epoch_end, a classifier")
                << keys(ev::to_json(classified))
                << QStringList{"accuracy", "confusion", "count", "epoch", "eval_loss", "eval_ms", "eval_set",
                               "eval_start_s", "f1", "loss", "precision", "recall"};
        QTest::newRow("node_joined") << keys(ev::to_json(ev::NodeJoined{}))
                                     << QStringList{"epoch", "iter", "joined_node", "message", "rejoin"};
        QTest::newRow("warning") << keys(ev::to_json(ev::Warning{})) << QStringList{"message"};
        QTest::newRow("error") << keys(ev::to_json(ev::ErrorEvent{})) << QStringList{"message"};
        QTest::newRow("run_finished") << keys(ev::to_json(ev::RunFinished{})) << QStringList{"iters", "status", "wall_s"};
        ev::RunFinished drained;
        drained.reconcile = ev::ReconcileReport{0.0, std::nullopt};  // a complete drain: no _at
        QTest::newRow("run_finished, gap 0") << keys(ev::to_json(drained))
                                             << QStringList{"iters", "reconcile_gap", "status", "wall_s"};
        QTest::newRow("master phases") << keys(ev::to_json(ev::MasterPhases{})) << QStringList{};
    }
    void optional_fields_absent_when_unset() {
        QFETCH(QStringList, made);
        QFETCH(QStringList, expected);
        QCOMPARE(made, expected);
    }

    // The trainer merges before_gradient's fields with step's: step's win, the rest stay.
    void phases_update_takes_what_is_set() {
        ev::MasterPhases a;
        a.decode_ms = 1.0;
        a.send_ms = 2.0;
        ev::MasterPhases b;
        b.send_ms = 3.0;
        b.encode_ms = 4.0;
        a.update(b);
        QCOMPARE(QString::fromStdString(ev::to_json(a).dump()),
                 QString::fromStdString(normal("{\"decode_ms\":1.0,\"encode_ms\":4.0,\"send_ms\":3.0}")));
        QCOMPARE(ev::to_json(ev::MasterPhases{}.update(full_phases())), ev::to_json(full_phases()));
    }

    // The envelope: event, t, node, then the fields, one flushed line; a diverged loss is null.
    void writer_emits_one_line_per_event() {
        std::ostringstream out;
        ev::EventWriter writer(out, 3);
        ev::Iteration it = full_iteration();
        it.loss = std::nan("");
        writer.emit(it);
        writer.warning("careful");
        std::istringstream lines(out.str());
        std::string first, second, none;
        QVERIFY(std::getline(lines, first) && std::getline(lines, second) && !std::getline(lines, none));
        const auto j = nlohmann::json::parse(first);
        QCOMPARE(j.at("event").get<std::string>(), std::string("iteration"));
        QCOMPARE(j.at("node").get<int>(), 3);
        QVERIFY(j.at("t").is_number_float() || j.at("t").is_number_integer());
        QVERIFY(j.at("loss").is_null());
        auto fields = j;
        for (const char* k : {"event", "t", "node", "loss"}) fields.erase(k);
        auto want = ev::to_json(full_iteration());
        want.erase("loss");
        QCOMPARE(fields, want);
        QCOMPARE(QString::fromStdString(second).contains("\"event\":\"warning\""), true);
        QCOMPARE(nlohmann::json::parse(second).at("message").get<std::string>(), std::string("careful"));
    }

    // DESIGN.md "The event contract": every required field of every event kind is written by that
    // kind's struct, and every struct's kind is in the table.
    void design_contract_fields_are_written() {
        QStringList candidates;
        if (qEnvironmentVariableIsSet("THRESHER_DESIGN_MD")) candidates << qEnvironmentVariable("THRESHER_DESIGN_MD");
        const QString src = test_support::source_dir();
        candidates << src + "/DESIGN.md" << src + "/docs/DESIGN.md" << src + "/../shared/DESIGN.md";
        QString path;
        for (const auto& c : candidates)
            if (QFileInfo::exists(c)) {
                path = c;
                break;
            }
        if (path.isEmpty()) QSKIP("DESIGN.md not found (set THRESHER_DESIGN_MD); README.md's tables are still checked");
        const auto tables = markdown_tables(path.toStdString(), "The event contract");
        QVERIFY2(tables.size() == 1 && tables[0].size() >= 7, qPrintable("no contract table in " + path));
        const auto& table = tables[0];
        QCOMPARE(QString::fromStdString(table[0].at(0)), QString("event"));
        std::set<std::string> documented;
        for (std::size_t r = 1; r < table.size(); ++r) {
            QVERIFY(table[r].size() >= 2);
            expect_fields(table[r][0], table[r][1], path.toStdString() + " row " + std::to_string(r));
            for (const auto& e : code_spans(table[r][0])) documented.insert(e);
        }
        // An event beyond the contract (readers that do not know it skip it) must say so in
        // engine/events/README.md's table of structs.
        std::set<std::string> beyond;
        for (const auto& table : markdown_tables((test_support::source_dir() + "/engine/events/README.md").toStdString()))
            if (table.at(0).at(0) == "event")
                for (std::size_t r = 1; r < table.size(); ++r)
                    for (const auto& cell : table[r])
                        if (cell.find("beyond the contract") != std::string::npos)
                            for (const auto& e : code_spans(table[r][0])) beyond.insert(e);
        for (const auto& [name, j] : all_full())
            QVERIFY2(documented.count(name) || beyond.count(name),
                     qPrintable(QString::fromStdString("event " + name + " is not in the contract")));
    }

    // engine/events/README.md: the phase table's fields are iteration fields, and the table of
    // structs names fields each event writes.
    void readme_fields_are_written() {
        const std::string path = (test_support::source_dir() + "/engine/events/README.md").toStdString();
        const auto tables = markdown_tables(path);
        int phase_rows = 0, struct_rows = 0;
        for (const auto& table : tables) {
            const std::string head = table.at(0).at(0);
            for (std::size_t r = 1; r < table.size(); ++r) {
                const std::string where = path + " table \"" + head + "\" row " + std::to_string(r);
                if (head == "field") {
                    expect_fields("`iteration`", table[r].at(0), where);
                    ++phase_rows;
                } else if (head == "event") {
                    expect_fields(table[r].at(0), table[r].back(), where);
                    ++struct_rows;
                }
            }
        }
        // The tables themselves must still be there (a reworded header would skip them).
        QVERIFY2(phase_rows >= 14, qPrintable(QString("phase table rows: %1").arg(phase_rows)));
        QVERIFY2(struct_rows >= 6, qPrintable(QString("struct table rows: %1").arg(struct_rows)));
    }
};

QTEST_GUILESS_MAIN(TestEvents)
#include "test_events.moc"
