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

// log: glibc's logf is a call per element, which keeps a loop that takes one scalar (a
// Neo-Hookean element's log J, say) from vectorising. This one works in float64, carries the
// rounding errors of its large terms in a second float64 (double-double), and rounds once:
// x = 2^k m with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(f) for f = (m - 1) / (m + 1),
// |f| < 0.172, an odd series through f^21 (truncation below 1e-18 relative). The series' tail,
// about 1 % of the result, is computed in plain float64, so the error before the rounding is a
// few 1e-18 relative at most; the big terms (k ln 2 and 2 f) are exact and their sum's rounding
// error is kept. The float32 result is correctly rounded for every input: checked on all 2^32
// floats against log in long double (tools/check_math_f32.cpp; none of those logs lies within
// 2^-60 relative of a rounding midpoint). A plain float64 sum, rounded twice, was off by one ulp
// on 5 of them.
WEFT_FN float log(float xf) {
    const double x = xf;  // exact; float32 subnormals are normal float64s
    const uint64 sqrt_half = 0x3fe6a09e667f3bcdull;
    const uint64 shifted = bits_of(x) - sqrt_half;
    const double k = double(int64(shifted) >> 52);
    const double m = double_of((shifted & 0x000fffffffffffffull) + sqrt_half);
    // f and its rounding error (m - 1 and m + 1 are exact: m has float32's 24 bits)
    const double num = m - 1.0, den = m + 1.0;
    const double f = num / den;
    const double f_lo = ::fma(-f, den, num) / den;
    // 2 atanh(f) = 2 f + f s p(s), s = f^2, p(s) = sum_i 2 s^i / (2i + 3) for i < 10, evaluated
    // in a tree (Estrin) rather than a chain (Horner): 4 dependent multiply-adds instead of 9 (the
    // log's latency is what a scalar loop around it waits for)
    const double s = f * f, s2 = s * s, s4 = s2 * s2, s8 = s4 * s4;
    const double q0 = ::fma(2.0 / 5.0, s, 2.0 / 3.0), q1 = ::fma(2.0 / 9.0, s, 2.0 / 7.0);
    const double q2 = ::fma(2.0 / 13.0, s, 2.0 / 11.0), q3 = ::fma(2.0 / 17.0, s, 2.0 / 15.0);
    const double q4 = ::fma(2.0 / 21.0, s, 2.0 / 19.0);
    const double p = ::fma(q4, s8, ::fma(::fma(q3, s2, q2), s4, ::fma(q1, s2, q0)));
    // log x = k ln2_hi + 2 f (both exact) + the small terms; ln 2 split so that k * high is exact
    const double big = k * 6.93147180369123816490e-01, mid = 2.0 * f;
    const double sum = big + mid;  // two-sum: err is the sum's rounding error, exactly
    const double big_v = sum - mid;
    const double err = (big - big_v) + (mid - (sum - big_v));
    const double small = ::fma(f * s, p, ::fma(k, 1.90821492927058770002e-10, 2.0 * f_lo) + err);
    const double h = sum + small;
    const double h_err = small - (h - sum);  // |sum| >= |small|: fast two-sum
    // float(h) rounds h + h_err correctly unless h lies exactly on a float32 rounding midpoint
    // (the 29 bits below float32's last are 1000...0); then h moves one float64 ulp toward h_err
    const uint64 hb = bits_of(h);
    const uint64 on_mid = 0ull - uint64((hb & 0x1fffffffull) == 0x10000000ull);
    const uint64 toward = 1ull - (((bits_of(h_err) ^ hb) >> 63) << 1);  // 1, or -1 when h_err points to 0
    const uint64 moves = on_mid & (0ull - uint64(h_err != 0.0));
    const double r = double_of(hb + (toward & moves));
    // special values by masks on bits (mutually exclusive; conditionals here became branches that
    // kept a loop around it scalar): log(+-0) = -inf, log(+inf) = +inf, log(x < 0) = NaN, log(NaN)
    // = NaN (the input's, quieted, as the C library's)
    const uint32 ux = bit_cast<uint32>(xf);
    const uint32 mag = ux & 0x7fffffffu;
    const uint32 is_zero = 0u - uint32(mag == 0u);
    const uint32 is_inf = 0u - uint32(ux == 0x7f800000u);
    const uint32 is_neg = 0u - (uint32(ux > 0x80000000u) & uint32(mag <= 0x7f800000u));
    const uint32 is_nan = 0u - uint32(mag > 0x7f800000u);
    const uint32 special = (is_zero & 0xff800000u) | (is_inf & 0x7f800000u) | (is_neg & 0xffc00000u) |
                           (is_nan & (ux | 0x00400000u));
    const uint32 ur = bit_cast<uint32>(float(r));
    return bit_cast<float>((ur & ~(is_zero | is_inf | is_neg | is_nan)) | special);
}

// floor, ceil and trunc for vectorised loops: GCC vectorises floorf & co. only without
// -ftrapping-math, so a staged loop that takes the cell of a particle (int(wp.floor(x))) stayed
// scalar. In a scalar loop floorf is one instruction (vrndscaless) and these cost a chain of
// about 40 cycles, so only the staged bodies call them (codegen/staging.py LANE_BUILTINS); both
// give the same bits, so which one runs does not show. These go through int32:
// below 2^23 in magnitude, truncation toward zero then one step down (floor) or up (ceil)
// where it moved the value the other way; from 2^23 on every float is an integer, returned as
// it is, as are infinities and NaN (quietened). The sign of a zero result is the input's (floor(-0.0) =
// -0.0, ceil(-0.5) = -0.0), as the C library gives. Exact: the same bits as floorf & co. on
// all 2^32 floats.
// (Selects on bits, and every operation made unconditionally: with conditionals, GCC split the
// loop on `small` and left the conversion, which may trap, on one path only: a branch.)
WEFT_FN float integral_part(float x, float step_if_above, float step_if_below) {
    const uint32 ux = bit_cast<uint32>(x);
    const uint32 small = 0u - uint32((ux & 0x7fffffffu) < 0x4b000000u);  // |x| < 2^23; not NaN
    const float xs = bit_cast<float>(ux & small);
    const float t = float(int32(xs));
    const uint32 above = bit_cast<uint32>(t + step_if_above), below = bit_cast<uint32>(t + step_if_below);
    const uint32 up = 0u - uint32(t > xs), down = 0u - uint32(t < xs);
    uint32 ur = (above & up) | (below & down) | (bit_cast<uint32>(t) & ~(up | down));
    ur = (ur & 0x7fffffffu) | (ux & 0x80000000u);  // the input's sign (on zeros too)
    const uint32 big = bit_cast<uint32>(x + 0.0f);  // + 0: a signalling NaN quietened
    return bit_cast<float>((ur & small) | (big & ~small));
}
WEFT_FN float floor(float x) { return integral_part(x, -1.0f, 0.0f); }
WEFT_FN float ceil(float x) { return integral_part(x, 0.0f, 1.0f); }
WEFT_FN float trunc(float x) { return integral_part(x, 0.0f, 0.0f); }

}  // namespace f32math
}  // namespace weft
#endif
