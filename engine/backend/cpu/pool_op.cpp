// Max and average pooling on oneDNN, planned once per shape. Max pooling in training mode keeps
// oneDNN's workspace (where each maximum came from) inside the op for the backward pass.
#include <memory>

#include "backend/cpu/ops.h"

namespace thresher::backend::cpu {

namespace {

using dnnl::algorithm;
using dnnl::prop_kind;

class CpuPoolOp final : public PoolOp {
public:
    CpuPoolOp(DnnlContext& ctx, const PoolDesc& d) : ctx_(ctx) {
        // A 1x1 output is the same memory in either layout; naming it as the input's keeps
        // oneDNN on its fast path (global pooling from a native tensor into a dense layer).
        const auto dst_layout = d.out_h * d.out_w == 1 ? d.src_layout : d.dst_layout;
        const auto src = image_desc(d.batch, d.c, d.in_h, d.in_w, d.src_layout);
        const auto dst = image_desc(d.batch, d.c, d.out_h, d.out_w, dst_layout);
        const dims strides{d.sh, d.sw}, kernel{d.kh, d.kw}, pl{d.pad_t, d.pad_l},
            pr{d.pad_b, d.pad_r};
        const auto alg = d.max ? algorithm::pooling_max : algorithm::pooling_avg_exclude_padding;
        dnnl_call("planning pooling", [&] {
            auto train_pd = dnnl::pooling_forward::primitive_desc(
                dnnl::pooling_forward::desc(prop_kind::forward_training, alg, src, dst, strides,
                                            kernel, pl, pr),
                ctx.engine);
            auto infer_pd = dnnl::pooling_forward::primitive_desc(
                dnnl::pooling_forward::desc(prop_kind::forward_inference, alg, src, dst, strides,
                                            kernel, pl, pr),
                ctx.engine);
            auto bwd_pd = dnnl::pooling_backward::primitive_desc(
                dnnl::pooling_backward::desc(alg, src, dst, strides, kernel, pl, pr), ctx.engine,
                train_pd);
            train_ = dnnl::pooling_forward(train_pd);
            infer_ = dnnl::pooling_forward(infer_pd);
            bwd_ = dnnl::pooling_backward(bwd_pd);
            if (d.max) workspace_ = dnnl::memory(train_pd.workspace_desc(), ctx.engine);
            return 0;
        });
        src_ = dnnl::memory(src, ctx.engine, DNNL_MEMORY_NONE);
        dst_ = dnnl::memory(dst, ctx.engine, DNNL_MEMORY_NONE);
    }

    void forward(const float* x, float* y, Mode mode) override {
        src_.set_data_handle(const_cast<float*>(x));
        dst_.set_data_handle(y);
        if (mode == Mode::Training) {
            std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}};
            if (workspace_) args.emplace(DNNL_ARG_WORKSPACE, workspace_);
            train_.execute(ctx_.stream, args);
        } else {
            infer_.execute(ctx_.stream, {{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}});
        }
        ctx_.stream.wait();
    }

    void backward(const float* dy, float* dx) override {
        dst_.set_data_handle(const_cast<float*>(dy));
        src_.set_data_handle(dx);
        std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_DIFF_DST, dst_},
                                                   {DNNL_ARG_DIFF_SRC, src_}};
        if (workspace_) args.emplace(DNNL_ARG_WORKSPACE, workspace_);
        bwd_.execute(ctx_.stream, args);
        ctx_.stream.wait();
    }

private:
    DnnlContext& ctx_;
    dnnl::pooling_forward train_, infer_;
    dnnl::pooling_backward bwd_;
    dnnl::memory src_, dst_, workspace_;
};

}  // namespace

std::unique_ptr<PoolOp> make_pool_op(DnnlContext& ctx, const PoolDesc& d) {
    return std::make_unique<CpuPoolOp>(ctx, d);
}

}  // namespace thresher::backend::cpu
