// Tile linear algebra, forward and adjoint: Cholesky factorization, triangular and Cholesky
// solves (wp.tile_cholesky, tile_lower_solve, tile_upper_solve, tile_cholesky_solve) and the
// unnormalized FFT along a tile's last dimension (wp.tile_fft, tile_ifft).
//
// These are Warp's sequential CPU algorithms (a block is one thread): column-by-column Cholesky,
// forward / back substitution, radix-2 FFT (direct DFT for other sizes). Every function reads
// only the triangle its matrix is defined by, so gradients land on that triangle alone. Adjoints
// get no forward result (DESIGN.md's convention), so they recompute it: O(n^3) like the forward.
// The in-place forms of Warp's API are these functions plus a rebinding (see tile_calls.py).
#pragma once
#include "tile_ops.h"

WEFT_TILE_BEGIN

// ------------------------------------------------------------------------------- helpers

// Element (i, k) of the N x N row-major matrix m, or of its transpose when Trans.
template <bool Trans, int N, typename T>
WEFT_FN T tri_at(const T* m, int i, int k) {
    return Trans ? m[k * N + i] : m[i * N + k];
}

// Solves M x = b in place for the nrhs columns of b (N x nrhs, row-major), M the lower triangle
// of m (of m^T when Trans): forward substitution.
template <bool Trans, int N, typename T>
WEFT_FN void tri_forward_subst(const T* m, T* b, int nrhs) {
    for (int i = 0; i < N; ++i) {
        const T inv = T(1) / tri_at<Trans, N>(m, i, i);
        for (int c = 0; c < nrhs; ++c) {
            T s = b[i * nrhs + c];
            for (int k = 0; k < i; ++k) s -= tri_at<Trans, N>(m, i, k) * b[k * nrhs + c];
            b[i * nrhs + c] = s * inv;
        }
    }
}

// Solves M x = b in place, M the upper triangle of m (of m^T when Trans): back substitution.
template <bool Trans, int N, typename T>
WEFT_FN void tri_back_subst(const T* m, T* b, int nrhs) {
    for (int i = N - 1; i >= 0; --i) {
        const T inv = T(1) / tri_at<Trans, N>(m, i, i);
        for (int c = 0; c < nrhs; ++c) {
            T s = b[i * nrhs + c];
            for (int k = i + 1; k < N; ++k) s -= tri_at<Trans, N>(m, i, k) * b[k * nrhs + c];
            b[i * nrhs + c] = s * inv;
        }
    }
}

template <int N, typename T>
WEFT_FN void square_transpose(T* m) {
    for (int i = 0; i < N; ++i)
        for (int j = i + 1; j < N; ++j) {
            const T t = m[i * N + j];
            m[i * N + j] = m[j * N + i];
            m[j * N + i] = t;
        }
}

// The number of right-hand sides of a solve: the columns of a 2-D tile, 1 for a 1-D one.
template <int N, typename Y>
struct tile_rhs {
    static constexpr int count = N > 0 ? Y::size / N : 0;
};

// ------------------------------------------------------------------------------ Cholesky

// The lower Cholesky factor l (row-major, zero above the diagonal) of the symmetric matrix given
// by the lower triangle of a (by its upper triangle when Upper). A matrix that is not positive
// definite gives NaNs, as in Warp.
template <bool Upper, int N, typename T>
WEFT_FN void cholesky_lower_factor(const T* a, T* l) {
    for (int j = 0; j < N; ++j) {
        T s = a[j * N + j];
        for (int k = 0; k < j; ++k) s -= l[j * N + k] * l[j * N + k];
        s = sqrt(s);
        const T inv = T(1) / s;
        l[j * N + j] = s;
        for (int i = j + 1; i < N; ++i) {
            T si = Upper ? a[j * N + i] : a[i * N + j];
            for (int k = 0; k < j; ++k) si -= l[i * N + k] * l[j * N + k];
            l[i * N + j] = si * inv;
            l[j * N + i] = T(0);
        }
    }
}

