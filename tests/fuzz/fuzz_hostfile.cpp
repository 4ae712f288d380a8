// libFuzzer target for hostfiles (launcher/hostfile.h): any bytes give hosts with an address and
// a positive slot count, or a SpecError naming the line, never a crash.
#include <QByteArray>
#include <cstdint>

#include "hostfile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const QByteArray text(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
    try {
        for (const auto& h : thresher::launcher::parse_hostfile(text, "fuzz-hosts.txt"))
            if (h.address.isEmpty() || h.workers < 1) __builtin_trap();
    } catch (const thresher::launcher::SpecError&) {
    }
    return 0;
}
