// weft scalar builtins: the forward and adjoint C++ of every builtin in weft/builtins/scalar.py.
//
// Calling convention (see builtins/registry.py):
//   forward  T    weft::<symbol>(inputs...)
//   adjoint  void weft::adj_<symbol>(inputs..., adj_inputs&..., adj_ret)   -- only ever `+=`s
// Types: Float = float16/bfloat16/float32/float64, Int = int8..int64/uint8..uint64, Scalar = both,
// Value = Scalar + bool. float16 has no arithmetic of its own: everything is computed in float32
// and rounded back. Integer (and bool) adjoints compile but do nothing: integers carry no gradient.
//
// Shared by CPU and CUDA (NVRTC): every function is WEFT_FN, no std::, no lambdas, no exceptions.
// Needs C++17 (`if constexpr`).
//
// Semantics, checked against warp-lang 1.19 on the CPU (probes; see the team's FINDINGS.md, sections 1-3, 8):
//   - float `/` is IEEE; int `/` truncates toward zero, int `//` floors, int `%` is C's remainder
//     (sign of the dividend), float `%` is fmod, float `//` is floor(a / b).
//   - Integer x / 0, x // 0 and x % 0 return 0 (Warp's CPU build dies with SIGFPE), and so do
//     INT_MIN / -1 (wraps to INT_MIN) and INT_MIN % -1, which also trap on x86.
//   - Integer +, -, *, neg and abs wrap modulo 2^bits (computed in unsigned arithmetic: no UB).
//   - Shifts: counts outside [0, 64) give 0 for `<<` and the sign fill for `>>`; within, the result
//     is the exact shift truncated to the type (no UB).
//   - min/max ignore a NaN operand like C fmin/fmax (min(1, nan) == 1); clamp(x, lo, hi) is
//     min(max(lo, x), hi), so clamp(nan, lo, hi) == lo and lo > hi gives hi.
//   - sign(x) = -1 if x < 0 else 1 (sign(0) == sign(-0.0) == sign(nan) == 1, ints too);
//     step(x) = 1 if x < 0 else 0; nonzero(x) = 1 if x != 0 else 0 (NaN too).
//   - round: halfway away from zero (C round); rint: halfway to even; frac(x) = x - trunc(x).
//   - asin/acos clamp their argument to [-1, 1] (asin(2) == pi/2), like Warp.
//   - lerp(a, b, t) = a * (1 - t) + b * t, no clamping of t.
//   - select(cond, a, b) = cond ? b : a (Warp's old order; Warp 1.19 removed select);
//     where(cond, a, b) = cond ? a : b. A condition of any scalar type is tested as `cond != 0`
//     (NaN is true); Warp itself accepts only bool and int conditions.
//   - print_value prints like Warp's kernel print: floats "%g", ints in full, bools True/False.
//
// Gradient conventions (where the derivative does not exist or Warp makes a choice):
//   - abs: d/dx = -1 for x < 0, else +1 (so +1 at 0, -0.0 and NaN)                       [Warp]
//   - min/max: a tie sends the gradient to b; a NaN operand sends it to the other operand  [Warp]
//   - clamp: follows min(max(lo, x), hi): x == lo -> x gets it, x == hi -> hi gets it     [Warp]
//   - floor, ceil, round, rint, trunc, sign, step, floordiv: gradient 0                   [Warp]
//   - sqrt, cbrt, log*, div: the plain formula, so inf/NaN at 0 (sqrt'(0) = inf)           [Warp]
//   - asin/acos: 0 where |x| >= 1 (the clamped region)                                    [Warp]
//   - atan2(y, x): 0 for both when x*x + y*y == 0                                         [Warp]
//   - smoothstep: 0 outside the open ramp 0 < t < 1 (clamped region and the edges)          [Warp]
//     and when edge0 == edge1 (Warp gives NaN there at x == edge0).
//   - frac: gradient 1 (d/dx (x - trunc x)); Warp 1.19 returns 0, which is wrong.
//   - float mod: d/da = 1, d/db = -trunc(a / b) (fmod(a, b) = a - b*trunc(a/b)); Warp gives 0 for b.
//   - pow(x, y): d/dx = y*x^(y-1) and d/dy = log(x)*x^y like Warp, except where that formula is
//     0*inf but the derivative exists: d/dx = 0 when y == 0, d/dy = 0 when x == 0 and y > 0
//     (Warp gives NaN there). x < 0 still gives NaN for d/dy (x^y is not real around such y).
// NaN/inf behaviour above assumes IEEE arithmetic: do not build kernels with -ffast-math.
#pragma once

#include "core.h"
#include "math_f32.h"

