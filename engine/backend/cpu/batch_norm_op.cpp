// Batch normalisation on oneDNN with separate scale (gamma) and shift (beta) tensors, so they can
// live in the engine's flat parameter buffer without packing. Training uses batch statistics;
// inference uses the running statistics the layer keeps.
#include <memory>

#include "backend/cpu/ops.h"

namespace thresher::backend::cpu {

namespace {

using dnnl::normalization_flags;
using dnnl::prop_kind;

class CpuBatchNormOp final : public BatchNormOp {
public:
    CpuBatchNormOp(DnnlContext& ctx, const BatchNormDesc& d) : ctx_(ctx) {
        const auto data = image_desc(d.batch, d.c, d.h, d.w, d.layout);
        const auto chan = f32_desc({d.c}, tag::x);
        // With relu, oneDNN applies it in the same pass and keeps where it cut (the workspace)
        // for backward, which masks dL/dy by it.
        auto flags = normalization_flags::use_scale | normalization_flags::use_shift;
        if (d.relu) flags = flags | normalization_flags::fuse_norm_relu;
        dnnl_call("planning batch normalization", [&] {
            auto train_pd = dnnl::batch_normalization_forward::primitive_desc(
                dnnl::batch_normalization_forward::desc(prop_kind::forward_training, data, d.eps,
                                                        flags),
                ctx.engine);
            auto infer_pd = dnnl::batch_normalization_forward::primitive_desc(
                dnnl::batch_normalization_forward::desc(
                    prop_kind::forward_inference, data, d.eps,
                    flags | normalization_flags::use_global_stats),
                ctx.engine);
            auto bwd_pd = dnnl::batch_normalization_backward::primitive_desc(
                dnnl::batch_normalization_backward::desc(prop_kind::backward, data, data, d.eps,
                                                         flags),
                ctx.engine, train_pd);
            train_ = dnnl::batch_normalization_forward(train_pd);
            infer_ = dnnl::batch_normalization_forward(infer_pd);
            bwd_ = dnnl::batch_normalization_backward(bwd_pd);
            if (d.relu) workspace_ = dnnl::memory(train_pd.workspace_desc(), ctx.engine);
            return 0;
        });
        for (auto* m : {&src_, &dst_, &diff_dst_, &diff_src_})
            *m = dnnl::memory(data, ctx.engine, DNNL_MEMORY_NONE);
        for (auto* m : {&scale_, &shift_, &mean_, &var_, &diff_scale_, &diff_shift_})
            *m = dnnl::memory(chan, ctx.engine, DNNL_MEMORY_NONE);
    }

    void forward_training(const float* x, const float* gamma, const float* beta, float* y,
                          float* batch_mean, float* batch_var) override {
        bind(src_, x);
        bind(scale_, gamma);
        bind(shift_, beta);
        bind(dst_, y);
        bind(mean_, batch_mean);
        bind(var_, batch_var);
        std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src_},   {DNNL_ARG_SCALE, scale_},
                                                   {DNNL_ARG_SHIFT, shift_}, {DNNL_ARG_DST, dst_},
                                                   {DNNL_ARG_MEAN, mean_},   {DNNL_ARG_VARIANCE, var_}};
        if (workspace_) args.emplace(DNNL_ARG_WORKSPACE, workspace_);
        train_.execute(ctx_.stream, args);
        ctx_.stream.wait();
    }

    void forward_inference(const float* x, const float* gamma, const float* beta,
                           const float* mean, const float* var, float* y) override {
        bind(src_, x);
        bind(scale_, gamma);
        bind(shift_, beta);
        bind(dst_, y);
        bind(mean_, mean);
        bind(var_, var);
        infer_.execute(ctx_.stream, {{DNNL_ARG_SRC, src_},
                                     {DNNL_ARG_SCALE, scale_},
                                     {DNNL_ARG_SHIFT, shift_},
                                     {DNNL_ARG_MEAN, mean_},
                                     {DNNL_ARG_VARIANCE, var_},
                                     {DNNL_ARG_DST, dst_}});
        ctx_.stream.wait();
    }

    void backward(const float* x, const float* dy, const float* gamma, const float* beta,
                  const float* batch_mean, const float* batch_var, float* dx, float* dgamma,
                  float* dbeta) override {
        bind(src_, x);
        bind(diff_dst_, dy);
        bind(scale_, gamma);
        bind(shift_, beta);  // oneDNN 2.6's ncsp backward asks for it, though it needs only gamma
        bind(mean_, batch_mean);
        bind(var_, batch_var);
        bind(diff_src_, dx);
        bind(diff_scale_, dgamma);
        bind(diff_shift_, dbeta);
        std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src_},
                                                   {DNNL_ARG_DIFF_DST, diff_dst_},
                                                   {DNNL_ARG_SCALE, scale_},
                                                   {DNNL_ARG_SHIFT, shift_},
                                                   {DNNL_ARG_MEAN, mean_},
                                                   {DNNL_ARG_VARIANCE, var_},
                                                   {DNNL_ARG_DIFF_SRC, diff_src_},
                                                   {DNNL_ARG_DIFF_SCALE, diff_scale_},
                                                   {DNNL_ARG_DIFF_SHIFT, diff_shift_}};
        if (workspace_) args.emplace(DNNL_ARG_WORKSPACE, workspace_);
        bwd_.execute(ctx_.stream, args);
        ctx_.stream.wait();
    }

private:
    static void bind(dnnl::memory& m, const float* p) { m.set_data_handle(const_cast<float*>(p)); }

    DnnlContext& ctx_;
    dnnl::batch_normalization_forward train_, infer_;
    dnnl::batch_normalization_backward bwd_;
    dnnl::memory src_, dst_, diff_dst_, diff_src_, scale_, shift_, mean_, var_, diff_scale_,
        diff_shift_;
    dnnl::memory workspace_;  // fused ReLU: where forward_training cut, for backward
};

}  // namespace

std::unique_ptr<BatchNormOp> make_batch_norm_op(DnnlContext& ctx, const BatchNormDesc& d) {
    return std::make_unique<CpuBatchNormOp>(ctx, d);
}

}  // namespace thresher::backend::cpu
