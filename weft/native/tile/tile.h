// Tiles: small dense arrays whose shape is known when the kernel is built (Warp's tile model).
//
// A block of threads owns each tile. weft runs a block on one thread (block_dim 1, Warp's CPU
// model), so a tile is a plain value held by that thread: tile_t<T, D...> is T data[D0*D1*...]
// in row-major order, copied like a vector. Every operation here is a function of tiles returning
// a tile, with its adjoint beside it (DESIGN.md's convention: inputs..., adjoints of inputs...,
// adjoint of the result; adjoints accumulate). In-place forms of Warp's API (tile_matmul into an
// output, t[i, j] = x, tile_assign) are lowered by the frontend to these pure functions and a
// rebinding of the name, so gradients flow through them like through any value.
#pragma once
#include "../core.h"

// On CUDA these whole-tile operations live in namespace weft::full: tile_cuda.h spreads tiles over
// a block's threads and runs the operations it does not write itself through them.
#ifdef WEFT_CUDA
#define WEFT_TILE_BEGIN \
    namespace weft {    \
    namespace full {
#define WEFT_TILE_END \
    }                 \
    }
#else
#define WEFT_TILE_BEGIN namespace weft {
#define WEFT_TILE_END }
#endif

WEFT_TILE_BEGIN

template <typename A, typename B>
struct tile_is_same {
    static constexpr bool value = false;
};
template <typename A>
struct tile_is_same<A, A> {
    static constexpr bool value = true;
};

template <int... D>
struct tile_shape_t {
    static constexpr int ndim = int(sizeof...(D));
    static constexpr int size = (1 * ... * D);
    static WEFT_FN constexpr int dim(int k) {
        constexpr int d[] = {D..., 0};
        return d[k];
    }
    // row-major stride (in elements) of dimension k
    static WEFT_FN constexpr int stride(int k) {
        int s = 1;
        for (int j = ndim - 1; j > k; --j) s *= dim(j);
        return s;
    }
    // the coordinates of linear index i (size > 0)
    static WEFT_FN void coord(int i, int* c) {
        for (int k = ndim - 1; k >= 0; --k) {
            c[k] = i % dim(k);
            i /= dim(k);
        }
    }
};

template <typename T, int... D>
struct tile_t {
    using dtype = T;
    using shape = tile_shape_t<D...>;
    static constexpr int ndim = shape::ndim;
    static constexpr int size = shape::size;
    T data[size > 0 ? size : 1];

    WEFT_FN tile_t& operator+=(const tile_t& o) {
        for (int i = 0; i < size; ++i) data[i] += o.data[i];
        return *this;
    }
};

// ------------------------------------------------------------------------------- construction

// T with every scalar component set to s (a scalar, a vector, a matrix...).
template <typename T, typename S>
WEFT_FN T tile_splat(S s) {
    T v{};
    using C = typename element_traits<T>::scalar;
    C* p = reinterpret_cast<C*>(&v);
    for (unsigned k = 0; k < element_traits<T>::components; ++k) p[k] = C(s);
    return v;
}

template <typename T, int... D>
WEFT_FN tile_t<T, D...> tile_zeros() {
    return tile_t<T, D...>{};
}
template <typename T, int... D>
WEFT_FN tile_t<T, D...> tile_ones() {
    tile_t<T, D...> r;
    for (int i = 0; i < r.size; ++i) r.data[i] = tile_splat<T>(1);
    return r;
}
template <typename T, int... D>
WEFT_FN tile_t<T, D...> tile_full(T value) {
    tile_t<T, D...> r;
    for (int i = 0; i < r.size; ++i) r.data[i] = value;
    return r;
}
template <typename T, int... D>
WEFT_FN void adj_tile_full(T value, T& adj_value, const tile_t<T, D...>& adj_ret) {
    for (int i = 0; i < adj_ret.size; ++i) adj_value += adj_ret.data[i];
}
template <typename T, int N>
WEFT_FN tile_t<T, N> tile_arange(T start, T step) {
    tile_t<T, N> r;
    for (int i = 0; i < N; ++i) r.data[i] = T(start + T(i) * step);
    return r;
}

// ------------------------------------------------------------------------- loads and stores