namespace weft {

// ---------------------------------------------------------------------------------------------
// Type traits (no <type_traits> on NVRTC).
//   compute   the type arithmetic is done in (float32 for float16, the type itself otherwise)
//   wide      for ints: the unsigned type arithmetic wraps in (never narrower than 32 bits, so
//             that integer promotion cannot bring signed overflow back)

template <typename T>
struct scalar_traits;

#define WEFT_SCALAR_TRAITS(T, C, W, FLOAT, SIGNED) \
    template <>                                    \
    struct scalar_traits<T> {                      \
        typedef C compute;                         \
        typedef W wide;                            \
        static constexpr bool is_float = FLOAT;    \
        static constexpr bool is_signed = SIGNED;  \
    };
WEFT_SCALAR_TRAITS(bool, bool, uint32, false, false)
WEFT_SCALAR_TRAITS(int8, int8, uint32, false, true)
WEFT_SCALAR_TRAITS(int16, int16, uint32, false, true)
WEFT_SCALAR_TRAITS(int32, int32, uint32, false, true)
WEFT_SCALAR_TRAITS(int64, int64, uint64, false, true)
WEFT_SCALAR_TRAITS(uint8, uint8, uint32, false, false)
WEFT_SCALAR_TRAITS(uint16, uint16, uint32, false, false)
WEFT_SCALAR_TRAITS(uint32, uint32, uint32, false, false)
WEFT_SCALAR_TRAITS(uint64, uint64, uint64, false, false)
WEFT_SCALAR_TRAITS(float16, float32, uint32, true, true)
WEFT_SCALAR_TRAITS(bfloat16, float32, uint32, true, true)
WEFT_SCALAR_TRAITS(float32, float32, uint32, true, true)
WEFT_SCALAR_TRAITS(float64, float64, uint64, true, true)
#undef WEFT_SCALAR_TRAITS

template <typename T>
using compute_t = typename scalar_traits<T>::compute;

template <typename A, typename B>
struct is_same_type {
    static constexpr bool value = false;
};
template <typename A>
struct is_same_type<A, A> {
    static constexpr bool value = true;
};

// adj += v for float types; integers and bools take no gradient.
template <typename T>
WEFT_FN void accum(T& adj, compute_t<T> v) {
    if constexpr (scalar_traits<T>::is_float) adj = T(compute_t<T>(adj) + v);
}

// ---------------------------------------------------------------------------------------------
// fmath: float/double implementations of the float math (the C library names live in ::, which
// weft's own sin/cos/... would otherwise hide). float16 goes through the float overloads.
namespace fmath {

#define WEFT_FMATH1(name, f32, f64)                    \
    WEFT_FN float name(float x) { return ::f32(x); }   \
    WEFT_FN double name(double x) { return ::f64(x); }
WEFT_FMATH1(sqrt, sqrtf, sqrt)
WEFT_FMATH1(cbrt, cbrtf, cbrt)
WEFT_FMATH1(exp, expf, exp)
#if defined(WEFT_CUDA)
WEFT_FMATH1(log, logf, log)
#else  // correctly rounded and vectorisable (math_f32.h)
WEFT_FN float log(float x) { return f32math::log(x); }
WEFT_FN double log(double x) { return ::log(x); }
#endif
WEFT_FMATH1(log2, log2f, log2)
WEFT_FMATH1(log10, log10f, log10)
WEFT_FMATH1(sin, sinf, sin)
WEFT_FMATH1(cos, cosf, cos)
WEFT_FMATH1(tan, tanf, tan)
WEFT_FMATH1(atan, atanf, atan)
WEFT_FMATH1(sinh, sinhf, sinh)
WEFT_FMATH1(cosh, coshf, cosh)
#if defined(WEFT_CUDA)
WEFT_FMATH1(tanh, tanhf, tanh)
#else  // correctly rounded and vectorisable (math_f32.h)
WEFT_FN float tanh(float x) { return f32math::tanh(x); }
WEFT_FN double tanh(double x) { return ::tanh(x); }
#endif
WEFT_FMATH1(erf, erff, erf)
WEFT_FMATH1(erfc, erfcf, erfc)
WEFT_FMATH1(floor, floorf, floor)
WEFT_FMATH1(ceil, ceilf, ceil)
WEFT_FMATH1(round, roundf, round)
WEFT_FMATH1(rint, rintf, rint)
WEFT_FMATH1(trunc, truncf, trunc)
WEFT_FMATH1(fabs, fabsf, fabs)
#undef WEFT_FMATH1

WEFT_FN float copysign(float x, float y) { return ::copysignf(x, y); }
WEFT_FN double copysign(double x, double y) { return ::copysign(x, y); }
WEFT_FN bool signbit(float x) { return ::signbit(x); }
WEFT_FN bool signbit(double x) { return ::signbit(x); }
// erfinv: Giles' single-precision approximation ("Approximating the erfinv function", 2010) as a
// start, then Newton steps on erf (two in double, one in float) to full precision. erfinv(+-1) is
// +-inf, outside [-1, 1] NaN. erfcinv(y) = erfinv(1 - y).
WEFT_FN double erfinv(double x) {
    if (!(x >= -1.0 && x <= 1.0)) return NAN;
    if (x == 1.0 || x == -1.0) return x * INFINITY;
    double w = -::log((1.0 - x) * (1.0 + x)), p;
    if (w < 5.0) {
        w -= 2.5;
        p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w;
        p = -3.5233877e-06 + p * w;
        p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w;
        p = -0.00125372503 + p * w;
        p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w;
        p = 1.50140941 + p * w;
    } else {
        w = ::sqrt(w) - 3.0;
        p = -0.000200214257;
        p = 0.000100950558 + p * w;
        p = 0.00134934322 + p * w;
        p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w;
        p = -0.0076224613 + p * w;
        p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w;
        p = 2.83297682 + p * w;
    }
    double y = p * x;
    for (int k = 0; k < 2; ++k)  // Newton on erf(y) = x
        y -= (::erf(y) - x) / (1.1283791670955126 * ::exp(-y * y));
    return y;
}
WEFT_FN float erfinv(float x) { return float(erfinv(double(x))); }
WEFT_FN double erfcinv(double y) { return erfinv(1.0 - y); }
WEFT_FN float erfcinv(float y) { return float(erfinv(1.0 - double(y))); }
WEFT_FN float pow(float x, float y) { return ::powf(x, y); }
WEFT_FN double pow(double x, double y) { return ::pow(x, y); }
WEFT_FN float atan2(float y, float x) { return ::atan2f(y, x); }
WEFT_FN double atan2(double y, double x) { return ::atan2(y, x); }
WEFT_FN float fmod(float x, float y) { return ::fmodf(x, y); }
WEFT_FN double fmod(double x, double y) { return ::fmod(x, y); }

// Clamped to [-1, 1] like Warp, so asin(1 + eps) is pi/2, not NaN. NaN stays NaN.
template <typename R>
WEFT_FN R unit_clamp(R x) {
    return x < R(-1) ? R(-1) : (x > R(1) ? R(1) : x);
}
WEFT_FN float asin(float x) { return ::asinf(unit_clamp(x)); }
WEFT_FN double asin(double x) { return ::asin(unit_clamp(x)); }
WEFT_FN float acos(float x) { return ::acosf(unit_clamp(x)); }
WEFT_FN double acos(double x) { return ::acos(unit_clamp(x)); }

template <typename R>
WEFT_FN R frac(R x) {
    return x - trunc(x);
}
template <typename R>
WEFT_FN R degrees(R x) {
    return x * R(57.29577951308232087679815481410517);
}
template <typename R>
WEFT_FN R radians(R x) {
    return x * R(0.01745329251994329576923690768488613);
}

// Classification on the bit pattern, so that it survives -ffast-math and needs no C macros.
WEFT_FN uint32 bits(float x) {
    uint32 b;
    memcpy(&b, &x, 4);
    return b;
}
WEFT_FN uint64 bits(double x) {
    uint64 b;
    memcpy(&b, &x, 8);
    return b;
}
WEFT_FN bool isnan(float x) { return (bits(x) & 0x7fffffffu) > 0x7f800000u; }
WEFT_FN bool isnan(double x) { return (bits(x) & 0x7fffffffffffffffull) > 0x7ff0000000000000ull; }
WEFT_FN bool isinf(float x) { return (bits(x) & 0x7fffffffu) == 0x7f800000u; }
WEFT_FN bool isinf(double x) { return (bits(x) & 0x7fffffffffffffffull) == 0x7ff0000000000000ull; }
WEFT_FN bool isfinite(float x) { return (bits(x) & 0x7f800000u) != 0x7f800000u; }
WEFT_FN bool isfinite(double x) { return (bits(x) & 0x7ff0000000000000ull) != 0x7ff0000000000000ull; }

// NaN test that is simply false for integers.
template <typename R>
WEFT_FN bool is_nan_any(R x) {
    if constexpr (is_same_type<R, float>::value || is_same_type<R, double>::value)
        return isnan(x);
    else
        return false;
}

}  // namespace fmath

// ---------------------------------------------------------------------------------------------
// Arithmetic operators: add sub mul div floordiv mod neg pos (Scalar).

namespace scalar_detail {

// Integer ops in wrapping unsigned arithmetic; the conversion back to T keeps the low bits.
template <typename T>
WEFT_FN typename scalar_traits<T>::wide wide(T x) {
    typedef typename scalar_traits<T>::wide W;
    if constexpr (scalar_traits<T>::is_signed)
        return W(int64(x));  // sign-extends, then reduces modulo 2^bits(W)
    else
        return W(x);
}

// True when dividing by b traps for a signed type: b == 0 or b == -1 (INT_MIN / -1).
template <typename T>
WEFT_FN bool int_div_special(T b) {
    if constexpr (scalar_traits<T>::is_signed)
        return b == T(0) || b == T(-1);
    else
        return b == T(0);
}

}  // namespace scalar_detail

template <typename T>
WEFT_FN T add(T a, T b) {
    if constexpr (scalar_traits<T>::is_float)
        return T(compute_t<T>(a) + compute_t<T>(b));
    else
        return T(scalar_detail::wide(a) + scalar_detail::wide(b));
}

template <typename T>
WEFT_FN T sub(T a, T b) {
    if constexpr (scalar_traits<T>::is_float)
        return T(compute_t<T>(a) - compute_t<T>(b));
    else
        return T(scalar_detail::wide(a) - scalar_detail::wide(b));
}

template <typename T>
WEFT_FN T mul(T a, T b) {
    if constexpr (scalar_traits<T>::is_float)
        return T(compute_t<T>(a) * compute_t<T>(b));
    else
        return T(scalar_detail::wide(a) * scalar_detail::wide(b));
}

template <typename T>
WEFT_FN T neg(T x) {
    if constexpr (scalar_traits<T>::is_float)
        return T(-compute_t<T>(x));
    else
        return T(0u - scalar_detail::wide(x));
}

template <typename T>
WEFT_FN T pos(T x) {
    return x;
}

// Integer division never traps: x / 0 == 0; INT_MIN / -1 wraps to INT_MIN.
template <typename T>
WEFT_FN T div(T a, T b) {
    if constexpr (scalar_traits<T>::is_float) {
        return T(compute_t<T>(a) / compute_t<T>(b));
    } else {
        if (scalar_detail::int_div_special(b)) return b == T(0) ? T(0) : neg(a);
        return T(a / b);
    }
}

// Floors for both: floor(a / b) for floats; for ints the truncated quotient minus one when the
// remainder is non-zero and the signs differ. x // 0 == 0.
template <typename T>
WEFT_FN T floordiv(T a, T b) {
    if constexpr (scalar_traits<T>::is_float) {
        return T(fmath::floor(compute_t<T>(a) / compute_t<T>(b)));
    } else {
        if (scalar_detail::int_div_special(b)) return div(a, b);
        T q = T(a / b);
        if constexpr (scalar_traits<T>::is_signed) {
            if (T(a % b) != T(0) && ((a < T(0)) != (b < T(0)))) q = T(q - T(1));
        }
        return q;
    }
}

// fmod for floats; C remainder (sign of a) for ints, like Warp. x % 0 == 0 and x % -1 == 0.
template <typename T>
WEFT_FN T mod(T a, T b) {
    if constexpr (scalar_traits<T>::is_float) {
        return T(fmath::fmod(compute_t<T>(a), compute_t<T>(b)));
    } else {
        if (scalar_detail::int_div_special(b)) return T(0);
        return T(a % b);
    }
}

template <typename T>
WEFT_FN void adj_add(T a, T b, T& adj_a, T& adj_b, T adj_ret) {
    accum(adj_a, compute_t<T>(adj_ret));
    accum(adj_b, compute_t<T>(adj_ret));
}

template <typename T>
WEFT_FN void adj_sub(T a, T b, T& adj_a, T& adj_b, T adj_ret) {
    accum(adj_a, compute_t<T>(adj_ret));
    accum(adj_b, -compute_t<T>(adj_ret));
}

template <typename T>
WEFT_FN void adj_mul(T a, T b, T& adj_a, T& adj_b, T adj_ret) {
    if constexpr (scalar_traits<T>::is_float) {
        typedef compute_t<T> R;
        accum(adj_a, R(b) * R(adj_ret));
        accum(adj_b, R(a) * R(adj_ret));
    }
}

template <typename T>
WEFT_FN void adj_neg(T x, T& adj_x, T adj_ret) {
    accum(adj_x, -compute_t<T>(adj_ret));
}

template <typename T>
WEFT_FN void adj_pos(T x, T& adj_x, T adj_ret) {
    accum(adj_x, compute_t<T>(adj_ret));
}

template <typename T>
WEFT_FN void adj_div(T a, T b, T& adj_a, T& adj_b, T adj_ret) {
    if constexpr (scalar_traits<T>::is_float) {
        typedef compute_t<T> R;
        R q = R(a) / R(b);
        accum(adj_a, R(adj_ret) / R(b));
        accum(adj_b, -R(adj_ret) * q / R(b));  // q / b rather than a / b^2: b^2 underflows sooner
    }
}

// Piecewise constant: no gradient.
template <typename T>
WEFT_FN void adj_floordiv(T a, T b, T& adj_a, T& adj_b, T adj_ret) {}

// fmod(a, b) = a - b * trunc(a / b).
template <typename T>
WEFT_FN void adj_mod(T a, T b, T& adj_a, T& adj_b, T adj_ret) {
    if constexpr (scalar_traits<T>::is_float) {
        typedef compute_t<T> R;
        accum(adj_a, R(adj_ret));
        accum(adj_b, -fmath::trunc(R(a) / R(b)) * R(adj_ret));
    }
}

// ---------------------------------------------------------------------------------------------
// Bitwise operators (Int, not differentiable).

template <typename T>
WEFT_FN T bit_and(T a, T b) {
    return T(a & b);
}
template <typename T>
WEFT_FN T bit_or(T a, T b) {
    return T(a | b);
}
template <typename T>
WEFT_FN T bit_xor(T a, T b) {
    return T(a ^ b);
}
template <typename T>
WEFT_FN T invert(T a) {
    return T(~a);
}

// The exact shift, truncated to T; counts outside [0, 64) shift everything out.
template <typename T, typename S>
WEFT_FN T lshift(T a, S b) {
    if (b < S(0) || uint64(b) >= 64u) return T(0);
    return T(uint64(scalar_detail::wide(a)) << int(b));
}
template <typename T, typename S>
WEFT_FN T rshift(T a, S b) {
    bool out_of_range = b < S(0) || uint64(b) >= 64u;
    if constexpr (scalar_traits<T>::is_signed)
        return T(int64(a) >> (out_of_range ? 63 : int(b)));  // arithmetic shift: sign fill
    else
        return out_of_range ? T(0) : T(uint64(a) >> int(b));
}

// ---------------------------------------------------------------------------------------------
// Comparisons and truth (Value / any scalar, not differentiable).

template <typename T>
WEFT_FN bool cmp_eq(T a, T b) {
    return compute_t<T>(a) == compute_t<T>(b);
}
template <typename T>
WEFT_FN bool cmp_ne(T a, T b) {
    return compute_t<T>(a) != compute_t<T>(b);
}
template <typename T>
WEFT_FN bool cmp_lt(T a, T b) {
    return compute_t<T>(a) < compute_t<T>(b);
}
template <typename T>
WEFT_FN bool cmp_le(T a, T b) {
    return compute_t<T>(a) <= compute_t<T>(b);
}
template <typename T>
WEFT_FN bool cmp_gt(T a, T b) {
    return compute_t<T>(a) > compute_t<T>(b);
}
template <typename T>
WEFT_FN bool cmp_ge(T a, T b) {
    return compute_t<T>(a) >= compute_t<T>(b);
}

// bool(x) as in Python: non-zero is true, NaN is true.
template <typename T>
WEFT_FN bool truth(T x) {
    return compute_t<T>(x) != compute_t<T>(0);
}
template <typename T>
WEFT_FN bool logical_not(T x) {
    return !truth(x);
}

// ---------------------------------------------------------------------------------------------
// min, max, clamp, abs, sign (Scalar).

namespace scalar_detail {

// Whether min(a, b) / max(a, b) is a. A NaN operand loses (like fmin/fmax); a tie goes to b.
// The forward value and the adjoint both use these, so the gradient follows the returned value.
template <typename R>
WEFT_FN bool min_is_a(R a, R b) {
    return a < b || (fmath::is_nan_any(b) && !fmath::is_nan_any(a));
}
template <typename R>
WEFT_FN bool max_is_a(R a, R b) {
    return a > b || (fmath::is_nan_any(b) && !fmath::is_nan_any(a));
}

}  // namespace scalar_detail

template <typename T>
WEFT_FN T min(T a, T b) {
    return scalar_detail::min_is_a(compute_t<T>(a), compute_t<T>(b)) ? a : b;
}
template <typename T>
WEFT_FN T max(T a, T b) {
    return scalar_detail::max_is_a(compute_t<T>(a), compute_t<T>(b)) ? a : b;
}
template <typename T>
WEFT_FN T clamp(T x, T lo, T hi) {
    return min(max(lo, x), hi);
}

template <typename T>
WEFT_FN T abs(T x) {
    if constexpr (scalar_traits<T>::is_float)
        return T(fmath::fabs(compute_t<T>(x)));
    else if constexpr (scalar_traits<T>::is_signed)
        return x < T(0) ? neg(x) : x;  // abs(INT_MIN) wraps to INT_MIN
    else
        return x;
}

template <typename T>
WEFT_FN T sign(T x) {
    if constexpr (scalar_traits<T>::is_signed)
        return compute_t<T>(x) < compute_t<T>(0) ? T(-1) : T(1);
    else
        return T(1);
}

template <typename T>
WEFT_FN void adj_min(T a, T b, T& adj_a, T& adj_b, T adj_ret) {
    if (scalar_detail::min_is_a(compute_t<T>(a), compute_t<T>(b)))
        accum(adj_a, compute_t<T>(adj_ret));
    else
        accum(adj_b, compute_t<T>(adj_ret));
}

template <typename T>
WEFT_FN void adj_max(T a, T b, T& adj_a, T& adj_b, T adj_ret) {
    if (scalar_detail::max_is_a(compute_t<T>(a), compute_t<T>(b)))
        accum(adj_a, compute_t<T>(adj_ret));
    else
        accum(adj_b, compute_t<T>(adj_ret));
}

// The chain of clamp = min(max(lo, x), hi): x == lo -> x, x == hi -> hi.
template <typename T>
WEFT_FN void adj_clamp(T x, T lo, T hi, T& adj_x, T& adj_lo, T& adj_hi, T adj_ret) {
    T m = max(lo, x);
    if (!scalar_detail::min_is_a(compute_t<T>(m), compute_t<T>(hi)))
        accum(adj_hi, compute_t<T>(adj_ret));
    else if (scalar_detail::max_is_a(compute_t<T>(lo), compute_t<T>(x)))
        accum(adj_lo, compute_t<T>(adj_ret));
    else
        accum(adj_x, compute_t<T>(adj_ret));
}

// d|x|/dx = -1 for x < 0, else +1 (also at 0 and NaN).
template <typename T>
WEFT_FN void adj_abs(T x, T& adj_x, T adj_ret) {
    if constexpr (scalar_traits<T>::is_float) {
        typedef compute_t<T> R;
        accum(adj_x, R(x) < R(0) ? -R(adj_ret) : R(adj_ret));
    }
}

template <typename T>
WEFT_FN void adj_sign(T x, T& adj_x, T adj_ret) {}

// ---------------------------------------------------------------------------------------------
// Float math (Float only): one overload per float type, float16 computed in float32.

#define WEFT_FLOAT_UNARY(name)                                                         \
    WEFT_FN float32 name(float32 x) { return fmath::name(x); }                         \
    WEFT_FN float64 name(float64 x) { return fmath::name(x); }                         \
    WEFT_FN float16 name(float16 x) { return float16(fmath::name(float32(x))); }      \
    WEFT_FN bfloat16 name(bfloat16 x) { return bfloat16(fmath::name(float32(x))); }
WEFT_FLOAT_UNARY(sqrt)
WEFT_FLOAT_UNARY(cbrt)
WEFT_FLOAT_UNARY(exp)
WEFT_FLOAT_UNARY(log)
WEFT_FLOAT_UNARY(log2)
WEFT_FLOAT_UNARY(log10)
WEFT_FLOAT_UNARY(sin)
WEFT_FLOAT_UNARY(cos)
WEFT_FLOAT_UNARY(tan)
WEFT_FLOAT_UNARY(asin)
WEFT_FLOAT_UNARY(acos)
WEFT_FLOAT_UNARY(atan)
WEFT_FLOAT_UNARY(sinh)
WEFT_FLOAT_UNARY(cosh)
WEFT_FLOAT_UNARY(tanh)
WEFT_FLOAT_UNARY(erf)
WEFT_FLOAT_UNARY(erfc)
WEFT_FLOAT_UNARY(erfinv)
WEFT_FLOAT_UNARY(erfcinv)
WEFT_FLOAT_UNARY(floor)
WEFT_FLOAT_UNARY(ceil)
WEFT_FLOAT_UNARY(round)
WEFT_FLOAT_UNARY(rint)
WEFT_FLOAT_UNARY(trunc)
WEFT_FLOAT_UNARY(frac)
WEFT_FLOAT_UNARY(degrees)
WEFT_FLOAT_UNARY(radians)
#undef WEFT_FLOAT_UNARY

#define WEFT_FLOAT_BINARY(name)                                                                          \
    WEFT_FN float32 name(float32 x, float32 y) { return fmath::name(x, y); }                             \
    WEFT_FN float64 name(float64 x, float64 y) { return fmath::name(x, y); }                             \
    WEFT_FN float16 name(float16 x, float16 y) { return float16(fmath::name(float32(x), float32(y))); } \
    WEFT_FN bfloat16 name(bfloat16 x, bfloat16 y) { return bfloat16(fmath::name(float32(x), float32(y))); }
WEFT_FLOAT_BINARY(pow)
WEFT_FLOAT_BINARY(atan2)  // atan2(y, x)
#undef WEFT_FLOAT_BINARY

#define WEFT_FLOAT_CLASSIFY(name)                                          \
    WEFT_FN bool name(float32 x) { return fmath::name(x); }                \
    WEFT_FN bool name(float64 x) { return fmath::name(x); }                \
    WEFT_FN bool name(float16 x) { return fmath::name(float32(x)); }       \
    WEFT_FN bool name(bfloat16 x) { return fmath::name(float32(x)); }
WEFT_FLOAT_CLASSIFY(isnan)
WEFT_FLOAT_CLASSIFY(isinf)
WEFT_FLOAT_CLASSIFY(isfinite)
#undef WEFT_FLOAT_CLASSIFY

// Adjoints of the float math. R is the compute type; `d` is the derivative at x.
#define WEFT_FLOAT_UNARY_ADJ(name, d_expr)                       \
    template <typename T>                                        \
    WEFT_FN void adj_##name(T x_, T& adj_x, T adj_ret) {         \
        typedef compute_t<T> R;                                  \
        R x = R(x_);                                             \
        (void)x; /* unused by the constant derivatives */        \
        R d = d_expr;                                            \
        accum(adj_x, d * R(adj_ret));                            \
    }
