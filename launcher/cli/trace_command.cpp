// thresher-launch trace EVENTS.jsonl... -o TRACE.json [--iterations A:B]: a recorded run's
// timeline as Chrome trace-event JSON (launcher/trace_export.h), to open in Perfetto.
#include <cstdio>

#include "commands.h"
#include "trace_export.h"

namespace thresher::launcher::cli {

int trace_command(const TraceCommandOptions& o) {
    try {
        TraceBuilder builder(o.iterations.isEmpty() ? TraceRange{} : parse_trace_range(o.iterations));
        for (const QString& path : o.events)
            for (const QJsonObject& e : read_event_file(path)) builder.add(e);
        write_trace(builder, o.output);
        std::fprintf(stderr, "thresher-launch: %s: %d iteration(s), %d slice(s)\n", qPrintable(o.output),
                     builder.iterations(), builder.slices());
        return kExitOk;
    } catch (const TraceError& e) {
        std::fprintf(stderr, "thresher-launch: trace: %s\n", e.what());
        return kExitUsage;
    }
}

}  // namespace thresher::launcher::cli
