#include "events_csv.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>
#include <set>
#include <stdexcept>

namespace thresher::ui {

namespace {

QByteArray cell(const QJsonValue& v) {
    QByteArray text;
    switch (v.type()) {
        case QJsonValue::Undefined:
        case QJsonValue::Null: return {};
        case QJsonValue::Bool: return v.toBool() ? "true" : "false";
        case QJsonValue::Double: return QByteArray::number(v.toDouble(), 'g', 17);
        case QJsonValue::String: text = v.toString().toUtf8(); break;
        case QJsonValue::Array: text = QJsonDocument(v.toArray()).toJson(QJsonDocument::Compact); break;
        case QJsonValue::Object: text = QJsonDocument(v.toObject()).toJson(QJsonDocument::Compact); break;
    }
    if (!text.contains(',') && !text.contains('"') && !text.contains('\n') && !text.contains('\r')) return text;
    text.replace("\"", "\"\"");
    return '"' + text + '"';
}

}  // namespace

QByteArray events_to_csv(const QList<QJsonObject>& events) {
    const QStringList leading{"event", "t", "node"};
    std::set<QString> rest;
    for (const auto& e : events)
        for (auto it = e.begin(); it != e.end(); ++it)
            if (!leading.contains(it.key())) rest.insert(it.key());
    QStringList columns = leading;
    columns.append(QStringList(rest.begin(), rest.end()));

    QByteArray out;
    out += columns.join(',').toUtf8() + "\r\n";
    for (const auto& e : events) {
        QByteArrayList cells;
        for (const auto& c : columns) cells.append(cell(e.value(c)));
        out += cells.join(',') + "\r\n";
    }
    return out;
}

void write_events_csv(const QList<QJsonObject>& events, const QString& path) {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly)) throw std::runtime_error((path + ": " + file.errorString()).toStdString());
    file.write(events_to_csv(events));
    if (!file.commit()) throw std::runtime_error((path + ": " + file.errorString()).toStdString());
}

}  // namespace thresher::ui
