// Dense layer on oneDNN matmul. Three primitives are planned per (batch, in, out): the forward
// product with bias and the activation fused as a post-op, and the two backward products, which
// read x and W transposed through strided descriptors instead of copying them.
#include <memory>

#include "backend/cpu/ops.h"

namespace thresher::backend::cpu {

namespace {

class CpuDenseOp final : public DenseOp {
public:
    CpuDenseOp(DnnlContext& ctx, const DenseDesc& d) : ctx_(ctx), d_(d) {
        const long b = d.batch, in = d.in, out = d.out;
        // Forward: y[b,out] = x[b,in] W[in,out] + bias
        auto x_md = f32_desc({b, in}, tag::ab);
        auto w_md = f32_desc({in, out}, tag::ab);
        auto bias_md = f32_desc({1, out}, tag::ab);
        auto y_md = f32_desc({b, out}, tag::ab);
        dnnl::post_ops po;
        dnnl::primitive_attr attr;
        if (append_activation_post_op(po, d.act)) attr.set_post_ops(po);
        act_after_ = apply_activation_after(d.act);  // softmax and the non-fused activations
        dnnl_call("planning dense forward " + shape(), [&] {
            fwd_ = dnnl::matmul(dnnl::matmul::primitive_desc(
                dnnl::matmul::desc(x_md, w_md, bias_md, y_md), attr, ctx.engine));
            // dW[in,out] = x^T[in,b] dz[b,out]; x^T is x read with strides {1, in}.
            dw_ = dnnl::matmul(dnnl::matmul::primitive_desc(
                dnnl::matmul::desc(f32_desc({in, b}, tag::ba), f32_desc({b, out}, tag::ab),
                                   f32_desc({in, out}, tag::ab)),
                ctx.engine));
            // dx[b,in] = dz[b,out] W^T[out,in]; W^T is W read with strides {1, out}.
            dx_ = dnnl::matmul(dnnl::matmul::primitive_desc(
                dnnl::matmul::desc(f32_desc({b, out}, tag::ab), f32_desc({out, in}, tag::ba),
                                   f32_desc({b, in}, tag::ab)),
                ctx.engine));
            return 0;
        });
        x_ = mem(x_md);
        w_ = mem(w_md);
        bias_ = mem(bias_md);
        y_ = mem(y_md);
        xt_ = mem(f32_desc({in, b}, tag::ba));
        dz_ = mem(f32_desc({b, out}, tag::ab));
        dw_mem_ = mem(f32_desc({in, out}, tag::ab));
        wt_ = mem(f32_desc({out, in}, tag::ba));
        dx_mem_ = mem(f32_desc({b, in}, tag::ab));
    }

    void forward(const float* x, const float* w, const float* b, float* y) override {
        bind(x_, x);
        bind(w_, w);
        bind(bias_, b);
        y_.set_data_handle(y);
        fwd_.execute(ctx_.stream, {{DNNL_ARG_SRC, x_},
                                   {DNNL_ARG_WEIGHTS, w_},
                                   {DNNL_ARG_BIAS, bias_},
                                   {DNNL_ARG_DST, y_}});
        ctx_.stream.wait();
        if (act_after_) activation_forward(d_.act, y, y, d_.batch, d_.out);
    }

    void backward(const float* x, const float* w, const float* dz, float* dx, float* dw,
                  float* db) override {
        bind(xt_, x);
        bind(dz_, dz);
        dw_mem_.set_data_handle(dw);
        dw_.execute(ctx_.stream,
                    {{DNNL_ARG_SRC, xt_}, {DNNL_ARG_WEIGHTS, dz_}, {DNNL_ARG_DST, dw_mem_}});
        if (dx) {
            bind(wt_, w);
            dx_mem_.set_data_handle(dx);
            dx_.execute(ctx_.stream,
                        {{DNNL_ARG_SRC, dz_}, {DNNL_ARG_WEIGHTS, wt_}, {DNNL_ARG_DST, dx_mem_}});
        }
        ctx_.stream.wait();
        column_sums(dz, db, d_.batch, d_.out);
    }

private:
    dnnl::memory mem(const dnnl::memory::desc& md) {
        return dnnl::memory(md, ctx_.engine, DNNL_MEMORY_NONE);
    }
    static void bind(dnnl::memory& m, const float* p) { m.set_data_handle(const_cast<float*>(p)); }
    std::string shape() const {
        return "[" + std::to_string(d_.batch) + "x" + std::to_string(d_.in) + "] -> " +
               std::to_string(d_.out);
    }

    DnnlContext& ctx_;
    DenseDesc d_;
    bool act_after_ = false;
    dnnl::matmul fwd_, dw_, dx_;
    dnnl::memory x_, w_, bias_, y_, xt_, dz_, dw_mem_, wt_, dx_mem_;
};

}  // namespace

std::unique_ptr<DenseOp> make_dense_op(DnnlContext& ctx, const DenseDesc& d) {
    return std::make_unique<CpuDenseOp>(ctx, d);
}

}  // namespace thresher::backend::cpu
