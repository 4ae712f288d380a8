#include "model_document.h"

#include <QBrush>
#include <QColor>
#include <QFile>
#include <QHash>
#include <QLocale>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QSaveFile>
#include <stdexcept>

#include "config/model_config.h"
#include "config/model_format.h"
#include "core/error.h"

namespace thresher::ui {

namespace {

QString pair_text(const QJsonValue& v) {
    if (v.isArray()) {
        auto a = v.toArray();
        if (a.size() == 2 && a[0] == a[1]) return QString::number(a[0].toInt());
        QStringList parts;
        for (const auto& x : a) parts << QString::number(x.toInt());
        return parts.join("×");
    }
    return QString::number(v.toInt());
}

QString square(const QJsonValue& v) {
    QString s = pair_text(v);
    return s.contains("×") ? s : s + "×" + s;
}

QString shape_text(const config::Shape& s) { return QString::fromStdString(s.str()).replace('x', QChar(0x00D7)); }

QStringList inputs_of(const QJsonObject& layer) {
    const QJsonValue v = layer.value("inputs");
    if (v.isString()) return {v.toString()};
    QStringList names;
    for (const auto& x : v.toArray()) names << x.toString();
    return names;
}

// The vertex types that join several inputs (a subset reads one, like a plain layer).
bool joins_inputs(const QString& type) {
    return type == "add" || type == "subtract" || type == "multiply" || type == "average" || type == "maximum" ||
           type == "concatenate";
}

bool name_taken(const QJsonArray& layers, const QString& name, int except_row) {
    for (int i = 0; i < layers.size(); ++i)
        if (i != except_row && layers[i].toObject().value("name").toString() == name) return true;
    return false;
}

}  // namespace

namespace {
// Steps tried to tell a file that lacks only its steps: enough for any 1-D kernel or pooling a
// text model has, within what the importers accept.
constexpr int kProbeSteps = 256;
}  // namespace

ModelDocument::ModelDocument(QObject* parent) : QAbstractTableModel(parent) { revalidate(); }

void ModelDocument::set_model(const QJsonObject& model) {
    beginResetModel();
    model_ = model;
    revalidate();
    endResetModel();
    Q_EMIT changed();
}

QString ModelDocument::load(const QString& path, QStringList* notes, int steps) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        throw std::runtime_error((path + ": cannot open: " + file.errorString()).toStdString());
    const QByteArray text = file.readAll();
    loaded_weights_ = false;
    QJsonParseError perr;
    const QJsonDocument doc = QJsonDocument::fromJson(text, &perr);
    // Thresher's own JSON is kept exactly as written (an invalid one too: the user fixes it in the
    // editor, with the error shown). Anything else goes through the engine's importers.
    if (doc.isObject() && (doc.object().contains("layers") || doc.object().value("format") == "thresher-model")) {
        set_model(doc.object());
        return "thresher";
    }
    const std::string_view bytes(text.constData(), text.size());
    try {
        auto imported = config::import_model_text(bytes, path.toStdString(), {.steps = steps});
        const auto json = QJsonDocument::fromJson(QByteArray::fromStdString(imported.model.to_json().dump()));
        if (notes)
            for (const auto& n : imported.notes) notes->append(QString::fromStdString(n));
        // The document holds an architecture; a file's weights reach training through the engine,
        // which the run spec points at this file (MainWindow::import_model).
        if (notes && !imported.params.empty())
            notes->append("weights: the run spec names this file, so training fine-tunes from its weights; editing "
                          "the model here drops them (the edited model trains from scratch)");
        set_model(json.object());
        loaded_weights_ = !imported.params.empty();
        return QString::fromStdString(std::string(config::to_string(imported.format)));
    } catch (const Error& e) {
        if (steps > 0) throw std::runtime_error(e.what());
        // Whether the steps alone are missing: the file imports once some are given. (When it still
        // fails, that failure is the one to show: giving steps would not help.)
        try {
            config::import_model_text(bytes, path.toStdString(), {.steps = kProbeSteps});
        } catch (const Error& with_steps) {
            throw std::runtime_error(with_steps.what());
        }
        throw OpenStepsError(e.what());
    }
}

void ModelDocument::save(const QString& path) const {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        throw std::runtime_error((path + ": cannot write: " + file.errorString()).toStdString());
    file.write(QJsonDocument(model_).toJson(QJsonDocument::Indented));
    if (!file.commit()) throw std::runtime_error((path + ": cannot write: " + file.errorString()).toStdString());
}

