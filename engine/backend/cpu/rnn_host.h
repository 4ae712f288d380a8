// One direction of a recurrent layer computed on the host, for the activations oneDNN's RNN
// primitives lack (Keras 2 / DL4J hard_sigmoid gates, softsign or relu cells, ...). It keeps the
// contract of rnn_op.cpp's primitives for one direction: x [N x T x in] (ntc), h [N x T x H],
// the same W, R, b, P layout (backend.h RnnDesc), all T steps left to right from a zero state.
// rnn_op.cpp does the rest (reversal within lengths, merges, masking) for both paths.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace thresher::backend::cpu {

// True when oneDNN has a primitive for the desc: lstm/gru with sigmoid gates and a tanh cell,
// vanilla tanh, relu or sigmoid, without dropout inside the cell (oneDNN's cells have none).
// Everything else runs on RnnHostDirection.
bool rnn_has_primitive(const RnnDesc&);

class RnnHostDirection {
public:
    explicit RnnHostDirection(const RnnDesc&);

    // This iteration's dropout masks (RnnDesc::input_retain, recurrent_retain), from `seed` alone.
    void draw_dropout(std::uint64_t seed);
    // p: this direction's parameters (W, R, b, P). Keeps what backward reads. `training`: apply
    // the masks draw_dropout drew (when the desc has dropout).
    void forward(const float* x, const float* p, float* h, bool training = false);
    // After forward on the same x and p: dh is dL/dh at every step (zero where nothing reads h);
    // g (this direction's parameter gradients) is overwritten; dx [N x T x in] is overwritten.
    void backward(const float* x, const float* p, const float* dh, float* dx, float* g);

private:
    // One step for samples n0 .. n1 - 1 (one thread's share of the batch).
    void step_forward(int t, long n0, long n1, const float* r, const float* b, const float* peep, float* h);
    void step_backward(int t, long n0, long n1, const float* r, const float* peep);

    RnnDesc d_;
    int g_ = 0;           // gates per unit (4 lstm, 3 gru, 1 vanilla)
    long gh_ = 0;         // g_ * hidden: one row of gates
    std::size_t w_ = 0, r_ = 0, b_ = 0;  // parameter block sizes
    // Per (sample, step) rows, [N x T x ...]: gate pre-activations and values, the state before
    // the step, the lstm cell and act(cell), gru's r*h' (reset before) or R_o h' + b_o' (after).
    std::vector<float> pre_, gate_, hprev_, c_, cact_, extra_;
    // Backward: dL/d(gate pre-activations); gru reset-after's recurrent part; per-step carries.
    std::vector<float> dpre_, drec_, dh_, dc_, tmp_;
    // Dropout: masks [N x in] and [N x H] (empty: none), the masked input [N x T x in] and the
    // masked h' [N x T x H] the recurrence read; whether the last forward applied them.
    std::vector<float> in_mask_, rec_mask_, xm_, hrec_;
    bool in_drop_ = false, rec_drop_ = false;
};

}  // namespace thresher::backend::cpu
