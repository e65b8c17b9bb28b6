// Tiles on CUDA: a block's threads share each tile (Warp's GPU model).
//
// A kernel launched with wp.launch_tiled(..., block_dim=L) on a GPU runs L threads per block, and
// the module is built for that L (WEFT_TILE_LANES). Every thread runs the kernel's code; scalar
// values are the same in all of them (kernels whose values differ per thread -- wp.tile(x),
// wp.untile, wp.block_dim, the thread index from wp.tid() -- are built with L = 1, one thread per
// block, as on the CPU). A tile is spread over the block: thread `lane` holds the elements
// lane, lane + L, lane + 2L, ... of the row-major tile in `data` (weft::tile_t below), so copies
// and element-wise work need no cooperation, and loads and stores are coalesced.
//
// The operations written here for spread tiles: construction, loads, stores, tile atomics,
// element maps, conversions, reshapes, sums and matrix products (these last two through shared
// memory, all threads working). Every other tile operation runs through tile_serial: the block
// gathers the tiles into shared memory (weft_tile_smem, the launch's dynamic shared memory, sized
// by the renderer for the kernel's largest need), the first thread runs the one-thread
// implementation of tile.h & co. (compiled on CUDA into namespace weft::full, with their whole
// tiles), and the results are spread back; scalar results and adjoints reach every thread. With
// L = 1 a spread tile is a whole tile and everything calls weft::full directly.
#pragma once
#include "tile_ops.h"
#include "tile_linalg.h"
#include "tile_data.h"
#include "tile_geometry.h"

#ifdef WEFT_CUDA
#ifndef WEFT_TILE_LANES
#define WEFT_TILE_LANES 1
#endif

extern __shared__ __align__(16) unsigned char weft_tile_smem[];

namespace weft {

// what the generated code names directly in namespace weft
using full::adj_exp_from_result;
using full::adj_tanh_from_result;
using full::tile_is_same;
using full::tile_query_t;
using full::tile_scan_add;
using full::tile_scan_max;
using full::tile_scan_min;
using full::tile_shape_t;
using full::tile_splat;
using full::tile_stack_t;
using full::adj_select;
using full::adj_where;

constexpr int tile_lanes = WEFT_TILE_LANES;

__device__ inline int tile_lane() {
    if constexpr (tile_lanes == 1)
        return 0;
    else
        return int(threadIdx.x);
}
__device__ inline void tile_sync() {
    if constexpr (tile_lanes > 1) __syncthreads();
}

template <typename T, int... D>
struct tile_t {
    using dtype = T;
    using shape = tile_shape_t<D...>;
    static constexpr int ndim = shape::ndim;
    static constexpr int size = shape::size;
    static constexpr int slots = size > 0 ? (size + tile_lanes - 1) / tile_lanes : 1;
    T data[slots];

    // the element held in slot j by this thread (size or more: none)
    static __device__ int index(int j) { return j * tile_lanes + tile_lane(); }

