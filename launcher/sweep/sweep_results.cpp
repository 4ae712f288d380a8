#include "sweep_results.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QDateTime>
#include <QSaveFile>
#include <QSysInfo>
#include <QThread>
#include <cmath>
#include <map>

#include "launcher.h"

#include "scaling_model.h"

namespace thresher::launcher::sweep {

namespace {

void put(QJsonObject& o, const char* key, const std::optional<double>& v) {
    if (v) o.insert(key, *v);
}
std::optional<double> get(const QJsonObject& o, const char* key) {
    if (!o.value(key).isDouble()) return std::nullopt;
    return o.value(key).toDouble();
}

struct Stats {
    double mean = 0, spread = 0;
};
std::optional<Stats> stats(const QList<double>& xs) {
    if (xs.isEmpty()) return std::nullopt;
    Stats s;
    for (double x : xs) s.mean += x;
    s.mean /= double(xs.size());
    if (xs.size() > 1) {
        double ss = 0;
        for (double x : xs) ss += (x - s.mean) * (x - s.mean);
        s.spread = std::sqrt(ss / double(xs.size() - 1));
    }
    return s;
}

void write_atomically(const QString& path, const QByteArray& bytes) {
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size() || !f.commit())
        throw launcher::SpecError(QString("%1: cannot write: %2").arg(path, f.errorString()).toStdString());
}

QString csv_cell(QString s) {
    if (s.contains(',') || s.contains('"') || s.contains('\n')) s = "\"" + s.replace("\"", "\"\"") + "\"";
    return s;
}
QString number(const std::optional<double>& v) { return v ? QString::number(*v, 'g', 8) : QString(); }

// A row's phase means (ms per iteration, kPhaseFields) as JSON.
QJsonObject phases_json(const std::map<QString, double>& phases) {
    QJsonObject o;
    for (const auto& [k, v] : phases) o.insert(k, v);
    return o;
}

}  // namespace

std::optional<double> load_average() {
    QFile f("/proc/loadavg");
    if (!f.open(QIODevice::ReadOnly)) return std::nullopt;
    bool ok = false;
    const double v = QString::fromLatin1(f.readLine()).section(' ', 0, 0).toDouble(&ok);
    return ok ? std::optional<double>(v) : std::nullopt;
}

QJsonObject machine_facts_json() {
    QJsonObject o{{"host", QSysInfo::machineHostName()}, {"system", QSysInfo::prettyProductName()},
                  {"cpu_threads", QThread::idealThreadCount()},
                  {"written", QDateTime::currentDateTimeUtc().toString(Qt::ISODate)}};
    if (auto l = load_average()) o.insert("load_average", *l);
    return o;
}

SweepRow SweepRow::from(const SweepPoint& point, int repeat, const RunSummary& s, int exit_code,
                        const QString& launcher_summary) {
    SweepRow r;
    r.point = point.index;
    r.repeat = repeat;
    r.spec = point.spec_json;
    r.values = point.values;
    r.status = exit_code == 0 ? "ok" : exit_code == launcher::kExitStopped ? "stopped" : "failed";
    r.summary = launcher_summary;
    r.workers = s.workers() > 0 ? s.workers() : point.spec.total_workers();
    r.samples_per_s = s.samples_per_s();
    r.iter_ms = s.mean_iter_ms();
    r.encode_ms = s.mean_encode_ms();
    r.decode_ms = s.decode_ms_per_message();
    r.compute_ms = s.mean_compute_ms();
    r.messages_per_iter = s.messages_per_iteration();
    r.bytes_per_iter = s.bytes_per_iteration();
    r.accuracy = s.final_accuracy();
    r.wall_s = s.wall_s();
    r.iterations = s.iterations();
    r.period_ms = s.iteration_period_ms();
    r.load = load_average();
    r.cpu_ms = s.cpu_ms_per_iteration();
    r.cores_used = s.cores_used();
    r.cpu_threads = QThread::idealThreadCount();
    for (const char* f : kPhaseFields)
        if (auto v = s.mean_phase_ms(f)) r.phases[f] = *v;
    return r;
}

