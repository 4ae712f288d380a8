// The message of the thresher::DataError that `f` throws, for tests of the data readers; a
// different exception, or none, comes back as a text that no expected message contains.
#pragma once

#include <QString>
#include <exception>

#include "core/error.h"

namespace test_support {

template <class F>
QString data_error(F&& f) {
    try {
        f();
    } catch (const thresher::DataError& e) {
        return QString::fromStdString(e.what());
    } catch (const std::exception& e) {
        return QStringLiteral("<wrong exception type: %1>").arg(e.what());
    }
    return QStringLiteral("<no exception>");
}

}  // namespace test_support