    __device__ tile_t& operator+=(const tile_t& o) {
        for (int j = 0; j < slots; ++j) data[j] += o.data[j];
        return *this;
    }
};

// ------------------------------------------------------------------ whole tiles and spread tiles

template <typename T, int... D>
__device__ void tile_to_full(const tile_t<T, D...>& t, full::tile_t<T, D...>& f) {
    for (int j = 0; j < t.slots; ++j) {
        const int i = t.index(j);
        if (i < t.size) f.data[i] = t.data[j];
    }
}
template <typename T, int... D>
__device__ void tile_from_full(const full::tile_t<T, D...>& f, tile_t<T, D...>& t) {
    for (int j = 0; j < t.slots; ++j) {
        const int i = t.index(j);
        if (i < t.size) t.data[j] = f.data[i];
    }
}

template <typename X>
struct tile_plain {
    using type = X;
};
template <typename X>
struct tile_plain<const X> : tile_plain<X> {};
template <typename X>
struct tile_plain<X&> : tile_plain<X> {};
template <typename X>
struct tile_plain<X&&> : tile_plain<X> {};

// the spread form of a result computed on whole tiles (tuples of tiles included)
template <typename R>
struct tile_spread {
    using type = R;
    static __device__ void from(const R& f, type& out) { out = f; }
};
template <typename T, int... D>
struct tile_spread<full::tile_t<T, D...>> {
    using type = tile_t<T, D...>;
    static __device__ void from(const full::tile_t<T, D...>& f, type& out) { tile_from_full(f, out); }
};
template <>
struct tile_spread<tuple_t<>> {
    using type = tuple_t<>;
    static __device__ void from(const tuple_t<>&, type&) {}
};
template <typename H, typename... X>
struct tile_spread<tuple_t<H, X...>> {
    using type = tuple_t<typename tile_spread<H>::type, typename tile_spread<X>::type...>;
    static __device__ void from(const tuple_t<H, X...>& f, type& out) {
        tile_spread<H>::from(f.head, out.head);
        tile_spread<tuple_t<X...>>::from(f.tail, out.tail);
    }
};

// the whole-tile form of a spread argument
template <typename X>
struct tile_whole {
    using type = X;
};
template <typename T, int... D>
struct tile_whole<tile_t<T, D...>> {
    using type = full::tile_t<T, D...>;
};

// ------------------------------------------------------------------ one thread, whole tiles

// tile_out(x): an argument the call writes (an adjoint); spread back (tiles) or sent to every
// thread (other values) after the call
template <typename X>
struct tile_out_t {
    X& ref;
};
template <typename X>
__device__ tile_out_t<X> tile_out(X& x) {
    return {x};
}

__host__ __device__ constexpr size_t tile_align16(size_t n) { return (n + 15) & ~size_t(15); }

template <typename X>
struct tile_staged {  // passed as it is
    static constexpr size_t bytes = 0;
};
template <typename T, int... D>
struct tile_staged<tile_t<T, D...>> {
    static constexpr size_t bytes = tile_align16(sizeof(full::tile_t<T, D...>));
};
template <typename X>
struct tile_staged<tile_out_t<X>> {
    static constexpr size_t bytes = tile_align16(sizeof(typename tile_whole<X>::type));
};

template <typename... A>
struct tile_layout {
    static constexpr size_t bytes[sizeof...(A) + 1] = {tile_staged<typename tile_plain<A>::type>::bytes..., 0};
    static constexpr size_t offset(int k) {
        size_t s = 0;
        for (int j = 0; j < k; ++j) s += bytes[j];
        return s;
    }
    static constexpr size_t total = offset(int(sizeof...(A)));
};

// copy in (every thread its elements), refer to (the first thread), copy out (every thread)
template <typename X>
__device__ void tile_copy_in(const X&, unsigned char*) {}
template <typename T, int... D>
__device__ void tile_copy_in(const tile_t<T, D...>& t, unsigned char* p) {
    tile_to_full(t, *reinterpret_cast<full::tile_t<T, D...>*>(p));
}
template <typename X>
__device__ void tile_copy_in(const tile_out_t<X>& o, unsigned char* p) {
    tile_copy_in(o.ref, p);
}

template <typename X>
__device__ X& tile_ref(X& x, unsigned char*) {
    return x;
}
template <typename X>
__device__ const X& tile_ref(const X& x, unsigned char*) {
    return x;
}
template <typename T, int... D>
__device__ full::tile_t<T, D...>& tile_ref(const tile_t<T, D...>&, unsigned char* p) {
    return *reinterpret_cast<full::tile_t<T, D...>*>(p);
}
template <typename T, int... D>
__device__ full::tile_t<T, D...>& tile_ref(tile_t<T, D...>&, unsigned char* p) {
    return *reinterpret_cast<full::tile_t<T, D...>*>(p);
}
template <typename X>
__device__ auto& tile_ref(tile_out_t<X>& o, unsigned char* p) {
    return tile_ref(o.ref, p);
}
template <typename X>
__device__ auto& tile_ref(const tile_out_t<X>& o, unsigned char* p) {
    return tile_ref(o.ref, p);
}

// the first thread leaves written values that are not tiles where the others read them
template <typename X>
__device__ void tile_post(const X&, unsigned char*) {}
template <typename X>
__device__ void tile_post(const tile_out_t<X>& o, unsigned char* p) {
    *reinterpret_cast<X*>(p) = o.ref;
}
template <typename T, int... D>
__device__ void tile_post(const tile_out_t<tile_t<T, D...>>&, unsigned char*) {}

template <typename X>
__device__ void tile_copy_out(const X&, unsigned char*) {}
template <typename X>
__device__ void tile_copy_out(const tile_out_t<X>& o, unsigned char* p) {
    o.ref = *reinterpret_cast<const X*>(p);
}
template <typename T, int... D>
__device__ void tile_copy_out(const tile_out_t<tile_t<T, D...>>& o, unsigned char* p) {
    tile_from_full(*reinterpret_cast<const full::tile_t<T, D...>*>(p), o.ref);
}

// With one lane a spread tile is a whole tile: the arguments are passed as they are.
template <typename X>
__device__ X& tile_direct(X& x) {
    return x;
}
template <typename X>
__device__ const X& tile_direct(const X& x) {
    return x;
}
template <typename T, int... D>
__device__ full::tile_t<T, D...>& tile_direct(tile_t<T, D...>& t) {
    return *reinterpret_cast<full::tile_t<T, D...>*>(&t);
}
template <typename T, int... D>
__device__ const full::tile_t<T, D...>& tile_direct(const tile_t<T, D...>& t) {
    return *reinterpret_cast<const full::tile_t<T, D...>*>(&t);
}
template <typename X>
__device__ auto& tile_direct(tile_out_t<X>& o) {
    return tile_direct(o.ref);
}
template <typename X>
__device__ auto& tile_direct(const tile_out_t<X>& o) {
    return tile_direct(o.ref);
}

template <int... I>
struct tile_iseq {};
template <int N, int... I>
struct tile_make_iseq : tile_make_iseq<N - 1, N - 1, I...> {};
template <int... I>
struct tile_make_iseq<0, I...> {
    using type = tile_iseq<I...>;
};

template <typename F, typename... A, int... I>
__device__ auto tile_serial_impl(tile_iseq<I...>, F& f, A&&... a) {
    using L = tile_layout<A...>;
    unsigned char* s = weft_tile_smem;
    using R = decltype(f(tile_ref(a, s)...));
    (tile_copy_in(a, s + L::offset(I)), ...);
    tile_sync();
    if constexpr (tile_is_same<R, void>::value) {
        if (tile_lane() == 0) {
            f(tile_ref(a, s + L::offset(I))...);
            (tile_post(a, s + L::offset(I)), ...);
        }
        tile_sync();
        (tile_copy_out(a, s + L::offset(I)), ...);
        tile_sync();
    } else {
        R* slot = reinterpret_cast<R*>(s + L::total);
        if (tile_lane() == 0) {
            *slot = f(tile_ref(a, s + L::offset(I))...);
            (tile_post(a, s + L::offset(I)), ...);
        }
        tile_sync();
        (tile_copy_out(a, s + L::offset(I)), ...);
        typename tile_spread<R>::type out;
        tile_spread<R>::from(*slot, out);
        tile_sync();
        return out;
    }
}

// f (calling an operation of weft::full) on whole tiles, run by the block's first thread
template <typename F, typename... A>
__device__ auto tile_serial(F f, A&&... a) {
    if constexpr (tile_lanes == 1) {
        using R = decltype(f(tile_direct(a)...));
        if constexpr (tile_is_same<R, void>::value) {
            f(tile_direct(a)...);
        } else {
            typename tile_spread<R>::type out;
            tile_spread<R>::from(f(tile_direct(a)...), out);
            return out;
        }
    } else {
        return tile_serial_impl(typename tile_make_iseq<int(sizeof...(A))>::type{}, f, static_cast<A&&>(a)...);
    }
}

// The sum over the block's threads of a value each holds a part of (the adjoint of a value
// that is not a tile, from an element-wise map): every thread gets the total, added in lane
// order (the same bits every run).
template <typename T>
__device__ T tile_lane_sum(const T& x) {
    if constexpr (tile_lanes == 1) {
        return x;
    } else {
        using C = typename element_traits<T>::scalar;
        T r = x;
        C* rc = reinterpret_cast<C*>(&r);
        C* s = reinterpret_cast<C*>(weft_tile_smem);
        for (unsigned k = 0; k < element_traits<T>::components; ++k) {
            s[tile_lane()] = rc[k];
            tile_sync();
            if (tile_lane() == 0) {
                C acc = s[0];
                for (int l = 1; l < tile_lanes; ++l) acc = C(acc + s[l]);
                s[tile_lanes] = acc;
            }
            tile_sync();
            rc[k] = s[tile_lanes];
            tile_sync();
        }
        return r;
    }
}

// ------------------------------------------------------------------------- tiled BVH queries

// every thread walks the same traversal; the next item reaches all of them from the first
using full::tile_bvh_query_aabb;
using full::tile_bvh_query_ray;
using full::tile_mesh_query_aabb;
using full::tile_query_valid;
__device__ inline tuple_t<tile_t<int32, 1>, tile_query_t> tile_query_next(tile_query_t t) {
    return tile_serial([](auto&&... x) { return full::tile_query_next(x...); }, t);
}

// ------------------------------------------------------------------------------ construction

template <typename T, int... D>
__device__ tile_t<T, D...> tile_zeros() {
    return tile_t<T, D...>{};
}
template <typename T, int... D>
__device__ tile_t<T, D...> tile_ones() {
    tile_t<T, D...> r;
    for (int j = 0; j < r.slots; ++j) r.data[j] = tile_splat<T>(1);
    return r;
}
template <typename T, int... D>
__device__ tile_t<T, D...> tile_full(T value) {
    tile_t<T, D...> r;
    for (int j = 0; j < r.slots; ++j) r.data[j] = value;
    return r;
}
template <typename T, int... D>
__device__ void adj_tile_full(T value, T& adj_value, const tile_t<T, D...>& adj_ret) {
    T part{};
    for (int j = 0; j < adj_ret.slots; ++j)
        if (adj_ret.index(j) < adj_ret.size) part += adj_ret.data[j];
    adj_value += tile_lane_sum(part);
}
template <typename T, int N>
__device__ tile_t<T, N> tile_arange(T start, T step) {
    tile_t<T, N> r;
    for (int j = 0; j < r.slots; ++j) r.data[j] = T(start + T(r.index(j)) * step);
    return r;
}

// ------------------------------------------------------------------------- loads and stores

// f(slot, element address) for each element of the tile at offset o that this thread holds and
// that lies inside the array (loads leave the others zero, stores skip them: Warp's padding)
template <typename Tile, typename T, typename F>
__device__ void tile_for_elements(const array_t<T>& a, T* base, const int32* o, F&& f) {
    using S = typename Tile::shape;
    if (Tile::size == 0 || !base) return;
    for (int j = 0; j < Tile::slots; ++j) {
        const int i = Tile::index(j);
        if (i >= Tile::size) break;
        int c[4];
        S::coord(i, c);
        char* p = reinterpret_cast<char*>(base);
        bool inside = true;
        for (int k = 0; k < Tile::ndim; ++k) {
            const int64 x = int64(o[k]) + c[k];
            inside = inside && x >= 0 && x < a.shape[k];
            p += x * a.strides[k];
        }
        if (inside) f(j, reinterpret_cast<T*>(p));
    }
}

template <typename T, int... D>
__device__ tile_t<T, D...> tile_load(const array_t<T>& a, int32 o0, int32 o1, int32 o2, int32 o3) {
    const int32 o[4] = {o0, o1, o2, o3};
    tile_t<T, D...> r{};
    tile_for_elements<tile_t<T, D...>>(a, a.data, o, [&](int j, T* p) { r.data[j] = *p; });
    return r;
}
template <typename T, int... D>
__device__ void adj_tile_load(const array_t<T>& a, int32 o0, int32 o1, int32 o2, int32 o3, const array_t<T>&, int32&,
                              int32&, int32&, int32&, const tile_t<T, D...>& adj_ret) {
    const int32 o[4] = {o0, o1, o2, o3};
    tile_for_elements<tile_t<T, D...>>(a, a.grad, o, [&](int j, T* p) { atomic_add_raw(p, adj_ret.data[j]); });
}
template <typename T, int... D>
__device__ void tile_store(const array_t<T>& a, const tile_t<T, D...>& t, int32 o0, int32 o1, int32 o2, int32 o3) {
    const int32 o[4] = {o0, o1, o2, o3};
    tile_for_elements<tile_t<T, D...>>(a, a.data, o, [&](int j, T* p) { *p = t.data[j]; });
}
template <typename T, int... D>
__device__ void adj_tile_store(const array_t<T>& a, const tile_t<T, D...>& t, int32 o0, int32 o1, int32 o2, int32 o3,
                               const array_t<T>&, tile_t<T, D...>& adj_t, int32&, int32&, int32&, int32&) {
    const int32 o[4] = {o0, o1, o2, o3};
    tile_for_elements<tile_t<T, D...>>(a, a.grad, o, [&](int j, T* p) { adj_store_at(a, p, adj_t.data[j]); });
}
template <typename T, int... D>
__device__ tile_t<T, D...> tile_atomic_add(const array_t<T>& a, const tile_t<T, D...>& t, int32 o0, int32 o1,
                                           int32 o2, int32 o3) {
    const int32 o[4] = {o0, o1, o2, o3};
    tile_t<T, D...> r{};
    tile_for_elements<tile_t<T, D...>>(a, a.data, o, [&](int j, T* p) { r.data[j] = atomic_add_raw(p, t.data[j]); });
    return r;
}
template <typename T, int... D>
__device__ void adj_tile_atomic_add(const array_t<T>& a, const tile_t<T, D...>& t, int32 o0, int32 o1, int32 o2,
                                    int32 o3, const array_t<T>&, tile_t<T, D...>& adj_t, int32&, int32&, int32&, int32&,
                                    const tile_t<T, D...>&) {
    const int32 o[4] = {o0, o1, o2, o3};
    tile_for_elements<tile_t<T, D...>>(a, a.grad, o, [&](int j, T* p) { adj_t.data[j] += *p; });
}

// ------------------------------------------------------------------------------ element-wise

template <typename F, typename A, int... D>
__device__ auto tile_map(F f, const tile_t<A, D...>& a) {
    tile_t<decltype(f(a.data[0])), D...> r{};
    for (int j = 0; j < a.slots; ++j)
        if (a.index(j) < a.size) r.data[j] = f(a.data[j]);
    return r;
}
template <typename F, typename A, typename B, int... D>
__device__ auto tile_map(F f, const tile_t<A, D...>& a, const tile_t<B, D...>& b) {
    tile_t<decltype(f(a.data[0], b.data[0])), D...> r{};
    for (int j = 0; j < a.slots; ++j)
        if (a.index(j) < a.size) r.data[j] = f(a.data[j], b.data[j]);
    return r;
}
template <typename F, typename A, typename B, typename C, int... D>
__device__ auto tile_map(F f, const tile_t<A, D...>& a, const tile_t<B, D...>& b, const tile_t<C, D...>& c) {
    tile_t<decltype(f(a.data[0], b.data[0], c.data[0])), D...> r{};
    for (int j = 0; j < a.slots; ++j)
        if (a.index(j) < a.size) r.data[j] = f(a.data[j], b.data[j], c.data[j]);
    return r;
}
template <typename F, typename A, int... D, typename R>
__device__ void adj_tile_map(F adj_f, const tile_t<A, D...>& a, tile_t<A, D...>& adj_a, const R& adj_ret) {
    for (int j = 0; j < a.slots; ++j)
        if (a.index(j) < a.size) adj_f(a.data[j], adj_a.data[j], adj_ret.data[j]);
}
template <typename F, typename A, typename B, int... D, typename R>
__device__ void adj_tile_map(F adj_f, const tile_t<A, D...>& a, const tile_t<B, D...>& b, tile_t<A, D...>& adj_a,
                             tile_t<B, D...>& adj_b, const R& adj_ret) {
    for (int j = 0; j < a.slots; ++j)
        if (a.index(j) < a.size) adj_f(a.data[j], b.data[j], adj_a.data[j], adj_b.data[j], adj_ret.data[j]);
}
template <typename F, typename A, typename B, typename C, int... D, typename R>
__device__ void adj_tile_map(F adj_f, const tile_t<A, D...>& a, const tile_t<B, D...>& b, const tile_t<C, D...>& c,
                             tile_t<A, D...>& adj_a, tile_t<B, D...>& adj_b, tile_t<C, D...>& adj_c, const R& adj_ret) {
    for (int j = 0; j < a.slots; ++j)
        if (a.index(j) < a.size)
            adj_f(a.data[j], b.data[j], c.data[j], adj_a.data[j], adj_b.data[j], adj_c.data[j], adj_ret.data[j]);
}
template <typename F, typename A, typename R, int... D>
__device__ void adj_tile_map_from_result(F adj_f, const tile_t<R, D...>& y, tile_t<A, D...>& adj_a,
                                         const tile_t<R, D...>& adj_ret) {
    for (int j = 0; j < y.slots; ++j)
        if (y.index(j) < y.size) adj_f(y.data[j], adj_a.data[j], adj_ret.data[j]);
}

template <typename U, typename T, int... D>
__device__ tile_t<U, D...> tile_astype(const tile_t<T, D...>& t) {
    tile_t<U, D...> r;
    for (int j = 0; j < t.slots; ++j) r.data[j] = U(t.data[j]);
    return r;
}
template <typename U, typename T, int... D>
__device__ void adj_tile_astype(const tile_t<T, D...>& t, tile_t<T, D...>& adj_t, const tile_t<U, D...>& adj_ret) {
    for (int j = 0; j < t.slots; ++j) adj_t.data[j] += T(adj_ret.data[j]);
}

// the same elements in the same row-major order: each thread keeps its own
template <typename R, typename T, int... D>
__device__ R tile_reshape(const tile_t<T, D...>& t) {
    static_assert(R::size == tile_t<T, D...>::size, "reshape keeps the number of elements");
    R r;
    for (int j = 0; j < t.slots; ++j) r.data[j] = t.data[j];
    return r;
}
template <typename R, typename T, int... D>
__device__ void adj_tile_reshape(const tile_t<T, D...>& t, tile_t<T, D...>& adj_t, const R& adj_ret) {
    for (int j = 0; j < t.slots; ++j) adj_t.data[j] += adj_ret.data[j];
}

// ------------------------------------------------------------------------------ reductions

template <typename T, int... D>
__device__ tile_t<T, 1> tile_sum(const tile_t<T, D...>& t) {
    if constexpr (tile_lanes == 1) {
        tile_t<T, 1> r;
        tile_from_full(full::tile_sum(tile_direct(t)), r);
        return r;
    } else {
        T part{};
        for (int j = 0; j < t.slots; ++j)
            if (t.index(j) < t.size) part += t.data[j];
        T* s = reinterpret_cast<T*>(weft_tile_smem);
        s[tile_lane()] = part;
        tile_sync();
        tile_t<T, 1> r{};
        if (tile_lane() == 0) {
            T acc = s[0];
            for (int l = 1; l < tile_lanes; ++l) acc += s[l];
            r.data[0] = acc;
        }
        tile_sync();
        return r;
    }
}
template <typename T, int... D>
__device__ void adj_tile_sum(const tile_t<T, D...>& t, tile_t<T, D...>& adj_t, const tile_t<T, 1>& adj_ret) {
    if constexpr (tile_lanes == 1) {
        full::adj_tile_sum(tile_direct(t), tile_direct(adj_t), tile_direct(adj_ret));
        return;
    }
    T* s = reinterpret_cast<T*>(weft_tile_smem);
    if (tile_lane() == 0) s[0] = adj_ret.data[0];
    tile_sync();
    const T g = s[0];
    for (int j = 0; j < t.slots; ++j) adj_t.data[j] += g;
    tile_sync();
}

// ------------------------------------------------------------------------------- products

// a and b in shared memory, each thread computing its elements of the product
template <typename T, int M, int K, int N>
__device__ tile_t<T, M, N> tile_matmul(const tile_t<T, M, K>& a, const tile_t<T, K, N>& b, const tile_t<T, M, N>& c,
                                       T alpha, T beta) {
    tile_t<T, M, N> r;
    if constexpr (tile_lanes == 1) {
        tile_from_full(full::tile_matmul(tile_direct(a), tile_direct(b), tile_direct(c), alpha, beta), r);
    } else {
        auto& sa = *reinterpret_cast<full::tile_t<T, M, K>*>(weft_tile_smem);
        auto& sb = *reinterpret_cast<full::tile_t<T, K, N>*>(weft_tile_smem + tile_align16(sizeof(sa)));
        tile_to_full(a, sa);
        tile_to_full(b, sb);
        tile_sync();
        for (int j = 0; j < r.slots; ++j) {
            const int i = r.index(j);
            if (i >= M * N) break;
            const int row = i / N, col = i % N;
            T acc{};
            for (int k = 0; k < K; ++k) acc += sa.data[row * K + k] * sb.data[k * N + col];
            r.data[j] = alpha * acc + beta * c.data[j];
        }
        tile_sync();
    }
    return r;
}
template <typename T, int M, int K, int N>
__device__ void adj_tile_matmul(const tile_t<T, M, K>& a, const tile_t<T, K, N>& b, const tile_t<T, M, N>& c, T alpha,
                                T beta, tile_t<T, M, K>& adj_a, tile_t<T, K, N>& adj_b, tile_t<T, M, N>& adj_c,
                                T& adj_alpha, T& adj_beta, const tile_t<T, M, N>& adj_ret) {
    if constexpr (tile_lanes == 1) {
        full::adj_tile_matmul(tile_direct(a), tile_direct(b), tile_direct(c), alpha, beta, tile_direct(adj_a),
                              tile_direct(adj_b), tile_direct(adj_c), adj_alpha, adj_beta, tile_direct(adj_ret));
    } else {
        // adj_a += alpha adj_ret b^T, adj_b += alpha a^T adj_ret, adj_c += beta adj_ret
        auto& sa = *reinterpret_cast<full::tile_t<T, M, K>*>(weft_tile_smem);
        auto& sb = *reinterpret_cast<full::tile_t<T, K, N>*>(weft_tile_smem + tile_align16(sizeof(sa)));
        auto& sg = *reinterpret_cast<full::tile_t<T, M, N>*>(weft_tile_smem + tile_align16(sizeof(sa)) +
                                                             tile_align16(sizeof(sb)));
        tile_to_full(a, sa);
        tile_to_full(b, sb);
        tile_to_full(adj_ret, sg);
        tile_sync();
        for (int j = 0; j < adj_a.slots; ++j) {
            const int i = adj_a.index(j);
            if (i >= M * K) break;
            const int m = i / K, k = i % K;
            T acc{};
            for (int n = 0; n < N; ++n) acc += sg.data[m * N + n] * sb.data[k * N + n];
            adj_a.data[j] += alpha * acc;
        }
        for (int j = 0; j < adj_b.slots; ++j) {
            const int i = adj_b.index(j);
            if (i >= K * N) break;
            const int k = i / N, n = i % N;
            T acc{};
            for (int m = 0; m < M; ++m) acc += sa.data[m * K + k] * sg.data[m * N + n];
            adj_b.data[j] += alpha * acc;
        }
        for (int j = 0; j < adj_c.slots; ++j) adj_c.data[j] += beta * adj_ret.data[j];
        tile_sync();
    }
}
// inputs of other float types than the product's: converted, their adjoints converted back
template <typename TA, typename TB, typename T, int M, int K, int N>
__device__ tile_t<T, M, N> tile_matmul(const tile_t<TA, M, K>& a, const tile_t<TB, K, N>& b, const tile_t<T, M, N>& c,
                                       T alpha, T beta) {
    return tile_matmul(tile_astype<T>(a), tile_astype<T>(b), c, alpha, beta);
}
template <typename TA, typename TB, typename T, int M, int K, int N>
__device__ void adj_tile_matmul(const tile_t<TA, M, K>& a, const tile_t<TB, K, N>& b, const tile_t<T, M, N>& c,
                                T alpha, T beta, tile_t<TA, M, K>& adj_a, tile_t<TB, K, N>& adj_b,
                                tile_t<T, M, N>& adj_c, T& adj_alpha, T& adj_beta, const tile_t<T, M, N>& adj_ret) {
    tile_t<T, M, K> ga{};
    tile_t<T, K, N> gb{};
    adj_tile_matmul(tile_astype<T>(a), tile_astype<T>(b), c, alpha, beta, ga, gb, adj_c, adj_alpha, adj_beta, adj_ret);
    for (int j = 0; j < adj_a.slots; ++j) adj_a.data[j] += TA(ga.data[j]);
    for (int j = 0; j < adj_b.slots; ++j) adj_b.data[j] += TB(gb.data[j]);
}

}  // namespace weft
#endif  // WEFT_CUDA