// Loads, stores and their adjoints walk the tile a row (its last dimension) at a time: one
// coordinate computation and bounds check per row, then the row's elements inside the array
// (columns [lo, hi)), whose addresses step by the array's last stride. Elements outside the array
// are not visited: loads leave them zero, stores skip them (Warp's padding).
template <typename Tile, typename T, typename F>
WEFT_FN void tile_for_rows(const array_t<T>& a, T* base, const int32* o, F&& row_fn) {
    using S = typename Tile::shape;
    constexpr int nd = Tile::ndim;
    constexpr int cols = S::dim(nd - 1);
    if (Tile::size == 0 || !base) return;
    const int64 o_last = o[nd - 1];
    const int64 lo64 = o_last < 0 ? -o_last : 0;
    const int64 hi64 = int64(a.shape[nd - 1]) - o_last < cols ? int64(a.shape[nd - 1]) - o_last : cols;
    if (hi64 <= lo64) return;
    const int lo = int(lo64), hi = int(hi64);
    const int64 stride = a.strides[nd - 1];
    for (int row = 0; row < Tile::size / cols; ++row) {
        int c[nd > 1 ? nd : 1];
        int r = row;
        for (int k = nd - 2; k >= 0; --k) {
            c[k] = r % S::dim(k);
            r /= S::dim(k);
        }
        char* p = reinterpret_cast<char*>(base);
        bool inside = true;
        for (int k = 0; k < nd - 1; ++k) {
            const int64 x = int64(o[k]) + c[k];
            inside = inside && x >= 0 && x < a.shape[k];
            p += x * a.strides[k];
        }
        if (!inside) continue;
        p += o_last * stride;
        row_fn(row * cols, p, lo, hi, stride);
    }
}

// the element at column j of a row starting at p (contiguous rows index a T pointer, so that
// the compiler vectorizes them)
template <typename T>
WEFT_FN T& tile_row_at(char* p, int j, int64 stride) {
    return stride == int64(sizeof(T)) ? reinterpret_cast<T*>(p)[j] : *reinterpret_cast<T*>(p + j * stride);
}

template <typename T, int... D>
WEFT_FN tile_t<T, D...> tile_load(const array_t<T>& a, int32 o0, int32 o1, int32 o2, int32 o3) {
    using Tile = tile_t<T, D...>;
    const int32 o[4] = {o0, o1, o2, o3};
    Tile r{};
    tile_for_rows<Tile>(a, a.data, o, [&](int first, char* p, int lo, int hi, int64 stride) {
        if (stride == int64(sizeof(T))) {
            const T* q = reinterpret_cast<const T*>(p);
            for (int j = lo; j < hi; ++j) r.data[first + j] = q[j];
        } else {
            for (int j = lo; j < hi; ++j) r.data[first + j] = *reinterpret_cast<const T*>(p + j * stride);
        }
    });
    return r;
}
template <typename T, int... D>
WEFT_FN void adj_tile_load(const array_t<T>& a, int32 o0, int32 o1, int32 o2, int32 o3, const array_t<T>&, int32&,
                           int32&, int32&, int32&, const tile_t<T, D...>& adj_ret) {
    using Tile = tile_t<T, D...>;
    const int32 o[4] = {o0, o1, o2, o3};
    tile_for_rows<Tile>(a, a.grad, o, [&](int first, char* p, int lo, int hi, int64 stride) {
        for (int j = lo; j < hi; ++j) atomic_add_raw(&tile_row_at<T>(p, j, stride), adj_ret.data[first + j]);
    });
}

template <typename T, int... D>
WEFT_FN void tile_store(const array_t<T>& a, const tile_t<T, D...>& t, int32 o0, int32 o1, int32 o2, int32 o3) {
    using Tile = tile_t<T, D...>;
    const int32 o[4] = {o0, o1, o2, o3};
    tile_for_rows<Tile>(a, a.data, o, [&](int first, char* p, int lo, int hi, int64 stride) {
        if (stride == int64(sizeof(T))) {
            T* q = reinterpret_cast<T*>(p);
            for (int j = lo; j < hi; ++j) q[j] = t.data[first + j];
        } else {
            for (int j = lo; j < hi; ++j) *reinterpret_cast<T*>(p + j * stride) = t.data[first + j];
        }
    });
}
// The gradient of a stored tile is the gradient of the elements it wrote, consumed as an array
// store's is (array.h: only the last write of an element receives it; retain_grad keeps it).
template <typename T, int... D>
WEFT_FN void adj_tile_store(const array_t<T>& a, const tile_t<T, D...>& t, int32 o0, int32 o1, int32 o2, int32 o3,
                            const array_t<T>&, tile_t<T, D...>& adj_t, int32&, int32&, int32&, int32&) {
    using Tile = tile_t<T, D...>;
    const int32 o[4] = {o0, o1, o2, o3};
    tile_for_rows<Tile>(a, a.grad, o, [&](int first, char* p, int lo, int hi, int64 stride) {
        for (int j = lo; j < hi; ++j) adj_store_at(a, &tile_row_at<T>(p, j, stride), adj_t.data[first + j]);
    });
}

