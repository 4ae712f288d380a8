// Which process of a rank this is (datagram.h, bulk_channel.h): a number a restarted engine must
// exceed, or its peers take the new process for a replay of the old one.
//
// The wall clock alone is not enough: a clock stepped back (NTP, a VM resumed) makes a restart
// look older. So each host keeps the last number it handed out in a small state file, and a new
// process takes max(now in ns, last + 1), under an flock so that engines starting together on one
// host never share a number. Where no state file can be written, the wall clock is used.
#pragma once

#include <cstdint>
#include <string>

namespace thresher::dist {

// The state file: $THRESHER_STATE_DIR, else $XDG_STATE_HOME/thresher, else ~/.local/state/thresher,
// then "incarnation".
std::string incarnation_file();

// max(now_ns, the number in `file` + 1), written back to `file` (created with its folder, mode
// 0600) under an exclusive lock. An unreadable file counts as 0; an unwritable one leaves now_ns.
std::uint64_t next_incarnation(const std::string& file, std::uint64_t now_ns);

// next_incarnation(incarnation_file(), the wall clock in ns).
std::uint64_t new_incarnation();

}  // namespace thresher::dist
