// One image into one model input sample: identity at the same size, grey <-> RGB, bilinear
// down- and up-scaling with worked values, stretch vs centre crop, CHW layout and [0, 1].
#include "core/error.h"
#include "data/image/image_sample.h"

#include <QtTest>

#include <vector>

using namespace thresher::data;

namespace {

Image make(int w, int h, int c, std::vector<std::uint8_t> px) { return Image{w, h, c, std::move(px)}; }

std::vector<float> sample(const Image& img, SampleShape s, ImageFit fit = ImageFit::Stretch) {
    std::vector<float> out(s.size(), -1.0f);
    image_to_sample(img, s, fit, out.data());
    return out;
}

}  // namespace

class TestImageSample : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void same_size_is_value_over_255();
    void rgb_is_laid_out_chw();
    void grey_to_rgb_and_back();
    void halving_averages_blocks();
    void doubling_interpolates();
    void crop_keeps_the_centre();
    void white_stays_at_most_one();
    void fit_parses();
};

void TestImageSample::same_size_is_value_over_255() {
    const auto out = sample(make(3, 2, 1, {0, 51, 102, 153, 204, 255}), {1, 2, 3});
    const std::vector<float> want{0.f, 51 / 255.f, 102 / 255.f, 153 / 255.f, 204 / 255.f, 1.0f};
    QVERIFY(out == want);  // exact: IDX's own scaling, 255 -> 1.0
}

void TestImageSample::rgb_is_laid_out_chw() {
    // 2x1 RGB: pixel 0 = (10, 20, 30), pixel 1 = (40, 50, 60) -> planes R, G, B.
    const auto out = sample(make(2, 1, 3, {10, 20, 30, 40, 50, 60}), {3, 1, 2});
    const std::vector<float> want{10 / 255.f, 40 / 255.f, 20 / 255.f, 50 / 255.f, 30 / 255.f, 60 / 255.f};
    QVERIFY(out == want);
}

void TestImageSample::grey_to_rgb_and_back() {
    const auto rgb = sample(make(1, 1, 1, {100}), {3, 1, 1});
    QCOMPARE(rgb, (std::vector<float>{100 / 255.f, 100 / 255.f, 100 / 255.f}));
    const auto grey = sample(make(1, 1, 3, {200, 100, 50}), {1, 1, 1});
    QCOMPARE(grey.size(), std::size_t(1));
    QVERIFY(std::abs(grey[0] - (0.299f * 200 + 0.587f * 100 + 0.114f * 50) / 255.f) < 1e-6f);
}

void TestImageSample::halving_averages_blocks() {
    // 4x4 -> 2x2: source coordinate (d + 0.5) * 2 - 0.5 = 2d + 0.5, the mean of each 2x2 block.
    const Image img = make(4, 4, 1, {0, 4, 8, 12,  //
                                     4, 8, 12, 16,  //
                                     100, 100, 0, 0,  //
                                     100, 100, 0, 0});
    const auto out = sample(img, {1, 2, 2});
    const std::vector<float> want{4 / 255.f, 12 / 255.f, 100 / 255.f, 0.f};
    for (std::size_t i = 0; i < 4; ++i) QVERIFY2(std::abs(out[i] - want[i]) < 1e-6f, qPrintable(QString::number(i)));
}

void TestImageSample::doubling_interpolates() {
    // 2x1 -> 4x1: coordinates -0.25 (clamped to 0), 0.25, 0.75, 1.25 (clamped to 1).
    const auto out = sample(make(2, 1, 1, {0, 200}), {1, 1, 4});
    const std::vector<float> want{0.f, 50 / 255.f, 150 / 255.f, 200 / 255.f};
    for (std::size_t i = 0; i < 4; ++i) QVERIFY2(std::abs(out[i] - want[i]) < 1e-6f, qPrintable(QString::number(i)));
}

void TestImageSample::crop_keeps_the_centre() {
    // 6x2: the middle 2 columns white, the sides black. Into 1x1 x 1x1: crop takes the centre
    // 2x2 square (white); stretch averages across the whole width.
    const Image img = make(6, 2, 1, {0, 0, 255, 255, 0, 0, 0, 0, 255, 255, 0, 0});
    QCOMPARE(sample(img, {1, 2, 2}, ImageFit::Crop), (std::vector<float>{1.f, 1.f, 1.f, 1.f}));
    const auto stretched = sample(img, {1, 2, 2}, ImageFit::Stretch);
    QVERIFY(stretched[0] < 0.5f);
    // A tall image crops rows: 2x6 with the middle rows white.
    const Image tall = make(2, 6, 1, {0, 0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 0});
    QCOMPARE(sample(tall, {1, 2, 2}, ImageFit::Crop), (std::vector<float>{1.f, 1.f, 1.f, 1.f}));
}

// Bilinear weights summing to 1 in floats lifted 255 to 255.00002, a pixel of 1.0000001
// (fuzz_image's finding, on a 13x42 image stretched to 5x7).
void TestImageSample::white_stays_at_most_one() {
    const Image img = make(13, 42, 3, std::vector<std::uint8_t>(13 * 42 * 3, 255));
    for (SampleShape s : {SampleShape{1, 5, 7}, SampleShape{3, 8, 8}, SampleShape{3, 31, 17}})
        for (ImageFit fit : {ImageFit::Stretch, ImageFit::Crop})
            for (float v : sample(img, s, fit)) QVERIFY2(v <= 1.0f && v >= 0.0f, qPrintable(QString::number(double(v), 'g', 9)));
}

void TestImageSample::fit_parses() {
    QCOMPARE(parse_image_fit("crop", "--image-fit"), ImageFit::Crop);
    QCOMPARE(parse_image_fit(to_string(ImageFit::Stretch), "--image-fit"), ImageFit::Stretch);
    try {
        parse_image_fit("squash", "--image-fit");
        QFAIL("no exception");
    } catch (const thresher::ConfigError& e) {
        QCOMPARE(QString(e.what()), QString("--image-fit: expected stretch or crop, got \"squash\""));
    }
    std::vector<float> out(2 * 4);
    QVERIFY_THROWS_EXCEPTION(thresher::ConfigError, image_to_sample(make(1, 1, 1, {0}), {2, 2, 2}, ImageFit::Stretch, out.data()));
}

QTEST_GUILESS_MAIN(TestImageSample)
#include "test_image_sample.moc"
