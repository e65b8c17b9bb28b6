// Array element access and atomics, forward and adjoint (the adjoint convention of DESIGN.md:
// inputs..., adjoints of inputs..., adjoint of the result; adjoints only accumulate).
#pragma once
#include "core.h"

namespace weft {

// Element addresses without the bounds check (see element<> below). The fast body that uses them
// runs only when every array it indexes this way has a contiguous last dimension (its stride is
// the element size: checked once per launch), so the last index can be a plain pointer offset.
//
// How the compiler vectorizes a task loop depends on how that offset is written. With the
// constant element size it interleaves the components of a group of consecutive elements with
// shuffles, which is fast for 1, 2, 3, 4, 8 or 16 components but fails or degrades for others
// (a mat33's 9 floats: no vectorization, or 2 lanes). With the stride read from the array
// descriptor it loads each component with strided (gather) loads instead, which vectorizes
// any element 8 lanes wide: a mat33 kernel ran 1.4x faster, a vec3 one 3x slower. So the
// element type decides.
template <unsigned N, typename S>
struct vec_t;
template <unsigned R, unsigned C, typename S>
struct mat_t;
template <typename S>
struct quat_t;
template <typename S>
struct transform_t;
// element_traits<T>: how many scalar components an array element has, and their type (a scalar
// and any other element, such as a struct, count as one component of its own type).
template <typename T>
struct element_traits {
    static constexpr unsigned components = 1;
    typedef T scalar;
};
template <unsigned N, typename S>
struct element_traits<vec_t<N, S>> {
    static constexpr unsigned components = N;
    typedef S scalar;
};
template <unsigned R, unsigned C, typename S>
struct element_traits<mat_t<R, C, S>> {
    static constexpr unsigned components = R * C;
    typedef S scalar;
};
template <typename S>
struct element_traits<quat_t<S>> {
    static constexpr unsigned components = 4;
    typedef S scalar;
};
template <typename S>
struct element_traits<transform_t<S>> {
    static constexpr unsigned components = 7;
    typedef S scalar;
};
template <typename T>
struct offset_by_element_size {
    static constexpr unsigned n = element_traits<T>::components;
    static constexpr bool value = n <= 4 || n == 8 || n == 16;
};
template <typename T>
WEFT_FN T* last_index(T* row, const array_t<T>& a, int d, int64 i) {
    if constexpr (offset_by_element_size<T>::value)
        return row + i;
    else
        return (T*)((char*)row + i * a.strides[d]);
}
// The per-launch test the fast body needs for dimension d: a stride equal to the element size
// where last_index assumes it. Elements indexed through their stride need no test, and must not
// get one: the compiler would learn the stride's value and fall back to the interleaved code.
template <typename T>
WEFT_FN bool fast_stride(const array_t<T>& a, int d) {
    if constexpr (offset_by_element_size<T>::value)
        return a.strides[d] == int64(sizeof(T));
    else
        return true;
}
template <typename T>
WEFT_FN T* elem_ptr_nc(T* base, const array_t<T>& a, int64 i0) {
    return last_index(base, a, 0, i0);
}
template <typename T>
WEFT_FN T* elem_ptr_nc(T* base, const array_t<T>& a, int64 i0, int64 i1) {
    return last_index((T*)((char*)base + i0 * a.strides[0]), a, 1, i1);
}
template <typename T>
WEFT_FN T* elem_ptr_nc(T* base, const array_t<T>& a, int64 i0, int64 i1, int64 i2) {
    return last_index((T*)((char*)base + i0 * a.strides[0] + i1 * a.strides[1]), a, 2, i2);
}
template <typename T>
WEFT_FN T* elem_ptr_nc(T* base, const array_t<T>& a, int64 i0, int64 i1, int64 i2, int64 i3) {
    return last_index((T*)((char*)base + i0 * a.strides[0] + i1 * a.strides[1] + i2 * a.strides[2]), a, 3, i3);
}

// element<CHECK>(base, a, loc, i...): the address of an element of the data or gradient buffer,
// bounds-checked (CHECK) or not (the fast body of a kernel, for accesses indexed by the thread
// index when the launch checked once that the array covers the grid).
template <bool CHECK, typename T, typename... I>
WEFT_FN T* element(T* base, const array_t<T>& a, int32 loc, I... idx) {
    if constexpr (CHECK)
        return elem_ptr(base, a, loc, int64(idx)...);
    else
        return elem_ptr_nc(base, a, int64(idx)...);
}

// a[i] (or a[i, j]) of an array with more dimensions: the subarray, sharing the data and gradient
// buffers (the indices checked like an element's).
template <typename T, typename... I>
WEFT_FN array_t<T> array_view(const array_t<T>& a, int32 loc, I... idx) {
    constexpr int k = int(sizeof...(I));
    array_t<T> v = a;
    v.data = elem_ptr(a.data, a, loc, int64(idx)...);
    v.grad = a.grad ? (T*)((char*)a.grad + ((char*)v.data - (char*)a.data)) : nullptr;
    for (int d = 0; d < 4; ++d) {
        bool kept = d + k < a.ndim;
        v.shape[d] = kept ? a.shape[d + k] : 0;
        v.strides[d] = kept ? a.strides[d + k] : 0;
    }
    v.ndim = a.ndim - k;
    return v;
}

// a.ptr in a kernel: the address of element 0.
template <typename T>
WEFT_FN uint64 array_ptr(const array_t<T>& a) {
    return uint64(reinterpret_cast<uintptr_t>(a.data));
}

// wp.array(ptr=p, shape=(n, m), dtype=T) in a kernel: a contiguous array over the memory at p,
// without a gradient (indices are checked against the given shape, as any array's).
template <typename T, typename... S>
WEFT_FN array_t<T> array_from_ptr(uint64 ptr, S... shape) {
    constexpr int n = int(sizeof...(S));
    array_t<T> a = {};
    a.data = reinterpret_cast<T*>(uintptr_t(ptr));
    a.grad = nullptr;
    int32 dims[n] = {int32(shape)...};
    int64 stride = int64(sizeof(T));
    for (int d = n - 1; d >= 0; --d) {
        a.shape[d] = dims[d];
        a.strides[d] = stride;
        stride *= dims[d];
    }
    a.ndim = n;
    return a;
}

// wp.adjoint[a] in a @wp.func_grad body, for an array parameter a: the array over a's gradient
// (empty when a has none, so that an access raises IndexError instead of touching null memory).
template <typename T>
WEFT_FN array_t<T> grad_array(const array_t<T>& a) {
    array_t<T> g = a;
    g.data = a.grad;
    g.grad = nullptr;
    if (!a.grad) {
        for (int d = 0; d < 4; ++d) g.shape[d] = 0;
    }
    return g;
}

// wp.zeros(shape, dtype) / wp.empty(...) in a kernel or func: the storage, held by value (a func
// returns it to its caller), and the array over it (fixed_view, taken where the storage lives).
template <typename T, int N>
struct fixed_storage_t {
    T data[N];
};

template <typename T, int N, typename... S>
WEFT_FN array_t<T> fixed_view(fixed_storage_t<T, N>& s, S... shape) {
    return array_from_ptr<T>(uint64(reinterpret_cast<uintptr_t>(s.data)), shape...);
}

// a[i, 1:n:2] in a kernel: per index entry five numbers: kind (0: an integer index, 1: a slice),
// start, stop, step, and which of start / stop were given (bit 0 / bit 1); dimensions past the
// entries are kept whole. Slices follow Python's rules (negative bounds count from the end and
// are clipped, a negative step walks backwards); the result shares the data and gradient.
template <int N>
struct slice_spec {
    int64 v[5 * N];
};

WEFT_COLD_PATH WEFT_FN void raise_zero_step(int32 loc) {
    kernel_error e = {};
    e.code = 6;
    e.loc = loc;
    raise_kernel_error(e);
}

template <typename T, int N>
WEFT_FN array_t<T> array_slice(const array_t<T>& a, int32 loc, const slice_spec<N>& spec) {
    array_t<T> v = a;
    int64 offset = 0;
    int out = 0;
    for (int d = 0; d < a.ndim; ++d) {
        const int64* s = d < N ? spec.v + 5 * d : nullptr;
        int64 len = a.shape[d];
        if (s && s[0] == 0) {  // an integer index drops the dimension
            int64 i = s[1] < 0 ? s[1] + len : s[1];
#ifndef WEFT_RELEASE
            if (i < 0 || i >= len) {
                int64 idx[1] = {s[1]};
                raise_index_error(a, loc, d, idx, 1);
            }
#endif
            offset += i * a.strides[d];
            continue;
        }
        int64 step = s ? s[3] : 1;
        if (step == 0) raise_zero_step(loc);
        int64 lower = step > 0 ? 0 : -1, upper = step > 0 ? len : len - 1;
        int64 start = step > 0 ? lower : upper, stop = step > 0 ? upper : lower;
        if (s && (s[4] & 1)) {
            start = s[1] < 0 ? s[1] + len : s[1];
            start = start < lower ? lower : (start > upper ? upper : start);
        }
        if (s && (s[4] & 2)) {
            stop = s[2] < 0 ? s[2] + len : s[2];
            stop = stop < lower ? lower : (stop > upper ? upper : stop);
        }
        int64 count = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                               : (start > stop ? (start - stop - step - 1) / (-step) : 0);
        if (count > 0) offset += start * a.strides[d];
        v.shape[out] = int32(count);
        v.strides[out] = a.strides[d] * step;
        ++out;
    }
    for (int d = out; d < 4; ++d) {
        v.shape[d] = 0;
        v.strides[d] = 0;
    }
    v.ndim = out;
    v.data = (T*)((char*)a.data + offset);
    v.grad = a.grad ? (T*)((char*)a.grad + offset) : nullptr;
    return v;
}

// wp.indexedarray: an array seen through one int32 index buffer per dimension (null: that
// dimension is not remapped). Kernels reach its elements through ``data`` and mapped indices.
template <typename T>
struct indexedarray_t {
    array_t<T> data;
    int32* indices[4];
    int32 shape[4];
};

// Index i of dimension d of an indexed array, checked against the indexed shape and mapped to an
// index of the data array (whose own bounds check then covers bad index buffers).
template <typename T>
WEFT_FN int32 indexed_index(const indexedarray_t<T>& a, int32 loc, int32 d, int64 i) {
    if (i < 0) i += a.shape[d];
#ifndef WEFT_RELEASE
    if (i < 0 || i >= a.shape[d]) {
        array_t<T> shape_only = a.data;  // the error reports the indexed shape
        for (int k = 0; k < 4; ++k) shape_only.shape[k] = a.shape[k];
        int64 idx[1] = {i};
        raise_index_error(shape_only, loc, d, idx, 1);
    }
#endif
    return a.indices[d] ? a.indices[d][i] : int32(i);
}

template <typename T>
WEFT_FN indexedarray_t<T> indexed_shifted(const indexedarray_t<T>& a, const array_t<T>& data, int k) {
    indexedarray_t<T> v;
    v.data = data;
    for (int d = 0; d < 4; ++d) {
        bool kept = d + k < a.data.ndim;
        v.indices[d] = kept ? a.indices[d + k] : nullptr;
        v.shape[d] = kept ? a.shape[d + k] : 0;
    }
    return v;
}

// a[i] (a[i, j], a[i, j, k]) of an indexed array with more dimensions: the indexed subarray.
template <typename T, typename I0>
WEFT_FN indexedarray_t<T> indexed_view(const indexedarray_t<T>& a, int32 loc, I0 i0) {
    return indexed_shifted(a, array_view(a.data, loc, indexed_index(a, loc, 0, int64(i0))), 1);
}
template <typename T, typename I0, typename I1>
WEFT_FN indexedarray_t<T> indexed_view(const indexedarray_t<T>& a, int32 loc, I0 i0, I1 i1) {
    array_t<T> v = array_view(a.data, loc, indexed_index(a, loc, 0, int64(i0)), indexed_index(a, loc, 1, int64(i1)));
    return indexed_shifted(a, v, 2);
}
template <typename T, typename I0, typename I1, typename I2>
WEFT_FN indexedarray_t<T> indexed_view(const indexedarray_t<T>& a, int32 loc, I0 i0, I1 i1, I2 i2) {
    array_t<T> v = array_view(a.data, loc, indexed_index(a, loc, 0, int64(i0)), indexed_index(a, loc, 1, int64(i1)),
                              indexed_index(a, loc, 2, int64(i2)));
    return indexed_shifted(a, v, 3);
}

template <typename T, typename... I>
WEFT_FN T load(const array_t<T>& a, int32 loc, I... idx) {
    return *element<true>(a.data, a, loc, idx...);
}
template <typename T, typename... I>
WEFT_FN T load_nc(const array_t<T>& a, int32 loc, I... idx) {
    return *element<false>(a.data, a, loc, idx...);
}

// The gradient of a read accumulates into the array's gradient: atomically, since many threads
// may read the same element, unless the frontend proved only this thread can touch it
// (EXCLUSIVE: the array is only indexed by the thread index). No gradient buffer: dropped.
template <bool CHECK, bool EXCLUSIVE, typename T, typename... I>
WEFT_FN void adj_load_at(const array_t<T>& a, int32 loc, T adj_ret, I... idx) {
    if (!a.grad) return;
    T* g = element<CHECK>(a.grad, a, loc, idx...);
    if constexpr (EXCLUSIVE)
        *g += adj_ret;
    else
        atomic_add_raw(g, adj_ret);
}

template <bool CHECK, typename T, typename... I>
WEFT_FN void store_at(const array_t<T>& a, int32 loc, T v, I... idx) {
    *element<CHECK>(a.data, a, loc, idx...) = v;
}

// The adjoint of a write reads the element's gradient into the written value's adjoint and then
// clears it, so only the last write of an element receives its gradient (Warp's semantics);
// arrays flagged retain_grad keep their gradient.
template <typename T>
WEFT_FN void adj_store_at(const array_t<T>& a, T* g, T& adj_v) {
    adj_v += *g;
    if (!(a.flags & ARRAY_RETAIN_GRAD)) *g = T{};
}
template <bool CHECK, typename T, typename... I>
WEFT_FN void adj_store_index(const array_t<T>& a, int32 loc, T& adj_v, I... idx) {
    if (a.grad) adj_store_at(a, element<CHECK>(a.grad, a, loc, idx...), adj_v);
}

// NAME(a, loc, i0[, i1[, i2[, i3]]], last) for 1 to 4 indices, forwarding to
// IMPL<flags>(a, loc, last, indices...): the generated code passes the indices first and the
// value (or adjoint) last, which a parameter pack cannot express directly.
#define WEFT_INDEXED(NAME, LAST_T, IMPL, ...)                                                        \
    template <typename T, typename I0>                                                               \
    WEFT_FN void NAME(const array_t<T>& a, int32 loc, I0 i0, LAST_T last) {                          \
        IMPL<__VA_ARGS__>(a, loc, last, i0);                                                         \
    }                                                                                                \
    template <typename T, typename I0, typename I1>                                                  \
    WEFT_FN void NAME(const array_t<T>& a, int32 loc, I0 i0, I1 i1, LAST_T last) {                   \
        IMPL<__VA_ARGS__>(a, loc, last, i0, i1);                                                     \
    }                                                                                                \
    template <typename T, typename I0, typename I1, typename I2>                                     \
    WEFT_FN void NAME(const array_t<T>& a, int32 loc, I0 i0, I1 i1, I2 i2, LAST_T last) {            \
        IMPL<__VA_ARGS__>(a, loc, last, i0, i1, i2);                                                 \
    }                                                                                                \
    template <typename T, typename I0, typename I1, typename I2, typename I3>                        \
    WEFT_FN void NAME(const array_t<T>& a, int32 loc, I0 i0, I1 i1, I2 i2, I3 i3, LAST_T last) {     \
        IMPL<__VA_ARGS__>(a, loc, last, i0, i1, i2, i3);                                             \
    }

WEFT_INDEXED(adj_load, T, adj_load_at, true, false)
WEFT_INDEXED(adj_load_exclusive, T, adj_load_at, true, true)
WEFT_INDEXED(adj_load_nc, T, adj_load_at, false, false)
WEFT_INDEXED(adj_load_exclusive_nc, T, adj_load_at, false, true)
WEFT_INDEXED(store, T, store_at, true)
WEFT_INDEXED(store_nc, T, store_at, false)
WEFT_INDEXED(adj_store, T&, adj_store_index, true)
WEFT_INDEXED(adj_store_nc, T&, adj_store_index, false)
#undef WEFT_INDEXED

// Atomics: atomic_OP(a, loc, i..., value) -> previous value.
#define WEFT_ATOMIC(OP, EXPR)                                                                            \
    template <typename T>                                                                                \
    WEFT_FN T atomic_##OP(const array_t<T>& a, int32 loc, int64 i0, T v) {                               \
        return atomic_##EXPR(elem_ptr(a.data, a, loc, i0), v);                                           \
    }                                                                                                    \
    template <typename T>                                                                                \
    WEFT_FN T atomic_##OP(const array_t<T>& a, int32 loc, int64 i0, int64 i1, T v) {                     \
        return atomic_##EXPR(elem_ptr(a.data, a, loc, i0, i1), v);                                       \
    }                                                                                                    \
    template <typename T>                                                                                \
    WEFT_FN T atomic_##OP(const array_t<T>& a, int32 loc, int64 i0, int64 i1, int64 i2, T v) {           \
        return atomic_##EXPR(elem_ptr(a.data, a, loc, i0, i1, i2), v);                                   \
    }                                                                                                    \
    template <typename T>                                                                                \
    WEFT_FN T atomic_##OP(const array_t<T>& a, int32 loc, int64 i0, int64 i1, int64 i2, int64 i3, T v) { \
        return atomic_##EXPR(elem_ptr(a.data, a, loc, i0, i1, i2, i3), v);                               \
    }

