// Template part of dnnl_port.h.
#pragma once

#include "core/error.h"

namespace thresher::backend::cpu {

template <typename Fn>
auto dnnl_call(const std::string& what, Fn&& fn) -> decltype(fn()) {
    try {
        return fn();
    } catch (const dnnl::error& e) {
        throw BackendError("oneDNN: " + what + ": " + e.what() + " (status " +
                           std::to_string(static_cast<int>(e.status)) + ")");
    }
}

}  // namespace thresher::backend::cpu
