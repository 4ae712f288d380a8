// libFuzzer target for run specs (launcher/run_spec.h), the JSON the GUI and thresher-launch
// read: any bytes give a RunSpec or a SpecError naming the place, never a crash; an accepted spec
// written out and read back gives the same JSON (the GUI saves what it loaded).
// Seed with resources/specs/*.json (or any run spec).
#include <QByteArray>
#include <QJsonDocument>
#include <cstdint>

#include "run_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using thresher::launcher::RunSpec;
    const QByteArray text(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
    try {
        const RunSpec spec = RunSpec::from_json(text, "fuzz.json", "/nonexistent-base");
        const QJsonObject written = spec.to_json();
        const RunSpec again = RunSpec::from_json(written, "again.json", "/nonexistent-base");
        if (again.to_json() != written) __builtin_trap();
    } catch (const thresher::launcher::SpecError&) {
    }
    return 0;
}