WEFT_FLOAT_UNARY_ADJ(sqrt, R(0.5) / fmath::sqrt(x))  // inf at 0, like Warp
WEFT_FLOAT_UNARY_ADJ(cbrt, R(1) / (R(3) * fmath::cbrt(x) * fmath::cbrt(x)))
WEFT_FLOAT_UNARY_ADJ(exp, fmath::exp(x))
WEFT_FLOAT_UNARY_ADJ(log, R(1) / x)
WEFT_FLOAT_UNARY_ADJ(log2, R(1) / (x * R(0.693147180559945309417232121458176568)))
WEFT_FLOAT_UNARY_ADJ(log10, R(1) / (x * R(2.30258509299404568401799145468436421)))
WEFT_FLOAT_UNARY_ADJ(sin, fmath::cos(x))
WEFT_FLOAT_UNARY_ADJ(cos, -fmath::sin(x))
WEFT_FLOAT_UNARY_ADJ(tan, R(1) / (fmath::cos(x) * fmath::cos(x)))
WEFT_FLOAT_UNARY_ADJ(asin, R(1) - x * x > R(0) ? R(1) / fmath::sqrt(R(1) - x * x) : R(0))
WEFT_FLOAT_UNARY_ADJ(acos, R(1) - x * x > R(0) ? R(-1) / fmath::sqrt(R(1) - x * x) : R(0))
WEFT_FLOAT_UNARY_ADJ(atan, R(1) / (R(1) + x * x))
WEFT_FLOAT_UNARY_ADJ(sinh, fmath::cosh(x))
WEFT_FLOAT_UNARY_ADJ(cosh, fmath::sinh(x))
WEFT_FLOAT_UNARY_ADJ(tanh, R(1) - fmath::tanh(x) * fmath::tanh(x))
WEFT_FLOAT_UNARY_ADJ(erf, R(1.12837916709551257389615890312154517) * fmath::exp(-x * x))  // 2 / sqrt(pi)
WEFT_FLOAT_UNARY_ADJ(erfc, R(-1.12837916709551257389615890312154517) * fmath::exp(-x * x))
// d erfinv(x)/dx = sqrt(pi)/2 exp(erfinv(x)^2); d erfcinv(y)/dy = -sqrt(pi)/2 exp(erfcinv(y)^2)
WEFT_FLOAT_UNARY_ADJ(erfinv, R(0.886226925452758013649083741671) * fmath::exp(fmath::erfinv(x) * fmath::erfinv(x)))
WEFT_FLOAT_UNARY_ADJ(erfcinv, R(-0.886226925452758013649083741671) * fmath::exp(fmath::erfcinv(x) * fmath::erfcinv(x)))
WEFT_FLOAT_UNARY_ADJ(frac, R(1))
WEFT_FLOAT_UNARY_ADJ(degrees, R(57.29577951308232087679815481410517))
WEFT_FLOAT_UNARY_ADJ(radians, R(0.01745329251994329576923690768488613))
#undef WEFT_FLOAT_UNARY_ADJ

