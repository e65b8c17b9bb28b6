// Tile reductions, reshaping and products, forward and adjoint (tile.h has the tile type, loads,
// stores and element-wise maps). Shapes that change are given by the result type R, which the
// frontend computes and passes as the first template argument.
#pragma once
#include "tile.h"

WEFT_TILE_BEGIN

// ------------------------------------------------------------------------------ reductions

template <typename T, int... D>
WEFT_FN tile_t<T, 1> tile_sum(const tile_t<T, D...>& t) {
    T s{};
    for (int i = 0; i < t.size; ++i) s += t.data[i];
    return tile_t<T, 1>{{s}};
}
template <typename T, int... D>
WEFT_FN void adj_tile_sum(const tile_t<T, D...>& t, tile_t<T, D...>& adj_t, const tile_t<T, 1>& adj_ret) {
    for (int i = 0; i < t.size; ++i) adj_t.data[i] += adj_ret.data[0];
}

// tile_sum(t, axis): R is t's shape without dimension `axis`
template <typename R, int Axis, typename T, int... D>
WEFT_FN R tile_sum_axis(const tile_t<T, D...>& t) {
    using S = tile_shape_t<D...>;
    R r{};
    for (int i = 0; i < t.size; ++i) {
        int c[4];
        S::coord(i, c);
        int o = 0, k = 0;
        for (int d = 0; d < S::ndim; ++d)
            if (d != Axis) o += c[d] * R::shape::stride(k++);
        r.data[o] += t.data[i];
    }
    return r;
}
template <typename R, int Axis, typename T, int... D>
WEFT_FN void adj_tile_sum_axis(const tile_t<T, D...>& t, tile_t<T, D...>& adj_t, const R& adj_ret) {
    using S = tile_shape_t<D...>;
    for (int i = 0; i < t.size; ++i) {
        int c[4];
        S::coord(i, c);
        int o = 0, k = 0;
        for (int d = 0; d < S::ndim; ++d)
            if (d != Axis) o += c[d] * R::shape::stride(k++);
        adj_t.data[i] += adj_ret.data[o];
    }
}

// The index of the first largest (Max) or smallest element; 0 for an empty tile.
template <bool Max, typename T, int... D>
WEFT_FN int tile_arg_extreme(const tile_t<T, D...>& t) {
    int best = 0;
    for (int i = 1; i < t.size; ++i)
        if (Max ? t.data[best] < t.data[i] : t.data[i] < t.data[best]) best = i;
    return best;
}
template <typename T, int... D>
WEFT_FN tile_t<T, 1> tile_max(const tile_t<T, D...>& t) {
    return tile_t<T, 1>{{t.size ? t.data[tile_arg_extreme<true>(t)] : T{}}};
}
template <typename T, int... D>
WEFT_FN void adj_tile_max(const tile_t<T, D...>& t, tile_t<T, D...>& adj_t, const tile_t<T, 1>& adj_ret) {
    if (t.size) adj_t.data[tile_arg_extreme<true>(t)] += adj_ret.data[0];
}
template <typename T, int... D>
WEFT_FN tile_t<T, 1> tile_min(const tile_t<T, D...>& t) {
    return tile_t<T, 1>{{t.size ? t.data[tile_arg_extreme<false>(t)] : T{}}};
}
template <typename T, int... D>
WEFT_FN void adj_tile_min(const tile_t<T, D...>& t, tile_t<T, D...>& adj_t, const tile_t<T, 1>& adj_ret) {
    if (t.size) adj_t.data[tile_arg_extreme<false>(t)] += adj_ret.data[0];
}
template <typename T, int... D>
WEFT_FN tile_t<int32, 1> tile_argmax(const tile_t<T, D...>& t) {
    return tile_t<int32, 1>{{tile_arg_extreme<true>(t)}};
}
template <typename T, int... D>
WEFT_FN tile_t<int32, 1> tile_argmin(const tile_t<T, D...>& t) {
    return tile_t<int32, 1>{{tile_arg_extreme<false>(t)}};
}

// tile_reduce(f, t): f folded over the elements in order (the generated code passes f).
template <typename F, typename T, int... D>
WEFT_FN tile_t<T, 1> tile_reduce(F f, const tile_t<T, D...>& t) {
    if (t.size == 0) return tile_t<T, 1>{};
    T s = t.data[0];
    for (int i = 1; i < t.size; ++i) s = f(s, t.data[i]);
    return tile_t<T, 1>{{s}};
}

