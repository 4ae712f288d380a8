// Glue between the engine's plain layouts (NCHW, OIHW, row-major) and the layouts oneDNN's
// primitives pick for speed (blocked formats such as nChw16c). A Port is one tensor argument of
// a planned primitive: created once with both descriptors, it binds the caller's pointer on each
// call and reorders only when the primitive wants a different layout.
#pragma once

#include <dnnl.hpp>
#include <string>

namespace thresher::backend::cpu {

struct DnnlContext {
    dnnl::engine engine{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{engine};
};

class Port {
public:
    Port() = default;
    Port(DnnlContext& ctx, const dnnl::memory::desc& user, const dnnl::memory::desc& wanted);

    // An input argument: the user's data, reordered into the primitive's layout if needed.
    dnnl::memory& input(const float* user_data);
    // An output argument: memory the primitive writes; call finish_output() after executing.
    dnnl::memory& output(float* user_data);
    void finish_output();

private:
    DnnlContext* ctx_ = nullptr;
    dnnl::memory user_;
    dnnl::memory internal_;
    bool reorder_ = false;
    dnnl::reorder to_internal_;
    dnnl::reorder to_user_;
};

// Runs `fn`, turning a dnnl::error into thresher::BackendError that names what was being built.
template <typename Fn>
auto dnnl_call(const std::string& what, Fn&& fn) -> decltype(fn());

using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;
inline dnnl::memory::desc f32_desc(const dims& d, tag t) {
    return dnnl::memory::desc(d, dnnl::memory::data_type::f32, t);
}

}  // namespace thresher::backend::cpu

#include "backend/cpu/dnnl_port_impl.h"
