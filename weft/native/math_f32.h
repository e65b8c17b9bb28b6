// float32 math functions that the CPU build computes itself instead of calling the C library,
// written so that a loop of them vectorises: no branches, no calls, selects done on bits.
//
// tanh: the C library's tanhf (glibc's is fdlibm's, through expm1f) is a call per element that
// stops vectorisation and costs ~19 ns here, which made tanh-activated tile MLPs tanh-bound. This
// one computes in float64 and rounds once, so its result is the correctly rounded tanh: 0 ulp
// from float64 tanh rounded to float32 on 80M sampled inputs, where glibc 2.36's tanhf is 1-2 ulp
// off on 21 % of them. With explicit fma (and no contraction: runtime/cpu.py passes -ffp-contract=off) the
// bits are the same at every vector width and on every machine. CUDA keeps its own tanhf.
#pragma once
#include "core.h"

#if !defined(WEFT_CUDA)
namespace weft {
namespace f32math {

WEFT_FN uint64 bits_of(double d) {
    uint64 u;
    memcpy(&u, &d, 8);
    return u;
}
WEFT_FN double double_of(uint64 u) {
    double d;
    memcpy(&d, &u, 8);
    return d;
}

WEFT_FN float tanh(float xf) {
    // |x| clamped to 10 on its bits (tanh rounds to 1 from 9.02 on; integer min, no branch), NaN kept
    uint32 ux;
    memcpy(&ux, &xf, 4);
    ux &= 0x7fffffffu;
    uint32 uc = ux < 0x41200000u ? ux : 0x41200000u;
    uc |= ux > 0x7f800000u ? 0x7fc00000u : 0u;
    float af;
    memcpy(&af, &uc, 4);
    const double a = af;
    // |x| < 0.25: the odd Taylor series through x^17 (truncation below 4e-15 relative)
    const double s = a * a;
    double p = 6404582.0 / 10854718875.0;
    p = ::fma(p, s, -929569.0 / 638512875.0);
    p = ::fma(p, s, 21844.0 / 6081075.0);
    p = ::fma(p, s, -1382.0 / 155925.0);
    p = ::fma(p, s, 62.0 / 2835.0);
    p = ::fma(p, s, -17.0 / 315.0);
    p = ::fma(p, s, 2.0 / 15.0);
    p = ::fma(p, s, -1.0 / 3.0);
    const double small = ::fma(a * s, p, a);
    // otherwise 1 - 2 / (exp(2|x|) + 1); exp(t) = 2^k exp(r), |r| <= ln2 / 2, Taylor through r^11
    // (below 7e-15 relative); k is rounded by the 1.5 * 2^52 shift, whose low bits then hold it
    const double t = 2.0 * a;
    const double shifted = ::fma(t, 1.4426950408889634, 6755399441055744.0);
    const double k = shifted - 6755399441055744.0;
    double r = ::fma(-k, 6.93147180369123816490e-01, t);  // ln 2, high part
    r = ::fma(-k, 1.90821492927058770002e-10, r);         // and the rest
    double e = 1.0 / 39916800.0;
    e = ::fma(e, r, 1.0 / 3628800.0);
    e = ::fma(e, r, 1.0 / 362880.0);
    e = ::fma(e, r, 1.0 / 40320.0);
    e = ::fma(e, r, 1.0 / 5040.0);
    e = ::fma(e, r, 1.0 / 720.0);
    e = ::fma(e, r, 1.0 / 120.0);
    e = ::fma(e, r, 1.0 / 24.0);
    e = ::fma(e, r, 1.0 / 6.0);
    e = ::fma(e, r, 0.5);
    e = ::fma(e, r, 1.0);
    e = ::fma(e, r, 1.0);
    const double scale = double_of((bits_of(shifted) + 1023u) << 52);  // 2^k, 0 <= k <= 29
    const double big = 1.0 - 2.0 / ::fma(e, scale, 1.0);
    // a select on bits: a conditional here would keep the compiler from vectorising the loop
    const uint64 use_small = uint64(0) - uint64(a < 0.25);
    const double m = double_of((bits_of(small) & use_small) | (bits_of(big) & ~use_small));
    return float(::copysign(m, double(xf)));
}

}  // namespace f32math
}  // namespace weft
#endif
