#include "dist/masters/join_protocol.h"

#include <cstring>

#include "dist/masters/payload_io.h"

namespace thresher::dist {

namespace {

constexpr std::uint8_t kJoinRequest = 1;
// A bound on what a reply may claim, so a bad count cannot make us allocate without limit:
// 2^28 floats each for parameters and updater state (1 GiB each), 4096 nodes.
constexpr std::uint64_t kMaxFloats = std::uint64_t{1} << 28;
constexpr std::uint32_t kMaxNodes = 4096;

using payload_io::get;
using payload_io::put;

void put_floats(std::vector<std::uint8_t>& out, const std::vector<float>& v) {
    const std::size_t at = out.size();
    out.resize(at + v.size() * sizeof(float));
    for (std::size_t i = 0; i < v.size(); ++i) wire::store(out.data() + at + 4 * i, v[i]);
}

bool get_floats(std::span<const std::uint8_t>& in, std::uint64_t n, std::vector<float>& v) {
    if (n > kMaxFloats || in.size() < n * sizeof(float)) return false;
    v.resize(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = wire::load<float>(in.data() + 4 * i);
    in = in.subspan(n * sizeof(float));
    return true;
}

}  // namespace

std::vector<std::uint8_t> pack_join_request(std::uint64_t incarnation) {
    std::vector<std::uint8_t> out;
    put(out, kJoinRequest);
    put(out, incarnation);
    return out;
}

std::optional<std::uint64_t> parse_join_request(std::span<const std::uint8_t> payload) {
    std::uint8_t kind = 0;
    std::uint64_t incarnation = 0;
    if (!get(payload, kind) || kind != kJoinRequest || !get(payload, incarnation) || !payload.empty() || incarnation == 0)
        return std::nullopt;
    return incarnation;
}

std::vector<std::uint8_t> pack_join_reply(const JoinReply& r) {
    std::vector<std::uint8_t> out;
    put(out, static_cast<std::uint8_t>(r.kind));
    put(out, r.incarnation);
    if (r.kind == JoinReply::Kind::Refused) {
        const std::size_t at = out.size();
        out.resize(at + r.reason.size());
        std::memcpy(out.data() + at, r.reason.data(), r.reason.size());  // (insert() trips GCC 12's -Warray-bounds)
        return out;
    }
    put(out, static_cast<std::uint32_t>(r.members.size()));
    for (bool m : r.members) put(out, static_cast<std::uint8_t>(m ? 1 : 0));
    if (r.kind == JoinReply::Kind::Start) return out;
    const train::RunPosition& p = r.state.position;
    out.reserve(out.size() + 40 + 4 * (r.state.params.size() + r.state.updater_state.size()));
    put(out, static_cast<std::uint8_t>(r.rejoin ? 1 : 0));
    put(out, static_cast<std::int32_t>(p.epoch));
    put(out, static_cast<std::int64_t>(p.iteration));
    put(out, static_cast<std::int64_t>(p.epoch_iteration));
    put(out, static_cast<std::uint64_t>(r.state.params.size()));
    put(out, static_cast<std::uint64_t>(r.state.updater_state.size()));
    put_floats(out, r.state.params);
    put_floats(out, r.state.updater_state);
    return out;
}

std::optional<JoinReply> parse_join_reply(std::span<const std::uint8_t> in, int nodes, std::size_t param_count) {
    JoinReply r;
    std::uint8_t kind = 0;
    if (!get(in, kind) || kind < 1 || kind > 3 || !get(in, r.incarnation)) return std::nullopt;
    r.kind = static_cast<JoinReply::Kind>(kind);
    if (r.kind == JoinReply::Kind::Refused) {
        r.reason.assign(in.begin(), in.end());
        return r;
    }
    std::uint32_t count = 0;
    if (!get(in, count) || count > kMaxNodes || static_cast<int>(count) != nodes) return std::nullopt;
    for (std::uint32_t i = 0; i < count; ++i) {
        std::uint8_t m = 0;
        if (!get(in, m) || m > 1) return std::nullopt;
        r.members.push_back(m == 1);
    }
    if (r.kind == JoinReply::Kind::Start) return in.empty() ? std::optional(r) : std::nullopt;
    std::uint8_t rejoin = 0;
    std::int32_t epoch = 0;
    std::int64_t iteration = 0, epoch_iteration = 0;
    std::uint64_t n_params = 0, n_state = 0;
    if (!get(in, rejoin) || rejoin > 1 || !get(in, epoch) || !get(in, iteration) || !get(in, epoch_iteration) ||
        !get(in, n_params) || !get(in, n_state))
        return std::nullopt;
    if (epoch < 0 || iteration < 0 || epoch_iteration < 0 || epoch_iteration > iteration || n_params != param_count)
        return std::nullopt;
    if (!get_floats(in, n_params, r.state.params) || !get_floats(in, n_state, r.state.updater_state) || !in.empty())
        return std::nullopt;
    r.rejoin = rejoin == 1;
    r.state.position = {epoch, static_cast<long>(iteration), static_cast<long>(epoch_iteration)};
    return r;
}

}  // namespace thresher::dist
