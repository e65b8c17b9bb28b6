// Tile data operations, forward and adjoint: sorting, scans, scatter, indexed loads and stores,
// block stacks, random tiles and the fused products tile_dot / tile_axpy.
//
// As in tile.h, a block runs on one thread, so Warp's cooperative operations become sequential
// loops over the tile's elements, and its in-place forms (tile_sort, tile_axpy, tile_scatter_*,
// tile_stack_*) return the updated values, which the frontend rebinds to the names passed in.
#pragma once
#include "tile_ops.h"
#include "../random.h"
#include "../tuple.h"

WEFT_TILE_BEGIN

// The scalar components of an element (a scalar, vector, matrix...), for the fused products.
template <typename T>
WEFT_FN const typename element_traits<T>::scalar* tile_components(const T& x) {
    return reinterpret_cast<const typename element_traits<T>::scalar*>(&x);
}
template <typename T>
WEFT_FN typename element_traits<T>::scalar* tile_components(T& x) {
    return reinterpret_cast<typename element_traits<T>::scalar*>(&x);
}

// ------------------------------------------------------------------------------------ sort

// One pass of a bottom-up merge sort: runs of `width` from (sk, sv) merged into (dk, dv).
// Ties take the left run first, so the sort is stable.
template <typename K, typename V>
WEFT_FN void tile_merge_pass(const K* sk, const V* sv, K* dk, V* dv, int n, int width) {
    for (int lo = 0; lo < n; lo += 2 * width) {
        const int mid = lo + width < n ? lo + width : n;
        const int hi = lo + 2 * width < n ? lo + 2 * width : n;
        int i = lo, j = mid;
        for (int o = lo; o < hi; ++o) {
            const bool left = i < mid && (j >= hi || !(sk[j] < sk[i]));
            const int s = left ? i++ : j++;
            dk[o] = sk[s];
            dv[o] = sv[s];
        }
    }
}

// wp.tile_sort(keys, values): both tiles ordered by ascending key (stable).
template <typename K, typename V, int N>
WEFT_FN tuple_t<tile_t<K, N>, tile_t<V, N>> tile_sort(const tile_t<K, N>& keys, const tile_t<V, N>& values) {
    tuple_t<tile_t<K, N>, tile_t<V, N>> r;
    tile_t<K, N> scratch_k;
    tile_t<V, N> scratch_v;
    r.head = keys;
    r.tail.head = values;
    K* k[2] = {r.head.data, scratch_k.data};
    V* v[2] = {r.tail.head.data, scratch_v.data};
    int src = 0;
    for (int width = 1; width < N; width *= 2, src ^= 1) tile_merge_pass(k[src], v[src], k[src ^ 1], v[src ^ 1], N, width);
    if (src == 1) {
        for (int i = 0; i < N; ++i) {
            r.head.data[i] = scratch_k.data[i];
            r.tail.head.data[i] = scratch_v.data[i];
        }
    }
    return r;
}

// ------------------------------------------------------------------------------------ scans

// Scans run over the elements in row-major order.
template <typename T>
struct tile_scan_add {
    static WEFT_FN T apply(T a, T b) { return T(a + b); }
};
template <typename T>
struct tile_scan_max {
    static WEFT_FN T apply(T a, T b) { return b > a ? b : a; }
};
template <typename T>
struct tile_scan_min {
    static WEFT_FN T apply(T a, T b) { return b < a ? b : a; }
};

