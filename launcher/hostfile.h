// Hostfiles in the mpirun / DeepSpeed style, one host per line:
//   # comment
//   node1 slots=4        -> node1, 4 workers
//   10.0.0.2             -> 10.0.0.2, 1 worker
// `max_slots=N` is accepted and ignored (mpirun's oversubscription limit). Errors name the file
// and line: "hosts.txt:3: slots must be a positive integer, got \"four\"".
#pragma once

#include <QByteArray>
#include <QList>
#include <QString>

#include "run_spec.h"

namespace thresher::launcher {

// Parses hostfile text; `source` names it in errors. Throws SpecError.
QList<SshHost> parse_hostfile(const QByteArray& text, const QString& source);
// Reads and parses the file at `path`; `shown` is how errors name it. Throws SpecError.
QList<SshHost> read_hostfile(const QString& path, const QString& shown);

}  // namespace thresher::launcher
