// 2-D convolution on oneDNN. The three primitives (forward with bias and fused activation,
// backward data, backward weights) are planned once per shape with format "any", so oneDNN picks
// its fastest layouts; Ports reorder from and to the engine's NCHW/OIHW only where they differ.
#include <memory>

#include "backend/cpu/ops.h"

namespace thresher::backend::cpu {

namespace {

template <typename T>
struct Tag {
    using type = T;
};

using dnnl::algorithm;
using dnnl::prop_kind;

class CpuConvOp final : public ConvOp {
public:
    CpuConvOp(DnnlContext& ctx, const ConvDesc& d) : ctx_(ctx), d_(d) {
        const dims src{d.batch, d.in_c, d.in_h, d.in_w};
        // Grouped (depthwise): oneDNN's goihw is the same memory as OIHW with I = in_c / groups.
        const dims wei = d.groups == 1 ? dims{d.out_c, d.in_c, d.kh, d.kw}
                                       : dims{d.groups, d.out_c / d.groups, d.in_c / d.groups, d.kh, d.kw};
        // A transposed convolution's weights are stored [in_c x out_c x kh x kw]: oneDNN's iohw.
        const tag wei_tag = d.transposed ? tag::iohw : d.groups == 1 ? tag::oihw : tag::goihw;
        const dims dst{d.batch, d.out_c, d.out_h, d.out_w};
        const dims strides{d.sh, d.sw};
        const dims dilates{d.dh - 1, d.dw - 1};  // oneDNN counts the gaps, not the step
        const dims pad_l{d.pad_t, d.pad_l};
        const dims pad_r{d.pad_b, d.pad_r};
        auto any = [](const dims& x) { return f32_desc(x, tag::any); };
        // A native (blocked) tensor is the layout oneDNN would pick: planned as given, it is
        // never reordered. Plain ones are left to oneDNN ("any") and reordered by the Ports.
        const auto user_src = image_desc(d.batch, d.in_c, d.in_h, d.in_w, d.src_layout);
        const auto user_wei = f32_desc(wei, wei_tag);
        const auto user_dst = image_desc(d.batch, d.out_c, d.out_h, d.out_w, d.dst_layout);
        const auto bias_md = f32_desc({d.out_c}, tag::x);
        const auto src_md = d.src_layout == ImageLayout::Native ? user_src : any(src);
        const auto dst_md = d.dst_layout == ImageLayout::Native ? user_dst : any(dst);

        dnnl::post_ops po;
        dnnl::primitive_attr attr;
        if (append_activation_post_op(po, d.act)) attr.set_post_ops(po);

        dnnl_call("planning convolution " + describe(), [&] {
            // The transposed convolution has its own primitives (deconvolution) with the same
            // arguments; everything after planning is shared.
            auto plan = [&](auto fwd_tag, auto bwd_data_tag, auto bwd_w_tag, algorithm alg) {
                using Fwd = typename decltype(fwd_tag)::type;
                using BwdData = typename decltype(bwd_data_tag)::type;
                using BwdW = typename decltype(bwd_w_tag)::type;
                auto fwd_pd = typename Fwd::primitive_desc(
                    typename Fwd::desc(prop_kind::forward_training, alg, src_md, any(wei), bias_md, dst_md, strides,
                                       dilates, pad_l, pad_r),
                    attr, ctx.engine);
                auto bwd_data_pd = typename BwdData::primitive_desc(
                    typename BwdData::desc(alg, src_md, any(wei), dst_md, strides, dilates, pad_l, pad_r), ctx.engine,
                    fwd_pd);
                auto bwd_w_pd = typename BwdW::primitive_desc(
                    typename BwdW::desc(alg, src_md, any(wei), bias_md, dst_md, strides, dilates, pad_l, pad_r),
                    ctx.engine, fwd_pd);
                fwd_ = Fwd(fwd_pd);
                bwd_data_ = BwdData(bwd_data_pd);
                bwd_w_ = BwdW(bwd_w_pd);
                f_src_ = Port(ctx, user_src, fwd_pd.src_desc());
                f_wei_ = Port(ctx, user_wei, fwd_pd.weights_desc());
                f_dst_ = Port(ctx, user_dst, fwd_pd.dst_desc());
                bd_dst_ = Port(ctx, user_dst, bwd_data_pd.diff_dst_desc());
                bd_wei_ = Port(ctx, user_wei, bwd_data_pd.weights_desc());
                bd_src_ = Port(ctx, user_src, bwd_data_pd.diff_src_desc());
                bw_src_ = Port(ctx, user_src, bwd_w_pd.src_desc());
                bw_dst_ = Port(ctx, user_dst, bwd_w_pd.diff_dst_desc());
                bw_wei_ = Port(ctx, user_wei, bwd_w_pd.diff_weights_desc());
            };
            if (d.transposed)
                plan(Tag<dnnl::deconvolution_forward>{}, Tag<dnnl::deconvolution_backward_data>{},
                     Tag<dnnl::deconvolution_backward_weights>{}, algorithm::deconvolution_direct);
            else
                plan(Tag<dnnl::convolution_forward>{}, Tag<dnnl::convolution_backward_data>{},
                     Tag<dnnl::convolution_backward_weights>{}, algorithm::convolution_direct);
            bias_ = dnnl::memory(bias_md, ctx.engine, DNNL_MEMORY_NONE);
            dbias_ = dnnl::memory(bias_md, ctx.engine, DNNL_MEMORY_NONE);
            return 0;
        });
    }