QJsonObject SweepRow::to_json() const {
    QJsonObject o{{"point", point}, {"repeat", repeat}, {"spec", spec}, {"status", status}, {"summary", summary},
                  {"workers", workers}, {"iterations", iterations}};
    QJsonArray v;
    for (const auto& x : values) v.append(x);
    o.insert("values", v);
    put(o, "samples_per_s", samples_per_s);
    put(o, "iter_ms", iter_ms);
    put(o, "encode_ms", encode_ms);
    put(o, "decode_ms", decode_ms);
    put(o, "bytes_per_iter", bytes_per_iter);
    put(o, "accuracy", accuracy);
    put(o, "wall_s", wall_s);
    put(o, "compute_ms", compute_ms);
    put(o, "messages_per_iter", messages_per_iter);
    put(o, "period_ms", period_ms);
    put(o, "load", load);
    put(o, "cpu_ms", cpu_ms);
    put(o, "cores_used", cores_used);
    if (cpu_threads > 0) o.insert("cpu_threads", cpu_threads);
    if (!phases.empty()) o.insert("phases", phases_json(phases));
    return o;
}

SweepRow SweepRow::from_json(const QJsonObject& o) {
    SweepRow r;
    r.point = o.value("point").toInt(-1);
    r.repeat = o.value("repeat").toInt(-1);
    r.spec = o.value("spec").toObject();
    for (const auto& x : o.value("values").toArray()) r.values.append(x);
    r.status = o.value("status").toString();
    r.summary = o.value("summary").toString();
    r.workers = o.value("workers").toInt();
    r.iterations = o.value("iterations").toInteger();
    r.samples_per_s = get(o, "samples_per_s");
    r.iter_ms = get(o, "iter_ms");
    r.encode_ms = get(o, "encode_ms");
    r.decode_ms = get(o, "decode_ms");
    r.bytes_per_iter = get(o, "bytes_per_iter");
    r.accuracy = get(o, "accuracy");
    r.wall_s = get(o, "wall_s");
    r.compute_ms = get(o, "compute_ms");
    r.messages_per_iter = get(o, "messages_per_iter");
    r.period_ms = get(o, "period_ms");
    r.load = get(o, "load");
    r.cpu_ms = get(o, "cpu_ms");
    r.cores_used = get(o, "cores_used");
    r.cpu_threads = std::max(0, o.value("cpu_threads").toInt());
    const QJsonObject ph = o.value("phases").toObject();
    for (auto it = ph.begin(); it != ph.end(); ++it)
        if (it.value().isDouble()) r.phases[it.key()] = it.value().toDouble();
    return r;
}

void SweepResults::load(const QString& dir) {
    const QString path = QDir(dir).filePath("results.json");
    QFile f(path);
    if (!f.exists()) return;
    if (!f.open(QIODevice::ReadOnly))
        throw launcher::SpecError(QString("%1: cannot read: %2").arg(path, f.errorString()).toStdString());
    read(f.readAll(), path);
}

void SweepResults::read(const QByteArray& text, const QString& path) {
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(text, &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject() ||
        doc.object().value("format").toString() != "thresher-sweep-results")
        throw launcher::SpecError(
            QString("%1: not a sweep's results file (%2); choose another results folder or remove it")
                .arg(path, err.error != QJsonParseError::NoError ? err.errorString() : QString("no \"format\": \"thresher-sweep-results\""))
                .toStdString());
    // Rows written before each carried its machine's CPU threads: the file's machine.
    const int file_threads = std::max(0, doc.object().value("machine").toObject().value("cpu_threads").toInt());
    for (const auto& v : doc.object().value("runs").toArray()) {
        SweepRow r = SweepRow::from_json(v.toObject());
        if (r.cpu_threads == 0) r.cpu_threads = file_threads;
        // A row belongs to this sweep when its point still has the same run spec: a changed base
        // or axis makes it another experiment, run again.
        if (r.point < 0 || r.point >= sweep_.points.size() || r.repeat < 0 || r.repeat >= sweep_.repeats) continue;
        if (r.spec != sweep_.points[r.point].spec_json) continue;
        add(r);
    }
}

void SweepResults::add(const SweepRow& row) {
    // The newest run of a point and repeat replaces an older one (a failed run retried).
    for (auto& r : rows_)
        if (r.point == row.point && r.repeat == row.repeat) {
            r = row;
            return;
        }
    rows_.append(row);
}

bool SweepResults::done(int point, int repeat) const {
    for (const auto& r : rows_)
        if (r.point == point && r.repeat == repeat && r.status == "ok") return true;
    return false;
}

