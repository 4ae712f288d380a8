#include "backend/cpu/dnnl_port.h"

namespace thresher::backend::cpu {

Port::Port(DnnlContext& ctx, const dnnl::memory::desc& user, const dnnl::memory::desc& wanted)
    : ctx_(&ctx), user_(user, ctx.engine, DNNL_MEMORY_NONE), reorder_(user != wanted) {
    if (reorder_) {
        internal_ = dnnl::memory(wanted, ctx.engine);
        to_internal_ = dnnl::reorder(user_, internal_);
        to_user_ = dnnl::reorder(internal_, user_);
    }
}

dnnl::memory& Port::input(const float* user_data) {
    // oneDNN takes void*; inputs are never written through it.
    user_.set_data_handle(const_cast<float*>(user_data));
    if (!reorder_) return user_;
    to_internal_.execute(ctx_->stream, user_, internal_);
    return internal_;
}

dnnl::memory& Port::output(float* user_data) {
    user_.set_data_handle(user_data);
    return reorder_ ? internal_ : user_;
}

void Port::finish_output() {
    if (reorder_) to_user_.execute(ctx_->stream, internal_, user_);
}

}  // namespace thresher::backend::cpu
