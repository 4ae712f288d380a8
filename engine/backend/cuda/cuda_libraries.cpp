#include "backend/cuda/cuda_libraries.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>

#include "core/error.h"

namespace thresher::backend::cuda {

namespace {

// Opened for the life of the process: the backends' handles may outlive any one user.
void* open_library(const std::string& soname, const char* fallback_dir, const char* what) {
    if (void* h = ::dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    std::string reason = ::dlerror();
    if (fallback_dir && *fallback_dir) {
        const std::string path = std::string(fallback_dir) + "/" + soname;
        if (void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
        reason += "; " + std::string(::dlerror());
    }
    throw BackendError(std::string(what) + " (" + soname + ") could not be loaded: " + reason +
                       " (add its folder to LD_LIBRARY_PATH)");
}

template <class Fn>
void resolve(void* library, const char* soname, const char* name, Fn& fn) {
    fn = reinterpret_cast<Fn>(::dlsym(library, name));
    if (!fn) throw BackendError(std::string(soname) + " has no " + name + ": is it the version this engine was built for?");
}

CudaLibraries load() {
    CudaLibraries l;
    const std::string cublas_name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    const std::string cudnn_name = "libcudnn.so." + std::to_string(CUDNN_MAJOR);
    void* cublas = open_library(cublas_name, THRESHER_CUBLAS_DIR, "cuBLAS");
    void* cudnn = open_library(cudnn_name, THRESHER_CUDNN_DIR, "cuDNN");
#define THRESHER_RESOLVE_CUBLAS(name) resolve(cublas, cublas_name.c_str(), #name, l.name);
#define THRESHER_RESOLVE_CUDNN(name) resolve(cudnn, cudnn_name.c_str(), #name, l.name);
    THRESHER_CUBLAS_FUNCTIONS(THRESHER_RESOLVE_CUBLAS)
    THRESHER_CUDNN_FUNCTIONS(THRESHER_RESOLVE_CUDNN)
#undef THRESHER_RESOLVE_CUBLAS
#undef THRESHER_RESOLVE_CUDNN
    return l;
}

}  // namespace

const CudaLibraries& libraries() {
    static std::atomic<const CudaLibraries*> ready{nullptr};
    if (const CudaLibraries* t = ready.load(std::memory_order_acquire)) return *t;
    static std::mutex mutex;
    static CudaLibraries table;
    std::lock_guard lock(mutex);
    if (!ready.load(std::memory_order_relaxed)) {
        table = load();  // throws, leaving `ready` null, when a library is missing
        ready.store(&table, std::memory_order_release);
    }
    return table;
}

}  // namespace thresher::backend::cuda