// tile_reduce(f, t, axis): f folded along dimension Axis; R is t's shape without it
template <typename R, int Axis, typename F, typename T, int... D>
WEFT_FN R tile_reduce_axis(F f, const tile_t<T, D...>& t) {
    using S = tile_shape_t<D...>;
    constexpr int n = S::dim(Axis), step = S::stride(Axis);
    R r;
    for (int o = 0; o < R::size; ++o) {
        int c[4];
        R::shape::coord(o, c);
        int base = 0, k = 0;  // the first element of this line: R's coordinates, Axis at 0
        for (int d = 0; d < S::ndim; ++d)
            if (d != Axis) base += c[k++] * S::stride(d);
        T acc = t.data[base];
        for (int j = 1; j < n; ++j) acc = f(acc, t.data[base + j * step]);
        r.data[o] = acc;
    }
    return r;
}

// ------------------------------------------------------------------------------ reshaping

// tile_reshape / tile_squeeze: the same elements in the same order, another shape
template <typename R, typename T, int... D>
WEFT_FN R tile_reshape(const tile_t<T, D...>& t) {
    static_assert(R::size == tile_t<T, D...>::size, "reshape keeps the number of elements");
    R r;
    for (int i = 0; i < t.size; ++i) r.data[i] = t.data[i];
    return r;
}
template <typename R, typename T, int... D>
WEFT_FN void adj_tile_reshape(const tile_t<T, D...>& t, tile_t<T, D...>& adj_t, const R& adj_ret) {
    for (int i = 0; i < t.size; ++i) adj_t.data[i] += adj_ret.data[i];
}

template <typename T, int M, int N>
WEFT_FN tile_t<T, N, M> tile_transpose(const tile_t<T, M, N>& t) {
    tile_t<T, N, M> r;
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) r.data[j * M + i] = t.data[i * N + j];
    return r;
}
template <typename T, int M, int N>
WEFT_FN void adj_tile_transpose(const tile_t<T, M, N>& t, tile_t<T, M, N>& adj_t, const tile_t<T, N, M>& adj_ret) {
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) adj_t.data[i * N + j] += adj_ret.data[j * M + i];
}

// The source index of result element i when t (shape S) is broadcast to R (NumPy's rules:
// trailing dimensions aligned, size-1 dimensions repeated).
template <typename R, typename S>
WEFT_FN int tile_broadcast_source(int i) {
    int c[4];
    R::shape::coord(i, c);
    const int lead = R::ndim - S::ndim;
    int o = 0;
    for (int d = 0; d < S::ndim; ++d) o += (S::dim(d) == 1 ? 0 : c[d + lead]) * S::stride(d);
    return o;
}
template <typename R, typename T, int... D>
WEFT_FN R tile_broadcast(const tile_t<T, D...>& t) {
    R r;
    for (int i = 0; i < R::size; ++i) r.data[i] = t.data[tile_broadcast_source<R, tile_shape_t<D...>>(i)];
    return r;
}
template <typename R, typename T, int... D>
WEFT_FN void adj_tile_broadcast(const tile_t<T, D...>& t, tile_t<T, D...>& adj_t, const R& adj_ret) {
    for (int i = 0; i < R::size; ++i) adj_t.data[tile_broadcast_source<R, tile_shape_t<D...>>(i)] += adj_ret.data[i];
}

// Where element i of a view R of t (shape S) at offsets o lies in t, or -1 outside it. The
// view's dimensions are t's last R::ndim; the offsets address t's first ones.
template <typename R, typename S>
WEFT_FN int tile_view_source(int i, const int32* o) {
    int c[4];
    R::shape::coord(i, c);
    const int lead = S::ndim - R::ndim;
    int src = 0;
    for (int d = 0; d < S::ndim; ++d) {
        int x = o[d] + (d >= lead ? c[d - lead] : 0);
        if (x < 0 || x >= S::dim(d)) return -1;
        src += x * S::stride(d);
    }
    return src;
}
template <typename R, typename T, int... D>
WEFT_FN R tile_view(const tile_t<T, D...>& t, int32 o0, int32 o1, int32 o2, int32 o3) {
    const int32 o[4] = {o0, o1, o2, o3};
    R r;
    for (int i = 0; i < R::size; ++i) {
        int s = tile_view_source<R, tile_shape_t<D...>>(i, o);
        r.data[i] = s >= 0 ? t.data[s] : T{};
    }
    return r;
}
template <typename R, typename T, int... D>
WEFT_FN void adj_tile_view(const tile_t<T, D...>& t, int32 o0, int32 o1, int32 o2, int32 o3, tile_t<T, D...>& adj_t,
                           int32&, int32&, int32&, int32&, const R& adj_ret) {
    const int32 o[4] = {o0, o1, o2, o3};
    for (int i = 0; i < R::size; ++i) {
        int s = tile_view_source<R, tile_shape_t<D...>>(i, o);
        if (s >= 0) adj_t.data[s] += adj_ret.data[i];
    }
}

