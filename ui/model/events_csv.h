// Events as CSV, for spreadsheets: one row per event; columns `event`, `t`, `node`, then every
// other field any event has, sorted by name. Fields an event lacks are empty; arrays and objects
// (the confusion matrix) are written as compact JSON in one quoted cell (RFC 4180 quoting).
#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QList>
#include <QString>

namespace thresher::ui {

QByteArray events_to_csv(const QList<QJsonObject>& events);
// Writes atomically; throws std::runtime_error naming the file.
void write_events_csv(const QList<QJsonObject>& events, const QString& path);

}  // namespace thresher::ui
