// libFuzzer target for run specs (launcher/run_spec.h), the JSON the GUI and thresher-launch
// read: any bytes give a RunSpec or a SpecError naming the place, never a crash; an accepted spec
// written out and read back gives the same JSON (the GUI saves what it loaded).
// Seeds: resources/runs/*.json, read under a folder where their "../models/..." files exist
// (spec_base_dir.h), so they are accepted and the round trip is checked.
#include <QByteArray>
#include <QJsonDocument>
#include <cstdint>

#include "run_spec.h"
#include "spec_base_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using thresher::launcher::RunSpec;
    const QByteArray text(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
    try {
        const QString& base = thresher::fuzz::spec_base_dir();
        const RunSpec spec = RunSpec::from_json(text, "fuzz.json", base);
        const QJsonObject written = spec.to_json();
        const RunSpec again = RunSpec::from_json(written, "again.json", base);
        if (again.to_json() != written) __builtin_trap();
    } catch (const thresher::launcher::SpecError&) {
    }
    return 0;
}