// tile_assign(dst, src, offset): dst with the region at the offsets replaced by src
template <typename T, int... D, int... E>
WEFT_FN tile_t<T, D...> tile_assign(const tile_t<T, D...>& dst, const tile_t<T, E...>& src, int32 o0, int32 o1,
                                    int32 o2, int32 o3) {
    using R = tile_t<T, E...>;
    const int32 o[4] = {o0, o1, o2, o3};
    tile_t<T, D...> r = dst;
    for (int i = 0; i < R::size; ++i) {
        int s = tile_view_source<R, tile_shape_t<D...>>(i, o);
        if (s >= 0) r.data[s] = src.data[i];
    }
    return r;
}
template <typename T, int... D, int... E>
WEFT_FN void adj_tile_assign(const tile_t<T, D...>& dst, const tile_t<T, E...>& src, int32 o0, int32 o1, int32 o2,
                             int32 o3, tile_t<T, D...>& adj_dst, tile_t<T, E...>& adj_src, int32&, int32&, int32&,
                             int32&, const tile_t<T, D...>& adj_ret) {
    using R = tile_t<T, E...>;
    const int32 o[4] = {o0, o1, o2, o3};
    bool written[tile_t<T, D...>::size > 0 ? tile_t<T, D...>::size : 1] = {};
    for (int i = 0; i < R::size; ++i) {
        int s = tile_view_source<R, tile_shape_t<D...>>(i, o);
        if (s >= 0) {
            adj_src.data[i] += adj_ret.data[s];
            written[s] = true;
        }
    }
    for (int i = 0; i < adj_ret.size; ++i)
        if (!written[i]) adj_dst.data[i] += adj_ret.data[i];
}

// ------------------------------------------------------------------- threads and tiles

// wp.tile(x): the block's values as a tile; one thread per block, so one value (a vector or
// matrix x spreads over a first dimension unless preserve_type)
template <typename T>
WEFT_FN tile_t<T, 1> tile_from_value(T x) {
    return tile_t<T, 1>{{x}};
}
template <typename T>
WEFT_FN void adj_tile_from_value(T x, T& adj_x, const tile_t<T, 1>& adj_ret) {
    adj_x += adj_ret.data[0];
}
template <typename R, typename V>
WEFT_FN R tile_from_components(const V& x) {
    R r;
    using C = typename element_traits<V>::scalar;
    const C* p = reinterpret_cast<const C*>(&x);
    for (int i = 0; i < R::size; ++i) r.data[i] = p[i];
    return r;
}
template <typename R, typename V>
WEFT_FN void adj_tile_from_components(const V& x, V& adj_x, const R& adj_ret) {
    using C = typename element_traits<V>::scalar;
    C* p = reinterpret_cast<C*>(&adj_x);
    for (int i = 0; i < R::size; ++i) p[i] += adj_ret.data[i];
}
// wp.untile(t): this thread's value (the first element; a vector/matrix from the components)
template <typename V, typename T, int... D>
WEFT_FN V tile_to_value(const tile_t<T, D...>& t) {
    if constexpr (tile_is_same<V, T>::value) {
        return t.data[0];
    } else {
        V v{};
        using C = typename element_traits<V>::scalar;
        C* p = reinterpret_cast<C*>(&v);
        for (int i = 0; i < t.size; ++i) p[i] = t.data[i];
        return v;
    }
}
template <typename V, typename T, int... D>
WEFT_FN void adj_tile_to_value(const tile_t<T, D...>& t, tile_t<T, D...>& adj_t, const V& adj_ret) {
    if constexpr (tile_is_same<V, T>::value) {
        adj_t.data[0] += adj_ret;
    } else {
        using C = typename element_traits<V>::scalar;
        const C* p = reinterpret_cast<const C*>(&adj_ret);
        for (int i = 0; i < t.size; ++i) adj_t.data[i] += p[i];
    }
}