// wp.tile_atomic_add: adds the tile into the array, returns the elements' previous values.
template <typename T, int... D>
WEFT_FN tile_t<T, D...> tile_atomic_add(const array_t<T>& a, const tile_t<T, D...>& t, int32 o0, int32 o1, int32 o2,
                                        int32 o3) {
    using Tile = tile_t<T, D...>;
    const int32 o[4] = {o0, o1, o2, o3};
    Tile r{};
    tile_for_rows<Tile>(a, a.data, o, [&](int first, char* p, int lo, int hi, int64 stride) {
        for (int j = lo; j < hi; ++j) r.data[first + j] = atomic_add_raw(&tile_row_at<T>(p, j, stride), t.data[first + j]);
    });
    return r;
}
template <typename T, int... D>
WEFT_FN void adj_tile_atomic_add(const array_t<T>& a, const tile_t<T, D...>& t, int32 o0, int32 o1, int32 o2,
                                 int32 o3, const array_t<T>&, tile_t<T, D...>& adj_t, int32&, int32&, int32&, int32&,
                                 const tile_t<T, D...>&) {
    using Tile = tile_t<T, D...>;
    const int32 o[4] = {o0, o1, o2, o3};
    tile_for_rows<Tile>(a, a.grad, o, [&](int first, char* p, int lo, int hi, int64 stride) {
        for (int j = lo; j < hi; ++j) adj_t.data[first + j] += tile_row_at<T>(p, j, stride);
    });
}

// ------------------------------------------------------------------------------ element-wise

// tile_map(f, a[, b[, c]]): f applied to the elements at each index. The generated code passes
// lambdas: f calls the element operation (a builtin or a user func), adj_f its adjoint; values
// that are not tiles (a scalar in tile * 2.0) are captured by the lambdas, their adjoints too.
template <typename F, typename A, int... D>
WEFT_FN auto tile_map(F f, const tile_t<A, D...>& a) {
    tile_t<decltype(f(a.data[0])), D...> r;
    for (int i = 0; i < a.size; ++i) r.data[i] = f(a.data[i]);
    return r;
}
template <typename F, typename A, typename B, int... D>
WEFT_FN auto tile_map(F f, const tile_t<A, D...>& a, const tile_t<B, D...>& b) {
    tile_t<decltype(f(a.data[0], b.data[0])), D...> r;
    for (int i = 0; i < a.size; ++i) r.data[i] = f(a.data[i], b.data[i]);
    return r;
}
template <typename F, typename A, typename B, typename C, int... D>
WEFT_FN auto tile_map(F f, const tile_t<A, D...>& a, const tile_t<B, D...>& b, const tile_t<C, D...>& c) {
    tile_t<decltype(f(a.data[0], b.data[0], c.data[0])), D...> r;
    for (int i = 0; i < a.size; ++i) r.data[i] = f(a.data[i], b.data[i], c.data[i]);
    return r;
}
template <typename F, typename A, int... D, typename R>
WEFT_FN void adj_tile_map(F adj_f, const tile_t<A, D...>& a, tile_t<A, D...>& adj_a, const R& adj_ret) {
    for (int i = 0; i < a.size; ++i) adj_f(a.data[i], adj_a.data[i], adj_ret.data[i]);
}
template <typename F, typename A, typename B, int... D, typename R>
WEFT_FN void adj_tile_map(F adj_f, const tile_t<A, D...>& a, const tile_t<B, D...>& b, tile_t<A, D...>& adj_a,
                          tile_t<B, D...>& adj_b, const R& adj_ret) {
    for (int i = 0; i < a.size; ++i) adj_f(a.data[i], b.data[i], adj_a.data[i], adj_b.data[i], adj_ret.data[i]);
}
template <typename F, typename A, typename B, typename C, int... D, typename R>
WEFT_FN void adj_tile_map(F adj_f, const tile_t<A, D...>& a, const tile_t<B, D...>& b, const tile_t<C, D...>& c,
                          tile_t<A, D...>& adj_a, tile_t<B, D...>& adj_b, tile_t<C, D...>& adj_c, const R& adj_ret) {
    for (int i = 0; i < a.size; ++i)
        adj_f(a.data[i], b.data[i], c.data[i], adj_a.data[i], adj_b.data[i], adj_c.data[i], adj_ret.data[i]);
}

