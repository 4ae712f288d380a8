// A small classification data set for suites that run real engines: it trains in milliseconds
// and its classes are learnable, so accuracy and convergence checks mean something.
#pragma once

#include <QByteArray>

namespace test_support {

// `rows` CSV lines of 16 features (a smooth pattern, plus 1 on every third feature of the row's
// class) and the class 0..2 in the last column.
QByteArray three_class_csv(int rows);

// A harder set: `rows` CSV lines of `features` Gaussian features around one of `classes` fixed
// centres (seeded, so every call gives the same file), with enough overlap that no model gets
// every row right (about 90% is reachable): accuracy comparisons then measure something.
QByteArray overlapping_classes_csv(int rows, int classes = 4, int features = 20, unsigned seed = 1);

}  // namespace test_support
