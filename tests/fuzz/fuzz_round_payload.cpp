// libFuzzer target for the averaging rounds' payload (dist/masters/round_payload.h): the sums a
// child sends its parent (Average) and the cluster's sums coming back (AverageResult). Any bytes
// either add up into sums of our shape or are refused with nothing changed -- never a read out
// of bounds or a worker count out of range. Accepted sums taken whole (replace) must pack back
// to the same payload (bit for bit, a NaN as a NaN).
// The payload's own round and counts are believed when small (as fuzz_encoded_update believes
// its length), so most inputs reach the floats; the first byte picks add or replace and whether
// the receiver expects another round (the mismatch path). The rest is the payload.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "dist/masters/round_payload.h"
#include "dist/net/wire.h"

namespace {

std::uint64_t field(std::span<const std::uint8_t> in, std::size_t at, std::uint64_t otherwise) {
    return in.size() >= at + 8 ? thresher::dist::wire::load<std::uint64_t>(in.data() + at) : otherwise;
}

bool same_float(float a, float b) { return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, 4) == 0; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace thresher::dist;
    if (size < 1) return 0;
    const bool replace = data[0] & 1;
    const std::span<const std::uint8_t> payload(data + 1, size - 1);
    const std::uint64_t round = (data[0] & 2) ? 3 : field(payload, 0, 3);
    const std::uint64_t np = field(payload, 12, 0), ns = field(payload, 20, 0);
    std::vector<double> params(np <= 4096 ? np : 5, 0.5), state(ns <= 4096 ? ns : 2, -0.5);
    const auto params_before = params, state_before = state;
    int workers = 2;
    if (!add_sums(payload, round, params, state, workers, replace)) {
        if (workers != 2 || params != params_before || state != state_before) __builtin_trap();  // nothing changed
        return 0;
    }
    if (params.size() != params_before.size() || state.size() != state_before.size()) __builtin_trap();
    const int added = replace ? workers : workers - 2;
    if (added < 1 || added > static_cast<int>(kMaxRoundWorkers)) __builtin_trap();
    if (payload.size() != kRoundHeaderBytes + 4 * (params.size() + state.size())) __builtin_trap();
    if (!replace) return 0;
    const std::vector<std::uint8_t> again = pack_sums(round, workers, params, state);
    if (again.size() != payload.size() || std::memcmp(again.data(), payload.data(), kRoundHeaderBytes) != 0) __builtin_trap();
    for (std::size_t at = kRoundHeaderBytes; at < again.size(); at += 4)
        if (!same_float(wire::load<float>(again.data() + at), wire::load<float>(payload.data() + at))) __builtin_trap();
    return 0;
}