// Piecewise constant: no gradient.
template <typename T>
WEFT_FN void adj_floor(T x, T& adj_x, T adj_ret) {}
template <typename T>
WEFT_FN void adj_ceil(T x, T& adj_x, T adj_ret) {}
template <typename T>
WEFT_FN void adj_round(T x, T& adj_x, T adj_ret) {}
template <typename T>
WEFT_FN void adj_rint(T x, T& adj_x, T adj_ret) {}
template <typename T>
WEFT_FN void adj_trunc(T x, T& adj_x, T adj_ret) {}

template <typename T>
WEFT_FN void adj_pow(T x_, T y_, T& adj_x, T& adj_y, T adj_ret) {
    typedef compute_t<T> R;
    R x = R(x_), y = R(y_), g = R(adj_ret);
    // x^0 == 1 for every x, and 0^y == 0 for every y > 0: where the formula is 0 * inf, use 0.
    if (y != R(0)) accum(adj_x, y * fmath::pow(x, y - R(1)) * g);
    if (!(x == R(0) && y > R(0))) accum(adj_y, fmath::log(x) * fmath::pow(x, y) * g);
}

template <typename T>
WEFT_FN void adj_atan2(T y_, T x_, T& adj_y, T& adj_x, T adj_ret) {
    typedef compute_t<T> R;
    R y = R(y_), x = R(x_);
    R r2 = x * x + y * y;
    if (r2 > R(0)) {  // undefined at the origin: no gradient, like Warp
        accum(adj_y, x / r2 * R(adj_ret));
        accum(adj_x, -y / r2 * R(adj_ret));
    }
}

