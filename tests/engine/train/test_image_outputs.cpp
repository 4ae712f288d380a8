// Image outputs train and are scored pixel by pixel (engine/config/README.md, "Outputs"): a
// small segmentation model (a softmax over the channels of each pixel, mcxent) and a conv
// autoencoder (sigmoid, mse) lower their loss in a few dozen steps on synthetic images; the
// segmentation's evaluation is a pixel accuracy that a sharded evaluation, merged, reproduces
// exactly; the autoencoder's is regression per channel over all pixels.
#include <QtTest>

#include <random>

#include "backend/registry.h"
#include "core/error.h"
#include "train/evaluation.h"
#include "train/task.h"

using namespace thresher;

namespace {

constexpr int kSide = 12;

// `count` images 1 x 12 x 12: noise around 0 with a bright rectangle somewhere; the target is
// its mask as two one-hot channels (background, rectangle) or, for the autoencoder, the
// clean image (0 outside, 1 inside).
data::Dataset squares(int count, bool segmentation, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> noise(0.f, 0.2f);
    data::Dataset ds;
    ds.name = "squares";
    ds.shape = {1, kSide, kSide};
    ds.count = static_cast<std::size_t>(count);
    const std::size_t pixels = kSide * kSide;
    ds.num_classes = segmentation ? 2 : 0;
    ds.target_size = segmentation ? 2 * pixels : pixels;
    ds.features.resize(ds.count * pixels);
    ds.targets.assign(ds.count * ds.target_size, 0.f);
    for (std::size_t i = 0; i < ds.count; ++i) {
        const int h = 3 + static_cast<int>(rng() % 4), w = 3 + static_cast<int>(rng() % 4);
        const int top = static_cast<int>(rng() % static_cast<unsigned>(kSide - h)), left = static_cast<int>(rng() % static_cast<unsigned>(kSide - w));
        for (int y = 0; y < kSide; ++y)
            for (int x = 0; x < kSide; ++x) {
                const bool in = y >= top && y < top + h && x >= left && x < left + w;
                const std::size_t p = static_cast<std::size_t>(y * kSide + x);
                ds.features[i * pixels + p] = (in ? 1.f : 0.f) + noise(rng);
                float* t = ds.targets.data() + i * ds.target_size;
                if (segmentation) t[(in ? pixels : 0) + p] = 1.f;
                else t[p] = in ? 1.f : 0.f;
            }
    }
    return ds;
}

config::ModelConfig model(const char* layers) {
    return config::ModelConfig::parse(std::string(R"({"name":"img","seed":3,"input":{"channels":1,"height":12,"width":12},
        "updater":{"type":"adam","learning_rate":0.01},"layers":[)") + layers + "]}", "img");
}

// Mean loss over the set in inference, then `steps` steps of batch 16; returns (before, after).
std::pair<double, double> train_steps(nn::Network& net, const data::Dataset& ds, int steps) {
    const double before = train::evaluate(net, ds).loss;
    const int batch = 16;
    const std::size_t width = ds.shape.size();
    for (int s = 0; s < steps; ++s) {
        const std::size_t first = static_cast<std::size_t>((s * batch) % static_cast<int>(ds.count));
        net.compute_gradients(ds.features.data() + first * width, ds.targets.data() + first * ds.target_size, batch,
                              static_cast<std::uint64_t>(s));
        net.compute_update(s);
        net.apply_update();
    }
    return {before, train::evaluate(net, ds).loss};
}

}  // namespace

class TestImageOutputs : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { be_ = backend::create_backend("cpu", {2}); }
    void segmentation_trains_to_pixel_accuracy();
    void autoencoder_trains_with_regression_per_channel();
    void data_without_image_targets_refused();
    void csv_with_pixel_targets_trains();

private:
    std::unique_ptr<backend::Backend> be_;
};