QList<PointResult> SweepResults::points() const {
    QList<PointResult> out;
    for (const auto& p : sweep_.points) {
        QList<double> sps, iter;
        PointResult pr;
        pr.point = p.index;
        pr.label = p.label;
        pr.values = p.values;
        pr.workers = p.spec.total_workers();
        pr.batch = p.spec.training.batch;
        pr.strategy = p.spec.training.strategy;
        pr.threads = p.spec.training.threads;
        pr.averaging_frequency = p.spec.training.averaging_frequency;
        pr.link_rate_mbit = p.spec.cluster.link.rate_mbit;
        pr.link_delay_ms = p.spec.cluster.link.delay_ms;
        pr.local = p.spec.cluster.kind == launcher::ClusterSettings::Kind::Local;
        QList<double> enc, dec, bytes, acc, comp, msgs, period, cpu, cores;
        std::map<QString, QList<double>> phases;
        for (const auto& r : rows_) {
            if (r.point != p.index || r.status != "ok" || !r.samples_per_s) continue;
            ++pr.runs;
            pr.workers = r.workers;
            sps << *r.samples_per_s;
            if (r.iter_ms) iter << *r.iter_ms;
            if (r.encode_ms) enc << *r.encode_ms;
            if (r.decode_ms) dec << *r.decode_ms;
            if (r.bytes_per_iter) bytes << *r.bytes_per_iter;
            if (r.accuracy) acc << *r.accuracy;
            if (r.compute_ms) comp << *r.compute_ms;
            if (r.messages_per_iter) msgs << *r.messages_per_iter;
            if (r.period_ms) period << *r.period_ms;
            if (r.cpu_ms) cpu << *r.cpu_ms;
            if (r.cores_used) cores << *r.cores_used;
            pr.cpu_threads = std::max(pr.cpu_threads, r.cpu_threads);
            for (const auto& [k, v] : r.phases) phases[k] << v;
        }
        if (pr.runs == 0) continue;
        pr.samples_per_s = stats(sps)->mean;
        pr.samples_per_s_spread = stats(sps)->spread;
        if (auto s = stats(iter)) {
            pr.iter_ms = s->mean;
            pr.iter_ms_spread = s->spread;
        }
        if (auto s = stats(enc)) pr.encode_ms = s->mean;
        if (auto s = stats(dec)) pr.decode_ms = s->mean;
        if (auto s = stats(bytes)) pr.bytes_per_iter = s->mean;
        if (auto s = stats(acc)) pr.accuracy = s->mean;
        if (auto s = stats(comp)) pr.compute_ms = s->mean;
        if (auto s = stats(msgs)) pr.messages_per_iter = s->mean;
        if (auto s = stats(period)) {
            pr.period_ms = s->mean;
            pr.period_ms_spread = s->spread;
        }
        for (const auto& [k, v] : phases) pr.phases[k] = stats(v)->mean;
        if (auto s = stats(cpu)) pr.cpu_ms = s->mean;
        if (auto s = stats(cores)) pr.cores_used = s->mean;
        QStringList group;
        for (int a = 0; a < sweep_.axes.size(); ++a)
            if (!sweep_.axes[a].varies_workers()) group << sweep_.axes[a].name + " = " + value_text(p.values[a]);
        pr.group = group.join(", ");
        out.append(pr);
    }
    // Speedup within each group, against its fewest-worker point (scalability()).
    std::map<QString, QList<int>> groups;
    for (int i = 0; i < out.size(); ++i) groups[out[i].group].append(i);
    for (const auto& [name, members] : groups) {
        QList<ScalePoint> pts;
        for (int i : members) pts.append({out[i].workers, out[i].samples_per_s, out[i].iter_ms, out[i].encode_ms, out[i].decode_ms});
        const auto rows = scalability(pts);
        // scalability() sorts by workers; match rows back by worker count (unique within a group
        // unless two worker axes give the same total, which then share one row's figures).
        for (int i : members)
            for (const auto& r : rows)
                if (r.workers == out[i].workers && r.samples_per_s == out[i].samples_per_s) {
                    out[i].speedup = r.speedup;
                    out[i].efficiency = r.efficiency;
                    out[i].estimate_speedup = r.estimate_speedup;
                    break;
                }
    }
    return out;
}

QString past_the_cores(const QList<PointResult>& points) {
    QStringList which;
    int cpu = 0, least = 0, most = 0;
    double busy_low = 0, busy_high = 0;
    for (const auto& p : points) {
        if (!p.local || p.cpu_threads <= 0) continue;
        const int threads = p.workers * (p.threads > 0 ? p.threads : p.cpu_threads);
        if (threads <= p.cpu_threads) continue;
        which << QString::number(p.point + 1);
        cpu = p.cpu_threads;
        least = least == 0 ? threads : std::min(least, threads);
        most = std::max(most, threads);
        if (p.cores_used) {
            busy_low = busy_low == 0 ? *p.cores_used : std::min(busy_low, *p.cores_used);
            busy_high = std::max(busy_high, *p.cores_used);
        }
    }
    if (which.isEmpty()) return {};
    const QString count = least == most ? QString::number(least) : QString("%1–%2").arg(least).arg(most);
    QString busy;
    if (busy_high > 0)
        busy = QString(" (the engines kept %1 of them busy)")
                   .arg(busy_low == busy_high ? QString::number(busy_low, 'f', 1)
                                              : QString("%1–%2").arg(busy_low, 0, 'f', 1).arg(busy_high, 0, 'f', 1));
    return QString("Point%1 %2 ran %3 engine threads on %4 CPU threads%5: their time per iteration includes waiting for "
                   "a core, which nodes on machines of their own would not do. The what-if chart leaves that out; the "
                   "model predicts such points least well.")
        .arg(which.size() > 1 ? "s" : "", which.join(", "), count).arg(cpu).arg(busy);
}