// ---------------------------------------------------------------------------------------------
// select, where, lerp, smoothstep, step.

template <typename C, typename T>
WEFT_FN T select(C cond, T a, T b) {
    return truth(cond) ? b : a;
}
template <typename C, typename T>
WEFT_FN T where(C cond, T a, T b) {
    return truth(cond) ? a : b;
}

// The condition's adjoint is never written.
template <typename C, typename T>
WEFT_FN void adj_select(C cond, T a, T b, C& adj_cond, T& adj_a, T& adj_b, T adj_ret) {
    if (truth(cond))
        accum(adj_b, compute_t<T>(adj_ret));
    else
        accum(adj_a, compute_t<T>(adj_ret));
}
template <typename C, typename T>
WEFT_FN void adj_where(C cond, T a, T b, C& adj_cond, T& adj_a, T& adj_b, T adj_ret) {
    if (truth(cond))
        accum(adj_a, compute_t<T>(adj_ret));
    else
        accum(adj_b, compute_t<T>(adj_ret));
}

template <typename T>
WEFT_FN T lerp(T a, T b, T t) {
    typedef compute_t<T> R;
    return T(R(a) * (R(1) - R(t)) + R(b) * R(t));
}

template <typename T>
WEFT_FN void adj_lerp(T a, T b, T t, T& adj_a, T& adj_b, T& adj_t, T adj_ret) {
    typedef compute_t<T> R;
    R g = R(adj_ret);
    accum(adj_a, (R(1) - R(t)) * g);
    accum(adj_b, R(t) * g);
    accum(adj_t, (R(b) - R(a)) * g);
}