int ModelDocument::layer_count() const { return model_.value("layers").toArray().size(); }

QJsonObject ModelDocument::layer(int row) const { return model_.value("layers").toArray().at(row).toObject(); }

void ModelDocument::set_layers(const QJsonArray& layers) {
    model_["layers"] = layers;
    revalidate();
}

void ModelDocument::set_layer(int row, const QJsonObject& layer) {
    auto layers = model_.value("layers").toArray();
    if (row < 0 || row >= layers.size()) return;
    layers[row] = layer;
    set_layers(layers);
    // Shapes and counts of every later row may change with one layer.
    Q_EMIT dataChanged(index(row, 0), index(rowCount() - 1, ColumnCount - 1));
    Q_EMIT changed();
}

void ModelDocument::insert_layer(int row, const QJsonObject& layer) {
    auto layers = model_.value("layers").toArray();
    row = std::clamp(row, 0, static_cast<int>(layers.size()));
    beginInsertRows({}, row, row);
    layers.insert(row, layer);
    set_layers(layers);
    endInsertRows();
    Q_EMIT dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
    Q_EMIT changed();
}

void ModelDocument::remove_layer(int row) {
    auto layers = model_.value("layers").toArray();
    if (row < 0 || row >= layers.size()) return;
    beginRemoveRows({}, row, row);
    layers.removeAt(row);
    set_layers(layers);
    endRemoveRows();
    if (rowCount() > 0) Q_EMIT dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
    Q_EMIT changed();
}

void ModelDocument::move_layer(int from, int to) {
    auto layers = model_.value("layers").toArray();
    if (from < 0 || from >= layers.size() || to < 0 || to >= layers.size() || from == to) return;
    beginResetModel();
    const auto moved = layers.takeAt(from);
    layers.insert(to, moved);
    set_layers(layers);
    endResetModel();
    Q_EMIT changed();
}

void ModelDocument::set_field(const QString& key, const QJsonValue& value) {
    if (value.isUndefined() || value.isNull())
        model_.remove(key);
    else
        model_[key] = value;
    revalidate();
    if (rowCount() > 0) Q_EMIT dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
    Q_EMIT changed();
}

void ModelDocument::revalidate() {
    const int n = layer_count();
    rows_.assign(static_cast<std::size_t>(n), RowInfo{});
    error_.reset();
    error_row_ = -1;
    params_ = 0;
    input_shape_.clear();
    extra_input_shapes_.clear();
    schedule_text_.clear();
    const QByteArray text = QJsonDocument(model_).toJson(QJsonDocument::Compact);
    try {
        const auto config = config::ModelConfig::parse(std::string_view(text.constData(), text.size()), "model");
        input_shape_ = shape_text(config.input);
        extra_input_shapes_.clear();
        for (const auto& e : config.extra_inputs) extra_input_shapes_ << shape_text(e.shape);
        for (int i = 0; i < n && i < static_cast<int>(config.layers.size()); ++i) {
            rows_[i].shape = shape_text(config.layers[i].out_shape);
            rows_[i].params = static_cast<qint64>(config.layers[i].param_count);
        }
        build_graph_nodes();
        for (int i = 0; i < n && i < static_cast<int>(config.layers.size()); ++i)
            for (int source : config.layers[i].sources) {
                const int from = source < 0 ? input_node(static_cast<int>(config::LayerConfig::input_index(source)))
                                            : ModelGraph::node_of_row(source);
                graph_.edges.append({from, ModelGraph::node_of_row(i), graph_.nodes[from].shape});
            }
        params_ = static_cast<qint64>(config.param_count());
        if (config.lr_schedule) schedule_text_ = QString::fromStdString(config.lr_schedule->describe());
    } catch (const Error& e) {
        error_ = QString::fromUtf8(e.what());
        static const QRegularExpression layer_ref(R"(layers\[(\d+)\])");
        if (auto m = layer_ref.match(*error_); m.hasMatch()) error_row_ = m.captured(1).toInt();
        build_graph_nodes();
        resolve_graph_by_names();
    }
}