// ------------------------------------------------------------------------------ products

// a * b + c with one rounding for float32/float64 (explicit: CPU builds do not contract a * b + c
// into FMAs, see runtime/cpu.py, so the products below ask for them), else a * b + c.
template <typename T>
WEFT_FN T tile_fma(T a, T b, T c) {
    if constexpr (is_same_type<T, float32>::value)
        return ::fmaf(a, b, c);
    else if constexpr (is_same_type<T, float64>::value)
        return ::fma(a, b, c);
    else
        return a * b + c;
}

// r += alpha * a @ b for row-major a (M x K), b (K x N), r (M x N): blocks of 4 rows by up to
// 64 columns accumulate in registers (each row of b loaded once per block feeds 4 rows), the
// shapes compile-time constants so that the compiler unrolls and vectorizes the column loop.
template <typename T, int M, int K, int N, bool TransA = false, bool TransB = false>
WEFT_FN void tile_gemm_accumulate(const T* a, const T* b, T* r, T alpha) {
#if !defined(WEFT_CUDA)
    if constexpr (TransB && N > 1 && K * N * sizeof(T) <= 65536) {
        // b^T gathered once into a row-major K x N copy: the column loop then reads rows of it
        // (vectorised) instead of one element every K (a matmul adjoint's a-gradient spent two
        // thirds of an MLP backward in that strided scalar loop)
        T bt[K * N];
        for (int j = 0; j < N; ++j)
            for (int k = 0; k < K; ++k) bt[k * N + j] = b[j * K + k];
        tile_gemm_accumulate<T, M, K, N, TransA, false>(a, bt, r, alpha);
        return;
    }
#endif
    constexpr int RB = 4, CB = N < 32 ? N : 32;
    for (int j0 = 0; j0 < N; j0 += CB) {
        const int cw = N - j0 < CB ? N - j0 : CB;
        int i0 = 0;
        for (; i0 + RB <= M; i0 += RB) {
            T acc[RB][CB > 0 ? CB : 1] = {};
            for (int k = 0; k < K; ++k) {
                T ak[RB];
                for (int q = 0; q < RB; ++q) ak[q] = TransA ? a[k * M + i0 + q] : a[(i0 + q) * K + k];
                if (!TransB && cw == CB) {
                    const T* bk = b + k * N + j0;
                    for (int q = 0; q < RB; ++q)
                        for (int j = 0; j < CB; ++j) acc[q][j] = tile_fma(ak[q], bk[j], acc[q][j]);
                } else {
                    for (int q = 0; q < RB; ++q)
                        for (int j = 0; j < cw; ++j) acc[q][j] = tile_fma(ak[q], TransB ? b[(j0 + j) * K + k] : b[k * N + j0 + j], acc[q][j]);
                }
            }
            for (int q = 0; q < RB; ++q)
                for (int j = 0; j < cw; ++j) r[(i0 + q) * N + j0 + j] += alpha * acc[q][j];
        }
        for (; i0 < M; ++i0) {  // the rows left over
            T acc[CB > 0 ? CB : 1] = {};
            for (int k = 0; k < K; ++k) {
                const T aik = TransA ? a[k * M + i0] : a[i0 * K + k];
                for (int j = 0; j < cw; ++j) acc[j] = tile_fma(aik, TransB ? b[(j0 + j) * K + k] : b[k * N + j0 + j], acc[j]);
            }
            for (int j = 0; j < cw; ++j) r[i0 * N + j0 + j] += alpha * acc[j];
        }
    }
}