template <typename Op, typename T, int... D>
WEFT_FN tile_t<T, D...> tile_scan(const tile_t<T, D...>& t) {
    tile_t<T, D...> r;
    for (int i = 0; i < t.size; ++i) r.data[i] = i ? Op::apply(r.data[i - 1], t.data[i]) : t.data[i];
    return r;
}
template <typename T, int... D>
WEFT_FN tile_t<T, D...> tile_scan_inclusive(const tile_t<T, D...>& t) {
    return tile_scan<tile_scan_add<T>>(t);
}
template <typename T, int... D>
WEFT_FN tile_t<T, D...> tile_scan_max_inclusive(const tile_t<T, D...>& t) {
    return tile_scan<tile_scan_max<T>>(t);
}
template <typename T, int... D>
WEFT_FN tile_t<T, D...> tile_scan_min_inclusive(const tile_t<T, D...>& t) {
    return tile_scan<tile_scan_min<T>>(t);
}
template <typename T, int... D>
WEFT_FN tile_t<T, D...> tile_scan_exclusive(const tile_t<T, D...>& t) {
    tile_t<T, D...> r;
    T s{};
    for (int i = 0; i < t.size; ++i) {
        r.data[i] = s;
        s = T(s + t.data[i]);
    }
    return r;
}

// ------------------------------------------------------------------------------ scatter

// The linear index of (i0, ..., i3) in a tile of shape S, or -1 outside it.
template <typename S>
WEFT_FN int tile_index_or_none(int32 i0, int32 i1, int32 i2, int32 i3) {
    const int32 c[4] = {i0, i1, i2, i3};
    int lin = 0;
    for (int k = 0; k < S::ndim; ++k) {
        if (c[k] < 0 || c[k] >= S::dim(k)) return -1;
        lin += c[k] * S::stride(k);
    }
    return lin;
}

// wp.tile_scatter_add(a, i, ..., value, has_value): a with value added at the index (when
// has_value; indices outside the tile are skipped). One thread: atomic or not, the same.
template <typename T, int... D>
WEFT_FN tile_t<T, D...> tile_scatter_add(const tile_t<T, D...>& t, int32 i0, int32 i1, int32 i2, int32 i3, T value,
                                         bool has_value) {
    tile_t<T, D...> r = t;
    const int k = has_value ? tile_index_or_none<tile_shape_t<D...>>(i0, i1, i2, i3) : -1;
    if (k >= 0) r.data[k] += value;
    return r;
}
template <typename T, int... D>
WEFT_FN void adj_tile_scatter_add(const tile_t<T, D...>& t, int32 i0, int32 i1, int32 i2, int32 i3, T value,
                                  bool has_value, tile_t<T, D...>& adj_t, int32&, int32&, int32&, int32&, T& adj_value,
                                  bool&, const tile_t<T, D...>& adj_ret) {
    adj_t += adj_ret;
    const int k = has_value ? tile_index_or_none<tile_shape_t<D...>>(i0, i1, i2, i3) : -1;
    if (k >= 0) adj_value += adj_ret.data[k];
}

// wp.tile_scatter_masked(a, i, ..., value, has_value): a with the element at the index replaced.
template <typename T, int... D>
WEFT_FN tile_t<T, D...> tile_scatter_masked(const tile_t<T, D...>& t, int32 i0, int32 i1, int32 i2, int32 i3, T value,
                                            bool has_value) {
    tile_t<T, D...> r = t;
    const int k = has_value ? tile_index_or_none<tile_shape_t<D...>>(i0, i1, i2, i3) : -1;
    if (k >= 0) r.data[k] = value;
    return r;
}
template <typename T, int... D>
WEFT_FN void adj_tile_scatter_masked(const tile_t<T, D...>& t, int32 i0, int32 i1, int32 i2, int32 i3, T value,
                                     bool has_value, tile_t<T, D...>& adj_t, int32&, int32&, int32&, int32&,
                                     T& adj_value, bool&, const tile_t<T, D...>& adj_ret) {
    const int k = has_value ? tile_index_or_none<tile_shape_t<D...>>(i0, i1, i2, i3) : -1;
    for (int i = 0; i < t.size; ++i)
        if (i != k) adj_t.data[i] += adj_ret.data[i];
    if (k >= 0) adj_value += adj_ret.data[k];
}

// ----------------------------------------------------------------- indexed loads and stores