void ModelDocument::build_graph_nodes() {
    graph_ = {};
    graph_.nodes.append({input_name(), "input", input_shape_});
    for (int i = 0; i < layer_count(); ++i) {
        const auto l = layer(i);
        graph_.nodes.append({l.value("name").toString(), l.value("type").toString(), output_shape(i)});
    }
    const QStringList extra = extra_input_names();
    for (qsizetype k = 0; k < extra.size(); ++k)
        graph_.nodes.append({extra[k], "input", k < extra_input_shapes_.size() ? extra_input_shapes_[k] : QString()});
}

void ModelDocument::resolve_graph_by_names() {
    // The engine refused the model, so draw what the names say: the first layer of each name, the
    // input by its name, a blank list as the layer before; a name that resolves to nothing earlier
    // is the error shown, and has no edge.
    const QString input = input_name();
    const auto layers = model_.value("layers").toArray();
    QHash<QString, int> rows;
    for (int i = 0; i < layers.size(); ++i) {
        const QString name = layers[i].toObject().value("name").toString();
        if (!name.isEmpty() && !rows.contains(name)) rows.insert(name, i);
    }
    for (int i = 0; i < layers.size(); ++i) {
        const int to = ModelGraph::node_of_row(i);
        const QStringList names = inputs_of(layers[i].toObject());
        if (names.isEmpty()) graph_.edges.append({to - 1, to, QString()});
        const QStringList extra = extra_input_names();
        for (const QString& name : names) {
            if (name == input) graph_.edges.append({ModelGraph::kInputNode, to, QString()});
            else if (extra.contains(name)) graph_.edges.append({input_node(static_cast<int>(extra.indexOf(name)) + 1), to, QString()});
            else if (rows.value(name, i) < i) graph_.edges.append({ModelGraph::node_of_row(rows.value(name)), to, QString()});
        }
    }
}

QString ModelDocument::input_name() const {
    const auto input = model_.value("input");
    // Several inputs: a list of named inputs, the first of which is "the" input.
    if (input.isArray()) return input.toArray().at(0).toObject().value("name").toString("input");
    return input.toObject().value("name").toString("input");
}

QStringList ModelDocument::extra_input_names() const {
    QStringList names;
    const auto input = model_.value("input");
    if (!input.isArray()) return names;
    const auto list = input.toArray();
    for (qsizetype k = 1; k < list.size(); ++k) names << list.at(k).toObject().value("name").toString();
    return names;
}

int ModelDocument::input_node(int k) const {
    // Node 0 is the first input, then one node per layer, then the further inputs.
    return k == 0 ? ModelGraph::kInputNode : ModelGraph::node_of_row(layer_count() - 1) + k;
}

QStringList ModelDocument::inputs(int row) const { return inputs_of(layer(row)); }

void ModelDocument::update_layers(const QJsonArray& layers) {
    set_layers(layers);
    if (rowCount() > 0) Q_EMIT dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
    Q_EMIT changed();
}

void ModelDocument::set_inputs(int row, const QStringList& names) {
    auto layers = model_.value("layers").toArray();
    if (row < 0 || row >= layers.size()) return;
    auto l = layers[row].toObject();
    if (names.isEmpty()) l.remove("inputs");
    else l["inputs"] = QJsonArray::fromStringList(names);  // always a list, as the engine writes it
    layers[row] = l;
    update_layers(layers);
}

QString ModelDocument::name_for(int row) {
    auto layers = model_.value("layers").toArray();
    if (row < 0 || row >= layers.size()) return {};
    auto l = layers[row].toObject();
    if (const QString name = l.value("name").toString(); !name.isEmpty()) return name;
    QString name = QString("%1_%2").arg(l.value("type").toString()).arg(row);
    for (int k = 2; name_taken(layers, name, row) || name == input_name(); ++k)
        name = QString("%1_%2_%3").arg(l.value("type").toString()).arg(row).arg(k);
    l["name"] = name;
    layers[row] = l;
    update_layers(layers);
    return name;
}

void ModelDocument::add_input(int row, int source_row) {
    if (row < 0 || row >= layer_count() || source_row >= row) return;
    const int k = -1 - source_row;  // a model input, for source_row < 0
    if (source_row < 0 && k >= input_count()) return;
    const QString name = source_row < 0 ? model_input_name(k) : name_for(source_row);
    if (name.isEmpty()) return;
    QStringList names = inputs(row);
    if (joins_inputs(layer(row).value("type").toString())) names << name;
    else names = {name};  // a plain layer (or a subset) reads one tensor
    set_inputs(row, names);
}

