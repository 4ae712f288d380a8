// make_fashion_png_folder IDX_FOLDER OUT [TRAIN [TEST]]: Fashion-MNIST's IDX files written as PNG
// files in class folders (OUT/train/<class>/, OUT/test/<class>/), the data set
// test_image_folder_training trains on, for trying image folders by hand:
//   build/release/bin/make_fashion_png_folder /usr/share/datasets/fashion-mnist /tmp/fashion-png 6000 1000
//   build/release/bin/thresher-engine train --model resources/models/lenet.json --data /tmp/fashion-png
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "image_files.h"

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s IDX_FOLDER OUT [TRAIN (60000)] [TEST (10000)]\n", argv[0]);
        return 2;
    }
    try {
        const int train = argc > 3 ? std::atoi(argv[3]) : 60000;
        const int test = argc > 4 ? std::atoi(argv[4]) : 10000;
        const int n = test_support::write_fashion_png_folder(argv[1], argv[2], train, test);
        std::printf("%d PNG files in %s\n", n, argv[2]);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_fashion_png_folder: %s\n", e.what());
        return 1;
    }
    return 0;
}
