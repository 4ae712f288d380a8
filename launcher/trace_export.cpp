// Run events -> Chrome trace-event JSON; see trace_export.h.
#include "trace_export.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonParseError>
#include <QSaveFile>
#include <algorithm>
#include <tuple>
#include <vector>

namespace thresher::launcher {

TraceRange parse_trace_range(const QString& text) {
    const QStringList parts = text.split(':');
    TraceRange r;
    bool ok_first = true, ok_last = true;
    if (parts.size() != 2 || (parts[0].isEmpty() && parts[1].isEmpty()))
        throw TraceError(("--iterations " + text + ": expected FIRST:LAST, FIRST: or :LAST (iteration numbers)").toStdString());
    if (!parts[0].isEmpty()) r.first = parts[0].toLong(&ok_first);
    if (!parts[1].isEmpty()) r.last = parts[1].toLong(&ok_last);
    if (!ok_first || !ok_last || r.first < 0 || r.last < r.first)
        throw TraceError(("--iterations " + text + ": expected FIRST:LAST with 0 <= FIRST <= LAST").toStdString());
    return r;
}

TraceBuilder::TraceBuilder(TraceRange range) : range_(range) {}

void TraceBuilder::slice(int pid, int tid, const char* name, const char* cat, double start_us, double dur_us,
                         const QJsonObject& args) {
    if (!(dur_us > 0)) return;  // a phase that did not happen this iteration (no wait, no average)
    events_.append(QJsonObject{{"name", name}, {"cat", cat}, {"ph", "X"}, {"ts", start_us}, {"dur", dur_us},
                               {"pid", pid}, {"tid", tid}, {"args", args}});
    ++slices_;
}

void TraceBuilder::add(const QJsonObject& e) {
    const QString kind = e.value("event").toString();
    const int node = e.value("node").toInt();
    if (kind == "run_started") {
        workers_per_node_[node] = e.value("workers_per_node").toInt(1);
        return;
    }
    if (kind == "epoch_end") {
        if (!e.contains("eval_start_s") || !e.contains("eval_ms")) return;
        // Local worker 0 of the reporting node evaluates (engine/train/trainer.cpp).
        const auto w = workers_per_node_.find(node);
        const int tid = node * (w == workers_per_node_.end() ? 1 : w->second);
        threads_[{node, tid}] = true;
        nodes_.insert(node);
        slice(node, tid, "evaluate", "eval", e.value("eval_start_s").toDouble() * 1e6, e.value("eval_ms").toDouble() * 1e3,
              QJsonObject{{"epoch", e.value("epoch")}});
        return;
    }
    if (kind != "iteration") return;
    const long iter = long(e.value("iter").toDouble());
    if (!range_.contains(iter)) return;
    if (!e.contains("start_s") || !e.contains("compute_ms")) {
        ++without_phases_;
        return;
    }
    ++iterations_;
    const int tid = e.value("worker").toInt();
    nodes_.insert(node);
    threads_[{node, tid}] = true;
    const QJsonObject args{{"iter", double(iter)}, {"epoch", e.value("epoch")}};
    const auto ms = [&](const char* key) { return e.value(key).toDouble() * 1e3; };  // ms -> µs
    double at = e.value("start_s").toDouble() * 1e6;
    // Phases in the order they ran (engine/events/README.md), each from where the last ended.
    slice(node, tid, "data", "wait", at, ms("etl_ms"), args);
    at += ms("etl_ms");
    const double receive = ms("receive_ms");
    const double decode = std::min(ms("decode_ms"), receive);
    slice(node, tid, "apply received", "communicate", at, decode, args);
    slice(node, tid, "wait", "wait", at + decode, receive - decode, args);
    at += receive;
    slice(node, tid, "compute", "compute", at, ms("compute_ms"), args);
    at += ms("compute_ms");
    // Sub-phases of the step, never past its end (rounding in the engine's printed numbers).
    const double step_end = at + ms("step_ms");
    using Phase = std::tuple<const char*, const char*, const char*>;
    static const std::vector<Phase> kStep{{"updater_ms", "updater", "compute"},
                                          {"encode_ms", "encode", "communicate"},
                                          {"apply_ms", "apply own", "communicate"},
                                          {"send_ms", "send", "communicate"},
                                          {"average_ms", "average", "wait"}};
    // --overlap-comm: the step waits for the previous message's encoder, applies that message,
    // then runs the updater; encoding and sending ran on the worker's communicator thread (not drawn).
    static const std::vector<Phase> kOverlapped{{"comm_wait_ms", "wait for encoder", "wait"},
                                                {"apply_ms", "apply own", "communicate"},
                                                {"updater_ms", "updater", "compute"}};
    // --overlap-comm send: the step waits for the previous message's sender, then runs as usual
    // but for the sending, which the communicator does (not drawn).
    static const std::vector<Phase> kSendAsync{{"comm_wait_ms", "wait for sender", "wait"},
                                               {"updater_ms", "updater", "compute"},
                                               {"encode_ms", "encode", "communicate"},
                                               {"apply_ms", "apply own", "communicate"}};
    const auto& phases = e.value("overlapped").toBool() ? kOverlapped : e.value("send_async").toBool() ? kSendAsync : kStep;
    for (const auto& [key, name, cat] : phases) {
        const double dur = std::min(ms(key), step_end - at);
        slice(node, tid, name, cat, at, dur, args);
        if (dur > 0) at += dur;
    }
}

QJsonObject TraceBuilder::document() const {
    if (slices_ == 0) {
        if (without_phases_ > 0)
            throw TraceError(QString("%1 iteration event(s) carry no phase times (start_s, compute_ms): recorded by an "
                                     "engine without them; run again with this version").arg(without_phases_).toStdString());
        throw TraceError("no iteration events with phase times in the chosen range");
    }
    QJsonArray all;
    // Names first: "node N" processes, "worker W" threads, sorted in that order in the viewer.
    for (int node : nodes_) {
        all.append(QJsonObject{{"name", "process_name"}, {"ph", "M"}, {"pid", node}, {"tid", 0},
                               {"args", QJsonObject{{"name", QString("node %1").arg(node)}}}});
        all.append(QJsonObject{{"name", "process_sort_index"}, {"ph", "M"}, {"pid", node}, {"tid", 0},
                               {"args", QJsonObject{{"sort_index", node}}}});
    }
    for (const auto& [key, seen] : threads_)
        all.append(QJsonObject{{"name", "thread_name"}, {"ph", "M"}, {"pid", key.first}, {"tid", key.second},
                               {"args", QJsonObject{{"name", QString("worker %1").arg(key.second)}}}});
    for (const auto& e : events_) all.append(e);
    return QJsonObject{{"traceEvents", all}, {"displayTimeUnit", "ms"}};
}

QList<QJsonObject> read_event_file(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) throw TraceError((path + ": cannot read: " + f.errorString()).toStdString());
    QList<QJsonObject> out;
    int line_no = 0;
    while (!f.atEnd()) {
        const QByteArray line = f.readLine().trimmed();
        ++line_no;
        if (line.isEmpty()) continue;
        QJsonParseError err;
        const QJsonDocument doc = QJsonDocument::fromJson(line, &err);
        if (err.error != QJsonParseError::NoError || !doc.isObject() || !doc.object().value("event").isString())
            throw TraceError(QString("%1:%2: not a JSON event (%3): %4")
                                 .arg(path).arg(line_no)
                                 .arg(err.error != QJsonParseError::NoError ? err.errorString() : "no \"event\" field")
                                 .arg(QString::fromUtf8(line.left(80))).toStdString());
        out.append(doc.object());
    }
    return out;
}

void write_trace(const TraceBuilder& builder, const QString& path) {
    const QByteArray bytes = QJsonDocument(builder.document()).toJson(QJsonDocument::Compact);
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size() || !f.commit())
        throw TraceError((path + ": cannot write the trace: " + f.errorString()).toStdString());
}

}  // namespace thresher::launcher