// wp.tile_cholesky: L with L L^T = A (lower), or U with U^T U = A (Upper); the other triangle zero.
template <bool Upper, typename T, int N>
WEFT_FN tile_t<T, N, N> tile_cholesky(const tile_t<T, N, N>& a) {
    tile_t<T, N, N> r;
    cholesky_lower_factor<Upper, N>(a.data, r.data);
    if (Upper) square_transpose<N>(r.data);
    return r;
}

// The gradient with respect to the lower triangle of A of a loss with gradient adj_l (N x N,
// overwritten) with respect to its lower factor l: B = L^-T S L^-1 with S = P + P^T and P the lower
// triangle of L^T adj_l, diagonal halved; A's lower entries get B, its diagonal half of B's.
template <int N, typename T>
WEFT_FN void cholesky_lower_adjoint(const T* l, T* adj_l) {
    T p[N * N];
    for (int i = 0; i < N; ++i)
        for (int j = 0; j <= i; ++j) {
            T s{};
            for (int k = i; k < N; ++k) s += l[k * N + i] * adj_l[k * N + j];
            p[i * N + j] = i == j ? T(0.5) * s : s;
        }
    for (int i = 0; i < N; ++i)
        for (int j = 0; j <= i; ++j) adj_l[i * N + j] = adj_l[j * N + i] = p[i * N + j] + (i == j ? p[i * N + j] : T(0));
    tri_back_subst<true, N>(l, adj_l, N);  // X = L^-T S
    square_transpose<N>(adj_l);
    tri_back_subst<true, N>(l, adj_l, N);  // B = L^-T X^T
    for (int i = 0; i < N; ++i) adj_l[i * N + i] *= T(0.5);
}

template <bool Upper, typename T, int N>
WEFT_FN void adj_tile_cholesky(const tile_t<T, N, N>& a, tile_t<T, N, N>& adj_a, const tile_t<T, N, N>& adj_ret) {
    T l[N * N];
    cholesky_lower_factor<Upper, N>(a.data, l);
    tile_t<T, N, N> g = adj_ret;  // the gradient with respect to L (= U^T)
    if (Upper) square_transpose<N>(g.data);
    cholesky_lower_adjoint<N>(l, g.data);
    for (int i = 0; i < N; ++i)
        for (int j = 0; j <= i; ++j) adj_a.data[Upper ? j * N + i : i * N + j] += g.data[i * N + j];
}

// ---------------------------------------------------------------------- triangular solves

// wp.tile_lower_solve: z with L z = y (y a vector or N x M); reads L's lower triangle only.
template <typename T, int N, int... R>
WEFT_FN tile_t<T, N, R...> tile_lower_solve(const tile_t<T, N, N>& l, const tile_t<T, N, R...>& y) {
    tile_t<T, N, R...> z = y;
    tri_forward_subst<false, N>(l.data, z.data, tile_rhs<N, tile_t<T, N, R...>>::count);
    return z;
}

// w = L^-T adj_z; adj_y += w; adj_L -= lower(w z^T).
template <typename T, int N, int... R>
WEFT_FN void adj_tile_lower_solve(const tile_t<T, N, N>& l, const tile_t<T, N, R...>& y, tile_t<T, N, N>& adj_l,
                                  tile_t<T, N, R...>& adj_y, const tile_t<T, N, R...>& adj_ret) {
    constexpr int C = tile_rhs<N, tile_t<T, N, R...>>::count;
    const tile_t<T, N, R...> z = tile_lower_solve(l, y);
    tile_t<T, N, R...> w = adj_ret;
    tri_back_subst<true, N>(l.data, w.data, C);
    adj_y += w;
    for (int i = 0; i < N; ++i)
        for (int j = 0; j <= i; ++j) {
            T s{};
            for (int c = 0; c < C; ++c) s += w.data[i * C + c] * z.data[j * C + c];
            adj_l.data[i * N + j] -= s;
        }
}

