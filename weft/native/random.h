// weft random numbers in kernels: the C++ of weft/builtins/random.py.
//
// The generator is a stateless 32-bit hash (the PCG-style "output permutation" hash of
// Jarzynski & Olano, "Hash Functions for GPU Rendering", 2020): a state is one uint32, and each
// draw replaces it by hash(state) and derives the value from the new state. So a sequence is a
// pure function of (seed, offset, call order): deterministic on every device and for any number
// of CPU threads.
//
// weft values are immutable, so every state-advancing builtin returns tuple_t<value, new_state>;
// the frontend (codegen/special_calls.py) rebinds the state variable passed in to new_state, so
// `wp.randf(rng)` twice in a row draws two different values, as in Warp.
//
// None of these is differentiable (Warp: differentiable=False), so there are no adjoints.
#pragma once

#include "core.h"
#include "tuple.h"
#include "vec_types.h"

namespace weft {

WEFT_FN uint32 rand_hash(uint32 x) {
    uint32 s = x * 747796405u + 2891336453u;
    uint32 w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
    return (w >> 22u) ^ w;
}

WEFT_FN uint32 rand_init(int32 seed) { return rand_hash(uint32(seed)); }
WEFT_FN uint32 rand_init(int32 seed, int32 offset) { return rand_hash(uint32(seed) + rand_hash(uint32(offset))); }

// Uniform float in [0, 1): the top 24 bits of a hash, so every value is a multiple of 2^-24.
WEFT_FN float32 rand_unit(uint32 h) { return float32(h >> 8) * (1.0f / 16777216.0f); }

// One step: advance the state in place (these helpers are only used inside this header).
WEFT_FN uint32 rand_next(uint32& s) {
    s = rand_hash(s);
    return s;
}
WEFT_FN float32 rand_next_f(uint32& s) { return rand_unit(rand_next(s)); }

WEFT_FN tuple_t<int32, uint32> randi(uint32 s) {
    int32 v = int32(rand_next(s));
    return make_tuple(v, s);
}
WEFT_FN tuple_t<int32, uint32> randi(uint32 s, int32 low, int32 high) {
    uint32 range = uint32(high) - uint32(low);
    uint32 h = rand_next(s);
    int32 v = range ? int32(uint32(low) + h % range) : low;
    return make_tuple(v, s);
}
WEFT_FN tuple_t<uint32, uint32> randu(uint32 s) {
    uint32 v = rand_next(s);
    return make_tuple(v, s);
}
WEFT_FN tuple_t<uint32, uint32> randu(uint32 s, uint32 low, uint32 high) {
    uint32 range = high - low;
    uint32 h = rand_next(s);
    uint32 v = range ? low + h % range : low;
    return make_tuple(v, s);
}
WEFT_FN tuple_t<float32, uint32> randf(uint32 s) {
    float32 v = rand_next_f(s);
    return make_tuple(v, s);
}
WEFT_FN tuple_t<float32, uint32> randf(uint32 s, float32 low, float32 high) {
    float32 v = low + (high - low) * rand_next_f(s);
    return make_tuple(v, s);
}

// Standard normal by Box-Muller (two draws), as Warp draws it: the first uniform is shifted by
// 5.96e-8 (about 2^-24) so that it lies in (0, 1) and the log is finite; the same sequence as Warp.
WEFT_FN float32 rand_next_n(uint32& s) {
    float32 u1 = rand_next_f(s) + 5.96e-8f;
    float32 u2 = rand_next_f(s);
    return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958647692f * u2);
}
WEFT_FN tuple_t<float32, uint32> randn(uint32 s) {
    float32 v = rand_next_n(s);
    return make_tuple(v, s);
}

