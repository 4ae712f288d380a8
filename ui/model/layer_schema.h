// LayerSchema: which fields each layer type of Thresher's model JSON has (engine/config/README.md),
// in a form the layer editor can build a property form from. The schema only drives the form;
// validation stays in engine/config, so the editor and the engine can never disagree about what
// a valid model is.
#pragma once

#include <QJsonObject>
#include <QJsonValue>
#include <QList>
#include <QString>
#include <QStringList>

namespace thresher::ui {

struct FieldSpec {
    enum class Kind { Int, Float, Pair, Choice, Bool };
    QString key;      // the JSON field
    QString label;    // what the form shows
    Kind kind = Kind::Int;
    QStringList choices;  // Kind::Choice
    QJsonValue fallback;  // what the engine assumes when the field is absent (shown, not written)
    QString tip;
};

// Layer types in the order the "Add layer" menu shows them, the graph vertices (add, subtract,
// multiply, average, maximum, concatenate, subset) last. A layer's "inputs" are no schema field:
// every type has them, and the form edits them on a row of their own.
QStringList layer_types();
// True for the graph vertex types (no parameters; they join or slice what they read).
bool is_vertex_type(const QString& type);
// Vertices that join several branches (not subset, reshape, permute: they read one input).
bool joins_branches(const QString& type);
// The fields of one type; empty for an unknown type.
QList<FieldSpec> layer_fields(const QString& type);
// A new layer of `type` with sensible values (what "Add layer" inserts).
QJsonObject default_layer(const QString& type);

QStringList updater_types();
QList<FieldSpec> updater_fields(const QString& type);

}  // namespace thresher::ui
