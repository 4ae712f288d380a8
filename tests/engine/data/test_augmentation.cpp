// Training-time augmentation (spec::Augmentation, data::augment_sample, BatchPlan::augment):
// the text a user writes parses into the typed value or is refused saying what is expected; every
// augmented sample is exactly one crop-and-maybe-mirror of its image (found by search over all
// offsets, not recomputed with the code under test); the offsets and flips are drawn evenly; the
// draws depend on (seed, epoch, sample) alone, so two workers' batches are, sample for sample,
// the single worker's.
#include <QtTest>

#include <map>
#include <set>

#include "core/error.h"
#include "data/augment.h"
#include "data/batch_iterator.h"

using thresher::ConfigError;
using thresher::data::augment_sample;
using thresher::data::Batch;
using thresher::data::BatchIterator;
using thresher::data::BatchPlan;
using thresher::data::Dataset;
using thresher::data::SampleShape;
using thresher::spec::Augmentation;

namespace {

// n samples of 2 x 5 x 6 whose values are all distinct and non-zero, so a crop is identified by
// its values.
Dataset images(std::size_t n) {
    Dataset ds;
    ds.name = "generated";
    ds.shape = {2, 5, 6};
    ds.count = n;
    ds.num_classes = 2;
    ds.target_size = 2;
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t v = 0; v < ds.shape.size(); ++v) ds.features.push_back(1.f + float(i * 1000 + v));
        ds.targets.push_back(i % 2 ? 0.f : 1.f);
        ds.targets.push_back(i % 2 ? 1.f : 0.f);
        ds.labels.push_back(static_cast<std::int32_t>(i % 2));
    }
    return ds;
}

// The crop offset (dy, dx) and flip that turn `in` into `out`, searched over every possibility
// up to `p`; nullopt when none does.
struct Transform {
    int dy, dx;
    bool flip;
    bool operator<(const Transform& o) const { return std::tie(dy, dx, flip) < std::tie(o.dy, o.dx, o.flip); }
};
std::optional<Transform> find_transform(const float* in, const float* out, const SampleShape& s, int p) {
    for (int flip = 0; flip < 2; ++flip)
        for (int dy = -p; dy <= p; ++dy)
            for (int dx = -p; dx <= p; ++dx) {
                bool same = true;
                for (int c = 0; c < s.channels && same; ++c)
                    for (int y = 0; y < s.height && same; ++y)
                        for (int x = 0; x < s.width && same; ++x) {
                            const int sy = y + dy, sx = (flip ? s.width - 1 - x : x) + dx;
                            const float want = sy >= 0 && sy < s.height && sx >= 0 && sx < s.width
                                                   ? in[(c * s.height + sy) * s.width + sx]
                                                   : 0.f;
                            same = out[(c * s.height + y) * s.width + x] == want;
                        }
                if (same) return Transform{dy, dx, flip == 1};
            }
    return std::nullopt;
}

}  // namespace

