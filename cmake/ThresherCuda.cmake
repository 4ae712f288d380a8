# Finds what the CUDA backend needs and enables the CUDA language, following THRESHER_CUDA:
#   AUTO  build engine/backend/cuda when nvcc, the CUDA toolkit (cudart, cuBLAS) and cuDNN are
#         all found; otherwise skip it and say what was missing
#   ON    the same, but anything missing is a configure error that names it
#   OFF   skip it without looking
# Included (not called) from engine/backend/CMakeLists.txt: enable_language() must run at file
# scope. Sets THRESHER_CUDA_ENABLED (ON/OFF), THRESHER_CUDA_WHY (a phrase for the status line)
# and, when enabled, THRESHER_CUDNN_INCLUDE_DIR and THRESHER_CUDNN_LIBRARY.
# nvcc is often installed outside PATH (/usr/local/cuda/bin); CUDACXX or CMAKE_CUDA_COMPILER
# still win when given.

set(THRESHER_CUDA_ENABLED OFF)
set(THRESHER_CUDA_WHY "")
string(TOUPPER "${THRESHER_CUDA}" _thresher_cuda_mode)
if(NOT _thresher_cuda_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "THRESHER_CUDA=${THRESHER_CUDA}: expected AUTO, ON or OFF")
endif()

if(_thresher_cuda_mode STREQUAL "OFF")
  set(THRESHER_CUDA_WHY "THRESHER_CUDA=OFF")
else()
  set(_thresher_cuda_missing "")
  set(_thresher_cudnn_major "?")

  # 1. The compiler. check_language() runs a trial project that honours CUDACXX, so pointing
  #    CUDACXX at a found nvcc also tests that it works with this host compiler.
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    find_program(THRESHER_NVCC nvcc
      HINTS ENV CUDA_PATH ENV CUDA_HOME ${CUDAToolkit_ROOT} /usr/local/cuda
      PATH_SUFFIXES bin)
    if(THRESHER_NVCC)
      set(ENV{CUDACXX} "${THRESHER_NVCC}")
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    list(APPEND _thresher_cuda_missing "nvcc (a working CUDA compiler: set CUDACXX or CMAKE_CUDA_COMPILER)")
  endif()

  # 2. The toolkit's libraries, from the same installation as the compiler.
  if(CMAKE_CUDA_COMPILER AND NOT CUDAToolkit_ROOT)
    get_filename_component(_thresher_nvcc_dir "${CMAKE_CUDA_COMPILER}" DIRECTORY)
    get_filename_component(CUDAToolkit_ROOT "${_thresher_nvcc_dir}" DIRECTORY)
  endif()
  find_package(CUDAToolkit QUIET)
  if(NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::cudart_static)
    list(APPEND _thresher_cuda_missing "the CUDA toolkit runtime (CUDA::cudart_static)")
  endif()
  if(NOT TARGET CUDA::cublas)
    list(APPEND _thresher_cuda_missing "cuBLAS (CUDA::cublas)")
  endif()

  # 3. cuDNN: not part of the toolkit proper, but often unpacked into it.
  find_path(THRESHER_CUDNN_INCLUDE_DIR cudnn.h
    HINTS ENV CUDNN_ROOT ${CUDNN_ROOT} ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_ROOT} /usr/local/cuda
    PATH_SUFFIXES include)
  find_library(THRESHER_CUDNN_LIBRARY cudnn
    HINTS ENV CUDNN_ROOT ${CUDNN_ROOT} ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_ROOT} /usr/local/cuda
    PATH_SUFFIXES lib64 lib)
  if(NOT THRESHER_CUDNN_INCLUDE_DIR OR NOT THRESHER_CUDNN_LIBRARY)
    list(APPEND _thresher_cuda_missing "cuDNN 9 (cudnn.h and libcudnn: set CUDNN_ROOT)")
  elseif(EXISTS "${THRESHER_CUDNN_INCLUDE_DIR}/cudnn_version.h")
    file(STRINGS "${THRESHER_CUDNN_INCLUDE_DIR}/cudnn_version.h" _thresher_cudnn_major
      REGEX "^#define CUDNN_MAJOR [0-9]+")
    string(REGEX REPLACE "^#define CUDNN_MAJOR ([0-9]+).*" "\\1" _thresher_cudnn_major "${_thresher_cudnn_major}")
    if(_thresher_cudnn_major LESS 9)
      list(APPEND _thresher_cuda_missing "cuDNN 9 or later (found cuDNN ${_thresher_cudnn_major} at ${THRESHER_CUDNN_INCLUDE_DIR})")
    endif()
  endif()

  if(_thresher_cuda_missing)
    list(JOIN _thresher_cuda_missing "; " _thresher_cuda_missing_text)
    if(_thresher_cuda_mode STREQUAL "ON")
      message(FATAL_ERROR "THRESHER_CUDA=ON, but the CUDA backend cannot be built: not found: "
                          "${_thresher_cuda_missing_text}. Install them or configure with "
                          "-DTHRESHER_CUDA=AUTO (build without it when missing) or OFF.")
    endif()
    set(THRESHER_CUDA_WHY "not found: ${_thresher_cuda_missing_text}")
  else()
    # H100/H200 machine code plus PTX, which newer GPUs compile at load time.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "90-real;90-virtual")
    endif()
    enable_language(CUDA)
    set(THRESHER_CUDA_ENABLED ON)
    string(CONCAT THRESHER_CUDA_WHY "nvcc ${CMAKE_CUDA_COMPILER_VERSION}, cuDNN "
           "${_thresher_cudnn_major} (${THRESHER_CUDNN_LIBRARY}), architectures ${CMAKE_CUDA_ARCHITECTURES}")
  endif()
endif()