// Index drawn from a 1-d array holding a non-decreasing CDF (last entry 1): the first i with
// cdf[i] > u for u uniform in [0, 1) (binary search), clamped to the last index.
WEFT_FN tuple_t<int32, uint32> sample_cdf(uint32 s, const array_t<float32>& cdf) {
    float32 u = rand_next_f(s);
    int32 lo = 0, hi = cdf.shape[0];
    while (lo < hi) {
        int32 mid = lo + (hi - lo) / 2;
        float32 c = *(const float32*)((const char*)cdf.data + int64(mid) * cdf.strides[0]);
        if (c > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    int32 v = lo < cdf.shape[0] ? lo : cdf.shape[0] - 1;
    return make_tuple(v, s);
}

// Barycentric coordinates (u, v) uniform over a triangle: u, v >= 0, u + v <= 1.
WEFT_FN tuple_t<vec_t<2, float32>, uint32> sample_triangle(uint32 s) {
    float32 r1 = sqrtf(rand_next_f(s));
    float32 r2 = rand_next_f(s);
    vec_t<2, float32> v;
    v.c[0] = 1.0f - r1;
    v.c[1] = r2 * r1;
    return make_tuple(v, s);
}

WEFT_FN vec_t<2, float32> rand_ring(uint32& s) {
    float32 a = 6.28318530717958647692f * rand_next_f(s);
    vec_t<2, float32> v;
    v.c[0] = cosf(a);
    v.c[1] = sinf(a);
    return v;
}
WEFT_FN tuple_t<vec_t<2, float32>, uint32> sample_unit_ring(uint32 s) {
    vec_t<2, float32> v = rand_ring(s);
    return make_tuple(v, s);
}
WEFT_FN tuple_t<vec_t<2, float32>, uint32> sample_unit_disk(uint32 s) {
    float32 r = sqrtf(rand_next_f(s));
    vec_t<2, float32> v = rand_ring(s);
    v.c[0] *= r;
    v.c[1] *= r;
    return make_tuple(v, s);
}

// Uniform direction: z uniform in [-1, 1] (Archimedes), azimuth uniform.
WEFT_FN vec_t<3, float32> rand_direction(uint32& s) {
    float32 z = 1.0f - 2.0f * rand_next_f(s);
    float32 r = sqrtf(fmaxf(0.0f, 1.0f - z * z));
    vec_t<2, float32> xy = rand_ring(s);
    vec_t<3, float32> v;
    v.c[0] = r * xy.c[0];
    v.c[1] = r * xy.c[1];
    v.c[2] = z;
    return v;
}
WEFT_FN vec_t<3, float32> rand_ball(uint32& s, bool upper) {
    vec_t<3, float32> d = rand_direction(s);
    float32 r = cbrtf(rand_next_f(s));
    if (upper) d.c[2] = fabsf(d.c[2]);
    for (int i = 0; i < 3; ++i) d.c[i] *= r;
    return d;
}
WEFT_FN tuple_t<vec_t<3, float32>, uint32> sample_unit_sphere_surface(uint32 s) {
    vec_t<3, float32> v = rand_direction(s);
    return make_tuple(v, s);
}
WEFT_FN tuple_t<vec_t<3, float32>, uint32> sample_unit_sphere(uint32 s) {
    vec_t<3, float32> v = rand_ball(s, false);
    return make_tuple(v, s);
}
// Hemispheres are the z >= 0 halves, as in Warp.
WEFT_FN tuple_t<vec_t<3, float32>, uint32> sample_unit_hemisphere_surface(uint32 s) {
    vec_t<3, float32> v = rand_direction(s);
    v.c[2] = fabsf(v.c[2]);
    return make_tuple(v, s);
}
WEFT_FN tuple_t<vec_t<3, float32>, uint32> sample_unit_hemisphere(uint32 s) {
    vec_t<3, float32> v = rand_ball(s, true);
    return make_tuple(v, s);
}
// The unit square / cube centred on the origin: components in [-0.5, 0.5), as in Warp.
WEFT_FN tuple_t<vec_t<2, float32>, uint32> sample_unit_square(uint32 s) {
    vec_t<2, float32> v;
    for (int i = 0; i < 2; ++i) v.c[i] = rand_next_f(s) - 0.5f;
    return make_tuple(v, s);
}
WEFT_FN tuple_t<vec_t<3, float32>, uint32> sample_unit_cube(uint32 s) {
    vec_t<3, float32> v;
    for (int i = 0; i < 3; ++i) v.c[i] = rand_next_f(s) - 0.5f;
    return make_tuple(v, s);
}

// Poisson(lam): multiplying uniforms (Knuth) for lam < 10; otherwise Hoermann's transformed
// rejection with squeeze (PTRS, 1993). lam <= 0 gives 0.
WEFT_FN tuple_t<uint32, uint32> poisson(uint32 s, float32 lam) {
    uint32 k = 0;
    if (!(lam > 0.0f)) {
        // nothing drawn
    } else if (lam < 10.0f) {
        float64 limit = exp(-float64(lam)), prod = float64(rand_next_f(s));
        while (prod > limit) {
            ++k;
            prod *= float64(rand_next_f(s));
        }
    } else {
        float64 L = lam, slam = sqrt(L), loglam = log(L);
        float64 b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
        float64 inv_alpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2.0);
        for (;;) {
            float64 U = float64(rand_next_f(s)) - 0.5;
            float64 V = 1.0 - float64(rand_next_f(s));  // (0, 1]
            float64 us = 0.5 - fabs(U);
            float64 kk = floor((2.0 * a / us + b) * U + L + 0.43);
            if (us >= 0.07 && V <= vr) {
                k = uint32(kk);
                break;
            }
            if (kk < 0.0 || (us < 0.013 && V > us)) continue;
            if (log(V) + log(inv_alpha) - log(a / (us * us) + b) <= -L + kk * loglam - lgamma(kk + 1.0)) {
                k = uint32(kk);
                break;
            }
        }
    }
    return make_tuple(k, s);
}

}  // namespace weft
