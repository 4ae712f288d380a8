// DataPreview: a few decoded training samples with their labels, shown before a run is launched
// (issue 24: "a wrong folder shows before an hour is lost"). It reads the data as the engine will
// (thresher_data: the same decoders, the model's input shape, stretch or crop), for image data:
// an image folder (a few images of each of the first classes) or IDX images (Fashion-MNIST: the
// first sample of each class). Other data says it has no images to show. A folder the engine
// would refuse shows the engine's own error, naming the file or folder.
#pragma once

#include <QString>
#include <QWidget>

class QGridLayout;
class QLabel;

namespace thresher::ui {

class DataPreview : public QWidget {
    Q_OBJECT
public:
    explicit DataPreview(QWidget* parent = nullptr);

    // `data`: a run spec's data (fashion-mnist, a folder, a CSV path), resolved; `model`: the
    // model JSON, whose input shape the samples take.
    void show_samples(const QString& data, const QJsonObject& model);
    void clear();
    // What the preview shows now (for tests): "3 classes: cat, dog, fox" or the error.
    QString caption() const;
    int sample_count() const { return samples_; }

private:
    QLabel* caption_ = nullptr;
    QGridLayout* grid_ = nullptr;
    int samples_ = 0;
};

}  // namespace thresher::ui
