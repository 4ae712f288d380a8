// libFuzzer target for a sweep's results file (launcher/sweep/sweep_results.h), which
// `thresher-launch sweep --out DIR` reads back to resume, then summarises (points, speedups, the
// CSV) and draws into report.html (sweep_report.h): any bytes either are refused with a SpecError
// naming the file, or give rows of this sweep's points -- and the summaries and the report of
// whatever was kept come out, never a crash, a hang or a sanitizer report.
// A row counts only when its run spec is its point's, which random bytes almost never are: when
// the first byte is odd, rows without a "spec" get their point's written in (as a MAC is in
// fuzz_datagram), which drives the fuzzer past that match into the statistics and the report.
// The rest is the file. The sweep: strategy (2 values) x nodes (1, 2), 2 repeats.
#include <QByteArray>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <cstdint>

#include "sweep_report.h"
#include "sweep_results.h"

namespace {

using namespace thresher::launcher::sweep;

const SweepSpec& sweep() {
    static const SweepSpec s = SweepSpec::from_json(R"({
      "format": "thresher-sweep", "version": 1, "name": "fuzz",
      "base": {"format": "thresher-run", "version": 1, "name": "fuzz", "data": "fashion-mnist",
               "model": {"input": {"size": 4}, "layers": [{"type": "output", "units": 2}]},
               "training": {"epochs": 1, "batch": 32, "limit": 256, "seed": 7, "threads": 1},
               "cluster": {"kind": "local", "nodes": 1, "workers_per_node": 1}},
      "axes": [{"field": "strategy", "values": ["gradient-sharing", "parameter-averaging"]},
               {"field": "nodes", "values": [1, 2]}],
      "repeats": 2})", "fuzz-sweep.json", "/nonexistent-base");
    return s;
}

// Rows without a "spec" get their point's; anything else stays as it came.
QByteArray with_specs(const QByteArray& text) {
    QJsonDocument doc = QJsonDocument::fromJson(text);
    if (!doc.isObject()) return text;
    QJsonObject o = doc.object();
    QJsonArray runs = o.value("runs").toArray();
    for (qsizetype i = 0; i < runs.size(); ++i) {
        QJsonObject row = runs[i].toObject();
        const int point = row.value("point").toInt(-1);
        if (!runs[i].isObject() || row.contains("spec") || point < 0 || point >= sweep().points.size()) continue;
        row.insert("spec", sweep().points[point].spec_json);
        runs[i] = row;
    }
    o.insert("runs", runs);
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

}  // namespace

// ASan keeps two frames of each allocation's stack here (SHORT_STACKS in tests/fuzz/CMakeLists.txt).

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    QByteArray text(reinterpret_cast<const char*>(data + 1), static_cast<qsizetype>(size - 1));
    if (data[0] & 1) text = with_specs(text);
    SweepResults results(sweep());
    try {
        results.read(text, "fuzz/results.json");
    } catch (const thresher::launcher::SpecError&) {
        return 0;
    }
    const auto& s = results.sweep();
    if (results.rows().size() > s.points.size() * s.repeats) __builtin_trap();  // one row per point and repeat
    for (const auto& r : results.rows())
        if (r.point < 0 || r.point >= s.points.size() || r.repeat < 0 || r.repeat >= s.repeats) __builtin_trap();
    const auto points = results.points();
    for (const auto& p : points)
        if (p.runs < 1 || p.point < 0 || p.point >= s.points.size()) __builtin_trap();
    (void)past_the_cores(points);
    if (!results.csv().startsWith("point,repeat,")) __builtin_trap();
    if (!html_report(results).contains("</html>")) __builtin_trap();
    return 0;
}