// Element maps whose derivative is a function of their value (d tanh = 1 - y^2, d exp = y): the
// adjoint of the map reads the forward result instead of computing the function again.
template <typename T>
WEFT_FN void adj_tanh_from_result(T y_, T& adj_x, T adj_ret) {
    typedef compute_t<T> R;
    const R y = R(y_);
    accum(adj_x, (R(1) - y * y) * R(adj_ret));
}
template <typename T>
WEFT_FN void adj_exp_from_result(T y, T& adj_x, T adj_ret) {
    typedef compute_t<T> R;
    accum(adj_x, R(y) * R(adj_ret));
}
template <typename F, typename A, typename R, int... D>
WEFT_FN void adj_tile_map_from_result(F adj_f, const tile_t<R, D...>& y, tile_t<A, D...>& adj_a,
                                      const tile_t<R, D...>& adj_ret) {
    for (int i = 0; i < y.size; ++i) adj_f(y.data[i], adj_a.data[i], adj_ret.data[i]);
}

// wp.tile_astype: each element converted to U.
template <typename U, typename T, int... D>
WEFT_FN tile_t<U, D...> tile_astype(const tile_t<T, D...>& t) {
    tile_t<U, D...> r;
    for (int i = 0; i < t.size; ++i) r.data[i] = U(t.data[i]);
    return r;
}
template <typename U, typename T, int... D>
WEFT_FN void adj_tile_astype(const tile_t<T, D...>& t, tile_t<T, D...>& adj_t, const tile_t<U, D...>& adj_ret) {
    for (int i = 0; i < t.size; ++i) adj_t.data[i] += T(adj_ret.data[i]);
}

// ------------------------------------------------------------------------- element access

template <typename S>
WEFT_COLD_PATH WEFT_FN void raise_tile_index_error(int32 loc, int k, const int64* c, int n) {
    raise_index_error_values(loc, k, S::ndim, S::ndim > 0 ? S::dim(0) : 0, S::ndim > 1 ? S::dim(1) : 0,
                             S::ndim > 2 ? S::dim(2) : 0, S::ndim > 3 ? S::dim(3) : 0, c[0], n > 1 ? c[1] : 0,
                             n > 2 ? c[2] : 0, n > 3 ? c[3] : 0, n);
}

// The linear index of t[i0, ..., i(n-1)] (negative indices count from the end), checked.
template <typename S>
WEFT_FN int tile_linear(int32 loc, int n, int32 i0, int32 i1, int32 i2, int32 i3) {
    int64 c[4] = {i0, i1, i2, i3};
    int lin = 0;
    for (int k = 0; k < n; ++k) {
        if (c[k] < 0) c[k] += S::dim(k);
#ifndef WEFT_RELEASE
        if (c[k] < 0 || c[k] >= S::dim(k)) raise_tile_index_error<S>(loc, k, c, n);
#endif
        lin += int(c[k]) * S::stride(k);
    }
    return lin;
}

// t[i, j]: one element (the frontend passes as many indices as the tile has dimensions, padded
// to four).
template <typename T, int... D>
WEFT_FN T tile_extract(const tile_t<T, D...>& t, int32 loc, int32 i0, int32 i1, int32 i2, int32 i3) {
    return t.data[tile_linear<tile_shape_t<D...>>(loc, sizeof...(D), i0, i1, i2, i3)];
}
template <typename T, int... D>
WEFT_FN void adj_tile_extract(const tile_t<T, D...>& t, int32 loc, int32 i0, int32 i1, int32 i2, int32 i3,
                              tile_t<T, D...>& adj_t, int32&, int32&, int32&, int32&, int32&, T adj_ret) {
    adj_t.data[tile_linear<tile_shape_t<D...>>(loc, sizeof...(D), i0, i1, i2, i3)] += adj_ret;
}

// t[i, j] = v: the tile with one element replaced (the frontend rebinds t to it)
template <typename T, int... D>
WEFT_FN tile_t<T, D...> tile_set(const tile_t<T, D...>& t, int32 loc, int32 i0, int32 i1, int32 i2, int32 i3, T v) {
    tile_t<T, D...> r = t;
    r.data[tile_linear<tile_shape_t<D...>>(loc, sizeof...(D), i0, i1, i2, i3)] = v;
    return r;
}
template <typename T, int... D>
WEFT_FN void adj_tile_set(const tile_t<T, D...>& t, int32 loc, int32 i0, int32 i1, int32 i2, int32 i3, T v,
                          tile_t<T, D...>& adj_t, int32&, int32&, int32&, int32&, int32&, T& adj_v,
                          const tile_t<T, D...>& adj_ret) {
    int k = tile_linear<tile_shape_t<D...>>(loc, sizeof...(D), i0, i1, i2, i3);
    for (int i = 0; i < t.size; ++i)
        if (i != k) adj_t.data[i] += adj_ret.data[i];
    adj_v += adj_ret.data[k];
}

WEFT_TILE_END