// out = alpha * a @ b + beta * c (tile_matmul(a, b) is alpha 1, beta 0 with c zero)
template <typename T, int M, int K, int N>
WEFT_FN tile_t<T, M, N> tile_matmul(const tile_t<T, M, K>& a, const tile_t<T, K, N>& b, const tile_t<T, M, N>& c,
                                    T alpha, T beta) {
    tile_t<T, M, N> r;
    for (int i = 0; i < M * N; ++i) r.data[i] = beta * c.data[i];
    tile_gemm_accumulate<T, M, K, N>(a.data, b.data, r.data, alpha);
    return r;
}
template <typename T, int M, int K, int N>
WEFT_FN void adj_tile_matmul(const tile_t<T, M, K>& a, const tile_t<T, K, N>& b, const tile_t<T, M, N>& c, T alpha,
                             T beta, tile_t<T, M, K>& adj_a, tile_t<T, K, N>& adj_b, tile_t<T, M, N>& adj_c, T& adj_alpha,
                             T& adj_beta, const tile_t<T, M, N>& adj_ret) {
    // adj_a += alpha adj_ret b^T (M x N times N x K); adj_b += alpha a^T adj_ret (K x M times M x N)
    tile_gemm_accumulate<T, M, N, K, false, true>(adj_ret.data, b.data, adj_a.data, alpha);
    tile_gemm_accumulate<T, K, M, N, true, false>(a.data, adj_ret.data, adj_b.data, alpha);
    for (int i = 0; i < M * N; ++i) adj_c.data[i] += beta * adj_ret.data[i];
}

WEFT_TILE_END

WEFT_TILE_BEGIN

// ------------------------------------------------------------------------------ slicing

// t[...] with slices and integer indices (NumPy's basic indexing). Source dimension d is either
// indexed by an integer (bit d of Mask; i_d is the index, checked, negative from the end) or
// sliced (i_d is the slice's start, Step_d its step), giving the next dimension of R.
template <int Mask, typename S>
WEFT_FN void tile_slice_indices(int32 loc, int32* idx) {
    for (int d = 0; d < S::ndim; ++d) {
        if (!((Mask >> d) & 1)) continue;
        int64 x = idx[d] < 0 ? int64(idx[d]) + S::dim(d) : idx[d];
#ifndef WEFT_RELEASE
        if (x < 0 || x >= S::dim(d)) {
            int64 c[4] = {idx[0], idx[1], idx[2], idx[3]};
            raise_tile_index_error<S>(loc, d, c, S::ndim);
        }
#endif
        idx[d] = int32(x);
    }
}
template <typename R, int Mask, int St0, int St1, int St2, int St3, typename S>
WEFT_FN int tile_slice_source(int i, const int32* idx) {
    constexpr int step[4] = {St0, St1, St2, St3};
    int c[4];
    R::shape::coord(i, c);
    int j = 0, src = 0;
    for (int d = 0; d < S::ndim; ++d) {
        int x = ((Mask >> d) & 1) ? idx[d] : idx[d] + c[j++] * step[d];
        src += x * S::stride(d);
    }
    return src;
}
template <typename R, int Mask, int St0, int St1, int St2, int St3, typename T, int... D>
WEFT_FN R tile_slice(const tile_t<T, D...>& t, int32 loc, int32 i0, int32 i1, int32 i2, int32 i3) {
    using S = tile_shape_t<D...>;
    int32 idx[4] = {i0, i1, i2, i3};
    tile_slice_indices<Mask, S>(loc, idx);
    R r;
    for (int i = 0; i < R::size; ++i) r.data[i] = t.data[tile_slice_source<R, Mask, St0, St1, St2, St3, S>(i, idx)];
    return r;
}
template <typename R, int Mask, int St0, int St1, int St2, int St3, typename T, int... D>
WEFT_FN void adj_tile_slice(const tile_t<T, D...>& t, int32 loc, int32 i0, int32 i1, int32 i2, int32 i3,
                            tile_t<T, D...>& adj_t, int32&, int32&, int32&, int32&, int32&, const R& adj_ret) {
    using S = tile_shape_t<D...>;
    int32 idx[4] = {i0, i1, i2, i3};
    tile_slice_indices<Mask, S>(loc, idx);
    for (int i = 0; i < R::size; ++i) adj_t.data[tile_slice_source<R, Mask, St0, St1, St2, St3, S>(i, idx)] += adj_ret.data[i];
}
// t[...] = v: t with the slice replaced by v (read whole before writing: NumPy's semantics for
// overlapping source and destination)
template <typename R, int Mask, int St0, int St1, int St2, int St3, typename T, int... D>
WEFT_FN tile_t<T, D...> tile_slice_set(const tile_t<T, D...>& t, int32 loc, int32 i0, int32 i1, int32 i2, int32 i3,
                                       const R& v) {
    using S = tile_shape_t<D...>;
    int32 idx[4] = {i0, i1, i2, i3};
    tile_slice_indices<Mask, S>(loc, idx);
    tile_t<T, D...> r = t;
    for (int i = 0; i < R::size; ++i) r.data[tile_slice_source<R, Mask, St0, St1, St2, St3, S>(i, idx)] = v.data[i];
    return r;
}
template <typename R, int Mask, int St0, int St1, int St2, int St3, typename T, int... D>
WEFT_FN void adj_tile_slice_set(const tile_t<T, D...>& t, int32 loc, int32 i0, int32 i1, int32 i2, int32 i3, const R& v,
                                tile_t<T, D...>& adj_t, int32&, int32&, int32&, int32&, int32&, R& adj_v,
                                const tile_t<T, D...>& adj_ret) {
    using S = tile_shape_t<D...>;
    int32 idx[4] = {i0, i1, i2, i3};
    tile_slice_indices<Mask, S>(loc, idx);
    bool written[tile_t<T, D...>::size > 0 ? tile_t<T, D...>::size : 1] = {};
    for (int i = 0; i < R::size; ++i) {
        int s = tile_slice_source<R, Mask, St0, St1, St2, St3, S>(i, idx);
        adj_v.data[i] += adj_ret.data[s];
        written[s] = true;
    }
    for (int i = 0; i < adj_ret.size; ++i)
        if (!written[i]) adj_t.data[i] += adj_ret.data[i];
}

