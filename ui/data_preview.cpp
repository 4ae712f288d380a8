#include "data_preview.h"

#include <QFileInfo>
#include <QGridLayout>
#include <QImage>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QPixmap>
#include <QVBoxLayout>
#include <algorithm>
#include <set>

#include "config/model_config.h"
#include "core/error.h"
#include "data/data_source.h"
#include "data/image_folder.h"
#include "data/shard_format.h"
#include "data/shard_reader.h"

namespace thresher::ui {

namespace {

constexpr int kPerClass = 2;     // images of each class shown from an image folder
constexpr int kMaxClasses = 8;   // classes shown
constexpr std::uint64_t kShardSample = 2048;  // records read from a shard set to find a sample of each class
constexpr int kColumns = 8;
constexpr int kThumb = 56;       // pixels: a 28×28 sample twice over

// One CHW sample of floats in [0, 1] (the loaders' scale) as an image; values outside are clipped.
QImage to_image(const float* chw, const data::SampleShape& s) {
    const bool rgb = s.channels == 3;
    QImage img(s.width, s.height, rgb ? QImage::Format_RGB888 : QImage::Format_Grayscale8);
    const std::size_t plane = static_cast<std::size_t>(s.height) * s.width;
    auto byte = [](float v) { return static_cast<uchar>(std::clamp(v, 0.f, 1.f) * 255.f + 0.5f); };
    for (int y = 0; y < s.height; ++y) {
        uchar* line = img.scanLine(y);
        for (int x = 0; x < s.width; ++x) {
            const std::size_t i = static_cast<std::size_t>(y) * s.width + x;
            if (rgb)
                for (int c = 0; c < 3; ++c) line[x * 3 + c] = byte(chw[plane * c + i]);
            else
                line[x] = byte(chw[i]);
        }
    }
    return img;
}

}  // namespace

DataPreview::DataPreview(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    caption_ = new QLabel;
    caption_->setObjectName("preview_caption");
    caption_->setWordWrap(true);
    caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(caption_);
    grid_ = new QGridLayout;
    grid_->setSpacing(4);
    layout->addLayout(grid_);
}

void DataPreview::clear() {
    while (QLayoutItem* item = grid_->takeAt(0)) {
        delete item->widget();
        delete item;
    }
    samples_ = 0;
    caption_->clear();
    caption_->setStyleSheet({});
}

QString DataPreview::caption() const { return caption_->text(); }

void DataPreview::show_samples(const QString& data, const QJsonObject& model) {
    clear();
    auto say = [this](const QString& text, bool error) {
        caption_->setText(text);
        caption_->setStyleSheet(error ? "color: #b00020" : QString());
    };
    config::ModelConfig m;
    try {
        const QByteArray text = QJsonDocument(model).toJson(QJsonDocument::Compact);
        m = config::ModelConfig::parse(std::string_view(text.constData(), text.size()), "model");
    } catch (const Error& e) {
        say("The model is not valid, so its input shape is unknown: " + QString::fromUtf8(e.what()), true);
        return;
    }
    if (m.input.sequence()) {
        say("A sequence model: there are no images to show.", false);
        return;
    }
    if (m.input.flat() || m.input_count() > 1) {
        say("The model's input is not one image: there are no images to show.", false);
        return;
    }
    if (data.endsWith(".csv", Qt::CaseInsensitive)) {
        say("A CSV table: there are no images to show.", false);
        return;
    }
    data::DataSplit split;
    std::vector<std::size_t> shown;  // samples of split.train to draw
    try {
        data::ImageFolderOptions options;
        options.shape = {m.input.c, m.input.h, m.input.w};
        const std::string path = data.toStdString();
        if (data != "fashion-mnist" && QFileInfo(data).isDir() && data::is_image_folder(path)) {
            split = data::preview_image_folder(path, options, kPerClass, kMaxClasses);
            for (std::size_t i = 0; i < split.train.count; ++i) shown.push_back(i);
        } else {
            if (data != "fashion-mnist" && data::is_shard_folder(path)) {
                // A shard set: its first records only (a few shards), never the whole set.
                const auto index = data::read_shard_index(path);
                split.train = data::read_shard_sample(index, index.train, kShardSample);
                split.class_names = index.class_names;
            } else {
                // IDX images (Fashion-MNIST): read as the engine reads them.
                split = data::load_data(path);
            }
            // The first of each class.
            std::set<int> seen;
            for (std::size_t i = 0; i < split.train.count && seen.size() < std::size_t(kMaxClasses); ++i)
                if (seen.insert(split.train.labels.empty() ? 0 : split.train.labels[i]).second) shown.push_back(i);
        }
    } catch (const Error& e) {
        say(QString::fromUtf8(e.what()), true);
        return;
    }
    const data::Dataset& ds = split.train;
    if (ds.shape.height <= 1 && ds.shape.width <= 1) {
        say("This data holds flat features: there are no images to show.", false);
        return;
    }
    auto class_name = [&](int label) {
        return label >= 0 && std::size_t(label) < split.class_names.size() ? QString::fromStdString(split.class_names[label])
                                                                            : QString("class %1").arg(label);
    };
    for (std::size_t i : shown) {
        auto* picture = new QLabel;
        picture->setPixmap(QPixmap::fromImage(to_image(ds.sample(i), ds.shape))
                               .scaled(kThumb, kThumb, Qt::KeepAspectRatio, Qt::FastTransformation));
        picture->setToolTip(QString("%1×%2×%3").arg(ds.shape.channels).arg(ds.shape.height).arg(ds.shape.width));
        auto* name = new QLabel(class_name(ds.labels.empty() ? 0 : ds.labels[i]));
        name->setAlignment(Qt::AlignHCenter);
        name->setMaximumWidth(kThumb + 16);
        const int cell = samples_++;
        grid_->addWidget(picture, (cell / kColumns) * 2, cell % kColumns, Qt::AlignHCenter);
        grid_->addWidget(name, (cell / kColumns) * 2 + 1, cell % kColumns, Qt::AlignHCenter);
    }
    QStringList names;
    for (std::size_t c = 0; c < split.class_names.size() && c < 6; ++c) names << QString::fromStdString(split.class_names[c]);
    QString text = split.class_names.empty()
                       ? QString("%1 training samples of %2×%3×%4, %5 classes (the first of each shown)")
                             .arg(ds.count).arg(ds.shape.channels).arg(ds.shape.height).arg(ds.shape.width).arg(ds.num_classes)
                       : QString("%1 classes: %2%3; as the model reads them, %4×%5×%6")
                             .arg(split.class_names.size())
                             .arg(names.join(", "))
                             .arg(split.class_names.size() > 6 ? ", …" : "")
                             .arg(ds.shape.channels).arg(ds.shape.height).arg(ds.shape.width);
    if (split.skipped_images > 0)
        text += QString("\n%1 image(s) could not be decoded: %2")
                    .arg(split.skipped_images)
                    .arg(QString::fromStdString(split.skipped_examples.front()));
    say(text, split.skipped_images > 0);
}

}  // namespace thresher::ui
