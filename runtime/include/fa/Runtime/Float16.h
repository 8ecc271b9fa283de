//===- Float16.h - f16 and bf16 conversions on the host ----------*- C++
//-*-===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//
//
// IEEE binary16 and bfloat16 <-> float in plain C++: float to 16 bits rounds
// to nearest, ties to even, with subnormals, overflow to infinity and NaN
// kept NaN; 16 bits to float is exact.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_FLOAT16_H
#define FA_RUNTIME_FLOAT16_H

#include "fa/Runtime/FaRuntime.h"

#include <cstddef>
#include <cstdint>

namespace fa::rt {

uint16_t floatToHalf(float value);
float halfToFloat(uint16_t bits);
uint16_t floatToBFloat16(float value);
float bfloat16ToFloat(uint16_t bits);

/// `value` rounded to `dtype` and back: the value the device will see.
float roundToDtype(float value, faRtDtype dtype);

/// Encodes `count` floats as `dtype` into `out` (dtypeSize(dtype) * count
/// bytes), rounding to nearest even.
void encodeFloats(const float *in, size_t count, faRtDtype dtype, void *out);

/// Decodes `count` elements of `dtype` into floats.
void decodeFloats(const void *in, size_t count, faRtDtype dtype, float *out);

} // namespace fa::rt

#endif // FA_RUNTIME_FLOAT16_H