// wp.tile_upper_solve: x with U x = z; reads U's upper triangle only.
template <typename T, int N, int... R>
WEFT_FN tile_t<T, N, R...> tile_upper_solve(const tile_t<T, N, N>& u, const tile_t<T, N, R...>& z) {
    tile_t<T, N, R...> x = z;
    tri_back_subst<false, N>(u.data, x.data, tile_rhs<N, tile_t<T, N, R...>>::count);
    return x;
}

// w = U^-T adj_x; adj_z += w; adj_U -= upper(w x^T).
template <typename T, int N, int... R>
WEFT_FN void adj_tile_upper_solve(const tile_t<T, N, N>& u, const tile_t<T, N, R...>& z, tile_t<T, N, N>& adj_u,
                                  tile_t<T, N, R...>& adj_z, const tile_t<T, N, R...>& adj_ret) {
    constexpr int C = tile_rhs<N, tile_t<T, N, R...>>::count;
    const tile_t<T, N, R...> x = tile_upper_solve(u, z);
    tile_t<T, N, R...> w = adj_ret;
    tri_forward_subst<true, N>(u.data, w.data, C);
    adj_z += w;
    for (int i = 0; i < N; ++i)
        for (int j = i; j < N; ++j) {
            T s{};
            for (int c = 0; c < C; ++c) s += w.data[i * C + c] * x.data[j * C + c];
            adj_u.data[i * N + j] -= s;
        }
}

// ------------------------------------------------------------------------ Cholesky solve

// b <- A^-1 b for A = F F^T (F = f's lower triangle) or A = F^T F (Upper: F = f's upper triangle).
template <bool Upper, int N, typename T>
WEFT_FN void cholesky_apply_inverse(const T* f, T* b, int nrhs) {
    if (Upper) {
        tri_forward_subst<true, N>(f, b, nrhs);
        tri_back_subst<false, N>(f, b, nrhs);
    } else {
        tri_forward_subst<false, N>(f, b, nrhs);
        tri_back_subst<true, N>(f, b, nrhs);
    }
}

// wp.tile_cholesky_solve: x with A x = y, given A's Cholesky factor (lower L, or upper U).
template <bool Upper, typename T, int N, int... R>
WEFT_FN tile_t<T, N, R...> tile_cholesky_solve(const tile_t<T, N, N>& f, const tile_t<T, N, R...>& y) {
    tile_t<T, N, R...> x = y;
    cholesky_apply_inverse<Upper, N>(f.data, x.data, tile_rhs<N, tile_t<T, N, R...>>::count);
    return x;
}

// w = A^-1 adj_x; adj_y += w; with G = -(w x^T + x w^T) (the gradient of A, symmetrized):
// adj_L += lower(G L), or adj_U += upper(U G).
template <bool Upper, typename T, int N, int... R>
WEFT_FN void adj_tile_cholesky_solve(const tile_t<T, N, N>& f, const tile_t<T, N, R...>& y, tile_t<T, N, N>& adj_f,
                                     tile_t<T, N, R...>& adj_y, const tile_t<T, N, R...>& adj_ret) {
    constexpr int C = tile_rhs<N, tile_t<T, N, R...>>::count;
    const tile_t<T, N, R...> x = tile_cholesky_solve<Upper>(f, y);
    tile_t<T, N, R...> w = adj_ret;
    cholesky_apply_inverse<Upper, N>(f.data, w.data, C);
    adj_y += w;
    T g[N * N];
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) {
            T s{};
            for (int c = 0; c < C; ++c) s += w.data[i * C + c] * x.data[j * C + c] + x.data[i * C + c] * w.data[j * C + c];
            g[i * N + j] = -s;
        }
    for (int i = 0; i < N; ++i)
        for (int j = Upper ? i : 0; j <= (Upper ? N - 1 : i); ++j) {
            T s{};
            for (int k = Upper ? i : j; k < N; ++k)  // the factor's own triangle only
                s += Upper ? f.data[i * N + k] * g[k * N + j] : g[i * N + k] * f.data[k * N + j];
            adj_f.data[i * N + j] += s;
        }
}