void ModelDocument::rename_layer(int row, const QString& name) {
    auto layers = model_.value("layers").toArray();
    if (row < 0 || row >= layers.size()) return;
    auto l = layers[row].toObject();
    const QString old = l.value("name").toString();
    if (name.isEmpty()) l.remove("name");
    else l["name"] = name;
    layers[row] = l;
    // Readers follow only when "old" meant this layer alone and "name" will mean it alone:
    // otherwise rewriting would move edges of another layer.
    if (!old.isEmpty() && !name.isEmpty() && !name_taken(layers, old, row) && !name_taken(layers, name, row) &&
        old != input_name() && name != input_name()) {
        for (int i = row + 1; i < layers.size(); ++i) {
            auto reader = layers[i].toObject();
            // A shared layer ("shares") follows its owner's new name too.
            const bool sharer = reader.value("shares").toString() == old;
            if (sharer) reader["shares"] = name;
            QStringList names = inputs_of(reader);
            if (!names.contains(old) && !sharer) continue;
            if (names.contains(old)) {
                names.replaceInStrings(QRegularExpression("^" + QRegularExpression::escape(old) + "$"), name);
                reader["inputs"] = QJsonArray::fromStringList(names);
            }
            layers[i] = reader;
        }
    }
    update_layers(layers);
}

Qt::ItemFlags ModelDocument::flags(const QModelIndex& index) const {
    auto f = QAbstractTableModel::flags(index);
    if (index.isValid() && index.column() == ColInputs) f |= Qt::ItemIsEditable;
    return f;
}

bool ModelDocument::setData(const QModelIndex& index, const QVariant& value, int role) {
    if (!index.isValid() || index.column() != ColInputs || role != Qt::EditRole) return false;
    QStringList names;
    for (const QString& part : value.toString().split(',', Qt::SkipEmptyParts))
        if (const QString name = part.trimmed(); !name.isEmpty()) names << name;
    set_inputs(index.row(), names);
    return true;
}

QString ModelDocument::output_shape(int row) const {
    return row >= 0 && row < static_cast<int>(rows_.size()) ? rows_[row].shape : QString();
}

qint64 ModelDocument::layer_params(int row) const {
    return row >= 0 && row < static_cast<int>(rows_.size()) ? rows_[row].params : 0;
}

int ModelDocument::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : layer_count(); }

int ModelDocument::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ModelDocument::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= layer_count()) return {};
    const int row = index.row();
    const bool is_error_row = error_ && row == error_row_;
    if (index.column() == ColInputs && (role == Qt::DisplayRole || role == Qt::EditRole))
        return inputs(row).join(", ");
    if (role == Qt::DisplayRole) {
        const auto l = layer(row);
        switch (index.column()) {
            case ColIndex: return row;
            case ColType: return l.value("name").toString().isEmpty() ? l.value("type").toString()
                                                                     : l.value("type").toString() + " “" + l.value("name").toString() + "”";
            case ColSettings: return describe(l);
            case ColOutput: return is_error_row ? QStringLiteral("error") : output_shape(row);
            case ColParams: return error_ ? QVariant() : QVariant(QLocale().toString(layer_params(row)));
        }
    }
    if (role == Qt::ToolTipRole && is_error_row) return *error_;
    if (role == Qt::ToolTipRole && index.column() == ColInputs)
        return inputs(row).isEmpty() ? QString("blank: reads the layer before it (the first layer reads the model's input)")
                                     : QString("the layers it reads, by name (\"%1\" is the model's input); double-click to edit")
                                           .arg(input_name());
    if (role == Qt::ForegroundRole && is_error_row) return QBrush(QColor(180, 0, 0));
    if (role == Qt::TextAlignmentRole && (index.column() == ColParams || index.column() == ColIndex))
        return int(Qt::AlignRight | Qt::AlignVCenter);
    return {};
}

QVariant ModelDocument::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case ColIndex: return "#";
        case ColType: return "Layer";
        case ColInputs: return "Inputs";
        case ColSettings: return "Settings";
        case ColOutput: return "Output shape";
        case ColParams: return "Parameters";
    }
    return {};
}