// The address of element i of a tile of shape S in buffer `base` of array a at offsets o, where
// the coordinate along `axis` is o[axis] + indices[c[axis]]; null outside the array (an index of
// -1 thus pads with zeros).
template <typename S, typename T, int M>
WEFT_FN T* tile_indexed_element(const array_t<T>& a, T* base, const tile_t<int32, M>& indices, int32 axis, int i,
                                const int32* o) {
    int c[S::ndim > 0 ? S::ndim : 1];
    S::coord(i, c);
    char* p = reinterpret_cast<char*>(base);
    for (int k = 0; k < S::ndim; ++k) {
        const int64 x = int64(o[k]) + (k == axis ? int64(indices.data[c[k]]) : int64(c[k]));
        if (x < 0 || x >= a.shape[k]) return nullptr;
        p += x * a.strides[k];
    }
    return reinterpret_cast<T*>(p);
}

template <typename R, typename T, int M>
WEFT_FN R tile_load_indexed(const array_t<T>& a, const tile_t<int32, M>& indices, int32 axis, int32 o0, int32 o1,
                            int32 o2, int32 o3) {
    const int32 o[4] = {o0, o1, o2, o3};
    R r;
    for (int i = 0; i < R::size; ++i) {
        T* p = tile_indexed_element<typename R::shape>(a, a.data, indices, axis, i, o);
        r.data[i] = p ? *p : T{};
    }
    return r;
}
template <typename R, typename T, int M>
WEFT_FN void adj_tile_load_indexed(const array_t<T>& a, const tile_t<int32, M>& indices, int32 axis, int32 o0,
                                   int32 o1, int32 o2, int32 o3, const array_t<T>&, tile_t<int32, M>&, int32&, int32&,
                                   int32&, int32&, int32&, const R& adj_ret) {
    if (!a.grad) return;
    const int32 o[4] = {o0, o1, o2, o3};
    for (int i = 0; i < R::size; ++i) {
        T* g = tile_indexed_element<typename R::shape>(a, a.grad, indices, axis, i, o);
        if (g) atomic_add_raw(g, adj_ret.data[i]);
    }
}

template <typename T, int M, int... D>
WEFT_FN void tile_store_indexed(const array_t<T>& a, const tile_t<int32, M>& indices, const tile_t<T, D...>& t,
                                int32 axis, int32 o0, int32 o1, int32 o2, int32 o3) {
    const int32 o[4] = {o0, o1, o2, o3};
    for (int i = 0; i < t.size; ++i) {
        T* p = tile_indexed_element<tile_shape_t<D...>>(a, a.data, indices, axis, i, o);
        if (p) *p = t.data[i];
    }
}
// The gradient of the stored tile is the gradient of the elements it wrote (as tile_store).
template <typename T, int M, int... D>
WEFT_FN void adj_tile_store_indexed(const array_t<T>& a, const tile_t<int32, M>& indices, const tile_t<T, D...>& t,
                                    int32 axis, int32 o0, int32 o1, int32 o2, int32 o3, const array_t<T>&,
                                    tile_t<int32, M>&, tile_t<T, D...>& adj_t, int32&, int32&, int32&, int32&, int32&) {
    if (!a.grad) return;
    const int32 o[4] = {o0, o1, o2, o3};
    for (int i = 0; i < t.size; ++i) {
        T* g = tile_indexed_element<tile_shape_t<D...>>(a, a.grad, indices, axis, i, o);
        if (g) adj_store_at(a, g, adj_t.data[i]);  // read and consumed, as a store's (array.h)
    }
}

