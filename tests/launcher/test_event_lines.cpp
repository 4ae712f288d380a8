// The launcher reads what the engine's event structs write (engine/events/events.h): a line of
// each struct, full, through EventWriter, goes through EventStream -- the one parser of the event
// contract -- as one event of its kind with every field and its JSON kind intact, no warning;
// and Progress, the CLI's and the GUI's reader, follows run_started, iteration and epoch_end.
#include <QtTest>

#include <sstream>

#include "events/event_writer.h"
#include "event_stream.h"
#include "full_events.h"
#include "progress.h"

using namespace events_fixture;
namespace ev = thresher::events;
using thresher::launcher::EventStream;

namespace {

template <class Event>
QByteArray line_of(const Event& e, int node) {
    std::ostringstream out;
    ev::EventWriter writer(out, node);
    writer.emit(e);
    return QByteArray::fromStdString(out.str());
}

// The kind Qt's JSON gives a field, to compare with nlohmann's: numbers are numbers either way.
QString kind(const QJsonValue& v) {
    switch (v.type()) {
        case QJsonValue::Null: return "null";
        case QJsonValue::Bool: return "bool";
        case QJsonValue::Double: return "number";
        case QJsonValue::String: return "string";
        case QJsonValue::Array: return "array";
        case QJsonValue::Object: return "object";
        default: return "undefined";
    }
}
QString kind(const nlohmann::json& v) {
    if (v.is_null()) return "null";
    if (v.is_boolean()) return "bool";
    if (v.is_number()) return std::isfinite(v.get<double>()) ? "number" : "null";
    if (v.is_string()) return "string";
    if (v.is_array()) return "array";
    return v.is_object() ? "object" : "undefined";
}

QJsonObject read_one(const QByteArray& line, int node) {
    EventStream stream(node);
    auto events = stream.feed(line);
    events += stream.finish();
    if (events.size() != 1 || stream.warnings_made() != 0) return {};
    return events.front();
}

}  // namespace

class TestEventLines : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void each_struct_reads_back_data() {
        QTest::addColumn<QByteArray>("line");
        QTest::addColumn<QString>("name");
        QTest::addColumn<std::string>("fields");
        const auto row = [](const auto& e) {
            QTest::newRow(std::string(e.kName).c_str())
                    << line_of(e, 2) << QString::fromUtf8(e.kName.data(), qsizetype(e.kName.size())) << ev::to_json(e).dump();
        };
        row(full_run_started());
        row(full_iteration());
        row(full_epoch_end());
        row(full_node_joined());
        row(full_warning());
        row(full_error());
        row(full_run_finished());
    }
    void each_struct_reads_back() {
        QFETCH(QByteArray, line);
        QFETCH(QString, name);
        QFETCH(std::string, fields);
        const QJsonObject e = read_one(line, 2);
        QVERIFY2(!e.isEmpty(), line.constData());
        QCOMPARE(e.value("event").toString(), name);
        QCOMPARE(e.value("node").toInt(-1), 2);
        QVERIFY(e.value("t").isDouble());
        const auto written = nlohmann::json::parse(fields);
        for (const auto& [k, v] : written.items()) {
            const QString key = QString::fromStdString(k);
            QVERIFY2(e.contains(key), qPrintable(name + " lost " + key));
            QCOMPARE(kind(e.value(key)), kind(v));
        }
    }

    void progress_follows_the_structs() {
        thresher::launcher::Progress progress;
        ev::RunStarted started = full_run_started();
        started.start_epoch = 0;
        started.start_iter = 0;
        progress.add(read_one(line_of(started, 0), 0));
        QVERIFY(progress.started());
        QCOMPARE(progress.iterations_per_epoch(), qint64(235));  // ceil(60000 / (64 × 4))
        ev::Iteration it = full_iteration();
        it.epoch = 0;
        it.iter = 10;
        progress.add(read_one(line_of(it, 0), 0));
        QCOMPARE(progress.current(), qint64(10));
        QCOMPARE(progress.loss().value_or(-1), 0.25);
        progress.add(read_one(line_of(full_epoch_end(), 0), 0));
        QCOMPARE(progress.accuracy().value_or(-1), 0.75);
    }
};

QTEST_GUILESS_MAIN(TestEventLines)
#include "test_event_lines.moc"