// ----------------------------------------------------------------------------------- FFT

// exp(i * angle) as a complex number (vec2: real, imaginary), computed in double.
template <typename T>
WEFT_FN vec_t<2, T> fft_twiddle(float64 angle) {
    vec_t<2, T> w;
    w.c[0] = T(cos(angle));
    w.c[1] = T(sin(angle));
    return w;
}

template <typename T>
WEFT_FN vec_t<2, T> complex_mul(const vec_t<2, T>& a, const vec_t<2, T>& b) {
    vec_t<2, T> r;
    r.c[0] = a.c[0] * b.c[0] - a.c[1] * b.c[1];
    r.c[1] = a.c[0] * b.c[1] + a.c[1] * b.c[0];
    return r;
}

// In-place iterative radix-2 FFT of x[0..L) (L a power of two), exponent sign Sign.
template <int Sign, int L, typename T>
WEFT_FN void fft_radix2(vec_t<2, T>* x) {
    for (int i = 1, j = 0; i < L; ++i) {  // bit-reversal permutation
        int bit = L >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j |= bit;
        if (i < j) {
            const vec_t<2, T> t = x[i];
            x[i] = x[j];
            x[j] = t;
        }
    }
    const float64 two_pi = 6.283185307179586476925286766559;
    for (int m = 2; m <= L; m <<= 1)
        for (int k = 0; k < m / 2; ++k) {
            const vec_t<2, T> w = fft_twiddle<T>(Sign * two_pi * k / m);
            for (int s = 0; s < L; s += m) {
                const vec_t<2, T> u = x[s + k];
                const vec_t<2, T> v = complex_mul(w, x[s + k + m / 2]);
                x[s + k].c[0] = u.c[0] + v.c[0];
                x[s + k].c[1] = u.c[1] + v.c[1];
                x[s + k + m / 2].c[0] = u.c[0] - v.c[0];
                x[s + k + m / 2].c[1] = u.c[1] - v.c[1];
            }
        }
}

// In-place direct DFT of x[0..L) (any L), exponent sign Sign.
template <int Sign, int L, typename T>
WEFT_FN void fft_direct(vec_t<2, T>* x) {
    const float64 two_pi = 6.283185307179586476925286766559;
    vec_t<2, T> r[L];
    for (int k = 0; k < L; ++k)
        for (int n = 0; n < L; ++n) {
            const vec_t<2, T> t = complex_mul(fft_twiddle<T>(Sign * two_pi * float64((int64(k) * n) % L) / L), x[n]);
            r[k].c[0] += t.c[0];
            r[k].c[1] += t.c[1];
        }
    for (int k = 0; k < L; ++k) x[k] = r[k];
}

// wp.tile_fft (Sign -1) and wp.tile_ifft (Sign 1, unnormalized) along the last dimension.
template <int Sign, typename T, int... D>
WEFT_FN tile_t<vec_t<2, T>, D...> tile_fft(const tile_t<vec_t<2, T>, D...>& a) {
    using Tile = tile_t<vec_t<2, T>, D...>;
    constexpr int L = Tile::shape::dim(Tile::ndim - 1);
    Tile r = a;
    for (int s = 0; L > 0 && s < Tile::size; s += L) {
        if constexpr ((L & (L - 1)) == 0)
            fft_radix2<Sign, L>(r.data + s);
        else
            fft_direct<Sign, L>(r.data + s);
    }
    return r;
}

// The transform is linear with matrix F (symmetric), F^H = the opposite direction's matrix.
template <int Sign, typename T, int... D>
WEFT_FN void adj_tile_fft(const tile_t<vec_t<2, T>, D...>& a, tile_t<vec_t<2, T>, D...>& adj_a,
                          const tile_t<vec_t<2, T>, D...>& adj_ret) {
    adj_a += tile_fft<-Sign>(adj_ret);
}

WEFT_TILE_END