class TestAugmentation : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void parse_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<int>("padding");
        QTest::addColumn<bool>("flip");
        QTest::addColumn<QString>("refusal");  // empty: accepted
        QTest::newRow("none") << "none" << 0 << false << "";
        QTest::newRow("crop and flip") << "crop:4,flip" << 4 << true << "";
        QTest::newRow("flip and crop, spaces") << " flip , crop:2 " << 2 << true << "";
        QTest::newRow("flip") << "flip" << 0 << true << "";
        QTest::newRow("crop 64") << "crop:64" << 64 << false << "";
        QTest::newRow("empty") << "" << 0 << false << "empty";
        QTest::newRow("crop 0") << "crop:0" << 0 << false << "from 1 to 64";
        QTest::newRow("crop 65") << "crop:65" << 0 << false << "from 1 to 64";
        QTest::newRow("crop word") << "crop:four" << 0 << false << "\"crop:four\"";
        QTest::newRow("crop twice") << "crop:2,crop:3" << 0 << false << "given twice";
        QTest::newRow("flip twice") << "flip,flip" << 0 << false << "given twice";
        QTest::newRow("unknown") << "rotate:10" << 0 << false << "unknown part \"rotate:10\"";
        QTest::newRow("trailing comma") << "flip," << 0 << false << "an empty part";
    }
    void parse() {
        QFETCH(QString, text);
        QFETCH(int, padding);
        QFETCH(bool, flip);
        QFETCH(QString, refusal);
        try {
            const auto a = Augmentation::parse(text.toStdString());
            QVERIFY2(refusal.isEmpty(), "accepted");
            QCOMPARE(a.crop_padding, padding);
            QCOMPARE(a.flip, flip);
            QCOMPARE(Augmentation::parse(a.text()), a);  // text() reads back
        } catch (const ConfigError& e) {
            QVERIFY2(!refusal.isEmpty(), e.what());
            QVERIFY2(QString(e.what()).contains(refusal), e.what());
            QVERIFY2(QString(e.what()).contains("crop:4,flip"), e.what());  // says what is expected
        }
    }

    // 600 samples, padding 2: each output is one transform of its input; all 5 x 5 offsets and
    // both flips occur, each offset value about a fifth of the time and flips about half.
    void every_sample_is_a_crop_and_maybe_a_mirror() {
        const Dataset ds = images(600);
        const Augmentation a = Augmentation::parse("crop:2,flip");
        std::vector<float> sample, scratch;
        std::map<int, int> dy_count;
        int flips = 0;
        std::set<Transform> seen;
        for (std::size_t i = 0; i < ds.count; ++i) {
            sample.assign(ds.sample(i), ds.sample(i) + ds.shape.size());
            augment_sample(sample.data(), ds.shape, a, 99, 3, i, scratch);
            const auto t = find_transform(ds.sample(i), sample.data(), ds.shape, 2);
            QVERIFY2(t, qPrintable(QString("sample %1 is no crop or mirror of its image").arg(i)));
            ++dy_count[t->dy];
            flips += t->flip;
            seen.insert(*t);
        }
        QCOMPARE(seen.size(), std::size_t{5 * 5 * 2});
        for (const auto& [dy, n] : dy_count) QVERIFY2(n > 80 && n < 160, qPrintable(QString("dy %1: %2 of 600").arg(dy).arg(n)));
        QVERIFY2(flips > 240 && flips < 360, qPrintable(QString("%1 flips of 600").arg(flips)));
    }

    // Same (seed, epoch, sample): the same output; another epoch: other draws for most samples.
    void draws_follow_seed_epoch_and_sample() {
        const Dataset ds = images(50);
        const Augmentation a = Augmentation::parse("crop:3,flip");
        std::vector<float> x, y, scratch;
        int differ = 0;
        for (std::size_t i = 0; i < ds.count; ++i) {
            x.assign(ds.sample(i), ds.sample(i) + ds.shape.size());
            y = x;
            augment_sample(x.data(), ds.shape, a, 7, 0, i, scratch);
            augment_sample(y.data(), ds.shape, a, 7, 0, i, scratch);
            QVERIFY(x == y);
            y.assign(ds.sample(i), ds.sample(i) + ds.shape.size());
            augment_sample(y.data(), ds.shape, a, 7, 1, i, scratch);
            differ += x != y;
        }
        QVERIFY2(differ > 35, qPrintable(QString("%1 of 50 samples augmented alike in two epochs").arg(differ)));
    }

    // Two workers' batches at each step hold, sample for sample, what one worker's batch holds.
    void workers_augment_as_one_machine() {
        const Dataset ds = images(40);
        BatchPlan plan;
        plan.batch_size = 8;
        plan.seed = 5;
        plan.epoch = 2;
        plan.augment = Augmentation::parse("crop:1,flip");
        BatchIterator one(ds, plan);
        plan.batch_size = 4;
        plan.world = 2;
        BatchIterator r0(ds, plan);
        plan.rank = 1;
        BatchIterator r1(ds, plan);
        Batch b, b0, b1;
        int augmented = 0;
        while (one.next(b)) {
            QVERIFY(r0.next(b0) && r1.next(b1));
            std::map<std::size_t, std::vector<float>> single, split;
            const std::size_t f = ds.shape.size();
            for (std::size_t j = 0; j < b.count; ++j)
                single[b.indices[j]].assign(b.features.begin() + j * f, b.features.begin() + (j + 1) * f);
            for (const Batch* part : {&b0, &b1})
                for (std::size_t j = 0; j < part->count; ++j)
                    split[part->indices[j]].assign(part->features.begin() + j * f, part->features.begin() + (j + 1) * f);
            QVERIFY(single == split);
            for (const auto& [i, v] : single) augmented += !std::equal(v.begin(), v.end(), ds.sample(i));
        }
        QVERIFY2(augmented > 20, qPrintable(QString("only %1 of 40 samples changed").arg(augmented)));
    }

    // Without augmentation the batch holds the data as it is.
    void inactive_leaves_samples_alone() {
        const Dataset ds = images(10);
        BatchPlan plan;
        plan.batch_size = 10;
        BatchIterator it(ds, plan);
        Batch b;
        QVERIFY(it.next(b));
        for (std::size_t j = 0; j < b.count; ++j)
            QVERIFY(std::equal(ds.sample(b.indices[j]), ds.sample(b.indices[j]) + ds.shape.size(),
                               b.features.begin() + j * ds.shape.size()));
    }
};

QTEST_MAIN(TestAugmentation)
#include "test_augmentation.moc"