    void forward(const float* x, const float* w, const float* b, float* y) override {
        bias_.set_data_handle(const_cast<float*>(b));
        fwd_.execute(ctx_.stream, {{DNNL_ARG_SRC, f_src_.input(x)},
                                   {DNNL_ARG_WEIGHTS, f_wei_.input(w)},
                                   {DNNL_ARG_BIAS, bias_},
                                   {DNNL_ARG_DST, f_dst_.output(y)}});
        f_dst_.finish_output();
        ctx_.stream.wait();
        // Activations oneDNN does not fuse (those imported files bring) run as a pass of their own.
        if (d_.act.kind != Activation::Softmax && apply_activation_after(d_.act))
            activation_forward(d_.act, y, y, d_.batch, d_.out_c * d_.out_h * d_.out_w);
    }

    void backward(const float* x, const float* w, const float* dz, float* dx, float* dw,
                  float* db) override {
        dbias_.set_data_handle(db);
        bwd_w_.execute(ctx_.stream, {{DNNL_ARG_SRC, bw_src_.input(x)},
                                     {DNNL_ARG_DIFF_DST, bw_dst_.input(dz)},
                                     {DNNL_ARG_DIFF_WEIGHTS, bw_wei_.output(dw)},
                                     {DNNL_ARG_DIFF_BIAS, dbias_}});
        bw_wei_.finish_output();
        if (dx) {
            bwd_data_.execute(ctx_.stream, {{DNNL_ARG_DIFF_DST, bd_dst_.input(dz)},
                                            {DNNL_ARG_WEIGHTS, bd_wei_.input(w)},
                                            {DNNL_ARG_DIFF_SRC, bd_src_.output(dx)}});
            bd_src_.finish_output();
        }
        ctx_.stream.wait();
    }

private:
    std::string describe() const {
        auto s = [](int v) { return std::to_string(v); };
        return s(d_.batch) + "x" + s(d_.in_c) + "x" + s(d_.in_h) + "x" + s(d_.in_w) + " -> " +
               s(d_.out_c) + "x" + s(d_.out_h) + "x" + s(d_.out_w) + " kernel " + s(d_.kh) + "x" +
               s(d_.kw);
    }

    DnnlContext& ctx_;
    ConvDesc d_;
    dnnl::primitive fwd_, bwd_data_, bwd_w_;
    Port f_src_, f_wei_, f_dst_, bd_dst_, bd_wei_, bd_src_, bw_src_, bw_dst_, bw_wei_;
    dnnl::memory bias_, dbias_;
};

}  // namespace

std::unique_ptr<ConvOp> make_conv_op(DnnlContext& ctx, const ConvDesc& d) {
    return std::make_unique<CpuConvOp>(ctx, d);
}

}  // namespace thresher::backend::cpu
