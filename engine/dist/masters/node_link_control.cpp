// Control payloads; layouts in node_link_control.h.
#include "dist/masters/node_link_control.h"

#include <algorithm>
#include <cstring>

#include "dist/masters/payload_io.h"

namespace thresher::dist::node_link_control {

using payload_io::get;
using payload_io::put;

std::vector<std::uint8_t> pack_control(const Control& c) {
    std::vector<std::uint8_t> out;
    put(out, c.kind);
    switch (c.kind) {
        case kDone:
            put(out, c.originated);
            put(out, c.first);
            put(out, c.evaluated);
            break;
        case kJoined:
            put(out, c.epoch);
            put(out, c.iteration);
            put(out, static_cast<std::uint8_t>(c.rejoin ? 1 : 0));
            break;
        case kRoundAck:
        case kResultAsk:
        case kResultAck: put(out, c.round); break;
        case kFirst: put(out, c.first); break;
        case kStop:
        case kGone: {
            const std::size_t at = out.size();
            out.resize(at + c.reason.size());
            std::memcpy(out.data() + at, c.reason.data(), c.reason.size());  // (insert() trips GCC 12's -Warray-bounds)
            break;
        }
        default: break;  // kLeft, kFinished: the kind alone
    }
    return out;
}

std::optional<Control> parse_control(std::span<const std::uint8_t> in) {
    Control c;
    if (!get(in, c.kind)) return std::nullopt;
    switch (c.kind) {
        case kDone: {
            if (!get(in, c.originated) || !get(in, c.first) || c.first == 0) return std::nullopt;
            std::int32_t epoch = 0;  // absent from an older engine's "done"
            c.evaluated = get(in, epoch) ? epoch : kEveryEpoch;
            return c;
        }
        case kJoined: {
            std::uint8_t rejoin = 0;
            if (!get(in, c.epoch) || !get(in, c.iteration) || !get(in, rejoin)) return std::nullopt;
            c.rejoin = rejoin == 1;
            return c;
        }
        case kRoundAck:
        case kResultAsk:
        case kResultAck:
            if (!get(in, c.round)) return std::nullopt;
            return c;
        case kFirst:
            if (!get(in, c.first) || c.first == 0) return std::nullopt;
            return c;
        case kStop:
        case kGone:
            c.reason.assign(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(std::min(in.size(), kMaxReason)));
            return c;
        case kLeft:
        case kFinished: return c;
        default: return std::nullopt;
    }
}

}  // namespace thresher::dist::node_link_control