// t = clamp((x - edge0) / (edge1 - edge0), 0, 1); t * t * (3 - 2 t). edge0 > edge1 is allowed.
template <typename T>
WEFT_FN T smoothstep(T edge0, T edge1, T x) {
    typedef compute_t<T> R;
    R t = clamp((R(x) - R(edge0)) / (R(edge1) - R(edge0)), R(0), R(1));
    return T(t * t * (R(3) - R(2) * t));
}

// Zero outside the open ramp 0 < t < 1 (where d/dt vanishes anyway) and when edge0 == edge1.
template <typename T>
WEFT_FN void adj_smoothstep(T edge0, T edge1, T x, T& adj_edge0, T& adj_edge1, T& adj_x, T adj_ret) {
    typedef compute_t<T> R;
    R e0 = R(edge0), e1 = R(edge1), v = R(x);
    R inv = R(1) / (e1 - e0);
    R t = (v - e0) * inv;
    if (!(t > R(0) && t < R(1))) return;
    R dt = R(6) * t * (R(1) - t) * R(adj_ret);  // d ret / d t, times adj_ret
    accum(adj_x, dt * inv);
    accum(adj_edge0, dt * (v - e1) * inv * inv);
    accum(adj_edge1, dt * (e0 - v) * inv * inv);
}

