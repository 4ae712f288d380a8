// Run-time choice of backend by name ("cpu", "cuda:0"). Backend folders register a factory at
// static-initialisation time; the engine asks by name and gets a clear error for unknown or
// unavailable ones, listing what this build has.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace thresher::backend {

struct BackendOptions {
    int threads = 0;  // 0: the backend's default
};

using BackendFactory =
    std::function<std::unique_ptr<Backend>(int device_index, const BackendOptions&)>;

// Describes a device for `thresher-engine devices`.
struct DeviceListing {
    std::string name;  // "cpu", "cuda:0"; a backend built without a usable device: its kind ("cuda")
    std::string description;
    bool usable = true;
    std::string reason;  // why not, when !usable ("cudaErrorNoDevice: no CUDA-capable device is detected")
};
using DeviceLister = std::function<std::vector<DeviceListing>()>;

void register_backend(const std::string& kind, BackendFactory factory, DeviceLister lister);
std::vector<std::string> registered_backends();
std::vector<DeviceListing> list_devices();

// "cpu", "cuda", "cuda:1". Throws thresher::Error naming the request and the available kinds.
std::unique_ptr<Backend> create_backend(const std::string& device, const BackendOptions& = {});

}  // namespace thresher::backend
