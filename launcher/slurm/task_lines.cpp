// srun --label lines → (task, text); see task_lines.h.
#include "task_lines.h"

namespace thresher::launcher::slurm {

TaskLine TaskLines::split(QByteArray line) {
    if (line.endsWith('\r')) line.chop(1);
    // srun pads the label to the width of the largest task id: " 3: …" among 10+ tasks.
    qsizetype i = 0;
    while (i < line.size() && line[i] == ' ') ++i;
    const qsizetype digits = i;
    while (i < line.size() && line[i] >= '0' && line[i] <= '9') ++i;
    if (i > digits && i - digits <= 7 && i < line.size() && line[i] == ':') {
        TaskLine out{line.mid(digits, i - digits).toInt(), line.mid(i + 1)};
        if (out.text.startsWith(' ')) out.text.remove(0, 1);
        return out;
    }
    return {-1, line};
}

QList<TaskLine> TaskLines::feed(const QByteArray& bytes) {
    QList<TaskLine> out;
    pending_ += bytes;
    qsizetype start = 0, nl;
    while ((nl = pending_.indexOf('\n', start)) >= 0) {
        out << split(pending_.mid(start, nl - start));
        start = nl + 1;
    }
    pending_.remove(0, start);
    if (pending_.size() > kMaxLineBytes) {  // no newline in sight: hand it on rather than grow
        out << split(pending_);
        pending_.clear();
    }
    return out;
}

QList<TaskLine> TaskLines::finish() {
    QList<TaskLine> out;
    if (!pending_.isEmpty()) out << split(pending_);
    pending_.clear();
    return out;
}

}  // namespace thresher::launcher::slurm