template <typename T>
WEFT_FN T atomic_sub_raw(T* p, T v) {
    return atomic_add_raw(p, T(-v));
}
WEFT_ATOMIC(add, add_raw)
WEFT_ATOMIC(sub, sub_raw)
WEFT_ATOMIC(min, min_raw)
WEFT_ATOMIC(max, max_raw)
WEFT_ATOMIC(exch, exch_raw)
WEFT_ATOMIC(and, and_raw)
WEFT_ATOMIC(or, or_raw)
WEFT_ATOMIC(xor, xor_raw)
#undef WEFT_ATOMIC

// atomic_cas(a, loc, i..., compare, value) -> previous value.
template <typename T>
WEFT_FN T atomic_cas(const array_t<T>& a, int32 loc, int64 i0, T compare, T v) {
    return atomic_cas_raw(elem_ptr(a.data, a, loc, i0), compare, v);
}
template <typename T>
WEFT_FN T atomic_cas(const array_t<T>& a, int32 loc, int64 i0, int64 i1, T compare, T v) {
    return atomic_cas_raw(elem_ptr(a.data, a, loc, i0, i1), compare, v);
}
template <typename T>
WEFT_FN T atomic_cas(const array_t<T>& a, int32 loc, int64 i0, int64 i1, int64 i2, T compare, T v) {
    return atomic_cas_raw(elem_ptr(a.data, a, loc, i0, i1, i2), compare, v);
}
template <typename T>
WEFT_FN T atomic_cas(const array_t<T>& a, int32 loc, int64 i0, int64 i1, int64 i2, int64 i3, T compare, T v) {
    return atomic_cas_raw(elem_ptr(a.data, a, loc, i0, i1, i2, i3), compare, v);
}