template <typename T>
WEFT_FN T step(T x) {
    return compute_t<T>(x) < compute_t<T>(0) ? T(1) : T(0);
}
template <typename T>
WEFT_FN void adj_step(T x, T& adj_x, T adj_ret) {}

// nonzero(x) = 1 if x != 0 else 0 (NaN counts as nonzero); gradient 0.
template <typename T>
WEFT_FN T nonzero(T x) {
    return compute_t<T>(x) != compute_t<T>(0) ? T(1) : T(0);
}
template <typename T>
WEFT_FN void adj_nonzero(T x, T& adj_x, T adj_ret) {}

// copysign(x, y): |x| with the sign bit of y (signed zeros and NaN included).
// d/dx = +1 when the sign bits of x and y agree, else -1; d/dy = 0.
template <typename T>
WEFT_FN T copysign(T x, T y) {
    return T(fmath::copysign(compute_t<T>(x), compute_t<T>(y)));
}
template <typename T>
WEFT_FN void adj_copysign(T x, T y, T& adj_x, T& adj_y, T adj_ret) {
    typedef compute_t<T> R;
    accum(adj_x, fmath::signbit(R(x)) == fmath::signbit(R(y)) ? R(adj_ret) : -R(adj_ret));
}

// ---------------------------------------------------------------------------------------------
// Casts: float(x), int(x), wp.float16(x), ... To int truncates toward zero; to bool is truth(x).
// Float -> float passes the gradient (converted); anything involving ints or bools passes none.

