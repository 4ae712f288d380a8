# Finds what ONNX export needs, following THRESHER_ONNX:
#   AUTO  build ONNX export when protobuf and Debian's ONNX CMake package (libonnx-dev) are found;
#         otherwise export-model --format onnx says the build has none
#   ON    the same, but anything missing is a configure error naming the package
#   OFF   skip it without looking
# Sets THRESHER_ONNX_ENABLED (ON/OFF) and THRESHER_ONNX_WHY (a phrase for the status line).
# Protobuf first: the ONNX targets link protobuf::libprotobuf, which FindProtobuf defines.
set(THRESHER_ONNX_ENABLED OFF)
string(TOUPPER "${THRESHER_ONNX}" _thresher_onnx_mode)
if(NOT _thresher_onnx_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "THRESHER_ONNX=${THRESHER_ONNX}: expected AUTO, ON or OFF")
endif()
if(_thresher_onnx_mode STREQUAL "OFF")
  set(THRESHER_ONNX_WHY "THRESHER_ONNX=OFF")
else()
  find_package(Protobuf QUIET)
  if(Protobuf_FOUND)
    find_package(ONNX CONFIG QUIET)
  endif()
  if(NOT Protobuf_FOUND)
    set(THRESHER_ONNX_WHY "protobuf not found (Debian: libprotobuf-dev protobuf-compiler)")
  elseif(NOT ONNX_FOUND OR NOT TARGET onnx)
    set(THRESHER_ONNX_WHY "ONNX's CMake package not found (Debian: libonnx-dev)")
  else()
    set(THRESHER_ONNX_ENABLED ON)
    set(THRESHER_ONNX_WHY "libonnx ${ONNX_VERSION}, protobuf ${Protobuf_VERSION}")
  endif()
  if(_thresher_onnx_mode STREQUAL "ON" AND NOT THRESHER_ONNX_ENABLED)
    message(FATAL_ERROR "THRESHER_ONNX=ON: ${THRESHER_ONNX_WHY}")
  endif()
endif()
if(THRESHER_ONNX_ENABLED)
  message(STATUS "ONNX export: built (${THRESHER_ONNX_WHY})")
else()
  message(STATUS "ONNX export: not built (${THRESHER_ONNX_WHY})")
endif()
