// ModelDocument: the model being edited in the app — Thresher model JSON (engine/config/README.md)
// as a table of layers for a QTableView. Every edit re-validates the whole model with the engine's
// own config library (thresher_config), so each row shows the output shape and parameter count
// the engine will infer, and an invalid model shows the engine's error on the row it names:
//   model: layers[2] (convolution): "kernel": must be two positive integers, got [5,0]
// The model is a graph: a layer's "inputs" name the layers (or the model's input) it reads, blank
// meaning the layer before it. The Inputs column shows and edits them as "a, b"; graph() gives the
// nodes and edges the graph view draws (graph_layout.h), resolved by the engine while the model is
// valid and by name, as far as they resolve, while it is not.
// Files: Thresher JSON is kept as written; DL4J and Keras files are imported through the same
// library (what `thresher-engine train --model` reads) and become Thresher JSON.
#pragma once

#include <QAbstractTableModel>
#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <optional>
#include <stdexcept>
#include <vector>

#include "graph_layout.h"

namespace thresher::ui {

// load() of a file that leaves its sequence input's time steps open and imports once they are
// given (DL4J without timeSeriesLength, Keras Input(shape=(None, C))): the app asks for them.
class OpenStepsError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class ModelDocument : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { ColIndex, ColType, ColInputs, ColSettings, ColOutput, ColParams, ColumnCount };

    explicit ModelDocument(QObject* parent = nullptr);

    // The whole model JSON; setting it resets the table.
    void set_model(const QJsonObject& model);
    QJsonObject model() const { return model_; }

    // Reads Thresher, DL4J or Keras JSON; throws std::runtime_error naming the file on failure.
    // Returns the format read ("thresher", "dl4j", "keras") and fills `notes` with what the import
    // approximated. `steps` > 0: a sequence input's time steps the file leaves open (the engine's
    // --steps); a file that imports only with them throws OpenStepsError when none are given.
    QString load(const QString& path, QStringList* notes = nullptr, int steps = 0);
    // Whether the file load() read last carried weights (a DL4J zip, a Keras .h5 / .keras): the
    // document keeps its architecture, and a run spec that names the file fine-tunes from them.
    bool loaded_weights() const { return loaded_weights_; }
    void save(const QString& path) const;

    int layer_count() const;
    QJsonObject layer(int row) const;
    void set_layer(int row, const QJsonObject& layer);
    void insert_layer(int row, const QJsonObject& layer);
    void remove_layer(int row);
    void move_layer(int from, int to);

    // The graph. A layer's inputs as written ("inputs": a name or a list; empty: the layer before).
    QStringList inputs(int row) const;
    // Writes a layer's inputs (an empty list removes the field: the layer before); the engine's
    // error names an unknown input.
    void set_inputs(int row, const QStringList& inputs);
    // Appends `source_row`'s layer (-1 - k: model input k) to a vertex's inputs, or makes it a
    // plain layer's only input, naming that layer first if it has no name (name_for()).
    void add_input(int row, int source_row);
    // The name by which later layers refer to a layer: its own, or a fresh "<type>_<row>" it is
    // given now (unique in the model).
    QString name_for(int row);
    // Renames a layer; where the old name was unique and the new one is free, the layers that
    // read it follow (their inputs are rewritten), so naming does not break the graph.
    void rename_layer(int row, const QString& name);
    // What layers call the model's input ("input", or the name the input object gives).
    QString input_name() const;
    // A model with several inputs ("input": a list): the names after the first, and the graph
    // node of input k (0: the first, drawn first; the others after the layers).
    QStringList extra_input_names() const;
    int input_node(int k) const;
    // The model's inputs one by one (model_inputs.cpp): how many, input k's JSON object
    // ({"name", "channels"/"height"/"width" or "size"}), and edits of them. A model with one input
    // keeps "input" an object; adding a second makes it a list. Renaming an input makes the
    // layers that read it follow (as rename_layer does); removing one drops it from its readers'
    // inputs, leaving the engine to say what no longer reads anything.
    int input_count() const;
    QJsonObject model_input(int k) const;
    // What layers call model input k (input_name() for the first).
    QString model_input_name(int k) const;
    void set_model_input(int k, const QJsonObject& input);
    int add_model_input();  // returns the new input's index
    void remove_model_input(int k);
    // Nodes (the input, then each row) and edges with their shapes, for the graph view.
    const ModelGraph& graph() const { return graph_; }

    // Model-wide fields (name, input, updater, weight_init, l1, l2, seed).
    void set_field(const QString& key, const QJsonValue& value);

    // Validation of the current JSON.
    bool valid() const { return !error_; }
    QString error() const { return error_.value_or(QString()); }
    int error_row() const { return error_row_; }  // -1: the error is not about one layer
    qint64 param_count() const { return params_; }
    QString output_shape(int row) const;
    qint64 layer_params(int row) const;
    QString input_shape() const { return input_shape_; }
    // The learning-rate schedule in words, as the engine reads it ("" without one or while invalid).
    QString schedule_text() const { return schedule_text_; }

    // QAbstractTableModel
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
    // The Inputs column is edited in place, as "a, b".
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role) override;

    // A one-line description of a layer's settings: "20 × 5×5, stride 1, identity".
    static QString describe(const QJsonObject& layer);

Q_SIGNALS:
    // After every change, with the validation result already updated.
    void changed();

private:
    void revalidate();
    void set_layers(const QJsonArray& layers);
    // Replaces the layer list after an edit of one or more rows and tells the views.
    void update_layers(const QJsonArray& layers);
    // The graph's nodes from the current rows (edges come from the engine or by names).
    void build_graph_nodes();
    // The graph by names alone, for an invalid model (inputs that name nothing earlier are left out).
    void resolve_graph_by_names();

    QJsonObject model_;
    bool loaded_weights_ = false;
    std::optional<QString> error_;
    int error_row_ = -1;
    qint64 params_ = 0;
    QString input_shape_;
    QStringList extra_input_shapes_;  // a model with several inputs: the second and later
    QString schedule_text_;
    struct RowInfo {
        QString shape;
        qint64 params = 0;
    };
    std::vector<RowInfo> rows_;
    ModelGraph graph_;
};

}  // namespace thresher::ui
