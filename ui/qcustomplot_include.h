// qcustomplot.h, included with Qt's keyword macros that Thresher turns off (QT_NO_KEYWORDS: the
// words `signals`, `slots`, `emit`, `foreach` would clash with engine identifiers). The library's
// header still uses them, so they are defined around this one include and removed again.
#pragma once

#define signals Q_SIGNALS
#define slots Q_SLOTS
#define emit Q_EMIT
#define foreach Q_FOREACH
#include <qcustomplot.h>
#undef signals
#undef slots
#undef emit
#undef foreach
