// Which device each of a node's workers computes on (`--device`, RunSpec `training.device`): one
// device for every worker ("cpu", "cuda", "cuda:1"), or one per worker ("cuda:0,cuda:1"), so a
// node with several GPUs runs a worker on each (DESIGN.md: W workers, one per GPU). Parsed once,
// where the setting enters (the engine's flag, the run spec); whether a device exists is the
// backend registry's question, asked when a worker creates its backend.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace thresher {

class DeviceList {
public:
    DeviceList() : devices_{"cpu"} {}
    // `what` names the setting in the user's terms ("--device", "training.device"). Throws
    // ConfigError for an empty list or an entry that is not KIND or KIND:INDEX.
    static DeviceList parse(std::string_view text, std::string_view what = "--device");

    // Throws ConfigError unless the list has one device, or one for each of `workers`.
    void check_workers(int workers, std::string_view what = "--device") const;
    // The device of local worker `local` (after check_workers).
    const std::string& for_worker(int local) const;
    const std::vector<std::string>& devices() const { return devices_; }
    std::string text() const;  // as parsed, comma-separated
    bool operator==(const DeviceList&) const = default;

private:
    std::vector<std::string> devices_;
};

}  // namespace thresher
