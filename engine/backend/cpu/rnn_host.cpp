// Recurrent cells with any element-wise activations (rnn_host.h), written out step by step with
// oneDNN's sgemm for every matrix product and elementwise.cpp's activations and derivatives.
// The equations are oneDNN's (engine/config/README.md "Sequences"), with `ga` the gate
// activation and `ca` the cell/candidate one; h' and c' are the previous step's state:
//   lstm     z = x W + h' R + b;  i = ga(z_i + P_i c'), f = ga(z_f + P_f c'), g = ca(z_g),
//            c = f c' + i g,  o = ga(z_o + P_o c),  h = o ca(c)
//   gru      u = ga(z_u), r = ga(z_r), o = ca(x W_o + b_o + (r h') R_o),  h = u h' + (1 - u) o
//   gru, reset after:  o = ca(x W_o + b_o + r (h' R_o + b_o'))
//   vanilla  h = ca(x W + h' R + b)
// Forward: one GEMM projects every step's input (x W + b for all N·T rows), then one GEMM per step
// adds the recurrence. Backward through time keeps dL/d(pre-activations) of every step, so dW,
// dR and dx are again one GEMM each after the loop; per step only dL/dh' needs a GEMM.
// Samples never meet inside a layer, so the time loops split the batch between the OpenMP
// threads, each running every step of its own samples with single-threaded GEMMs: no barrier per
// step (with one, the per-step GEMMs of 32 x 256 spent most of their time waiting on each other).
#include "backend/cpu/rnn_host.h"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <string>

#include "backend/cpu/ops.h"
#include "core/error.h"
#include "core/rng.h"

namespace thresher::backend::cpu {

namespace {

// C = A·B + beta·C, row-major, A [m x k] (or its transpose stored [k x m]), B [k x n] (or [n x k]).
void gemm(bool ta, bool tb, long m, long n, long k, const float* a, long lda, const float* b, long ldb, float beta, float* c,
          long ldc) {
    const auto s = dnnl::sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.f, a, lda, b, ldb, beta, c, ldc);
    if (s != dnnl::status::success)
        throw BackendError("oneDNN sgemm in a recurrent layer failed (status " + std::to_string(static_cast<int>(s)) + ")");
}

void act(ActivationSpec s, const float* z, float* a, long n) { activation_forward(s, z, a, 1, static_cast<int>(n)); }

// dz = act'(z) · da; elementwise.cpp takes the output, or the input where the derivative needs it.
void act_back(ActivationSpec s, const float* z, const float* a, const float* da, float* dz, long n) {
    activation_backward(s, vocab::derivative_from_input(s.kind) ? z : a, da, dz, 1, static_cast<int>(n));
}

// f(n0, n1) on each thread's share of the batch; the first exception is rethrown here. oneDNN's
// sgemm runs on one thread inside a parallel region.
template <typename F>
void over_samples(int batch, F&& f) {
    std::exception_ptr error;
#pragma omp parallel
    {
        const int k = omp_get_thread_num(), threads = omp_get_num_threads();
        const long n0 = static_cast<long>(batch) * k / threads, n1 = static_cast<long>(batch) * (k + 1) / threads;
        try {
            if (n0 < n1) f(n0, n1);
        } catch (...) {
#pragma omp critical(thresher_rnn_host_error)
            if (!error) error = std::current_exception();
        }
    }
    if (error) std::rethrow_exception(error);
}

int gates_of(RnnCell c) { return c == RnnCell::Lstm ? 4 : c == RnnCell::Vanilla ? 1 : 3; }

}  // namespace

bool rnn_has_primitive(const RnnDesc& d) {
    if (d.has_dropout()) return false;
    const auto a = d.act.kind;
    if (d.cell == RnnCell::Vanilla) return a == Activation::Tanh || a == Activation::Relu || a == Activation::Sigmoid;
    return a == Activation::Tanh && d.gate.kind == Activation::Sigmoid;
}

