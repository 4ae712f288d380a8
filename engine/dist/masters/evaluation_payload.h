// The payload of a node's evaluation part (MessageType::Evaluation; engine/dist/README.md,
// section 3): i32 epoch in network byte order, then a JSON object (UTF-8) of that node's
// evaluation counts, which the controller merges (train::merge_evaluation_parts). NodeLink writes
// it in gather_evaluation and reads it in handle (node_link_rounds.cpp, node_link.cpp); pure here,
// so it is fuzzed with the merge (fuzz_evaluation_payload). A node holds the run secret, so its
// part is authentic, but a buggy one must still not overflow the controller's stack (the
// depth-limited JSON parser) or be taken for anything else than an object.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace thresher::dist {

struct EvaluationPart {
    std::int32_t epoch = 0;
    nlohmann::json counts;  // an object
};

std::vector<std::uint8_t> pack_evaluation(std::int32_t epoch, const nlohmann::json& counts);

// Throws thresher::Error: a short payload, JSON that is not an object, or invalid or too deeply
// nested JSON (that message names `source`, its line and column).
EvaluationPart parse_evaluation(std::span<const std::uint8_t> payload, const std::string& source);

}  // namespace thresher::dist
