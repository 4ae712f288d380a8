// Thresher's sequence layers as Keras layers, the inverse of engine/config/keras_recurrent.cpp:
//   lstm, gru (reset_after either way), simple_rnn -> LSTM, GRU, SimpleRNN; two directions ->
//   Bidirectional(LSTM ...) with merge_mode concat, sum, mul, ave
//   embedding -> Embedding;  convolution1d -> Conv1D;  repeat_vector -> RepeatVector
//   subsampling on a sequence -> MaxPooling1D / AveragePooling1D, or the global ones
// Weights in Keras's layouts: kernel [C, G*H], recurrent_kernel [H, G*H] (the gate orders agree),
// bias [G*H] or GRU reset_after's [2, 3H] (input row: z and r summed, the input candidate bias;
// recurrent row: zeros for z and r, the recurrent candidate bias: it imports back bit for bit);
// embeddings [V, E]; Conv1D kernel [k, C, filters]. In a .keras file a recurrent layer's
// variables are its cell's (cell/vars; Bidirectional forward_layer/cell, backward_layer/cell).
// Refused, naming the layer: peepholes (DL4J GravesLSTM: Keras has none), a forget-gate bias
// that starts other than at 0 or 1.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/model_config.h"
#include "export/keras_model.h"

namespace thresher::model_export {

bool is_keras_sequence_export(config::LayerType type);

struct KerasSequenceLayer {
    std::string class_name;
    nlohmann::json config = nlohmann::json::object();
    std::string why;  // not empty: Keras cannot express the layer, and why
};

// `kernel_init` and `kernel_regularizer` are the layer's, as Keras serialises them; `activation`
// the Keras name of a Conv1D's or SimpleRNN's activation, or an LSTM's / GRU's cell activation;
// `gate_activation` an LSTM's / GRU's recurrent_activation.
KerasSequenceLayer keras_sequence_layer(const config::LayerConfig& l, KerasDialect d, const nlohmann::json& kernel_init,
                                        const nlohmann::json& kernel_regularizer, const std::string& activation,
                                        const std::string& gate_activation = "sigmoid");

std::vector<KerasWeight> keras_sequence_weights(const ExportableModel& m, const config::LayerConfig& l);

}  // namespace thresher::model_export
