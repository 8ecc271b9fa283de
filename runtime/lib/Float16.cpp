//===- Float16.cpp - f16 and bf16 conversions on the host ----------------===//
//
// Part of the fa-opt project.
//
//===----------------------------------------------------------------------===//

#include "fa/Runtime/Float16.h"

#include <cstring>

static uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

static float bitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

/// Shifts `value` right by `shift` (1..31) rounding to nearest, ties to even.
static uint32_t shiftRightRoundEven(uint32_t value, int shift) {
  uint32_t kept = value >> shift;
  uint32_t rest = value & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (kept & 1u)))
    ++kept;
  return kept;
}

uint16_t fa::rt::floatToHalf(float value) {
  const uint32_t bits = floatBits(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) // NaN: keep it a (quiet) NaN.
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x1ffu));
  // 65520 = 65504 + half an ulp: it and everything above round to infinity.
  if (magnitude >= 0x477ff000u)
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (magnitude >= 0x38800000u) { // >= 2^-14: a normal half.
    // Rebias the exponent (127 -> 15) and drop 13 mantissa bits; a carry out
    // of the mantissa correctly bumps the exponent.
    uint32_t rebased = magnitude - ((127u - 15u) << 23);
    return static_cast<uint16_t>(sign | shiftRightRoundEven(rebased, 13));
  }
  if (magnitude <= 0x33000000u) // <= 2^-25 rounds to zero (2^-25 is a tie).
    return static_cast<uint16_t>(sign);
  // A subnormal half: the value in units of 2^-24. The float is normal here
  // (2^-25 < |x| < 2^-14): mantissa m with the hidden bit times 2^(e-150).
  uint32_t exponent = magnitude >> 23;
  uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
  int shift = 126 - static_cast<int>(exponent); // 14 .. 24
  return static_cast<uint16_t>(sign | shiftRightRoundEven(mantissa, shift));
}

float fa::rt::halfToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  const uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1f) // Inf or NaN.
    return bitsToFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0)
    return bitsToFloat(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24, exact in float.
  float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
  return sign ? -magnitude : magnitude;
}

uint16_t fa::rt::floatToBFloat16(float value) {
  const uint32_t bits = floatBits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN: quiet, keep the sign.
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  // Round to nearest even on the low 16 bits; overflow carries into
  // infinity as it should.
  uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

float fa::rt::bfloat16ToFloat(uint16_t bits) {
  return bitsToFloat(static_cast<uint32_t>(bits) << 16);
}

float fa::rt::roundToDtype(float value, faRtDtype dtype) {
  switch (dtype) {
  case FA_RT_DTYPE_F16:
    return halfToFloat(floatToHalf(value));
  case FA_RT_DTYPE_BF16:
    return bfloat16ToFloat(floatToBFloat16(value));
  case FA_RT_DTYPE_F32:
    break;
  }
  return value;
}

void fa::rt::encodeFloats(const float *in, size_t count, faRtDtype dtype,
                          void *out) {
  if (dtype == FA_RT_DTYPE_F32) {
    std::memcpy(out, in, count * sizeof(float));
    return;
  }
  auto *bits = static_cast<uint16_t *>(out);
  for (size_t i = 0; i < count; ++i)
    bits[i] =
        dtype == FA_RT_DTYPE_F16 ? floatToHalf(in[i]) : floatToBFloat16(in[i]);
}

void fa::rt::decodeFloats(const void *in, size_t count, faRtDtype dtype,
                          float *out) {
  if (dtype == FA_RT_DTYPE_F32) {
    std::memcpy(out, in, count * sizeof(float));
    return;
  }
  const auto *bits = static_cast<const uint16_t *>(in);
  for (size_t i = 0; i < count; ++i)
    out[i] = dtype == FA_RT_DTYPE_F16 ? halfToFloat(bits[i])
                                      : bfloat16ToFloat(bits[i]);
}
