// Exceptions the engine throws at its boundaries. Each message names what went wrong and where
// (file and byte offset, config path such as "layers[2].kernel", or the oneDNN call), so the
// command line can print it as is and exit non-zero.
#pragma once

#include <stdexcept>
#include <string>

namespace thresher {

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A model or run configuration that cannot be used. Message: "<source>: <path>: <problem>".
class ConfigError : public Error {
public:
    using Error::Error;
};

// A data file that cannot be read as what it claims to be. Message: "<file>: <place>: <problem>".
class DataError : public Error {
public:
    using Error::Error;
};

// A saved model file that is missing, truncated, corrupt or from an incompatible version.
class ModelFileError : public Error {
public:
    using Error::Error;
};

// A failure reported by a backend library (oneDNN, CUDA, ...), with the call that failed.
class BackendError : public Error {
public:
    using Error::Error;
};

}  // namespace thresher