RnnHostDirection::RnnHostDirection(const RnnDesc& d) : d_(d), g_(gates_of(d.cell)) {
    const long n = d.batch, t = d.steps, h = d.hidden;
    gh_ = g_ * h;
    w_ = static_cast<std::size_t>(d.in * gh_);
    r_ = static_cast<std::size_t>(h * gh_);
    b_ = static_cast<std::size_t>(d.cell == RnnCell::GruResetAfter ? 4 * h : gh_);
    const auto rows = static_cast<std::size_t>(n * t);
    pre_.assign(rows * gh_, 0.f);
    gate_.assign(rows * gh_, 0.f);
    dpre_.assign(rows * gh_, 0.f);
    hprev_.assign(rows * h, 0.f);
    if (d.cell == RnnCell::Lstm) {
        c_.assign(rows * h, 0.f);
        cact_.assign(rows * h, 0.f);
    }
    if (d.cell == RnnCell::Gru || d.cell == RnnCell::GruResetAfter) extra_.assign(rows * h, 0.f);
    if (d.cell == RnnCell::GruResetAfter) drec_.assign(rows * gh_, 0.f);
    dh_.assign(static_cast<std::size_t>(n * h), 0.f);
    dc_.assign(static_cast<std::size_t>(n * h), 0.f);
    tmp_.assign(static_cast<std::size_t>(n * (gh_ + 3 * h)), 0.f);
    if (d.input_retain < 1.f) {
        in_mask_.assign(static_cast<std::size_t>(n * d.in), 1.f);
        xm_.assign(rows * d.in, 0.f);
    }
    if (d.recurrent_retain < 1.f) {
        rec_mask_.assign(static_cast<std::size_t>(n * h), 1.f);
        hrec_.assign(rows * h, 0.f);
    }
}

void RnnHostDirection::draw_dropout(std::uint64_t seed) {
    if (!in_mask_.empty()) dropout_mask(in_mask_.data(), in_mask_.size(), d_.input_retain, derive_seed(seed, 1));
    if (!rec_mask_.empty()) dropout_mask(rec_mask_.data(), rec_mask_.size(), d_.recurrent_retain, derive_seed(seed, 2));
}

void RnnHostDirection::forward(const float* x, const float* p, float* h, bool training) {
    const long rows = static_cast<long>(d_.batch) * d_.steps;
    const float *w = p, *r = w + w_, *b = r + r_, *peep = d_.peepholes ? b + b_ : nullptr;
    in_drop_ = training && !in_mask_.empty();
    rec_drop_ = training && !rec_mask_.empty();
    if (in_drop_) {
        // One mask per sample for all its steps: x (n, t, f) keeps in_mask (n, f).
        for (long q = 0; q < rows; ++q) {
            const float* m = in_mask_.data() + (q / d_.steps) * d_.in;
            for (long f = 0; f < d_.in; ++f) xm_[static_cast<std::size_t>(q * d_.in + f)] = x[q * d_.in + f] * m[f];
        }
        x = xm_.data();
    }
    for (long q = 0; q < rows; ++q) std::copy_n(b, gh_, pre_.data() + q * gh_);
    gemm(false, false, rows, gh_, d_.in, x, d_.in, w, gh_, 1.f, pre_.data(), gh_);
    over_samples(d_.batch, [&](long n0, long n1) {
        for (int t = 0; t < d_.steps; ++t) step_forward(t, n0, n1, r, b, peep, h);
    });
}

