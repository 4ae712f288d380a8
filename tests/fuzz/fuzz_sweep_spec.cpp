// libFuzzer target for sweep files (launcher/sweep/sweep_spec.h), which `thresher-launch sweep`
// and the app's Scalability page read: any bytes either give a sweep whose every point is a valid
// run spec, one per combination of the axes' values, or a SpecError naming the place -- never a
// crash, a hang or a sanitizer report. Each point's spec, written out and read back, gives the
// same JSON (the results file compares them to resume).
// Seeds: resources/sweeps/*.json and sweeps over an inline model, read under a folder where the
// shipped examples' "../models/..." files exist (spec_base_dir.h), so their points are reached.
#include <QByteArray>
#include <cstdint>

#include "spec_base_dir.h"
#include "sweep_spec.h"

// ASan keeps two frames of each allocation's stack here (SHORT_STACKS in tests/fuzz/CMakeLists.txt).

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace thresher::launcher;
    const QByteArray text(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
    try {
        const auto s = sweep::SweepSpec::from_json(text, "fuzz-sweep.json", thresher::fuzz::spec_base_dir());
        qsizetype combinations = 1;
        for (const auto& a : s.axes) {
            if (a.values.isEmpty() || a.field.isEmpty()) __builtin_trap();
            combinations *= a.values.size();
        }
        if (s.axes.isEmpty() || s.points.size() != combinations || s.repeats < 1 || s.repeats > 100) __builtin_trap();
        for (int i = 0; i < s.points.size(); ++i) {
            const auto& p = s.points[i];
            if (p.index != i || p.values.size() != s.axes.size()) __builtin_trap();
            if (RunSpec::from_json(p.spec_json, "again.json", s.base_dir).to_json() != p.spec_json) __builtin_trap();
        }
    } catch (const SpecError&) {
    }
    return 0;
}