void TestImageOutputs::segmentation_trains_to_pixel_accuracy() {
    const auto ds = squares(64, true, 1);
    nn::Network net(model(R"({"type":"convolution","filters":6,"kernel":[3,3],"mode":"same","activation":"relu"},
        {"type":"dropout","retain":0.9,"spatial":true},
        {"type":"convolution","filters":2,"kernel":[1,1],"activation":"softmax","loss":"mcxent"})"), *be_);
    const auto [before, after] = train_steps(net, ds, 60);
    QVERIFY2(after < before / 3, qPrintable(QString("loss %1 -> %2").arg(before).arg(after)));

    const auto r = train::evaluate(net, ds, 10);
    QVERIFY(r.classification && !r.regression);
    // Every pixel of every sample is counted once.
    QCOMPARE(r.classification->count(), std::int64_t(64 * kSide * kSide));
    QVERIFY2(r.classification->accuracy() > 0.95, qPrintable(QString::number(r.classification->accuracy())));
    // The pixel accuracy from its definition: the argmax channel against the target's.
    std::vector<float> out(ds.count * ds.target_size);
    net.predict(ds.features.data(), static_cast<int>(ds.count), out.data());
    std::int64_t hits = 0;
    const std::size_t pixels = kSide * kSide;
    for (std::size_t i = 0; i < ds.count; ++i)
        for (std::size_t p = 0; p < pixels; ++p) {
            const float* o = out.data() + i * ds.target_size;
            const float* t = ds.targets.data() + i * ds.target_size;
            hits += (o[pixels + p] > o[p]) == (t[pixels + p] > t[p]);
        }
    QCOMPARE(r.classification->accuracy(), double(hits) / double(64 * pixels));

    // Two shards merged give the single-node counts exactly (the distributed evaluation).
    std::vector<nlohmann::json> parts;
    for (int shard = 0; shard < 2; ++shard) {
        const auto part = train::evaluate(net, ds, 7, 0, shard, 2);
        auto j = part.to_json();
        j["loss_sum"] = part.loss_sum;
        j["count"] = part.count;
        parts.push_back(j);
    }
    const auto merged = train::merge_evaluation_parts(parts);
    QCOMPARE(merged["confusion"], r.to_json()["confusion"]);
    QCOMPARE(merged["accuracy"].get<double>(), r.classification->accuracy());
}

void TestImageOutputs::autoencoder_trains_with_regression_per_channel() {
    const auto ds = squares(64, false, 2);
    nn::Network net(model(R"({"type":"convolution","filters":4,"kernel":[3,3],"mode":"same","activation":"relu"},
        {"type":"subsampling","pooling":"max","kernel":[2,2]},
        {"type":"transposed_convolution","filters":4,"kernel":[2,2],"stride":[2,2],"activation":"relu"},
        {"type":"convolution","filters":1,"kernel":[3,3],"mode":"same","activation":"sigmoid","loss":"mse"})"), *be_);
    const auto [before, after] = train_steps(net, ds, 80);
    QVERIFY2(after < before / 3, qPrintable(QString("loss %1 -> %2").arg(before).arg(after)));
    const auto r = train::evaluate(net, ds);
    QVERIFY(r.regression && !r.classification);
    const auto j = r.to_json();
    QCOMPARE(j["columns"].get<int>(), 1);  // one channel, every pixel a row
    QCOMPARE(j["count"].get<std::int64_t>(), std::int64_t(64 * kSide * kSide));
    // mse over all values is the loss (mse's sample loss is its values' mean).
    QVERIFY2(std::abs(j["average_mse"].get<double>() - r.loss) < 1e-6 * std::max(1.0, r.loss),
             qPrintable(QString("%1 vs %2").arg(j["average_mse"].get<double>()).arg(r.loss)));
}

void TestImageOutputs::data_without_image_targets_refused() {
    // A data set with one label per sample cannot train a segmentation output: the refusal says
    // what the output needs (its shape and value count), not only that the widths differ.
    auto ds = squares(4, true, 3);
    ds.target_size = 2;
    ds.targets.assign(8, 0.f);
    const auto m = model(R"({"type":"convolution","filters":2,"kernel":[1,1],"activation":"softmax","loss":"mcxent"})");
    try {
        train::check_compatible(m, ds);
        QFAIL("accepted");
    } catch (const ConfigError& e) {
        const QString what = e.what();
        QVERIFY2(what.contains("image output (2x12x12 = 288 values per sample)") && what.contains("one-hot over the channels") && what.contains("a CSV's last columns"),
                 e.what());
    }
}

void TestImageOutputs::csv_with_pixel_targets_trains() {
    // A CSV row: the 144 pixels, then the 144 pixels' classes (0 background, 1 rectangle) for the
    // segmentation model, or the 144 clean values for the autoencoder (CsvOptions::target_columns).
    QTemporaryDir dir;
    const auto seg = squares(32, true, 4), clean = squares(32, false, 4);
    const std::size_t pixels = kSide * kSide;
    QString seg_csv, ae_csv;
    for (std::size_t i = 0; i < seg.count; ++i) {
        QStringList a, b;
        for (std::size_t p = 0; p < pixels; ++p) a << QString::number(seg.features[i * pixels + p]);
        b = a;
        for (std::size_t p = 0; p < pixels; ++p) a << QString::number(seg.targets[i * 2 * pixels + pixels + p] > 0.5f ? 1 : 0);
        for (std::size_t p = 0; p < pixels; ++p) b << QString::number(clean.targets[i * pixels + p]);
        seg_csv += a.join(',') + "\n";
        ae_csv += b.join(',') + "\n";
    }
    auto write = [&](const QString& name, const QString& text) {
        QFile f(dir.filePath(name));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(text.toUtf8());
    };
    write("seg.csv", seg_csv);
    write("ae.csv", ae_csv);

    const auto m = model(R"({"type":"convolution","filters":6,"kernel":[3,3],"mode":"same","activation":"relu"},
        {"type":"convolution","filters":2,"kernel":[1,1],"activation":"softmax","loss":"mcxent"})");
    auto split = train::load_data_for(dir.filePath("seg.csv").toStdString(), m);
    train::check_compatible(m, split.train);
    QCOMPARE(split.train.target_size, 2 * pixels);
    QCOMPARE(split.train.targets, seg.targets);  // one-hot over the channels, NCHW, as built in memory
    nn::Network net(m, *be_);
    const auto [before, after] = train_steps(net, split.train, 40);
    QVERIFY2(after < before / 2, qPrintable(QString("loss %1 -> %2").arg(before).arg(after)));
    QCOMPARE(train::evaluate(net, split.train).classification->count(), std::int64_t(32 * pixels));

    const auto ae = model(R"({"type":"convolution","filters":1,"kernel":[3,3],"mode":"same","activation":"sigmoid","loss":"xent"})");
    auto values = train::load_data_for(dir.filePath("ae.csv").toStdString(), ae);
    QCOMPARE(values.train.target_size, pixels);
    QCOMPARE(values.train.num_classes, 2);  // xent: each value a binary decision
    QCOMPARE(values.train.targets, clean.targets);
}

QTEST_APPLESS_MAIN(TestImageOutputs)
#include "test_image_outputs.moc"