// Samples n0 .. n1 - 1 (the pointers below start at n0; n counts from there).
void RnnHostDirection::step_forward(int t, long n0, long n1, const float* r, const float* b, const float* peep, float* h) {
    const long n_ = n1 - n0, T = d_.steps, H = d_.hidden, gh = gh_;
    const long lh = T * H, lg = T * gh;  // strides between samples at one step
    float* pre = pre_.data() + n0 * lg + t * gh;
    float* gate = gate_.data() + n0 * lg + t * gh;
    float* hp = hprev_.data() + n0 * lh + t * H;
    float* scratch = tmp_.data() + n0 * gh;
    h += n0 * lh;
    for (long n = 0; n < n_; ++n) {
        if (t == 0) std::fill_n(hp + n * lh, H, 0.f);
        else std::copy_n(h + n * lh + (t - 1) * H, H, hp + n * lh);
    }
    // What the recurrence reads: h', or h' with its dropped units (a gru's update reads h' whole).
    const float* hr = hp;
    if (rec_drop_) {
        float* masked = hrec_.data() + n0 * lh + t * H;
        for (long n = 0; n < n_; ++n)
            for (long j = 0; j < H; ++j) masked[n * lh + j] = hp[n * lh + j] * rec_mask_[static_cast<std::size_t>((n0 + n) * H + j)];
        hr = masked;
    }
    const ActivationSpec ga = d_.gate, ca = d_.act;
    switch (d_.cell) {
        case RnnCell::Vanilla:
            gemm(false, false, n_, H, H, hr, lh, r, H, 1.f, pre, lg);
            for (long n = 0; n < n_; ++n) {
                act(ca, pre + n * lg, gate + n * lg, H);
                std::copy_n(gate + n * lg, H, h + n * lh + t * H);
            }
            return;
        case RnnCell::Lstm:
            gemm(false, false, n_, gh, H, hr, lh, r, gh, 1.f, pre, lg);
            for (long n = 0; n < n_; ++n) {
                float *z = pre + n * lg, *a = gate + n * lg;
                float* c = c_.data() + (n0 + n) * lh + t * H;
                float* cact = cact_.data() + (n0 + n) * lh + t * H;
                const float* cp = t == 0 ? nullptr : c - H;
                if (peep && cp)
                    for (long j = 0; j < H; ++j) z[j] += peep[j] * cp[j], z[H + j] += peep[H + j] * cp[j];
                act(ga, z, a, 2 * H);
                act(ca, z + 2 * H, a + 2 * H, H);
                for (long j = 0; j < H; ++j) c[j] = (cp ? a[H + j] * cp[j] : 0.f) + a[j] * a[2 * H + j];
                if (peep)
                    for (long j = 0; j < H; ++j) z[3 * H + j] += peep[2 * H + j] * c[j];
                act(ga, z + 3 * H, a + 3 * H, H);
                act(ca, c, cact, H);
                float* ht = h + n * lh + t * H;
                for (long j = 0; j < H; ++j) ht[j] = a[3 * H + j] * cact[j];
            }
            return;
        case RnnCell::Gru: {
            gemm(false, false, n_, 2 * H, H, hr, lh, r, gh, 1.f, pre, lg);
            float* rh = extra_.data() + n0 * lh + t * H;
            for (long n = 0; n < n_; ++n) {
                float *z = pre + n * lg, *a = gate + n * lg;
                act(ga, z, a, 2 * H);
                for (long j = 0; j < H; ++j) rh[n * lh + j] = a[H + j] * hr[n * lh + j];
            }
            gemm(false, false, n_, H, H, rh, lh, r + 2 * H, gh, 1.f, pre + 2 * H, lg);
            break;
        }
        case RnnCell::GruResetAfter: {
            gemm(false, false, n_, gh, H, hr, lh, r, gh, 0.f, scratch, gh);
            for (long n = 0; n < n_; ++n) {
                float *z = pre + n * lg, *a = gate + n * lg;
                const float* s = scratch + n * gh;
                float* rec = extra_.data() + (n0 + n) * lh + t * H;
                for (long j = 0; j < 2 * H; ++j) z[j] += s[j];
                act(ga, z, a, 2 * H);
                for (long j = 0; j < H; ++j) {
                    rec[j] = s[2 * H + j] + b[3 * H + j];
                    z[2 * H + j] += a[H + j] * rec[j];
                }
            }
            break;
        }
    }
    // Both GRU forms: o = ca(z_o), h = u h' + (1 - u) o.
    for (long n = 0; n < n_; ++n) {
        float *z = pre + n * lg, *a = gate + n * lg;
        act(ca, z + 2 * H, a + 2 * H, H);
        const float* hpn = hp + n * lh;
        float* ht = h + n * lh + t * H;
        for (long j = 0; j < H; ++j) ht[j] = a[j] * hpn[j] + (1.f - a[j]) * a[2 * H + j];
    }
}

