// A small classification data set for suites that run real engines: it trains in milliseconds
// and its classes are learnable, so accuracy and convergence checks mean something.
#pragma once

#include <QByteArray>

namespace test_support {

// `rows` CSV lines of 16 features (a smooth pattern, plus 1 on every third feature of the row's
// class) and the class 0..2 in the last column.
QByteArray three_class_csv(int rows);

}  // namespace test_support