// wp.tile_atomic_add_indexed: returns the elements' previous values (zero where skipped).
template <typename T, int M, int... D>
WEFT_FN tile_t<T, D...> tile_atomic_add_indexed(const array_t<T>& a, const tile_t<int32, M>& indices,
                                                const tile_t<T, D...>& t, int32 axis, int32 o0, int32 o1, int32 o2,
                                                int32 o3) {
    const int32 o[4] = {o0, o1, o2, o3};
    tile_t<T, D...> r{};
    for (int i = 0; i < t.size; ++i) {
        T* p = tile_indexed_element<tile_shape_t<D...>>(a, a.data, indices, axis, i, o);
        if (p) r.data[i] = atomic_add_raw(p, t.data[i]);
    }
    return r;
}
template <typename T, int M, int... D>
WEFT_FN void adj_tile_atomic_add_indexed(const array_t<T>& a, const tile_t<int32, M>& indices,
                                         const tile_t<T, D...>& t, int32 axis, int32 o0, int32 o1, int32 o2, int32 o3,
                                         const array_t<T>& adj_a, tile_t<int32, M>& adj_indices,
                                         tile_t<T, D...>& adj_t, int32& adj_axis, int32& a0, int32& a1, int32& a2,
                                         int32& a3, const tile_t<T, D...>&) {
    if (!a.grad) return;  // an add's gradient is read, not consumed (other writers' gradients stay)
    const int32 o[4] = {o0, o1, o2, o3};
    for (int i = 0; i < t.size; ++i) {
        T* g = tile_indexed_element<tile_shape_t<D...>>(a, a.grad, indices, axis, i, o);
        if (g) adj_t.data[i] += *g;
    }
}

// ------------------------------------------------------------------------------- random

// wp.tile_randi / wp.tile_randf: Warp's CPU sequence: the block's (one) thread hashes its
// index (0) plus rng once, then draws the elements in order from that state.
template <int... D>
WEFT_FN tile_t<int32, D...> tile_randi(uint32 rng) {
    tile_t<int32, D...> r;
    uint32 s = rand_hash(rng);
    for (int i = 0; i < r.size; ++i) r.data[i] = int32(rand_next(s));
    return r;
}
template <int... D>
WEFT_FN tile_t<int32, D...> tile_randi(uint32 rng, int32 low, int32 high) {
    tile_t<int32, D...> r;
    uint32 s = rand_hash(rng);
    const uint32 range = uint32(high) - uint32(low);
    for (int i = 0; i < r.size; ++i) {
        const uint32 h = rand_next(s);
        r.data[i] = range ? int32(uint32(low) + h % range) : low;
    }
    return r;
}
template <int... D>
WEFT_FN tile_t<float32, D...> tile_randf(uint32 rng) {
    tile_t<float32, D...> r;
    uint32 s = rand_hash(rng);
    for (int i = 0; i < r.size; ++i) r.data[i] = rand_next_f(s);
    return r;
}
template <int... D>
WEFT_FN tile_t<float32, D...> tile_randf(uint32 rng, float32 low, float32 high) {
    tile_t<float32, D...> r;
    uint32 s = rand_hash(rng);
    for (int i = 0; i < r.size; ++i) r.data[i] = (high - low) * rand_next_f(s) + low;
    return r;
}

// ------------------------------------------------------------------------------- stacks

// wp.tile_stack: a block's stack of at most Capacity values (a value here, like tiles).
template <typename T, int Capacity>
struct tile_stack_t {
    T data[Capacity];
    int32 count;
};
template <typename T, int Capacity>
WEFT_FN tile_stack_t<T, Capacity> tile_stack_init() {
    return tile_stack_t<T, Capacity>{};
}
// (the stack after the push, the slot written or -1 when has_value is false or it is full)
template <typename T, int Capacity>
WEFT_FN tuple_t<tile_stack_t<T, Capacity>, int32> tile_stack_push(const tile_stack_t<T, Capacity>& s, T value,
                                                                  bool has_value) {
    tile_stack_t<T, Capacity> r = s;
    int32 slot = -1;
    if (has_value && r.count < Capacity) {
        slot = r.count++;
        r.data[slot] = value;
    }
    return make_tuple(r, slot);
}
// (the stack after the pop, (the value popped or T{} when empty, its slot or -1))
template <typename T, int Capacity>
WEFT_FN tuple_t<tile_stack_t<T, Capacity>, tuple_t<T, int32>> tile_stack_pop(const tile_stack_t<T, Capacity>& s) {
    tile_stack_t<T, Capacity> r = s;
    if (r.count <= 0) return make_tuple(r, make_tuple(T{}, int32(-1)));
    const int32 slot = --r.count;
    return make_tuple(r, make_tuple(r.data[slot], slot));
}
template <typename T, int Capacity>
WEFT_FN tile_stack_t<T, Capacity> tile_stack_clear(const tile_stack_t<T, Capacity>& s) {
    tile_stack_t<T, Capacity> r = s;
    r.count = 0;
    return r;
}
template <typename T, int Capacity>
WEFT_FN int32 tile_stack_count(const tile_stack_t<T, Capacity>& s) {
    return s.count;
}

