// SweepSpec: a scalability experiment as one JSON file — a base RunSpec and axes, each a run-spec
// field with a list of values; the sweep runs every combination ("point"), `repeats` times each.
// launcher/sweep/README.md documents the format. Loading expands and validates every point as a
// RunSpec before anything runs, so a bad value is one error in the user's terms, e.g.
//   sweeps/s.json: axes[1].values[2] (nodes = 0): cluster.nodes: must be a positive integer, got 0
//   sweeps/s.json: point 3 (strategy = "single", nodes = 2): training.strategy: "single" trains one worker, …
//
// Worked example: axes strategy [gradient-sharing, parameter-averaging] × nodes [1, 2] give 4
// points, in the order gs×1, gs×2, pa×1, pa×2 (the last axis varies fastest).
#pragma once

#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QString>

#include "run_spec.h"

namespace thresher::launcher::sweep {

struct SweepAxis {
    QString name;   // shown in tables and charts: "nodes", or the field itself
    QString field;  // the run-spec JSON path it sets: "cluster.nodes"
    QJsonArray values;

    // Axes over the worker count (nodes, workers per node): a point's speedup compares it with
    // the point that differs from it only on these axes and has the fewest workers.
    bool varies_workers() const;
};

struct SweepPoint {
    int index = 0;                 // 0-based, in expansion order
    QList<QJsonValue> values;      // one per axis, in axis order
    QJsonObject spec_json;         // the point's run spec as JSON (RunSpec::to_json of `spec`)
    launcher::RunSpec spec;        // validated
    QString label;                 // "strategy = gradient-sharing, nodes = 2"
};

struct SweepSpec {
    QString name;
    QString source;        // the file errors name
    QJsonObject document;  // the sweep as written (kept in results and the report)
    QJsonObject base;      // the base run spec object
    QString base_dir;      // where the base spec's relative paths resolve
    QList<SweepAxis> axes;
    int repeats = 1;
    QList<SweepPoint> points;  // every combination, validated

    // Reads, expands and validates a sweep file; throws SpecError.
    static SweepSpec load(const QString& path);
    static SweepSpec from_json(const QByteArray& text, const QString& source, const QString& base_dir);
    static SweepSpec from_object(const QJsonObject& document, const QString& source, const QString& base_dir);
    // A sweep over an existing spec (the app's Scalability page with no sweep file): `axes` as
    // {"field", "values"} objects.
    static SweepSpec over(const launcher::RunSpec& base, const QString& name, const QJsonArray& axes, int repeats = 1);

    QStringList axis_names() const;
    int run_count() const { return int(points.size()) * repeats; }
};

// The short names an axis may use for a field ("nodes" → "cluster.nodes"); empty when `name` is
// not one.
QString axis_field_for(const QString& name);
// A value as a table cell: strings bare, numbers as written.
QString value_text(const QJsonValue& v);

}  // namespace thresher::launcher::sweep