template <typename To, typename From>
WEFT_FN To cast(From x) {
    typedef compute_t<From> RF;
    typedef compute_t<To> RT;
    if constexpr (is_same_type<To, bool>::value) {
        return truth(x);
    } else if constexpr (!scalar_traits<To>::is_float && scalar_traits<From>::is_float) {
        // Negative floats to unsigned go through int64 (a direct conversion is undefined).
        if constexpr (!scalar_traits<To>::is_signed) {
            if (RF(x) < RF(0)) return To(int64(RF(x)));
        }
        return To(RT(RF(x)));
    } else {
        return To(RT(RF(x)));
    }
}

template <typename To, typename From>
WEFT_FN void adj_cast(From x, From& adj_x, To adj_ret) {
    if constexpr (scalar_traits<To>::is_float && scalar_traits<From>::is_float)
        accum(adj_x, compute_t<From>(compute_t<To>(adj_ret)));
}

// ---------------------------------------------------------------------------------------------
// Printing, like a scalar printed by Warp's kernel print(): no newline here, the caller adds it.

template <typename T>
WEFT_FN void print_value(T x) {
    if constexpr (is_same_type<T, bool>::value)
        printf("%s", x ? "True" : "False");
    else if constexpr (scalar_traits<T>::is_float)
        printf("%g", double(compute_t<T>(x)));
    else if constexpr (scalar_traits<T>::is_signed)
        printf("%lld", (long long)x);
    else
        printf("%llu", (unsigned long long)x);
}

WEFT_FN void print_str(const char* s) { printf("%s", s); }

WEFT_FN void print_newline() {
    printf("\n");
#ifndef WEFT_CUDA
    fflush(stdout);
#endif
}

// ---------------------------------------------------------------------------------------------
// expect_eq / expect_neq / expect_near: as Warp, a failed expectation prints and the kernel goes
// on (they check, they do not stop). Any value type: cmp_eq and print_value of composites are
// found at instantiation (vec.h, mat.h, quat.h, transform.h). Not differentiable.

template <typename T>
WEFT_FN void expect_report(const char* what, const T& a, const T& b) {
    printf("Error: %s(", what);
    print_value(a);
    printf(", ");
    print_value(b);
    printf(") failed\n");
}
template <typename T>
WEFT_FN void expect_eq(const T& a, const T& b) {
    if (!cmp_eq(a, b)) expect_report("expect_eq", a, b);
}
template <typename T>
WEFT_FN void expect_neq(const T& a, const T& b) {
    if (cmp_eq(a, b)) expect_report("expect_neq", a, b);
}
template <typename T>
WEFT_FN bool near_(T a, T b, T tolerance) {
    typedef compute_t<T> R;
    R d = R(a) - R(b);
    return (d < R(0) ? -d : d) <= R(tolerance);
}
template <typename T>
WEFT_FN void expect_near(T a, T b, T tolerance) {
    if (!near_(a, b, tolerance)) expect_report("expect_near", a, b);
}
template <typename T>
WEFT_FN void expect_near(T a, T b) {
    expect_near(a, b, T(1e-6));  // Warp's default tolerance
}

}  // namespace weft