// Adjoints of atomics: adj_atomic_OP(a, loc, i..., value, adj_value&, adj_ret).
// add/sub pass the element's gradient to the value (no clearing: every contribution counts);
// min/max pass it only when the value is the one the element ended up holding.
template <typename T>
WEFT_FN T grad_at(const array_t<T>& a, T* g) {
    return g ? *g : T{};
}

// min/max: the value gets the gradient when the element ended up holding it. vec.h and mat.h
// overload this per component (Warp's semantics for atomic_min/max on vectors and matrices).
template <typename T>
WEFT_FN void adj_atomic_extremum(const T& cur, const T& v, T& adj_v, const T& g) {
    if (cur == v || (cur != cur && v != v)) adj_v += g;  // NaN == NaN: the value was written
}

#define WEFT_ADJ_ATOMIC(OP, BODY)                                                                               \
    template <typename T>                                                                                       \
    WEFT_FN void adj_atomic_##OP(const array_t<T>& a, int32 loc, int64 i0, T v, T& adj_v, T adj_ret) {          \
        if (!a.grad) return;                                                                                    \
        T* g = elem_ptr(a.grad, a, loc, i0);                                                                    \
        T cur = *elem_ptr(a.data, a, loc, i0);                                                                  \
        BODY;                                                                                                   \
    }                                                                                                           \
    template <typename T>                                                                                       \
    WEFT_FN void adj_atomic_##OP(const array_t<T>& a, int32 loc, int64 i0, int64 i1, T v, T& adj_v, T adj_ret) { \
        if (!a.grad) return;                                                                                    \
        T* g = elem_ptr(a.grad, a, loc, i0, i1);                                                                \
        T cur = *elem_ptr(a.data, a, loc, i0, i1);                                                              \
        BODY;                                                                                                   \
    }                                                                                                           \
    template <typename T>                                                                                       \
    WEFT_FN void adj_atomic_##OP(const array_t<T>& a, int32 loc, int64 i0, int64 i1, int64 i2, T v, T& adj_v,    \
                                 T adj_ret) {                                                                   \
        if (!a.grad) return;                                                                                    \
        T* g = elem_ptr(a.grad, a, loc, i0, i1, i2);                                                            \
        T cur = *elem_ptr(a.data, a, loc, i0, i1, i2);                                                          \
        BODY;                                                                                                   \
    }                                                                                                           \
    template <typename T>                                                                                       \
    WEFT_FN void adj_atomic_##OP(const array_t<T>& a, int32 loc, int64 i0, int64 i1, int64 i2, int64 i3, T v,    \
                                 T& adj_v, T adj_ret) {                                                         \
        if (!a.grad) return;                                                                                    \
        T* g = elem_ptr(a.grad, a, loc, i0, i1, i2, i3);                                                        \
        T cur = *elem_ptr(a.data, a, loc, i0, i1, i2, i3);                                                      \
        BODY;                                                                                                   \
    }

WEFT_ADJ_ATOMIC(add, (void)cur; adj_v += *g)
WEFT_ADJ_ATOMIC(sub, (void)cur; adj_v -= *g)
WEFT_ADJ_ATOMIC(min, adj_atomic_extremum(cur, v, adj_v, *g))
WEFT_ADJ_ATOMIC(max, adj_atomic_extremum(cur, v, adj_v, *g))
#undef WEFT_ADJ_ATOMIC

}  // namespace weft
