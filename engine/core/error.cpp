#include "core/error.h"
// Keeps the vtables of the exception hierarchy in one translation unit.