// ------------------------------------------------------------------------ fused products

// wp.tile_dot(a, b): the sum over the elements of the products of their components (dot of
// vectors, Frobenius product of matrices), as a one-element tile of the scalar type.
template <typename T, int... D>
WEFT_FN tile_t<typename element_traits<T>::scalar, 1> tile_dot(const tile_t<T, D...>& a, const tile_t<T, D...>& b) {
    using S = typename element_traits<T>::scalar;
    S s{};
    for (int i = 0; i < a.size; ++i) {
        const S* p = tile_components(a.data[i]);
        const S* q = tile_components(b.data[i]);
        for (unsigned k = 0; k < element_traits<T>::components; ++k) s += S(p[k] * q[k]);
    }
    return tile_t<S, 1>{{s}};
}
template <typename T, int... D>
WEFT_FN void adj_tile_dot(const tile_t<T, D...>& a, const tile_t<T, D...>& b, tile_t<T, D...>& adj_a,
                          tile_t<T, D...>& adj_b, const tile_t<typename element_traits<T>::scalar, 1>& adj_ret) {
    using S = typename element_traits<T>::scalar;
    const S g = adj_ret.data[0];
    for (int i = 0; i < a.size; ++i) {
        const S* p = tile_components(a.data[i]);
        const S* q = tile_components(b.data[i]);
        S* ap = tile_components(adj_a.data[i]);
        S* bp = tile_components(adj_b.data[i]);
        for (unsigned k = 0; k < element_traits<T>::components; ++k) {
            ap[k] += S(g * q[k]);
            bp[k] += S(g * p[k]);
        }
    }
}

// wp.tile_axpy(alpha, src, dest): dest + alpha * src (the frontend rebinds dest to it).
template <typename S, typename T, int... D>
WEFT_FN tile_t<T, D...> tile_axpy(S alpha, const tile_t<T, D...>& src, const tile_t<T, D...>& dest) {
    tile_t<T, D...> r = dest;
    for (int i = 0; i < r.size; ++i) {
        const S* x = tile_components(src.data[i]);
        S* y = tile_components(r.data[i]);
        for (unsigned k = 0; k < element_traits<T>::components; ++k) y[k] += S(alpha * x[k]);
    }
    return r;
}
template <typename S, typename T, int... D>
WEFT_FN void adj_tile_axpy(S alpha, const tile_t<T, D...>& src, const tile_t<T, D...>& dest, S& adj_alpha,
                           tile_t<T, D...>& adj_src, tile_t<T, D...>& adj_dest, const tile_t<T, D...>& adj_ret) {
    adj_dest += adj_ret;
    for (int i = 0; i < src.size; ++i) {
        const S* x = tile_components(src.data[i]);
        const S* g = tile_components(adj_ret.data[i]);
        S* ax = tile_components(adj_src.data[i]);
        for (unsigned k = 0; k < element_traits<T>::components; ++k) {
            ax[k] += S(alpha * g[k]);
            adj_alpha += S(x[k] * g[k]);
        }
    }
}

WEFT_TILE_END
