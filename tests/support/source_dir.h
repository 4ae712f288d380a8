// The source tree the suites read fixtures from: THRESHER_SOURCE_DIR (CTest sets it), else the
// tree this build was configured from (a suite run by hand from its build folder).
#pragma once

#include <QString>

namespace test_support {

QString source_dir();

}  // namespace test_support
