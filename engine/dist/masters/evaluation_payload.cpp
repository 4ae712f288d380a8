// Evaluation payloads; layout in evaluation_payload.h.
#include "dist/masters/evaluation_payload.h"

#include <string_view>

#include "config/json_fields.h"
#include "core/error.h"
#include "dist/masters/payload_io.h"

namespace thresher::dist {

using payload_io::get;
using payload_io::put;

std::vector<std::uint8_t> pack_evaluation(std::int32_t epoch, const nlohmann::json& counts) {
    std::vector<std::uint8_t> payload;
    put(payload, epoch);
    const std::string text = counts.dump();
    payload.insert(payload.end(), text.begin(), text.end());
    return payload;
}

EvaluationPart parse_evaluation(std::span<const std::uint8_t> in, const std::string& source) {
    EvaluationPart part;
    if (!get(in, part.epoch)) throw Error("shorter than its epoch");
    // The depth-limited parser: nesting a peer sends cannot overflow our stack.
    part.counts = config::parse_json_text(std::string_view(reinterpret_cast<const char*>(in.data()), in.size()), source);
    if (!part.counts.is_object()) throw Error("not an object");
    return part;
}

}  // namespace thresher::dist
