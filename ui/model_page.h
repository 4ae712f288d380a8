// ModelPage: the layer editor. Left: the layers as a table (type, settings, output shape,
// parameters, all from the engine's shape inference); buttons to add, remove and reorder; the
// model-wide settings (name, input shape, weight init, l2, seed). Right: the selected layer's
// form. Below: the engine's verdict on the model, red with the error while it is invalid.
#pragma once

#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QTableView;
class QToolButton;

namespace thresher::ui {

class LayerForm;
class ModelDocument;

class ModelPage : public QWidget {
    Q_OBJECT
public:
    explicit ModelPage(ModelDocument* document, QWidget* parent = nullptr);

    QTableView* table() const { return table_; }
    int selected_row() const;
    void select_row(int row);

Q_SIGNALS:
    void importRequested();
    void templateRequested(const QString& name);

private:
    void refresh_model_fields();
    void refresh_status();

    ModelDocument* document_;
    QTableView* table_ = nullptr;
    LayerForm* form_ = nullptr;
    QLabel* status_ = nullptr;
    QLineEdit* name_ = nullptr;
    QComboBox* input_kind_ = nullptr;
    QSpinBox *channels_ = nullptr, *height_ = nullptr, *width_ = nullptr, *size_ = nullptr;
    QComboBox* init_ = nullptr;
    QLineEdit* l2_ = nullptr;
    QSpinBox* seed_ = nullptr;
    bool syncing_ = false;  // true while fields are set from the document, not by the user
};

}  // namespace thresher::ui