QString SweepResults::csv() const {
    QStringList header{"point", "repeat"};
    for (const auto& a : sweep_.axes) header << a.name;
    header << "status" << "workers" << "iterations" << "samples_per_s" << "speedup" << "efficiency" << "iter_ms"
           << "encode_ms" << "decode_ms" << "bytes_per_iter" << "accuracy" << "wall_s";
    QStringList lines{header.join(',')};
    const auto pts = points();
    for (const auto& r : rows_) {
        QStringList cells{QString::number(r.point + 1), QString::number(r.repeat + 1)};
        for (const auto& v : r.values) cells << csv_cell(value_text(v));
        std::optional<double> speedup, efficiency;
        // Per run against its group's baseline point mean: the same ratio scalability() uses.
        for (const auto& p : pts)
            if (p.point == r.point && r.samples_per_s && p.samples_per_s > 0) {
                speedup = p.speedup * *r.samples_per_s / p.samples_per_s;
                efficiency = *speedup / std::max(1, r.workers);
            }
        cells << r.status << QString::number(r.workers) << QString::number(r.iterations) << number(r.samples_per_s)
              << number(speedup) << number(efficiency) << number(r.iter_ms) << number(r.encode_ms) << number(r.decode_ms)
              << number(r.bytes_per_iter) << number(r.accuracy) << number(r.wall_s);
        lines << cells.join(',');
    }
    return lines.join('\n') + '\n';
}

void SweepResults::save(const QString& dir) const {
    if (!QDir().mkpath(dir)) throw launcher::SpecError(QString("%1: cannot create the results folder").arg(dir).toStdString());
    QJsonArray runs, pts;
    for (const auto& r : rows_) runs.append(r.to_json());
    const auto points_now = points();
    for (const auto& p : points_now) {
        QJsonObject o{{"point", p.point}, {"label", p.label}, {"group", p.group}, {"workers", p.workers}, {"runs", p.runs},
                      {"samples_per_s", p.samples_per_s}, {"samples_per_s_spread", p.samples_per_s_spread},
                      {"speedup", p.speedup}, {"efficiency", p.efficiency}};
        QJsonArray v;
        for (const auto& x : p.values) v.append(x);
        o.insert("values", v);
        put(o, "iter_ms", p.iter_ms);
        put(o, "iter_ms_spread", p.iter_ms_spread);
        put(o, "encode_ms", p.encode_ms);
        put(o, "decode_ms", p.decode_ms);
        put(o, "bytes_per_iter", p.bytes_per_iter);
        put(o, "accuracy", p.accuracy);
        put(o, "dl4j_estimate_speedup", p.estimate_speedup);
        put(o, "compute_ms", p.compute_ms);
        put(o, "messages_per_iter", p.messages_per_iter);
        put(o, "period_ms", p.period_ms);
        put(o, "period_ms_spread", p.period_ms_spread);
        put(o, "cpu_ms", p.cpu_ms);
        put(o, "cores_used", p.cores_used);
        if (!p.phases.empty()) o.insert("phases", phases_json(p.phases));
        pts.append(o);
    }
    QJsonArray axes;
    for (const auto& a : sweep_.axes) axes.append(QJsonObject{{"name", a.name}, {"field", a.field}});
    const QJsonObject doc{{"format", "thresher-sweep-results"}, {"version", 1}, {"sweep", sweep_.document},
                          {"axes", axes}, {"runs", runs}, {"points", pts}, {"machine", machine_facts_json()},
                          {"model", fit_sweep_model(points_now).to_json()}};
    write_atomically(QDir(dir).filePath("results.json"), QJsonDocument(doc).toJson(QJsonDocument::Indented));
    write_atomically(QDir(dir).filePath("results.csv"), csv().toUtf8());
}

}  // namespace thresher::launcher::sweep
