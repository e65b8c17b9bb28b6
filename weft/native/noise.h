// weft gradient noise in kernels: the C++ of noise / pnoise / curlnoise in weft/builtins/random.py.
//
// Perlin gradient noise in 1-4 dimensions, drawing the same fields as Warp for the same state
// (so a procedural texture or a perturbation field ported from Warp looks the same):
//  - every integer lattice point gets a pseudo-random gradient from a hash of its indices and
//    the state: the indices times the primes 73856093, 19349663, 53471161, 10000019, XORed
//    together, the state added to the last term; in 1-d the gradient is one draw in [-1, 1),
//    in 2-4-d it is D draws in [-0.5, 0.5) (sample_unit_square / cube order), normalized;
//  - the noise blends the corner ramps dot(g, x - corner) by nested lerps, x first, then y, z
//    and t, weighted with the quintic fade 6t^5 - 15t^4 + 10t^3; it is C2, zero at lattice
//    points, and its gradient is computed exactly alongside the value.
// pnoise wraps the lattice indices modulo the periods, so pnoise(x + p) == pnoise(x) for every x
// (Warp wraps with C's remainder, which is periodic only for x >= 0; weft agrees with Warp there
// and stays periodic for negative coordinates). A period <= 0 leaves that axis unwrapped (a
// division by zero in Warp). The state is only a seed here: it is not advanced (as in Warp).
//
// curlnoise is Warp's divergence-free field: in 2-d, with G the sum over octaves of
// gain^o * grad N(lacunarity^o * x), it is (-G_y, G_x); in 3-d (and 4-d, time as 4th coordinate)
// it is the curl-like combination of three such sums drawn from three states (the state is
// re-seeded with rand_init(state, 10019689) and rand_init(state, 13112221) between the fields,
// and the chain carries on across octaves).
//
// Adjoints: noise and pnoise accumulate adj_ret * grad into adj_x. curlnoise needs second
// derivatives: the same templated code runs on forward-mode dual numbers, one pass per input
// component. Integer arguments (state, periods, octaves) and lacunarity/gain get no gradient.
#pragma once

#include "core.h"
#include "vec_types.h"
#include "random.h"

