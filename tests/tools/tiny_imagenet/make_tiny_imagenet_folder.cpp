// Writes a folder shaped like Tiny ImageNet (DL4J's distributed-training example data):
// OUT/train/<class>/images/<class>_<i>.JPEG and OUT/test/<class>/<i>.JPEG, 64×64 RGB JPEGs
// (libjpeg-turbo, quality 90), `classes` classes named n00000000, n00000001, … Each class has its
// own colour pair and stripe direction and frequency; every image shifts, scales the contrast of
// and adds noise to its class's pattern, so a small CNN can learn the classes but not by one
// pixel. Seeded: the same arguments write the same files.
//
//   make_tiny_imagenet_folder OUT [classes=200] [train_per_class=50] [test_per_class=10] [seed=1]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "image_files.h"

namespace {

test_support::Pixels draw(int cls, std::mt19937& rng) {
    constexpr int kSide = 64;
    test_support::Pixels p;
    p.width = p.height = kSide;
    p.channels = 3;
    p.data.resize(kSide * kSide * 3);
    // The class: two colours, a stripe angle (12 directions) and a frequency (1..4 cycles/16 px).
    std::mt19937 class_rng(static_cast<unsigned>(cls) * 7919u + 17u);
    std::uniform_int_distribution<int> channel(30, 225);
    const int a[3] = {channel(class_rng), channel(class_rng), channel(class_rng)};
    const int b[3] = {channel(class_rng), channel(class_rng), channel(class_rng)};
    const double angle = (cls % 12) * 3.14159265358979 / 12.0;
    const double freq = (1 + (cls / 12) % 4) * 2.0 * 3.14159265358979 / 16.0;
    // The image: a shift of the pattern, a contrast, noise.
    std::uniform_real_distribution<double> shift(0.0, 16.0), contrast(0.7, 1.0);
    std::normal_distribution<double> noise(0.0, 12.0);
    const double s = shift(rng), k = contrast(rng);
    for (int y = 0; y < kSide; ++y)
        for (int x = 0; x < kSide; ++x) {
            const double t = 0.5 + 0.5 * k * std::sin(freq * (x * std::cos(angle) + y * std::sin(angle) + s));
            for (int c = 0; c < 3; ++c) {
                const double v = a[c] * t + b[c] * (1 - t) + noise(rng);
                p.data[(y * kSide + x) * 3 + c] = static_cast<std::uint8_t>(std::lround(std::fmin(255.0, std::fmax(0.0, v))));
            }
        }
    return p;
}

std::string class_name(int c) {
    char name[16];
    std::snprintf(name, sizeof name, "n%08d", c);
    return name;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s OUT [classes=200] [train_per_class=50] [test_per_class=10] [seed=1]\n", argv[0]);
        return 2;
    }
    namespace fs = std::filesystem;
    const fs::path out = argv[1];
    const int classes = argc > 2 ? std::atoi(argv[2]) : 200;
    const int train = argc > 3 ? std::atoi(argv[3]) : 50;
    const int test = argc > 4 ? std::atoi(argv[4]) : 10;
    const unsigned seed = argc > 5 ? static_cast<unsigned>(std::atoi(argv[5])) : 1u;
    if (classes < 2 || classes > 100000 || train < 1 || test < 0) {
        std::fprintf(stderr, "%s: need classes >= 2, train_per_class >= 1, test_per_class >= 0\n", argv[0]);
        return 2;
    }
    std::mt19937 rng(seed);
    int written = 0;
    try {
        for (int c = 0; c < classes; ++c) {
            const std::string name = class_name(c);
            const fs::path train_dir = out / "train" / name / "images", test_dir = out / "test" / name;
            fs::create_directories(train_dir);
            if (test > 0) fs::create_directories(test_dir);
            for (int i = 0; i < train; ++i, ++written)
                test_support::write_jpeg((train_dir / (name + "_" + std::to_string(i) + ".JPEG")).string(), draw(c, rng), 90);
            for (int i = 0; i < test; ++i, ++written)
                test_support::write_jpeg((test_dir / (std::to_string(i) + ".JPEG")).string(), draw(c, rng), 90);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
        return 1;
    }
    std::printf("%d images in %d classes under %s\n", written, classes, out.string().c_str());
    return 0;
}