QString ModelDocument::describe(const QJsonObject& l) {
    const QString type = l.value("type").toString();
    QStringList parts;
    if (type == "dense" || type == "output") {
        parts << QString::number(l.value("units").toInt()) + " units";
        parts << l.value("activation").toString(type == "dense" ? "relu" : "softmax");
        if (type == "output") parts << l.value("loss").toString("mcxent");
    } else if (type == "convolution" || type == "transposed_convolution") {
        if (type == "transposed_convolution") parts << "transposed";
        parts << QString::number(l.value("filters").toInt()) + " × " + square(l.value("kernel"));
        if (l.contains("stride")) parts << "stride " + pair_text(l.value("stride"));
        if (l.contains("padding")) parts << "pad " + pair_text(l.value("padding"));
        if (l.value("mode").toString() == "same") parts << "same";
        parts << l.value("activation").toString("identity");
    } else if (type == "lstm" || type == "gru" || type == "simple_rnn") {
        parts << QString("%1 units").arg(l.value("units").toInt());
        parts << (l.value("return_sequences").toBool() ? "every step" : "last step");
        if (const QString bi = l.value("bidirectional").toString("none"); bi != "none") parts << "bidirectional " + bi;
        if (l.value("go_backwards").toBool()) parts << "backwards";
        if (type == "simple_rnn") parts << l.value("activation").toString("tanh");
    } else if (type == "embedding") {
        parts << QString("%1 ids → %2").arg(l.value("vocabulary").toInt()).arg(l.value("units").toInt());
    } else if (type == "convolution1d") {
        parts << QString("%1 × %2").arg(l.value("filters").toInt()).arg(l.value("kernel").toInt())
              << l.value("mode").toString("truncate") << l.value("activation").toString("identity");
    } else if (type == "repeat_vector") {
        parts << QString("× %1 steps").arg(l.value("times").toInt());
    } else if (type == "subsampling" && l.value("global").toBool()) {
        parts << "global " + l.value("pooling").toString("max");  // over all steps or the whole image
    } else if (type == "subsampling") {
        parts << l.value("pooling").toString("max") + " " + square(l.contains("kernel") ? l.value("kernel") : QJsonValue(2));
        if (l.contains("stride")) parts << "stride " + pair_text(l.value("stride"));
    } else if (type == "dropout") {
        parts << "retain " + QString::number(l.value("retain").toDouble(0.5));
    } else if (type == "batch_norm") {
        parts << "eps " + QString::number(l.value("eps").toDouble(1e-5));
    } else if (type == "prelu") {
        parts << "alpha from " + QString::number(l.value("alpha_init").toDouble(0.0));
    } else if (type == "activation") {
        parts << l.value("activation").toString();
        if (l.contains("loss")) parts << l.value("loss").toString();
    } else if (type == "zero_padding" || type == "cropping") {
        const QJsonValue v = l.value(type == "zero_padding" ? "padding" : "cropping");
        parts << (v.isArray() && v.toArray().size() == 4 ? "top, bottom, left, right " : "") + pair_text(v);
    } else if (type == "upsampling") {
        parts << "× " + pair_text(l.value("size")) + " nearest";
    } else if (type == "depthwise_convolution" || type == "separable_convolution") {
        if (type == "separable_convolution") parts << QString::number(l.value("filters").toInt()) + " filters";
        parts << "× " + QString::number(l.value("depth_multiplier").toInt(1)) + " per channel, " + square(l.value("kernel"));
        if (l.contains("stride")) parts << "stride " + pair_text(l.value("stride"));
        if (l.value("mode").toString() == "same") parts << "same";
        parts << l.value("activation").toString("identity");
    } else if (type == "add" || type == "multiply" || type == "average" || type == "maximum") {
        const QString what = type == "add" ? "sum" : type == "multiply" ? "product" : type == "average" ? "mean" : "maximum";
        parts << "element-wise " + what + " of " + QString::number(inputs_of(l).size()) + " inputs";
    } else if (type == "subtract") {
        parts << "first input minus second";
    } else if (type == "concatenate") {
        parts << QString::number(inputs_of(l).size()) + " inputs along channels";
    } else if (type == "subset") {
        const auto c = l.value("channels").toArray();
        parts << QString("channels %1–%2").arg(c.at(0).toInt()).arg(c.at(1).toInt());
    } else if (type == "reshape") {
        parts << l.value("order").toString("channels_first").replace('_', ' ') + " order";
    } else if (type == "permute") {
        QStringList axes;
        for (const auto& a : l.value("axes").toArray()) axes << a.toString();
        parts << "to " + axes.join(", ");
    }
    return parts.join(", ");
}

}  // namespace thresher::ui