namespace weft {

struct noise_dual {
    float32 v, d;
    WEFT_FN noise_dual(float32 a = 0.0f, float32 b = 0.0f) : v(a), d(b) {}
};
WEFT_FN noise_dual operator+(noise_dual a, noise_dual b) { return noise_dual(a.v + b.v, a.d + b.d); }
WEFT_FN noise_dual operator-(noise_dual a, noise_dual b) { return noise_dual(a.v - b.v, a.d - b.d); }
WEFT_FN noise_dual operator-(noise_dual a) { return noise_dual(-a.v, -a.d); }
WEFT_FN noise_dual operator*(noise_dual a, noise_dual b) { return noise_dual(a.v * b.v, a.d * b.v + a.v * b.d); }
WEFT_FN noise_dual& operator+=(noise_dual& a, noise_dual b) { return a = a + b; }
WEFT_FN float32 noise_primal(float32 x) { return x; }
WEFT_FN float32 noise_primal(noise_dual x) { return x.v; }

template <typename T>
WEFT_FN T noise_fade(T t) {
    return t * t * t * (t * (t * T(6.0f) - T(15.0f)) + T(10.0f));
}
template <typename T>
WEFT_FN T noise_dfade(T t) {
    T u = t - T(1.0f);
    return T(30.0f) * t * t * u * u;
}

// The gradient Warp's noise gives lattice point i (D indices) for a state.
template <int D>
WEFT_FN void noise_lattice_gradient(uint32 state, const int32* i, float32* g) {
    const uint32 primes[4] = {73856093u, 19349663u, 53471161u, 10000019u};
    uint32 h = uint32(i[D - 1]) * primes[D - 1] + state;
    for (int k = D - 2; k >= 0; --k) h = (uint32(i[k]) * primes[k]) ^ h;
    if constexpr (D == 1) {
        g[0] = 2.0f * rand_next_f(h) - 1.0f;
    } else {
        float32 len2 = 0.0f;
        for (int k = 0; k < D; ++k) {
            g[k] = rand_next_f(h) - 0.5f;
            len2 += g[k] * g[k];
        }
        float32 len = sqrtf(len2);
        for (int k = 0; k < D; ++k) g[k] = len > 0.0f ? g[k] / len : 0.0f;
    }
}

// Lattice index i wrapped into [0, p) when the axis has a period p > 0.
WEFT_FN int32 noise_wrap(int32 i, const int32* period, int k) {
    if (!period || period[k] <= 0) return i;
    int32 r = i % period[k];
    return r < 0 ? r + period[k] : r;
}

// Gradient noise at x (D components); grad receives d noise / d x. period may be null.
template <int D, typename T>
WEFT_FN T noise_eval(uint32 seed, const T* x, const int32* period, T* grad) {
    int32 lo[D], hi[D];
    T f[D], s[D], ds[D];
    for (int k = 0; k < D; ++k) {
        float32 fl = floorf(noise_primal(x[k]));
        lo[k] = noise_wrap(int32(fl), period, k);
        hi[k] = noise_wrap(lo[k] + 1, period, k);
        f[k] = x[k] - T(fl);
        s[k] = noise_fade(f[k]);
        ds[k] = noise_dfade(f[k]);
    }
    // value and gradient of the ramp at each corner (bit k of c: the upper index on axis k)
    T v[1 << D], dv[1 << D][D];
    // Unrolled before the vectorizer sees it: g++ 12.2 vectorized a corner loop like this one
    // (on dual numbers inlined into curlnoise's adjoint) into code that returned wrong
    // derivatives; -fno-tree-loop-if-convert, -O1 or this unrolling give the right ones
    // (tests/test_random.py test_curl_noise_gradients_in_a_module_of_their_own).
#ifndef WEFT_CUDA
#pragma GCC unroll 16
#endif
    for (int c = 0; c < (1 << D); ++c) {
        int32 idx[D];
        float32 g[D];
        for (int k = 0; k < D; ++k) idx[k] = (c >> k) & 1 ? hi[k] : lo[k];
        noise_lattice_gradient<D>(seed, idx, g);
        T d = T(0.0f);
        for (int k = 0; k < D; ++k) {
            d += ((c >> k) & 1 ? f[k] - T(1.0f) : f[k]) * T(g[k]);
            dv[c][k] = T(g[k]);
        }
        v[c] = d;
    }
    // nested lerps, x first: after axis k the blend of corners c..c + 2^(k+1) - 1 sits at c
    for (int k = 0; k < D; ++k) {
        const int step = 1 << k;
        for (int c = 0; c < (1 << D); c += 2 * step) {
            T a0 = v[c], a1 = v[c + step];
            for (int j = 0; j < D; ++j) {
                T dj = (dv[c + step][j] - dv[c][j]) * s[k] + dv[c][j];
                if (j == k) dj += (a1 - a0) * ds[k];
                dv[c][j] = dj;
            }
            v[c] = (a1 - a0) * s[k] + a0;
        }
    }
    for (int k = 0; k < D; ++k) grad[k] = dv[0][k];
    return v[0];
}

// ---- noise / pnoise --------------------------------------------------------------------------
WEFT_FN float32 noise(uint32 state, float32 x) {
    float32 g[1];
    return noise_eval<1>(state, &x, (const int32*)0, g);
}
template <unsigned N>
WEFT_FN float32 noise(uint32 state, const vec_t<N, float32>& x) {
    float32 g[N];
    return noise_eval<int(N)>(state, x.c, (const int32*)0, g);
}
WEFT_FN void adj_noise(uint32 state, float32 x, uint32& adj_state, float32& adj_x, float32 adj_ret) {
    float32 g[1];
    noise_eval<1>(state, &x, (const int32*)0, g);
    adj_x += adj_ret * g[0];
}
template <unsigned N>
WEFT_FN void adj_noise(uint32 state, const vec_t<N, float32>& x, uint32& adj_state, vec_t<N, float32>& adj_x,
                       float32 adj_ret) {
    float32 g[N];
    noise_eval<int(N)>(state, x.c, (const int32*)0, g);
    for (unsigned k = 0; k < N; ++k) adj_x.c[k] += adj_ret * g[k];
}

WEFT_FN float32 pnoise(uint32 state, float32 x, int32 px) {
    float32 g[1];
    return noise_eval<1>(state, &x, &px, g);
}
WEFT_FN float32 pnoise(uint32 state, const vec_t<2, float32>& x, int32 px, int32 py) {
    float32 g[2];
    int32 p[2] = {px, py};
    return noise_eval<2>(state, x.c, p, g);
}
WEFT_FN float32 pnoise(uint32 state, const vec_t<3, float32>& x, int32 px, int32 py, int32 pz) {
    float32 g[3];
    int32 p[3] = {px, py, pz};
    return noise_eval<3>(state, x.c, p, g);
}
WEFT_FN float32 pnoise(uint32 state, const vec_t<4, float32>& x, int32 px, int32 py, int32 pz, int32 pt) {
    float32 g[4];
    int32 p[4] = {px, py, pz, pt};
    return noise_eval<4>(state, x.c, p, g);
}
WEFT_FN void adj_pnoise(uint32 state, float32 x, int32 px, uint32&, float32& adj_x, int32&, float32 adj_ret) {
    float32 g[1];
    noise_eval<1>(state, &x, &px, g);
    adj_x += adj_ret * g[0];
}
WEFT_FN void adj_pnoise(uint32 state, const vec_t<2, float32>& x, int32 px, int32 py, uint32&,
                        vec_t<2, float32>& adj_x, int32&, int32&, float32 adj_ret) {
    float32 g[2];
    int32 p[2] = {px, py};
    noise_eval<2>(state, x.c, p, g);
    for (int k = 0; k < 2; ++k) adj_x.c[k] += adj_ret * g[k];
}
WEFT_FN void adj_pnoise(uint32 state, const vec_t<3, float32>& x, int32 px, int32 py, int32 pz, uint32&,
                        vec_t<3, float32>& adj_x, int32&, int32&, int32&, float32 adj_ret) {
    float32 g[3];
    int32 p[3] = {px, py, pz};
    noise_eval<3>(state, x.c, p, g);
    for (int k = 0; k < 3; ++k) adj_x.c[k] += adj_ret * g[k];
}
WEFT_FN void adj_pnoise(uint32 state, const vec_t<4, float32>& x, int32 px, int32 py, int32 pz, int32 pt, uint32&,
                        vec_t<4, float32>& adj_x, int32&, int32&, int32&, int32&, float32 adj_ret) {
    float32 g[4];
    int32 p[4] = {px, py, pz, pt};
    noise_eval<4>(state, x.c, p, g);
    for (int k = 0; k < 4; ++k) adj_x.c[k] += adj_ret * g[k];
}

// ---- curlnoise -------------------------------------------------------------------------------
// D = input dimension (2, 3 or 4); the result has min(D, 3) components.
template <int D, typename T>
WEFT_FN void curl_eval(uint32 state, const T* x, uint32 octaves, float32 lac, float32 gain, T* out) {
    constexpr int F = D == 2 ? 1 : 3;  // gradient fields summed
    T sum[F][D];
    for (int m = 0; m < F; ++m)
        for (int k = 0; k < D; ++k) sum[m][k] = T(0.0f);
    float32 freq = 1.0f, amp = 1.0f;
    for (uint32 o = 0; o < octaves; ++o) {
        T p[D], g[D];
        for (int k = 0; k < D; ++k) p[k] = x[k] * T(freq);
        for (int m = 0; m < F; ++m) {
            if (m == 1) state = rand_init(int32(state), 10019689);
            if (m == 2) state = rand_init(int32(state), 13112221);
            noise_eval<D>(state, p, (const int32*)0, g);
            for (int k = 0; k < D; ++k) sum[m][k] += T(amp) * g[k];
        }
        amp *= gain;
        freq *= lac;
    }
    if constexpr (D == 2) {
        out[0] = -sum[0][1];
        out[1] = sum[0][0];
    } else {
        out[0] = sum[2][1] - sum[1][2];
        out[1] = sum[0][2] - sum[2][0];
        out[2] = sum[1][0] - sum[0][1];
    }
}

template <unsigned N>
WEFT_FN vec_t<(N < 3 ? N : 3), float32> curlnoise(uint32 state, const vec_t<N, float32>& x, uint32 octaves = 1u,
                                                 float32 lacunarity = 2.0f, float32 gain = 0.5f) {
    vec_t<(N < 3 ? N : 3), float32> r;
    curl_eval<int(N)>(state, x.c, octaves, lacunarity, gain, r.c);
    return r;
}

template <unsigned N>
WEFT_FN void curlnoise_adjoint(uint32 state, const vec_t<N, float32>& x, uint32 octaves, float32 lac, float32 gain,
                               vec_t<N, float32>& adj_x, const vec_t<(N < 3 ? N : 3), float32>& adj_ret) {
    const int M = N < 3 ? N : 3;
    for (unsigned j = 0; j < N; ++j) {
        noise_dual xd[N], out[M];
        for (unsigned k = 0; k < N; ++k) xd[k] = noise_dual(x.c[k], k == j ? 1.0f : 0.0f);
        curl_eval<int(N)>(state, xd, octaves, lac, gain, out);
        for (int m = 0; m < M; ++m) adj_x.c[j] += adj_ret.c[m] * out[m].d;
    }
}
template <unsigned N, unsigned M>
WEFT_FN void adj_curlnoise(uint32 state, const vec_t<N, float32>& x, uint32&, vec_t<N, float32>& adj_x,
                           const vec_t<M, float32>& adj_ret) {
    curlnoise_adjoint(state, x, 1u, 2.0f, 0.5f, adj_x, adj_ret);
}
template <unsigned N, unsigned M>
WEFT_FN void adj_curlnoise(uint32 state, const vec_t<N, float32>& x, uint32 octaves, uint32&, vec_t<N, float32>& adj_x,
                           uint32&, const vec_t<M, float32>& adj_ret) {
    curlnoise_adjoint(state, x, octaves, 2.0f, 0.5f, adj_x, adj_ret);
}
template <unsigned N, unsigned M>
WEFT_FN void adj_curlnoise(uint32 state, const vec_t<N, float32>& x, uint32 octaves, float32 lac, uint32&,
                           vec_t<N, float32>& adj_x, uint32&, float32&, const vec_t<M, float32>& adj_ret) {
    curlnoise_adjoint(state, x, octaves, lac, 0.5f, adj_x, adj_ret);
}
template <unsigned N, unsigned M>
WEFT_FN void adj_curlnoise(uint32 state, const vec_t<N, float32>& x, uint32 octaves, float32 lac, float32 gain,
                           uint32&, vec_t<N, float32>& adj_x, uint32&, float32&, float32&,
                           const vec_t<M, float32>& adj_ret) {
    curlnoise_adjoint(state, x, octaves, lac, gain, adj_x, adj_ret);
}

}  // namespace weft
