// SweepSpec: reading the sweep file, expanding its axes into points and validating each point as
// a RunSpec (so every check a run spec has applies to every point, with the point named).
#include "sweep_spec.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <cmath>

namespace thresher::launcher::sweep {

namespace {

const QList<std::pair<QString, QString>>& aliases() {
    static const QList<std::pair<QString, QString>> list{
        {"strategy", "training.strategy"},
        {"threshold", "training.threshold"},
        {"threshold_algorithm", "training.threshold_algorithm"},
        {"averaging_frequency", "training.averaging_frequency"},
        {"batch", "training.batch"},
        {"epochs", "training.epochs"},
        {"limit", "training.limit"},
        {"threads", "training.threads"},
        {"residual", "training.residual"},
        {"max_staleness", "training.max_staleness"},
        {"nodes", "cluster.nodes"},
        {"workers_per_node", "cluster.workers_per_node"},
        {"topology", "cluster.topology"},
        {"link_rate", "cluster.link.rate_mbit"},
        {"link_delay", "cluster.link.delay_ms"},
        {"link_loss", "cluster.link.loss"},
    };
    return list;
}

[[noreturn]] void fail(const QString& source, const QString& path, const QString& message) {
    throw launcher::SpecError((source + ": " + path + ": " + message).toStdString());
}

// A sweep file or the base spec it names: a regular file of at most kMaxFileBytes (they are a
// few KB), never a device or a pipe -- "base": "/dev/zero" was read until memory ran out.
constexpr qint64 kMaxFileBytes = qint64{16} << 20;

QByteArray read_file(const QString& path, const QString& what) {
    const QFileInfo info(path);
    if (info.exists() && !info.isFile())
        throw launcher::SpecError(QString("%1: not a regular file").arg(what).toStdString());
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        throw launcher::SpecError(QString("%1: cannot read: %2").arg(what, f.errorString()).toStdString());
    QByteArray bytes = f.read(kMaxFileBytes + 1);
    if (bytes.size() > kMaxFileBytes)
        throw launcher::SpecError(QString("%1: larger than %2 MiB; not a sweep or run spec").arg(what).arg(kMaxFileBytes >> 20).toStdString());
    return bytes;
}

// Sets `path` (dotted) in `o` to `v`, making the objects on the way.
void set_path(QJsonObject& o, QStringView path, const QJsonValue& v) {
    const qsizetype dot = path.indexOf('.');
    if (dot < 0) {
        o.insert(path.toString(), v);
        return;
    }
    const QString head = path.left(dot).toString();
    QJsonObject inner = o.value(head).toObject();
    set_path(inner, path.mid(dot + 1), v);
    o.insert(head, inner);
}

// An SSH cluster's hosts as the run spec writes them (inline hosts and the hostfile's, in order).
QJsonArray hosts_json(const QList<launcher::SshHost>& hosts) {
    QJsonArray out;
    for (const auto& h : hosts) {
        QJsonObject o{{"address", h.address}, {"port", h.port}, {"workers", h.workers}};
        if (!h.user.isEmpty()) o["user"] = h.user;
        if (!h.identity_file.isEmpty()) o["identity_file"] = h.identity_file;
        out.append(o);
    }
    return out;
}

QString describe(const QJsonValue& v) {
    if (v.isString()) return "\"" + v.toString() + "\"";
    return value_text(v);
}

SweepAxis read_axis(const QJsonValue& value, const QString& at, const QString& source) {
    if (!value.isObject()) fail(source, at, "must be an object {\"field\": …, \"values\": […]}, got " + describe(value));
    const QJsonObject o = value.toObject();
    for (auto it = o.begin(); it != o.end(); ++it)
        if (it.key() != "field" && it.key() != "name" && it.key() != "values")
            fail(source, at + "." + it.key(), "unknown field (known: field, name, values)");
    const QJsonValue field = o.value("field");
    if (!field.isString() || field.toString().trimmed().isEmpty())
        fail(source, at + ".field", "must be a run-spec field such as \"nodes\" or \"training.batch\", got " + describe(field));
    SweepAxis axis;
    const QString f = field.toString().trimmed();
    const QString aliased = axis_field_for(f);
    axis.field = aliased.isEmpty() ? f : aliased;
    if (!axis.field.contains('.') && axis.field != "data" && axis.field != "model" && axis.field != "udp_port")
        fail(source, at + ".field", "must be a run-spec field (e.g. \"training.batch\") or one of the short names " +
                                        [] {
                                            QStringList n;
                                            for (const auto& [a, p] : aliases()) n << a;
                                            return n.join(", ");
                                        }() + "; got " + describe(field));
    axis.name = o.contains("name") ? o.value("name").toString() : f;
    if (axis.name.trimmed().isEmpty()) fail(source, at + ".name", "must be a non-empty string");
    const QJsonValue values = o.value("values");
    if (!values.isArray() || values.toArray().isEmpty())
        fail(source, at + ".values", "must be a non-empty array of values, got " + describe(values));
    axis.values = values.toArray();
    for (int i = 0; i < axis.values.size(); ++i)
        for (int j = 0; j < i; ++j)
            if (axis.values[i] == axis.values[j])
                fail(source, QString("%1.values[%2]").arg(at).arg(i), "repeats values[" + QString::number(j) + "], " +
                                                                        describe(axis.values[i]));
    return axis;
}

// Sets one axis value in a point's spec. On an SSH cluster "nodes" means the first k hosts of
// the base's host list (inline hosts, then the hostfile's); `ssh_hosts` is that list (empty for
// other clusters, where "nodes" is the run spec's own field).
void apply(QJsonObject& spec, const SweepAxis& axis, const QJsonValue& v, const QJsonArray& ssh_hosts, const QString& where) {
    if (ssh_hosts.isEmpty() || axis.field != "cluster.nodes") {
        set_path(spec, axis.field, v);
        return;
    }
    const double k = v.toDouble();
    if (!v.isDouble() || k != std::floor(k) || k < 1 || k > ssh_hosts.size())
        throw launcher::SpecError(QString("%1: cluster.nodes: on an SSH cluster, the first k hosts of the base's %2; "
                                          "k must be in 1..%2, got %3")
                                      .arg(where).arg(ssh_hosts.size()).arg(describe(v))
                                      .toStdString());
    QJsonObject cluster = spec.value("cluster").toObject();
    QJsonArray first;
    for (int i = 0; i < int(k); ++i) first.append(ssh_hosts[i]);
    cluster.insert("hosts", first);
    cluster.remove("hostfile");
    spec.insert("cluster", cluster);
}

}  // namespace

bool SweepAxis::varies_workers() const { return field == "cluster.nodes" || field == "cluster.workers_per_node"; }

QString axis_field_for(const QString& name) {
    for (const auto& [alias, path] : aliases())
        if (alias == name) return path;
    return {};
}

QString value_text(const QJsonValue& v) {
    switch (v.type()) {
    case QJsonValue::String: return v.toString();
    case QJsonValue::Double: return QString::number(v.toDouble(), 'g', 12);
    case QJsonValue::Bool: return v.toBool() ? "true" : "false";
    case QJsonValue::Null: return "null";
    default: return QString::fromUtf8(QJsonDocument(v.isArray() ? QJsonDocument(v.toArray()) : QJsonDocument(v.toObject()))
                                          .toJson(QJsonDocument::Compact));
    }
}

SweepSpec SweepSpec::load(const QString& path) {
    const QFileInfo info(path);
    return from_json(read_file(path, path), path, info.absolutePath());
}

SweepSpec SweepSpec::from_json(const QByteArray& text, const QString& source, const QString& base_dir) {
    return from_object(launcher::parse_json_object(text, source, "a sweep"), source, base_dir);
}

SweepSpec SweepSpec::from_object(const QJsonObject& document, const QString& source, const QString& base_dir) {
    static const QStringList known{"format", "version", "name", "base", "axes", "repeats"};
    for (auto it = document.begin(); it != document.end(); ++it)
        if (!known.contains(it.key())) fail(source, it.key(), "unknown field (known: " + known.join(", ") + ")");
    if (document.value("format").toString() != "thresher-sweep")
        fail(source, "format", "must be \"thresher-sweep\", got " + describe(document.value("format")));
    if (document.value("version") != QJsonValue(1)) fail(source, "version", "must be 1, got " + describe(document.value("version")));

    SweepSpec s;
    s.source = source;
    s.document = document;
    s.name = document.contains("name") ? document.value("name").toString() : QFileInfo(source).completeBaseName();
    if (s.name.trimmed().isEmpty()) fail(source, "name", "must be a non-empty string, got " + describe(document.value("name")));

    const QJsonValue base = document.value("base");
    QString base_source = source + ": base";
    if (base.isString() && !base.toString().trimmed().isEmpty()) {
        const QString file = QDir(base_dir).absoluteFilePath(base.toString());
        base_source = QString("%1: base (%2)").arg(source, base.toString());
        s.base = launcher::parse_json_object(read_file(file, base_source), base_source, "a run spec");
        s.base_dir = QFileInfo(file).absolutePath();
    } else if (base.isObject()) {
        s.base = base.toObject();
        s.base_dir = base_dir;
    } else {
        fail(source, "base", "must be a run spec: a file path or the spec object, got " + describe(base));
    }
    const launcher::RunSpec base_spec = launcher::RunSpec::from_json(s.base, base_source, s.base_dir);  // valid alone
    const QJsonArray ssh_hosts = base_spec.cluster.kind == launcher::ClusterSettings::Kind::Ssh
                                     ? hosts_json(base_spec.cluster.all_hosts()) : QJsonArray{};

    if (document.contains("repeats")) {
        const QJsonValue r = document.value("repeats");
        const double d = r.toDouble();
        if (!r.isDouble() || d != std::floor(d) || d < 1 || d > 100)
            fail(source, "repeats", "must be an integer in 1..100, got " + describe(r));
        s.repeats = int(d);
    }
    const QJsonValue axes = document.value("axes");
    if (!axes.isArray() || axes.toArray().isEmpty())
        fail(source, "axes", "must be a non-empty array of {\"field\", \"values\"}, got " + describe(axes));
    const QJsonArray axis_array = axes.toArray();
    for (int i = 0; i < axis_array.size(); ++i) {
        const QString at = QString("axes[%1]").arg(i);
        SweepAxis axis = read_axis(axis_array[i], at, source);
        for (const auto& other : s.axes)
            if (other.field == axis.field) fail(source, at + ".field", "sets " + axis.field + " again");
        // Each value alone on the base: an error here names the value, not a combination.
        for (int j = 0; j < axis.values.size(); ++j) {
            QJsonObject spec = s.base;
            const QString where =
                QString("%1: %2.values[%3] (%4 = %5)").arg(source, at).arg(j).arg(axis.name, describe(axis.values[j]));
            apply(spec, axis, axis.values[j], ssh_hosts, where);
            launcher::RunSpec::from_json(spec, where, s.base_dir);
        }
        s.axes.append(axis);
    }

    qint64 count = 1;
    for (const auto& a : s.axes) count *= a.values.size();
    if (count > 10000) fail(source, "axes", QString("make %1 points; at most 10000").arg(count));
    for (int index = 0; index < count; ++index) {
        SweepPoint p;
        p.index = index;
        QJsonObject spec = s.base;
        QStringList label;
        // The last axis varies fastest.
        int rest = index;
        QList<QJsonValue> values;
        for (int a = int(s.axes.size()) - 1; a >= 0; --a) {
            const auto& axis = s.axes[a];
            values.prepend(axis.values[rest % axis.values.size()]);
            rest /= int(axis.values.size());
        }
        for (int a = 0; a < s.axes.size(); ++a) {
            apply(spec, s.axes[a], values[a], ssh_hosts, source);
            label << s.axes[a].name + " = " + value_text(values[a]);
        }
        p.values = values;
        p.label = label.join(", ");
        spec.insert("name", QString("%1-%2").arg(s.name).arg(index + 1));
        p.spec = launcher::RunSpec::from_json(spec, QString("%1: point %2 (%3)").arg(source).arg(index + 1).arg(p.label),
                                              s.base_dir);
        p.spec_json = p.spec.to_json();
        s.points.append(p);
    }
    return s;
}

SweepSpec SweepSpec::over(const launcher::RunSpec& base, const QString& name, const QJsonArray& axes, int repeats) {
    QJsonObject document{{"format", "thresher-sweep"}, {"version", 1}, {"name", name},
                         {"base", base.to_json()}, {"axes", axes}, {"repeats", repeats}};
    return from_object(document, name, base.base_dir);
}

QStringList SweepSpec::axis_names() const {
    QStringList out;
    for (const auto& a : axes) out << a.name;
    return out;
}

}  // namespace thresher::launcher::sweep
