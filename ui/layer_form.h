// LayerForm: the property form of one layer, built from its type's fields (layer_schema.h). Edits
// go straight into the ModelDocument, which re-validates the model, so the table's shapes and the
// error line follow every keystroke. The field an error names (`"kernel": …`) is marked red.
// Every layer has a name and its Inputs (comma-separated names, or "+" to pick an earlier layer);
// an error about what the layer reads (`input "x" names no layer`) marks the Inputs editor.
#pragma once

#include <QJsonObject>
#include <QMap>
#include <QWidget>

class QFormLayout;
class QLabel;
class QLineEdit;

namespace thresher::ui {

class ModelDocument;

class LayerForm : public QWidget {
    Q_OBJECT
public:
    explicit LayerForm(ModelDocument* document, QWidget* parent = nullptr);

    // Shows the form of layer `row` (-1: none). Rebuilds the editors.
    void show_layer(int row);
    int row() const { return row_; }
    // Marks the editor of the field the document's error names, if it is this layer's.
    void mark_error();

private:
    void rebuild();
    void write(const QString& key, const QJsonValue& value);
    QWidget* make_inputs_row();
    void add_input(int source_row);
    static QStringList parse_inputs(const QString& text);

    ModelDocument* document_;
    int row_ = -1;
    QFormLayout* form_ = nullptr;
    QLabel* title_ = nullptr;
    QMap<QString, QWidget*> editors_;
    QLineEdit* name_ = nullptr;
    QLineEdit* inputs_ = nullptr;
};

}  // namespace thresher::ui
