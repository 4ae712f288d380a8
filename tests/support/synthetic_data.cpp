#include "synthetic_data.h"

#include <cmath>

namespace test_support {

QByteArray three_class_csv(int rows) {
    QByteArray csv;
    for (int i = 0; i < rows; ++i) {
        for (int j = 0; j < 16; ++j) csv += QByteArray::number(std::sin(0.3 * i + j) + (j % 3 == i % 3 ? 1.0 : 0.0), 'f', 4) + ",";
        csv += QByteArray::number(i % 3) + "\n";
    }
    return csv;
}

}  // namespace test_support