void RnnHostDirection::backward(const float* x, const float* p, const float* dh, float* dx, float* g) {
    const long rows = static_cast<long>(d_.batch) * d_.steps, H = d_.hidden;
    const float *w = p, *r = w + w_;
    const float* peep = d_.peepholes ? r + r_ + b_ : nullptr;
    const std::size_t total = w_ + r_ + b_ + (d_.peepholes ? static_cast<std::size_t>(3 * H) : 0);
    std::fill(g, g + total, 0.f);
    float *gw = g, *gr = gw + w_, *gb = gr + r_, *gp = d_.peepholes ? gb + b_ : nullptr;
    std::fill(dh_.begin(), dh_.end(), 0.f);
    std::fill(dc_.begin(), dc_.end(), 0.f);
    const long lh = static_cast<long>(d_.steps) * H;
    over_samples(d_.batch, [&](long n0, long n1) {
        for (int t = d_.steps - 1; t >= 0; --t) {
            // dL/dh at step t: what the output read there plus what step t + 1 sent back.
            for (long n = n0; n < n1; ++n) {
                const float* out = dh + n * lh + static_cast<long>(t) * H;
                float* carry = dh_.data() + n * H;
                for (long j = 0; j < H; ++j) carry[j] += out[j];
            }
            step_backward(t, n0, n1, r, peep);
        }
    });
    if (gp) {
        // Peepholes: i and f read c', o the new c (after the time loop: no sum shared by threads).
        for (long q = 0; q < rows; ++q) {
            const float* dz = dpre_.data() + q * gh_;
            const float* c = c_.data() + q * H;
            const bool first = q % d_.steps == 0;
            for (long j = 0; j < H; ++j) {
                if (!first) gp[j] += dz[j] * c[j - H], gp[H + j] += dz[H + j] * c[j - H];
                gp[2 * H + j] += dz[3 * H + j] * c[j];
            }
        }
    }
    // The input and h' as the products read them (with their dropped parts, in training).
    const float* xin = in_drop_ ? xm_.data() : x;
    const float* hr = rec_drop_ ? hrec_.data() : hprev_.data();
    gemm(true, false, d_.in, gh_, rows, xin, d_.in, dpre_.data(), gh_, 0.f, gw, gh_);
    gemm(false, true, rows, d_.in, gh_, dpre_.data(), gh_, w, gh_, 0.f, dx, d_.in);
    if (in_drop_)
        for (long q = 0; q < rows; ++q) {
            const float* m = in_mask_.data() + (q / d_.steps) * d_.in;
            for (long f = 0; f < d_.in; ++f) dx[q * d_.in + f] *= m[f];
        }
    column_sums(dpre_.data(), gb, static_cast<int>(rows), static_cast<int>(gh_));
    switch (d_.cell) {
        case RnnCell::Vanilla:
        case RnnCell::Lstm: gemm(true, false, H, gh_, rows, hr, H, dpre_.data(), gh_, 0.f, gr, gh_); break;
        case RnnCell::Gru:
            // u and r saw h', the candidate saw r h'.
            gemm(true, false, H, 2 * H, rows, hr, H, dpre_.data(), gh_, 0.f, gr, gh_);
            gemm(true, false, H, H, rows, extra_.data(), H, dpre_.data() + 2 * H, gh_, 0.f, gr + 2 * H, gh_);
            break;
        case RnnCell::GruResetAfter:
            gemm(true, false, H, gh_, rows, hr, H, drec_.data(), gh_, 0.f, gr, gh_);
            for (long q = 0; q < rows; ++q)
                for (long j = 0; j < H; ++j) gb[3 * H + j] += drec_[static_cast<std::size_t>(q * gh_ + 2 * H + j)];
            break;
    }
}

