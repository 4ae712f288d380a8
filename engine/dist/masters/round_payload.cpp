// Average / AverageResult payloads; layout in round_payload.h.
#include "dist/masters/round_payload.h"

#include "dist/masters/payload_io.h"

namespace thresher::dist {

using payload_io::get;
using payload_io::put;

std::vector<std::uint8_t> pack_sums(std::uint64_t round, int workers, const std::vector<double>& params,
                                    const std::vector<double>& state) {
    std::vector<std::uint8_t> out;
    out.reserve(kRoundHeaderBytes + 4 * (params.size() + state.size()));
    put(out, round);
    put(out, static_cast<std::uint32_t>(workers));
    put(out, static_cast<std::uint64_t>(params.size()));
    put(out, static_cast<std::uint64_t>(state.size()));
    for (double v : params) put(out, static_cast<float>(v));
    for (double v : state) put(out, static_cast<float>(v));
    return out;
}

bool add_sums(std::span<const std::uint8_t> in, std::uint64_t round, std::vector<double>& params,
              std::vector<double>& state, int& workers, bool replace) {
    std::uint64_t r = 0, np = 0, ns = 0;
    std::uint32_t w = 0;
    if (!get(in, r) || !get(in, w) || !get(in, np) || !get(in, ns)) return false;
    // np and ns are compared with our own sizes before they are multiplied: no overflow.
    if (r != round || np != params.size() || ns != state.size() || in.size() != 4 * (np + ns) || w == 0 ||
        w > kMaxRoundWorkers)
        return false;
    auto read = [&](std::vector<double>& dst) {
        for (auto& d : dst) {
            float f = 0.f;
            get(in, f);
            d = replace ? f : d + f;
        }
    };
    read(params);
    read(state);
    workers = replace ? static_cast<int>(w) : workers + static_cast<int>(w);
    return true;
}

}  // namespace thresher::dist
