// DL4J's flattened parameter and updater-state layout, shared by the DL4J zip importer
// (weight_import.cpp: DL4J -> Thresher) and the DL4J exporter (export/dl4j_params.cpp: Thresher
// -> DL4J), so the two directions cannot drift apart.
//
// Parameters, layer after layer in DL4J's order (a MultiLayerNetwork's confs; a ComputationGraph's
// topological order, dl4j_graph.h), each layer's blocks as its ParamInitializer views them:
//   dense / output   W [nIn, nOut] 'f' (W[r, o] at r + o·nIn; Thresher keeps r·nOut + o), b
//                    (DefaultParamInitializer)
//   convolution      b, W [nOut, nIn, kh, kw] 'c': Thresher's layout (ConvolutionParamInitializer)
//   depthwise        b [nIn·m], W [m, nIn, kh, kw] 'c' (DepthwiseConvolutionParamInitializer); DL4J
//                    permutes W to libnd4j's [kh, kw, nIn, m], so kernel (k, c) makes output channel
//                    c·m + k, Thresher's W[(c·m + k), 0, kh, kw]
//   separable        b [nOut], W [m, nIn, kh, kw] 'c' (as depthwise: Thresher's Depthwise block),
//                    pW [nOut, nIn·m, 1, 1] 'c' (Thresher's [filters, in·m] Weight as it is)
//                    (SeparableConvolutionParamInitializer)
//   transposed       b, W [nIn, nOut, kh, kw] 'c': Thresher's layout (DeconvolutionParamInitializer)
//   batch norm       gamma, beta, mean, var (BatchNormalizationParamInitializer; no updater state
//                    for mean and var: DL4J's NoOp)
//   prelu            alpha [c', h', w'] 'f' (a shared axis has extent 1) (PReLUParamInitializer)
//   lstm, simple_rnn W, RW, b per direction as one run over the layer (dl4j_recurrent.h has the
//                    gate order and GravesLSTM's peephole columns) (LSTM/GravesLSTM/SimpleRnn ParamInitializers)
//   embedding        W [nIn, nOut] 'f' as dense, then b when hasBias (must be zero: Thresher has none)
//   convolution1d    b, W [nOut, nIn, k, 1] 'c': Thresher's layout (Convolution1DLayer's ConvolutionParamInitializer)
// A layer without a bias in DL4J (hasBias false) has no b chunk.
//
// Updater state: UpdaterBlocks, runs of consecutive chunks (across layers) whose updater
// configuration is equal (DL4J 1.0's UpdaterUtils.updaterConfigurationsEquals); a NoOp chunk
// ends a block. A block holds its state components one after the other over the whole block:
// Nesterovs' v; AdaGrad's and RmsProp's running squares; Adam's m, then v. Worked example, an MLP
// 6 -> 4 -> 3 all on one Adam: [m(W1 'f'), m(b1), m(W2 'f'), m(b2), v(W1 'f'), ...].
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "config/model_config.h"

namespace thresher::config {

// One parameter block of one layer, as DL4J holds it.
struct Dl4jChunk {
    std::size_t layer = 0;
    ParamRole role = ParamRole::Weight;
    std::size_t n = 0;
    bool stateful = true;  // false: DL4J's NoOp updater (batch-norm mean and variance)
};

// The chunks of the layers `order` lists (indices into m.layers, in DL4J's flattening order);
// has_bias(layer) says whether DL4J's layer keeps a bias (its hasBias).
std::vector<Dl4jChunk> dl4j_chunks(const ModelConfig& m, const std::vector<std::size_t>& order,
                                   const std::function<bool(std::size_t)>& has_bias);
// Every layer in m's own order, each with its bias.
std::vector<Dl4jChunk> dl4j_chunks(const ModelConfig& m);

// Where DL4J's element j of a chunk sits in Thresher's block of the same role (an index into
// the block): the one permutation both directions use.
std::size_t dl4j_to_thresher_index(const LayerConfig& l, ParamRole role, std::size_t j);

// Copies one chunk (n values) between DL4J's layout and Thresher's block.
void dl4j_chunk_to_thresher(const LayerConfig& l, const Dl4jChunk& c, const float* dl4j, float* ours);
void thresher_chunk_to_dl4j(const LayerConfig& l, const Dl4jChunk& c, const float* ours, float* dl4j);

// Thresher's updater-state layout (nn/network.cpp): layer after layer, block after block, each
// trainable block with updater_state_per_param values per parameter ([m..., v...] for Adam).
struct ThresherStateLayout {
    std::map<std::pair<std::size_t, ParamRole>, std::size_t> offset;  // (layer, role) -> first value
    std::size_t total = 0;
};
ThresherStateLayout thresher_state_layout(const ModelConfig& m);

// Where element j of a chunk's DL4J updater-state component `component` sits in Thresher's
// updater state (an index into the whole buffer, `layout`'s). A recurrent layer's chunk spans
// several of Thresher's blocks, each of which keeps its components one after the other.
std::size_t dl4j_state_index(const ModelConfig& m, const ThresherStateLayout& layout, const Dl4jChunk& c,
                             std::size_t component, std::size_t j);

// DL4J 1.0's UpdaterUtils.updaterConfigurationsEquals on the two layers' effective updaters.
bool dl4j_same_updater(const ModelConfig& m, std::size_t a, std::size_t b);

// The state components per parameter a chunk's updater keeps in DL4J (0 for NoOp chunks).
std::size_t dl4j_state_per_param(const ModelConfig& m, const Dl4jChunk& c);

// Walks updaterState.bin in order: visit(chunk, component) for each chunk's component in DL4J's
// UpdaterBlock order; each visit covers c.n consecutive values.
void dl4j_walk_updater_state(const ModelConfig& m, const std::vector<Dl4jChunk>& chunks,
                             const std::function<void(const Dl4jChunk&, std::size_t component)>& visit);

}  // namespace thresher::config
