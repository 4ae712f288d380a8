#include "synthetic_data.h"

#include <cmath>
#include <random>
#include <vector>

namespace test_support {

QByteArray three_class_csv(int rows) {
    QByteArray csv;
    for (int i = 0; i < rows; ++i) {
        for (int j = 0; j < 16; ++j) csv += QByteArray::number(std::sin(0.3 * i + j) + (j % 3 == i % 3 ? 1.0 : 0.0), 'f', 4) + ",";
        csv += QByteArray::number(i % 3) + "\n";
    }
    return csv;
}

QByteArray overlapping_classes_csv(int rows, int classes, int features, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::vector<std::vector<double>> centres(static_cast<std::size_t>(classes));
    for (auto& c : centres)
        for (int j = 0; j < features; ++j) c.push_back(0.6 * normal(rng));
    QByteArray csv;
    for (int i = 0; i < rows; ++i) {
        const int k = static_cast<int>(rng() % static_cast<unsigned>(classes));
        for (int j = 0; j < features; ++j)
            csv += QByteArray::number(centres[static_cast<std::size_t>(k)][static_cast<std::size_t>(j)] + normal(rng), 'f', 4) + ",";
        csv += QByteArray::number(k) + "\n";
    }
    return csv;
}

}  // namespace test_support