// t[idx, :, ...]: the rows of t at the indices in the int tile idx (NumPy's advanced indexing on
// the first dimension), checked
template <typename R, typename T, int... D, typename I, int K>
WEFT_FN R tile_gather_rows(const tile_t<T, D...>& t, int32 loc, const tile_t<I, K>& idx) {
    using S = tile_shape_t<D...>;
    constexpr int row = S::ndim > 1 ? S::stride(0) : 1;
    R r;
    for (int k = 0; k < K; ++k) {
        int32 ii[4] = {int32(idx.data[k]), 0, 0, 0};
        tile_slice_indices<1, S>(loc, ii);
        const int32 i = ii[0];
        for (int j = 0; j < row; ++j) r.data[k * row + j] = t.data[i * row + j];
    }
    return r;
}
template <typename R, typename T, int... D, typename I, int K>
WEFT_FN void adj_tile_gather_rows(const tile_t<T, D...>& t, int32 loc, const tile_t<I, K>& idx, tile_t<T, D...>& adj_t,
                                  int32&, tile_t<I, K>&, const R& adj_ret) {
    using S = tile_shape_t<D...>;
    constexpr int row = S::ndim > 1 ? S::stride(0) : 1;
    for (int k = 0; k < K; ++k) {
        int32 ii[4] = {int32(idx.data[k]), 0, 0, 0};
        tile_slice_indices<1, S>(loc, ii);
        const int32 i = ii[0];
        for (int j = 0; j < row; ++j) adj_t.data[i * row + j] += adj_ret.data[k * row + j];
    }
}

// a and b of other float types than the product's (float16 or bfloat16 inputs, a float32
// accumulator): the inputs converted to the product's type, their adjoints converted back
template <typename TA, typename TB, typename T, int M, int K, int N>
WEFT_FN tile_t<T, M, N> tile_matmul(const tile_t<TA, M, K>& a, const tile_t<TB, K, N>& b, const tile_t<T, M, N>& c,
                                    T alpha, T beta) {
    return tile_matmul(tile_astype<T>(a), tile_astype<T>(b), c, alpha, beta);
}
template <typename TA, typename TB, typename T, int M, int K, int N>
WEFT_FN void adj_tile_matmul(const tile_t<TA, M, K>& a, const tile_t<TB, K, N>& b, const tile_t<T, M, N>& c, T alpha,
                             T beta, tile_t<TA, M, K>& adj_a, tile_t<TB, K, N>& adj_b, tile_t<T, M, N>& adj_c,
                             T& adj_alpha, T& adj_beta, const tile_t<T, M, N>& adj_ret) {
    tile_t<T, M, K> ga{};
    tile_t<T, K, N> gb{};
    adj_tile_matmul(tile_astype<T>(a), tile_astype<T>(b), c, alpha, beta, ga, gb, adj_c, adj_alpha, adj_beta, adj_ret);
    for (int i = 0; i < M * K; ++i) adj_a.data[i] += TA(ga.data[i]);
    for (int i = 0; i < K * N; ++i) adj_b.data[i] += TB(gb.data[i]);
}

WEFT_TILE_END
