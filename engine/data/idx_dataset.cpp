// Turns an (images, labels) IDX pair into features in [0, 1] and one-hot targets.
#include "data/idx_dataset.h"

#include "core/error.h"
#include "data/memory_budget.h"

#include <algorithm>
#include <limits>

namespace thresher::data {

namespace {

std::string dims_text(const IdxArray& a) {
    std::string s = "[";
    for (std::size_t i = 0; i < a.dims.size(); ++i)
        s += (i ? ", " : "") + std::to_string(a.dims[i]);
    return s + "]";
}

SampleShape image_shape(const IdxArray& images, const std::string& name) {
    const auto& d = images.dims;
    auto to_int = [&](std::uint32_t v) {
        if (v > static_cast<std::uint32_t>(std::numeric_limits<int>::max()))
            throw DataError(name + ": header: dimension " + std::to_string(v) + " is too large");
        return static_cast<int>(v);
    };
    switch (d.size()) {
        case 2:
            return SampleShape{1, 1, to_int(d[1])};
        case 3:
            return SampleShape{1, to_int(d[1]), to_int(d[2])};
        case 4:
            return SampleShape{to_int(d[1]), to_int(d[2]), to_int(d[3])};
        default:
            throw DataError(name + ": header: images have dimensions " + dims_text(images) +
                            ", expected [N, features], [N, H, W] or [N, C, H, W]");
    }
}

}  // namespace

Dataset make_idx_dataset(const IdxArray& images, const std::string& images_name,
                         const IdxArray& labels, const std::string& labels_name, int num_classes) {
    const SampleShape shape = image_shape(images, images_name);
    // Arrays from read_idx always match their dims; hand-built ones might not.
    if (images.data.size() != images.element_count() ||
        labels.data.size() != labels.element_count()) {
        throw DataError((images.data.size() != images.element_count() ? images_name : labels_name) +
                        ": data size does not match the dimensions");
    }
    if (labels.dims.size() != 1) {
        throw DataError(labels_name + ": header: labels have dimensions " + dims_text(labels) +
                        ", expected one dimension [N]");
    }
    const std::size_t n = images.dims[0];
    if (labels.dims[0] != n) {
        throw DataError(labels_name + ": header: " + std::to_string(labels.dims[0]) +
                        " labels, but " + images_name + " holds " + std::to_string(n) + " images");
    }
    if (n == 0) throw DataError(images_name + ": header: the file holds no samples");

    int max_label = 0;
    for (std::uint8_t v : labels.data) max_label = std::max(max_label, int{v});
    if (num_classes > 0) {
        if (max_label >= num_classes) {
            const auto at = std::find_if(labels.data.begin(), labels.data.end(),
                                         [&](std::uint8_t v) { return v >= num_classes; });
            throw DataError(labels_name + ": label " + std::to_string(at - labels.data.begin()) +
                            ": class " + std::to_string(*at) + " is out of range for " +
                            std::to_string(num_classes) + " classes");
        }
    } else {
        num_classes = std::max(max_label + 1, 2);  // the classes the labels name (binary at least)
    }

    // The largest label sets every sample's one-hot width; against the data actually read (gzip
    // bombs are bounded by the reader), so tiny samples with one label of 255 cannot ask for GBs.
    const auto at = std::max_element(labels.data.begin(), labels.data.end());
    check_memory_budget(labels_name + ": label " + std::to_string(at - labels.data.begin()),
                        "class " + std::to_string(*at) + " (the largest) makes " + std::to_string(num_classes) +
                            " classes: one-hot targets for " + std::to_string(n) + " samples",
                        std::uint64_t{n} * static_cast<std::uint64_t>(num_classes) * sizeof(float),
                        images.data.size() + labels.data.size());

    Dataset ds;
    ds.name = images_name;
    ds.shape = shape;
    ds.count = n;
    ds.num_classes = num_classes;
    ds.target_size = static_cast<std::size_t>(num_classes);

    ds.features.resize(images.data.size());
    // Divide rather than multiply by 1/255: 255 must map to exactly 1.0f.
    std::transform(images.data.begin(), images.data.end(), ds.features.begin(),
                   [](std::uint8_t v) { return static_cast<float>(v) / 255.0f; });

    ds.labels.assign(labels.data.begin(), labels.data.end());
    ds.targets.assign(n * ds.target_size, 0.0f);
    for (std::size_t i = 0; i < n; ++i) ds.targets[i * ds.target_size + labels.data[i]] = 1.0f;
    return ds;
}

Dataset load_idx_pair(const std::string& images_path, const std::string& labels_path,
                      int num_classes) {
    const IdxArray images = read_idx(images_path);
    const IdxArray labels = read_idx(labels_path);
    return make_idx_dataset(images, images_path, labels, labels_path, num_classes);
}

}  // namespace thresher::data