// In: dh_ = dL/dh at step t. Out: dpre_ (and drec_) rows of step t, dh_ = dL/dh at step t - 1,
// dc_ = dL/dc at step t - 1 (lstm). Samples n0 .. n1 - 1 (pointers start at n0).
void RnnHostDirection::step_backward(int t, long n0, long n1, const float* r, const float* peep) {
    const long n_ = n1 - n0, T = d_.steps, H = d_.hidden, gh = gh_;
    const long lh = T * H, lg = T * gh;
    const float* pre = pre_.data() + n0 * lg + t * gh;
    const float* gate = gate_.data() + n0 * lg + t * gh;
    const float* hp = hprev_.data() + n0 * lh + t * H;
    float* dpre = dpre_.data() + n0 * lg + t * gh;
    float* dh = dh_.data() + n0 * H;
    float* dcs = dc_.data() + n0 * H;
    // Scratch per sample: da [gh] then three rows of H.
    const long ls = gh + 3 * H;
    float* scratch = tmp_.data() + n0 * ls;
    auto da_of = [&](long n) { return scratch + n * ls; };
    // dL/dh' through the recurrence's products, times the units the recurrence read (dropout).
    auto mask_recurrent = [&](float* d, long stride) {
        if (!rec_drop_) return;
        for (long n = 0; n < n_; ++n)
            for (long j = 0; j < H; ++j) d[n * stride + j] *= rec_mask_[static_cast<std::size_t>((n0 + n) * H + j)];
    };
    const ActivationSpec ga = d_.gate, ca = d_.act;
    switch (d_.cell) {
        case RnnCell::Vanilla:
            for (long n = 0; n < n_; ++n) act_back(ca, pre + n * lg, gate + n * lg, dh + n * H, dpre + n * lg, H);
            gemm(false, true, n_, H, H, dpre, lg, r, H, 0.f, dh, H);
            mask_recurrent(dh, H);
            return;
        case RnnCell::Lstm:
            for (long n = 0; n < n_; ++n) {
                const float *z = pre + n * lg, *a = gate + n * lg, *dht = dh + n * H;
                const float* c = c_.data() + (n0 + n) * lh + t * H;
                const float* cact = cact_.data() + (n0 + n) * lh + t * H;
                const float* cp = t == 0 ? nullptr : c - H;
                float *dz = dpre + n * lg, *da = da_of(n), *dcact = da + gh, *dc = dcs + n * H;
                for (long j = 0; j < H; ++j) da[3 * H + j] = dht[j] * cact[j], dcact[j] = dht[j] * a[3 * H + j];
                act_back(ga, z + 3 * H, a + 3 * H, da + 3 * H, dz + 3 * H, H);
                act_back(ca, c, cact, dcact, dcact, H);
                for (long j = 0; j < H; ++j) dc[j] += dcact[j];
                if (peep)
                    for (long j = 0; j < H; ++j) dc[j] += dz[3 * H + j] * peep[2 * H + j];
                for (long j = 0; j < H; ++j) {
                    da[j] = dc[j] * a[2 * H + j];
                    da[H + j] = cp ? dc[j] * cp[j] : 0.f;
                    da[2 * H + j] = dc[j] * a[j];
                }
                act_back(ga, z, a, da, dz, 2 * H);
                act_back(ca, z + 2 * H, a + 2 * H, da + 2 * H, dz + 2 * H, H);
                for (long j = 0; j < H; ++j) dc[j] *= a[H + j];
                if (peep && cp)
                    for (long j = 0; j < H; ++j) dc[j] += dz[j] * peep[j] + dz[H + j] * peep[H + j];
            }
            gemm(false, true, n_, H, gh, dpre, lg, r, gh, 0.f, dh, H);
            mask_recurrent(dh, H);
            return;
        case RnnCell::Gru:
        case RnnCell::GruResetAfter: break;
    }
    // GRU: h = u h' + (1 - u) o. dhn collects dL/dh' (in the scratch's second H row).
    const bool after = d_.cell == RnnCell::GruResetAfter;
    for (long n = 0; n < n_; ++n) {
        const float *z = pre + n * lg, *a = gate + n * lg, *dht = dh + n * H, *hpn = hp + n * lh;
        float *dz = dpre + n * lg, *da = da_of(n), *dhn = da + gh + H;
        for (long j = 0; j < H; ++j) {
            da[j] = dht[j] * (hpn[j] - a[2 * H + j]);
            da[2 * H + j] = dht[j] * (1.f - a[j]);
            dhn[j] = dht[j] * a[j];
        }
        act_back(ga, z, a, da, dz, H);
        act_back(ca, z + 2 * H, a + 2 * H, da + 2 * H, dz + 2 * H, H);
        if (!after) continue;
        // o's pre-activation holds r·rec: dr = dz_o rec, d(rec) = dz_o r.
        const float* rec = extra_.data() + (n0 + n) * lh + t * H;
        for (long j = 0; j < H; ++j) da[H + j] = dz[2 * H + j] * rec[j];
        act_back(ga, z + H, a + H, da + H, dz + H, H);
        float* drec = drec_.data() + (n0 + n) * lg + t * gh;
        std::copy_n(dz, 2 * H, drec);
        for (long j = 0; j < H; ++j) drec[2 * H + j] = dz[2 * H + j] * a[H + j];
    }
    // dhn: what h' got directly (the update); dhr: what it got through the recurrence's products,
    // which read it with its dropped units.
    float* dhn0 = scratch + gh + H;  // sample n's rows at + n * ls
    float* dhr0 = scratch + gh + 2 * H;
    if (after) {
        gemm(false, true, n_, H, gh, drec_.data() + n0 * lg + t * gh, lg, r, gh, 0.f, dhr0, ls);
    } else {
        // The candidate saw r h': d(r h') = dz_o R_o^T, then dr = d(r h') h', dh' += d(r h') r.
        const float* hr = rec_drop_ ? hrec_.data() + n0 * lh + t * H : hp;
        float* drh0 = scratch + gh;
        gemm(false, true, n_, H, H, dpre + 2 * H, lg, r + 2 * H, gh, 0.f, drh0, ls);
        for (long n = 0; n < n_; ++n) {
            const float *z = pre + n * lg, *a = gate + n * lg, *hrn = hr + n * lh;
            float *dz = dpre + n * lg, *da = da_of(n), *drh = da + gh, *dhr = drh + 2 * H;
            for (long j = 0; j < H; ++j) da[H + j] = drh[j] * hrn[j], dhr[j] = drh[j] * a[H + j];
            act_back(ga, z + H, a + H, da + H, dz + H, H);
        }
        gemm(false, true, n_, H, 2 * H, dpre, lg, r, gh, 1.f, dhr0, ls);
    }
    mask_recurrent(dhr0, ls);
    for (long n = 0; n < n_; ++n)
        for (long j = 0; j < H; ++j) dh[n * H + j] = dhn0[n * ls + j] + dhr0[n * ls + j];
}

}  // namespace thresher::backend::cpu
