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

namespace weft {

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

// The address of tile element i at the offsets o in the data (or gradient) buffer `base` of `a`,
// or null when it falls outside the array: loads read zero there and stores skip it.
template <typename Tile, typename T>
WEFT_FN T* tile_element(const array_t<T>& a, T* base, int i, const int32* o) {
    int c[Tile::ndim > 0 ? Tile::ndim : 1];
    Tile::shape::coord(i, c);
    char* p = reinterpret_cast<char*>(base);
    for (int k = 0; k < Tile::ndim; ++k) {
        int64 x = int64(o[k]) + c[k];
        if (x < 0 || x >= a.shape[k]) return nullptr;
        p += x * a.strides[k];
    }
    return reinterpret_cast<T*>(p);
}

template <typename T, int... D>
WEFT_FN tile_t<T, D...> tile_load(const array_t<T>& a, int32 o0, int32 o1, int32 o2, int32 o3) {
    using Tile = tile_t<T, D...>;
    const int32 o[4] = {o0, o1, o2, o3};
    Tile r;
    for (int i = 0; i < Tile::size; ++i) {
        T* p = tile_element<Tile>(a, a.data, i, o);
        r.data[i] = p ? *p : T{};
    }
    return r;
}
template <typename T, int... D>
WEFT_FN void adj_tile_load(const array_t<T>& a, int32 o0, int32 o1, int32 o2, int32 o3, const array_t<T>&, int32&,
                           int32&, int32&, int32&, const tile_t<T, D...>& adj_ret) {
    using Tile = tile_t<T, D...>;
    if (!a.grad) return;
    const int32 o[4] = {o0, o1, o2, o3};
    for (int i = 0; i < Tile::size; ++i) {
        T* g = tile_element<Tile>(a, a.grad, i, o);
        if (g) atomic_add_raw(g, adj_ret.data[i]);
    }
}

template <typename T, int... D>
WEFT_FN void tile_store(const array_t<T>& a, const tile_t<T, D...>& t, int32 o0, int32 o1, int32 o2, int32 o3) {
    using Tile = tile_t<T, D...>;
    const int32 o[4] = {o0, o1, o2, o3};
    for (int i = 0; i < Tile::size; ++i) {
        T* p = tile_element<Tile>(a, a.data, i, o);
        if (p) *p = t.data[i];
    }
}
// The gradient of a stored tile is the gradient of the elements it wrote (read, not consumed).
template <typename T, int... D>
WEFT_FN void adj_tile_store(const array_t<T>& a, const tile_t<T, D...>& t, int32 o0, int32 o1, int32 o2, int32 o3,
                            const array_t<T>&, tile_t<T, D...>& adj_t, int32&, int32&, int32&, int32&) {
    using Tile = tile_t<T, D...>;
    if (!a.grad) return;
    const int32 o[4] = {o0, o1, o2, o3};
    for (int i = 0; i < Tile::size; ++i) {
        T* g = tile_element<Tile>(a, a.grad, i, o);
        if (g) adj_t.data[i] += *g;
    }
}

// wp.tile_atomic_add: adds the tile into the array, returns the elements' previous values.
template <typename T, int... D>
WEFT_FN tile_t<T, D...> tile_atomic_add(const array_t<T>& a, const tile_t<T, D...>& t, int32 o0, int32 o1, int32 o2,
                                        int32 o3) {
    using Tile = tile_t<T, D...>;
    const int32 o[4] = {o0, o1, o2, o3};
    Tile r{};
    for (int i = 0; i < Tile::size; ++i) {
        T* p = tile_element<Tile>(a, a.data, i, o);
        if (p) r.data[i] = atomic_add_raw(p, t.data[i]);
    }
    return r;
}
template <typename T, int... D>
WEFT_FN void adj_tile_atomic_add(const array_t<T>& a, const tile_t<T, D...>& t, int32 o0, int32 o1, int32 o2,
                                 int32 o3, const array_t<T>&, tile_t<T, D...>& adj_t, int32&, int32&, int32&, int32&,
                                 const tile_t<T, D...>&) {
    using Tile = tile_t<T, D...>;
    if (!a.grad) return;
    const int32 o[4] = {o0, o1, o2, o3};
    for (int i = 0; i < Tile::size; ++i) {
        T* g = tile_element<Tile>(a, a.grad, i, o);
        if (g) adj_t.data[i] += *g;
    }
}

// where(cond, a, b) of tiles (the merge after an if/else that assigns a tile)
template <typename C, typename T, int... D>
WEFT_FN void adj_where(C cond, const tile_t<T, D...>& a, const tile_t<T, D...>& b, C& adj_cond,
                       tile_t<T, D...>& adj_a, tile_t<T, D...>& adj_b, const tile_t<T, D...>& adj_ret) {
    if (truth(cond))
        adj_a += adj_ret;
    else
        adj_b += adj_ret;
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
    kernel_error e;
    e.code = 1;
    e.loc = loc;
    e.dim = k;
    e.ndim = n;
    for (int d = 0; d < 4; ++d) {
        e.index[d] = d < n ? c[d] : 0;
        e.shape[d] = d < S::ndim ? S::dim(d) : -1;
    }
    raise_kernel_error(e);
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

// t[i, j] += v (and -=): the tile with one element added to
template <typename T, int... D>
WEFT_FN tile_t<T, D...> tile_add_at(const tile_t<T, D...>& t, int32 loc, int32 i0, int32 i1, int32 i2, int32 i3,
                                    T v) {
    tile_t<T, D...> r = t;
    r.data[tile_linear<tile_shape_t<D...>>(loc, sizeof...(D), i0, i1, i2, i3)] += v;
    return r;
}
template <typename T, int... D>
WEFT_FN void adj_tile_add_at(const tile_t<T, D...>& t, int32 loc, int32 i0, int32 i1, int32 i2, int32 i3, T v,
                             tile_t<T, D...>& adj_t, int32&, int32&, int32&, int32&, int32&, T& adj_v,
                             const tile_t<T, D...>& adj_ret) {
    adj_t += adj_ret;
    adj_v += adj_ret.data[tile_linear<tile_shape_t<D...>>(loc, sizeof...(D), i0, i1, i2, i3)];
}

}  // namespace weft
