// A classifier's confusion matrix as epoch_end carries it ("confusion": [actual][predicted]
// counts), read once and checked (square, non-negative integers), with what the app shows of it:
// each row as fractions of that class's samples (the colour), per-class accuracy (the diagonal
// over the row: DL4J's per-class recall) and the classes the model gets wrong most.
#pragma once

#include <QJsonValue>
#include <QList>
#include <QPair>
#include <QString>
#include <QStringList>
#include <optional>

namespace thresher::ui {

class Confusion {
public:
    // Classes the app draws a matrix for; past it only the summary (a matrix of 200 classes is
    // 40,000 cells, unreadable on a screen).
    static constexpr int kMaxDrawn = 60;

    // nullopt when `value` is not a square array of arrays of non-negative integers (a reader of
    // events never trusts them: a replayed file may be anything), or has no classes.
    static std::optional<Confusion> from_json(const QJsonValue& value);

    int classes() const { return static_cast<int>(counts_.size()); }
    qint64 count(int actual, int predicted) const { return counts_[actual][predicted]; }
    qint64 row_total(int actual) const { return row_totals_[actual]; }
    // count / row_total (0 for a class without samples).
    double row_fraction(int actual, int predicted) const;
    // The diagonal over the row, or nullopt for a class without samples.
    std::optional<double> class_accuracy(int actual) const;
    // Up to `n` classes with samples, lowest accuracy first (ties: lower class first).
    QList<QPair<int, double>> worst(int n) const;

    // `names` when it has one per class, else "0", "1", ….
    static QString name(const QStringList& names, int classes, int k);

private:
    QList<QList<qint64>> counts_;
    QList<qint64> row_totals_;
};

}  // namespace thresher::ui
