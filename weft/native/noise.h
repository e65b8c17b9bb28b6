// weft gradient noise in kernels: the C++ of noise / pnoise / curlnoise in weft/builtins/random.py.
//
// Perlin-style gradient noise in 1-4 dimensions: each integer lattice point gets a pseudo-random
// gradient g (components uniform in [-1, 1), hashed from the state and the lattice indices with
// rand_hash); the noise at x blends the 2^D corner ramps dot(g, x - corner) with the quintic fade
// 6t^5 - 15t^4 + 10t^3, so it is C2, zero at lattice points, and its gradient is computed exactly
// alongside the value. pnoise wraps the lattice indices modulo the periods, so
// pnoise(x + p) == pnoise(x). The state is only a seed here: it is not advanced (as in Warp).
//
// curlnoise is the curl of fractal (octaves, lacunarity, gain) noise potentials: in 2-d of one
// scalar potential psi, (dpsi/dy, -dpsi/dx); in 3-d (and 4-d, time as 4th coordinate) of three
// potentials with different seeds. It is divergence free.
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

// Gradient noise at x (D components); grad receives d noise / d x. period may be null.
template <int D, typename T>
WEFT_FN T noise_eval(uint32 seed, const T* x, const int32* period, T* grad) {
    int32 i0[D];
    T f[D], w[D], dw[D];
    for (int k = 0; k < D; ++k) {
        float32 fl = floorf(noise_primal(x[k]));
        i0[k] = int32(fl);
        f[k] = x[k] - T(fl);
        w[k] = noise_fade(f[k]);
        dw[k] = noise_dfade(f[k]);
        grad[k] = T(0.0f);
    }
    T value = T(0.0f);
    // Unrolled before the vectorizer sees it: g++ 12.2 vectorized this corner loop (4 corners in
    // 2-D, on dual numbers inlined into curlnoise's adjoint) into code that returned wrong
    // derivatives; -fno-tree-loop-if-convert, -O1 or this unrolling give the right ones
    // (tests/test_random.py test_curl_noise_gradients_in_a_module_of_their_own).
#ifndef WEFT_CUDA
#pragma GCC unroll 16
#endif
    for (int c = 0; c < (1 << D); ++c) {
        uint32 h = rand_hash(seed);
        for (int k = 0; k < D; ++k) {
            int32 ik = i0[k] + ((c >> k) & 1);
            if (period && period[k] > 0) {
                ik %= period[k];
                if (ik < 0) ik += period[k];
            }
            h = rand_hash(h + uint32(ik));
        }
        T g[D], d = T(0.0f), W = T(1.0f);
        for (int k = 0; k < D; ++k) {
            g[k] = T(float32(rand_hash(h + uint32(k) * 0x9E3779B9u) >> 8) * (1.0f / 8388608.0f) - 1.0f);
            int bit = (c >> k) & 1;
            d += g[k] * (f[k] - T(float32(bit)));
            W = W * (bit ? w[k] : T(1.0f) - w[k]);
        }
        value += W * d;
        for (int k = 0; k < D; ++k) {
            T dWk = (c >> k) & 1 ? dw[k] : -dw[k];
            for (int j = 0; j < D; ++j)
                if (j != k) dWk = dWk * ((c >> j) & 1 ? w[j] : T(1.0f) - w[j]);
            grad[k] += g[k] * W + d * dWk;
        }
    }
    return value;
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
// Gradient of the fractal potential number `which` (0..2) at x: sum over octaves of
// amp * freq * grad noise(freq * x), each octave and potential with its own seed.
template <int D, typename T>
WEFT_FN void curl_potential_grad(uint32 state, int which, const T* x, uint32 octaves, float32 lac, float32 gain,
                                 T* out) {
    for (int k = 0; k < D; ++k) out[k] = T(0.0f);
    float32 freq = 1.0f, amp = 1.0f;
    for (uint32 o = 0; o < octaves; ++o) {
        T p[D], g[D];
        for (int k = 0; k < D; ++k) p[k] = x[k] * T(freq);
        noise_eval<D>(rand_hash(state + uint32(which) * 0x68E31DA4u + o * 0xB5297A4Du), p, (const int32*)0, g);
        for (int k = 0; k < D; ++k) out[k] += g[k] * T(amp * freq);
        freq *= lac;
        amp *= gain;
    }
}

// D = input dimension (2, 3 or 4); the result has min(D, 3) components.
template <int D, typename T>
WEFT_FN void curl_eval(uint32 state, const T* x, uint32 octaves, float32 lac, float32 gain, T* out) {
    if constexpr (D == 2) {
        T g[D];
        curl_potential_grad<D>(state, 0, x, octaves, lac, gain, g);
        out[0] = g[1];
        out[1] = -g[0];
    } else {
        T g0[D], g1[D], g2[D];
        curl_potential_grad<D>(state, 0, x, octaves, lac, gain, g0);
        curl_potential_grad<D>(state, 1, x, octaves, lac, gain, g1);
        curl_potential_grad<D>(state, 2, x, octaves, lac, gain, g2);
        out[0] = g2[1] - g1[2];
        out[1] = g0[2] - g2[0];
        out[2] = g1[0] - g0[1];
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
