// ModelPage: the layer editor. Left: the layers as a table (type and name, inputs, settings,
// output shape, parameters, all from the engine's shape inference); beside it the model drawn as
// a graph (GraphView), selecting with the table; buttons to add, remove and reorder; the
// model-wide settings (name, input shape, weight init, l1, l2, seed) and the learning-rate schedule
// (type, unit and its fields as "key=value, ..."; the engine's reading of it below). Right: the
// selected layer's form. Below: the notes of the last import (what was approximated or left out),
// and the engine's verdict on the model, red with the error while it is invalid.
#pragma once

#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QGroupBox;
class QPlainTextEdit;
class QSpinBox;
class QTableView;
class QToolButton;

namespace thresher::ui {

class GraphView;
class LayerForm;
class ModelDocument;

class ModelPage : public QWidget {
    Q_OBJECT
public:
    explicit ModelPage(ModelDocument* document, QWidget* parent = nullptr);

    QTableView* table() const { return table_; }
    GraphView* graph() const { return graph_; }
    int selected_row() const;
    void select_row(int row);
    // Shows what an import approximated in the notes panel (hidden when empty).
    void set_import_notes(const QString& file, const QStringList& notes);

Q_SIGNALS:
    void importRequested();
    void templateRequested(const QString& name);

private:
    void refresh_model_fields();
    void refresh_status();
    void refresh_schedule();
    void write_schedule();

    ModelDocument* document_;
    QTableView* table_ = nullptr;
    GraphView* graph_ = nullptr;
    LayerForm* form_ = nullptr;
    QLabel* status_ = nullptr;
    QLineEdit* name_ = nullptr;
    // The Input row edits one model input: the one input_pick_ selects (shown with several).
    QComboBox* input_pick_ = nullptr;
    QLineEdit* input_name_ = nullptr;
    QToolButton *add_input_ = nullptr, *remove_input_ = nullptr;
    int input_at_ = 0;
    QComboBox* input_kind_ = nullptr;
    QSpinBox *channels_ = nullptr, *height_ = nullptr, *width_ = nullptr, *size_ = nullptr;
    QSpinBox* steps_ = nullptr;  // a sequence input: steps (size_ holds its features)
    QComboBox* init_ = nullptr;
    QLineEdit *l1_ = nullptr, *l2_ = nullptr;
    QComboBox *schedule_type_ = nullptr, *schedule_by_ = nullptr;
    QLineEdit* schedule_fields_ = nullptr;
    QLabel* schedule_info_ = nullptr;
    QGroupBox* notes_box_ = nullptr;
    QPlainTextEdit* notes_ = nullptr;
    QSpinBox* seed_ = nullptr;
    bool syncing_ = false;
    // The edit whose change is being written: the refresh that follows leaves its text alone.
    const QWidget* writing_from_ = nullptr;  // true while fields are set from the document, not by the user
};

}  // namespace thresher::ui
