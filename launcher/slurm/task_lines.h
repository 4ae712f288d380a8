// srun --label output, as bytes arrive (a pipe in step mode, the batch output file in submit
// mode), split into whole lines and tagged with the task they came from: "1: {json}" is task 1's
// line "{json}". Lines without a label (the batch script's own, srun's notes) keep task -1.
#pragma once

#include <QByteArray>
#include <QList>

namespace thresher::launcher::slurm {

struct TaskLine {
    int task = -1;  // SLURM_PROCID, or -1 for a line without a label
    QByteArray text;
};

class TaskLines {
public:
    static constexpr qsizetype kMaxLineBytes = 4 * 1024 * 1024;  // as EventStream's
    QList<TaskLine> feed(const QByteArray& bytes);
    QList<TaskLine> finish();  // a last line without '\n'

private:
    static TaskLine split(QByteArray line);
    QByteArray pending_;
};

}  // namespace thresher::launcher::slurm
