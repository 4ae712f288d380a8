// The JSON fields (without event, t, node) of each full struct of full_events.h, as text.
#pragma once

#include <string>

namespace events_fixture {

std::string expected_fields(const std::string& event);

}  // namespace events_fixture
