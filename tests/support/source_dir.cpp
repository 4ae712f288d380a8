#include "source_dir.h"

namespace test_support {

QString source_dir() { return qEnvironmentVariable("THRESHER_SOURCE_DIR", QStringLiteral(THRESHER_SOURCE_DIR_DEFAULT)); }

}  // namespace test_support
