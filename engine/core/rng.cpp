#include "core/rng.h"

namespace thresher {

namespace {
std::uint64_t splitmix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}
}  // namespace

std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t a, std::uint64_t b) {
    return splitmix(splitmix(splitmix(seed) ^ a) ^ b);
}

}  // namespace thresher
