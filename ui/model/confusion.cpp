#include "confusion.h"

#include <QJsonArray>
#include <algorithm>
#include <cmath>

namespace thresher::ui {

std::optional<Confusion> Confusion::from_json(const QJsonValue& value) {
    if (!value.isArray()) return std::nullopt;
    const QJsonArray rows = value.toArray();
    const auto n = rows.size();
    if (n == 0 || n > 100000) return std::nullopt;
    Confusion c;
    for (const auto& row : rows) {
        if (!row.isArray() || row.toArray().size() != n) return std::nullopt;
        QList<qint64> counts;
        qint64 total = 0;
        for (const auto& cell : row.toArray()) {
            const double v = cell.toDouble(-1);
            // Counts: integers, and small enough that a row's sum stays exact in a double.
            if (!cell.isDouble() || v < 0 || v != std::floor(v) || v > 1e15) return std::nullopt;
            counts << static_cast<qint64>(v);
            total += static_cast<qint64>(v);
        }
        c.counts_ << counts;
        c.row_totals_ << total;
    }
    return c;
}

double Confusion::row_fraction(int actual, int predicted) const {
    const qint64 total = row_totals_[actual];
    return total > 0 ? static_cast<double>(counts_[actual][predicted]) / static_cast<double>(total) : 0.0;
}

std::optional<double> Confusion::class_accuracy(int actual) const {
    if (row_totals_[actual] == 0) return std::nullopt;
    return row_fraction(actual, actual);
}

QList<QPair<int, double>> Confusion::worst(int n) const {
    QList<QPair<int, double>> all;
    for (int k = 0; k < classes(); ++k)
        if (const auto a = class_accuracy(k)) all << qMakePair(k, *a);
    std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    return all.mid(0, n);
}

QString Confusion::name(const QStringList& names, int classes, int k) {
    return names.size() == classes ? names[k] : QString::number(k);
}

}  // namespace thresher::ui
