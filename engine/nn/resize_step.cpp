// Layers that change an image's size without parameters: zero padding (borders of zeros),
// cropping (borders cut off) and nearest-neighbour upsampling. Padding and cropping are each
// other's backward -- the gradient of a padded image is its middle, the gradient of a cropped one
// is zero where the crop cut -- so both run on the backends' pad_planes/crop_planes.
#include "nn/layer_step.h"

namespace thresher::nn {

namespace {

// The small image sits inside the large one at (top, left): for padding the input is the small
// one, for cropping the output is.
backend::PadDesc pad_desc(const config::LayerConfig& l, int batch) {
    const bool pad = l.type == config::LayerType::ZeroPadding;
    const auto& small = pad ? l.in_shape : l.out_shape;
    const auto& large = pad ? l.out_shape : l.in_shape;
    return {batch * l.in_shape.c, small.h, small.w, l.margins[0], l.margins[2], large.h, large.w};
}

class PadStep final : public LayerStep {
public:
    PadStep(backend::Backend& be, const config::LayerConfig& l, int batch) : be_(be), d_(pad_desc(l, batch)) {}
    void forward(float*, const float* x, float* y, const StepContext&) override { be_.pad_planes(d_, x, y); }
    void backward(const float*, const float*, const float*, float* dy, float* dx, float*) override {
        if (dx) be_.crop_planes(d_, dy, dx);
    }

private:
    backend::Backend& be_;
    backend::PadDesc d_;
};

class CropStep final : public LayerStep {
public:
    CropStep(backend::Backend& be, const config::LayerConfig& l, int batch) : be_(be), d_(pad_desc(l, batch)) {}
    void forward(float*, const float* x, float* y, const StepContext&) override { be_.crop_planes(d_, x, y); }
    void backward(const float*, const float*, const float*, float* dy, float* dx, float*) override {
        if (dx) be_.pad_planes(d_, dy, dx);
    }

private:
    backend::Backend& be_;
    backend::PadDesc d_;
};

class UpsampleStep final : public LayerStep {
public:
    UpsampleStep(backend::Backend& be, const config::LayerConfig& l, int batch)
        : be_(be), d_{batch * l.in_shape.c, l.in_shape.h, l.in_shape.w, l.scale[0], l.scale[1]} {}
    void forward(float*, const float* x, float* y, const StepContext&) override { be_.upsample_forward(d_, x, y); }
    void backward(const float*, const float*, const float*, float* dy, float* dx, float*) override {
        if (dx) be_.upsample_backward(d_, dy, dx);
    }

private:
    backend::Backend& be_;
    backend::UpsampleDesc d_;
};

}  // namespace

std::unique_ptr<LayerStep> plan_resize(backend::Backend& be, const config::LayerConfig& l, int batch) {
    switch (l.type) {
        case config::LayerType::ZeroPadding: return std::make_unique<PadStep>(be, l, batch);
        case config::LayerType::Cropping: return std::make_unique<CropStep>(be, l, batch);
        default: return std::make_unique<UpsampleStep>(be, l, batch);
    }
}

}  // namespace thresher::nn
