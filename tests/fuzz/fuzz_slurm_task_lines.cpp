// libFuzzer target for what the Slurm launcher reads of Slurm's output: srun --label lines
// (launcher/slurm/task_lines.h, from a pipe or the batch job's output file, in pieces as they
// come) and Slurm times (parse_slurm_time, run_spec.h: a spec's time limit and the partition's
// MaxTime in `scontrol show partition`). Any bytes give the same lines however they are split
// (the first input byte picks the piece size), each with a task of -1 or a label's 0..9999999 and
// no line break inside; every line read as a time is refused or a duration from 0 to 100 years
// and 100 years' worth of hours -- never a crash, a sanitizer report (an overflow) or a hang.
#include <QByteArray>
#include <QString>
#include <algorithm>
#include <chrono>
#include <cstdint>

#include "run_spec.h"
#include "task_lines.h"

namespace {

using thresher::launcher::slurm::TaskLine;
using thresher::launcher::slurm::TaskLines;

void check(const QList<TaskLine>& lines) {
    constexpr std::int64_t kMaxSeconds = std::int64_t{365} * 100 * 86400 * 2;  // days and hours, each ≤ 100 years
    for (const auto& l : lines) {
        if (l.task < -1 || l.task > 9'999'999 || l.text.contains('\n')) __builtin_trap();
        if (const auto t = thresher::launcher::parse_slurm_time(QString::fromUtf8(l.text)))
            if (t->count() < 0 || t->count() > kMaxSeconds) __builtin_trap();
    }
}

}  // namespace

// ASan keeps two frames of each allocation's stack here (SHORT_STACKS in tests/fuzz/CMakeLists.txt).

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const qsizetype piece = qsizetype{data[0]} + 1;
    const QByteArray bytes(reinterpret_cast<const char*>(data + 1), static_cast<qsizetype>(size - 1));
    TaskLines pieces, whole;
    QList<TaskLine> a, b;
    for (qsizetype at = 0; at < bytes.size(); at += piece)
        a += pieces.feed(QByteArray::fromRawData(bytes.constData() + at, std::min(piece, bytes.size() - at)));
    a += pieces.finish();
    b = whole.feed(bytes);
    b += whole.finish();
    check(a);
    if (a.size() != b.size()) __builtin_trap();
    for (qsizetype i = 0; i < a.size(); ++i)
        if (a[i].task != b[i].task || a[i].text != b[i].text) __builtin_trap();
    return 0;
}
