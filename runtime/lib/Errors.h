//===- Errors.h - the runtime's per-thread last error -----------*- C++ -*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_LIB_ERRORS_H
#define FA_RUNTIME_LIB_ERRORS_H

#include "fa/Runtime/FaRuntime.h"

#include <string>

namespace fa::rt {

/// Records `message` as the calling thread's last error (faRtGetLastError)
/// and returns `status`.
faRtStatus reportError(faRtStatus status, std::string message);

} // namespace fa::rt

#endif // FA_RUNTIME_LIB_ERRORS_H
